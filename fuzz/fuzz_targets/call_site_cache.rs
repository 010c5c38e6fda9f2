//! Feeds arbitrary bytes as the call-site cache's entries (the PHY ops' sites and the inlined
//! MDIO accessors' survey) of this fuzzer's key: reading one may not panic, a damaged one must
//! say why, and what is taken from one names only ops and accessors that exist.
//!
//! From the repository root (or `cargo xtask fuzz`, see docs/fuzzing.md):
//!
//! ```text
//! mkdir -p fuzz/corpus/call_site_cache
//! AYA_BUILD_SKIP=1 cargo +nightly-2026-05-19 fuzz run call_site_cache \
//!     fuzz/corpus/call_site_cache fuzz/seeds/call_site_cache -- -dict=fuzz/cache.dict
//! ```
#![no_main]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use phytrace::kernel::code::cache::{self, Key, Lookup};
use phytrace::kernel::code::{Layout, OPS};
use phytrace::kernel::code::mdio_inlining;

/// The layout the seeds were kept for: every op at 0xd0, the driver at 0x360.
fn layout() -> Layout {
    Layout {
        names: &OPS,
        ops: vec![Some(0xd0); OPS.len()],
        holders: vec![0x360],
        marker: Some(0x360),
        first_argument: None,
    }
}

/// This process's scratch directory.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("phytrace-fuzz-cache-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

/// A damaged entry says why and names its file.
fn check_damage<D>(lookup: &Lookup<D>) {
    if let Lookup::Damaged(why) = lookup {
        assert!(why.contains(".json: "), "{why}: the file is not named");
        assert!(!why.trim_end().ends_with(':'), "{why}: says not why");
    }
}

fuzz_target!(|data: &[u8]| {
    let layout = layout();
    let key = Key::new("fuzz".into(), "boot".into(), &layout);
    fs::write(key.file(dir(), cache::PHY_OPS), data).expect("writing the entry");
    let lookup = cache::load(dir(), &key, &layout);
    check_damage(&lookup);
    if let Lookup::Hit(discovery) = &lookup {
        for site in &discovery.sites {
            assert!(OPS.contains(&site.op()), "{}: no such op", site.label());
        }
    }
    fs::write(key.file(dir(), mdio_inlining::CACHED), data).expect("writing the entry");
    let lookup = mdio_inlining::cached(dir(), &key);
    check_damage(&lookup);
    if let Lookup::Hit((_, sites)) = &lookup {
        for site in sites {
            assert_ne!(site.accessor_name(), "unknown", "{site:?}");
        }
    }
});
