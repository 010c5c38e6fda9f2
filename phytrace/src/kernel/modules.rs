//! Which modules are loaded, from `/proc/modules`.

use std::{collections::BTreeMap, path::Path};

use super::module_files;

use anyhow::{Context as _, Result};

/// phylib built as a module (`CONFIG_PHYLIB=m`).
pub const PHYLIB: &str = "libphy";

/// Where the kernel lists its modules.
const PROC_MODULES: &str = "/proc/modules";

/// Whether phylib is a module ([`PHYLIB`]) of the module tree `tree` that is not loaded: its
/// code and BTF come when it loads (a dongle's plug-in, say).
pub fn phylib_pending(tree: &Path) -> bool {
    let live = Path::new("/sys/module")
        .join(PHYLIB)
        .join("initstate")
        .exists();
    !live && module_files::file_in_tree(tree, PHYLIB).is_some()
}

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
    fn phylib_is_a_module_where_the_tree_lists_its_file() {
        let debian13 = "kernel/drivers/net/phy/libphy.ko.xz: kernel/net/core/x.ko.xz\n\
                        kernel/drivers/net/phy/ax88796b.ko.xz: kernel/drivers/net/phy/libphy.ko.xz\n";
        let lists_phylib =
            |deps| module_files::parse_modules_dep(deps, Path::new("")).contains_key(PHYLIB);
        assert!(lists_phylib(debian13));
        // Built in: only its users list it, as a dependency.
        let debian73 = "kernel/drivers/net/phy/ax88796b_rust.ko.xz:\n";
        assert!(!lists_phylib(debian73));
        assert!(!lists_phylib("kernel/drivers/net/phy/libphy_extra.ko: \n"));
    }

    #[test]
    fn proc_modules_lines_are_parsed() {
        let text = "ax88796b_rust 16384 0 - Live 0xffffffffc0010000 (OE)\n\
                    phy_sim 32768 0 - Loading 0xffffffffc0000000 (O)\n";
        let modules = parse(text);
        assert_eq!(modules["ax88796b_rust"], "Live");
        assert_eq!(modules["phy_sim"], "Loading");
    }
}
