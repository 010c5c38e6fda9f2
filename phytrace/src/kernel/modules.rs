//! Which modules are loaded, from `/proc/modules`.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};

/// phylib built as a module (`CONFIG_PHYLIB=m`).
pub const PHYLIB: &str = "libphy";

/// Where the kernel lists its modules.
const PROC_MODULES: &str = "/proc/modules";

/// Whether `module` is one of `follow` (empty: any module).
pub fn follows(follow: &[String], module: &str) -> bool {
    follow.is_empty() || follow.iter().any(|m| m == module)
}

/// The loaded modules and their states (`Live`, `Loading`, `Unloading`), from
/// [`PROC_MODULES`].
pub fn read() -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(PROC_MODULES).with_context(|| format!("reading {PROC_MODULES}"))?;
    Ok(parse(&text))
}

/// Parses `/proc/modules` text into name → state.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            Some((fields.first()?.to_string(), fields.get(4)?.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_modules_lines_are_parsed() {
        let text = "ax88796b_rust 16384 0 - Live 0xffffffffc0010000 (OE)\n\
                    phy_sim 32768 0 - Loading 0xffffffffc0000000 (O)\n";
        let modules = parse(text);
        assert_eq!(modules["ax88796b_rust"], "Live");
        assert_eq!(modules["phy_sim"], "Loading");
    }
}
