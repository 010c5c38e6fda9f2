//! Where things live: the workspace, its target directory and the cache outside git.

use std::{env, path::PathBuf};

/// The workspace root (the directory holding the top-level Cargo.toml).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Cargo's target directory for this workspace.
pub fn target() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// phytrace's cache for slow, reusable work (kernel trees, initramfs):
/// `$XDG_CACHE_HOME/phytrace`, else `~/.cache/phytrace`.
pub fn cache() -> PathBuf {
    env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"))
        .join("phytrace")
}

/// Directory of the out-of-tree modules built by `cargo xtask modules`.
pub fn modules() -> PathBuf {
    target().join("modules")
}

/// The directory the guest may write to (mounted read-write at the same path).
pub fn vm_out() -> PathBuf {
    target().join("vm-out")
}
