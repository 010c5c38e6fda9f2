//! Which modules are loaded, from `/proc/modules`, to follow drivers that load late or reload.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};

/// Where the kernel lists its modules.
pub const PROC_MODULES: &str = "/proc/modules";

/// A loaded module instance. A reload may land at the same base address, so the instance is
/// also told by its `/sys/module/NAME` directory, which every load creates anew (kernfs
/// allocates inode numbers cyclically).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedModule {
    /// `Live`, `Loading` or `Unloading`.
    pub state: String,
    /// Base address (0 when hidden from this user).
    pub base: u64,
    /// Inode of `/sys/module/NAME` (0 until [`identify`] is called or when it is missing).
    pub sysfs_inode: u64,
}

/// Fills in the sysfs identity of `module` called `name`.
pub fn identify(name: &str, module: &mut LoadedModule) {
    use std::os::unix::fs::MetadataExt as _;
    module.sysfs_inode = std::fs::metadata(format!("/sys/module/{name}")).map_or(0, |m| m.ino());
}

/// Whether `module` is one of `follow` (empty: any module).
pub fn follows(follow: &[String], module: &str) -> bool {
    follow.is_empty() || follow.iter().any(|m| m == module)
}

/// The loaded modules, from [`PROC_MODULES`], those in `follow` identified.
pub fn read(follow: &[String]) -> Result<BTreeMap<String, LoadedModule>> {
    let text =
        std::fs::read_to_string(PROC_MODULES).with_context(|| format!("reading {PROC_MODULES}"))?;
    let mut loaded = parse(&text);
    for (name, module) in &mut loaded {
        if follows(follow, name) {
            identify(name, module);
        }
    }
    Ok(loaded)
}

/// Parses `/proc/modules` text into name → module.
pub fn parse(text: &str) -> BTreeMap<String, LoadedModule> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = fields.first()?;
            let state = fields.get(4)?;
            let base = fields
                .get(5)
                .and_then(|addr| u64::from_str_radix(addr.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            Some((
                name.to_string(),
                LoadedModule {
                    state: state.to_string(),
                    base,
                    sysfs_inode: 0,
                },
            ))
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
        assert_eq!(modules["ax88796b_rust"].state, "Live");
        assert_eq!(modules["ax88796b_rust"].base, 0xffff_ffff_c001_0000);
        assert_eq!(modules["phy_sim"].state, "Loading");
    }
}
