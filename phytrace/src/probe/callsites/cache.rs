//! The call sites found in this boot of this kernel build, kept for the next session: finding
//! them reads and decodes the kernel text, most of a call-site session's start-up. The PHY ops'
//! sites ([`load`], [`store`]) and other searches of the text ([`read`], [`write`]: the
//! inlined MDIO accessors' bus-op calls) each have an entry of their own.
//!
//! An entry is valid for one kernel build (its GNU build id), one boot (the text is patched at
//! boot: alternatives, retpolines, static calls), one [`Layout`] and one phytrace version. A
//! search that another tracer's kprobes may have disturbed is not kept. Every failure to read
//! or write an entry is a miss: the sites are then found as without a cache.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::{Discovery, Layout};

/// Where the kernel exposes vmlinux's ELF notes.
const NOTES: &str = "/sys/kernel/notes";
/// This boot's random id.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// `NT_GNU_BUILD_ID`.
const GNU_BUILD_ID: u32 = 3;

/// What an entry must match to be used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    build_id: String,
    boot_id: String,
    phytrace: String,
    ops: Vec<Option<u32>>,
    holders: Vec<i64>,
    marker: Option<u32>,
}

impl Key {
    /// The running kernel's key for `layout`; `None` when the kernel does not say its build
    /// id or boot.
    pub fn running(layout: &Layout) -> Option<Self> {
        let build_id = build_id(&fs::read(NOTES).ok()?)?;
        let boot_id = fs::read_to_string(BOOT_ID).ok()?.trim().to_owned();
        Some(Self::new(build_id, boot_id, layout))
    }

    fn new(build_id: String, boot_id: String, layout: &Layout) -> Self {
        Self {
            build_id,
            boot_id,
            phytrace: env!("CARGO_PKG_VERSION").to_owned(),
            ops: layout.ops.clone(),
            holders: layout.holders.clone(),
            marker: layout.marker,
        }
    }

    /// The file in `dir` of the entry of `kind`: one per kernel build and kind.
    fn file(&self, dir: &Path, kind: &str) -> PathBuf {
        dir.join(format!("{}-{kind}.json", self.build_id))
    }
}

/// An entry as stored: owned when read, borrowed when written.
#[derive(Serialize, Deserialize)]
struct Entry<K, D> {
    key: K,
    discovery: D,
}

/// The cache's directory: `$XDG_CACHE_HOME/phytrace/call-sites`, else under `~/.cache`.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("phytrace").join("call-sites"))
}

/// The kind of the PHY ops' call sites' entries.
const PHY_OPS: &str = "phy-ops";

/// The entry of `kind` kept in `dir` for `key`, if any.
pub fn read<D: DeserializeOwned>(dir: &Path, key: &Key, kind: &str) -> Option<D> {
    let text = fs::read(key.file(dir, kind)).ok()?;
    let entry: Entry<Key, D> = serde_json::from_slice(&text).ok()?;
    (entry.key == *key).then_some(entry.discovery)
}

/// Keeps `discovery` in `dir` for `key` as the entry of `kind`. Written whole or not at all
/// (a temporary file renamed).
pub fn write<D: Serialize>(dir: &Path, key: &Key, kind: &str, discovery: &D) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let entry = serde_json::to_vec(&Entry { key, discovery })?;
    let file = key.file(dir, kind);
    let partial = file.with_extension(format!("{}.partial", std::process::id()));
    fs::write(&partial, entry)?;
    fs::rename(&partial, &file).inspect_err(|_| {
        let _ = fs::remove_file(&partial);
    })
}

/// The sites kept in `dir` for `key` (made with `layout`), if any.
pub fn load(dir: &Path, key: &Key, layout: &Layout) -> Option<Discovery> {
    let mut discovery: Discovery = read(dir, key, PHY_OPS)?;
    for site in &mut discovery.sites {
        site.op_name = layout.names.get(usize::from(site.found.op))?;
    }
    Some(discovery)
}

/// Keeps `discovery` in `dir` for `key`, unless another tracer's kprobes may have hidden a
/// site from it. Written whole or not at all (a temporary file renamed).
pub fn store(dir: &Path, key: &Key, discovery: &Discovery) -> io::Result<()> {
    if !discovery.rewritten.is_empty() {
        return Ok(());
    }
    write(dir, key, PHY_OPS, discovery)
}

/// The GNU build id in ELF notes `notes` (as `/sys/kernel/notes` holds them), in hex.
fn build_id(notes: &[u8]) -> Option<String> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(notes.get(at..at + 4)?.try_into().ok()?))
    };
    let padded = |len: u32| (len as usize).checked_next_multiple_of(4);
    let mut at = 0;
    while at + 12 <= notes.len() {
        let (name_len, desc_len, kind) = (word(at)?, word(at + 4)?, word(at + 8)?);
        let name_at = at + 12;
        let desc_at = name_at.checked_add(padded(name_len)?)?;
        let next = desc_at.checked_add(padded(desc_len)?)?;
        if kind == GNU_BUILD_ID && notes.get(name_at..name_at + name_len as usize)? == b"GNU\0" {
            let desc = notes.get(desc_at..desc_at + desc_len as usize)?;
            return Some(desc.iter().map(|byte| format!("{byte:02x}")).collect());
        }
        at = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::callsites::{CallSite, Found, Return, Target};

    fn note(kind: u32, name: &[u8], desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for word in [name.len() as u32, desc.len() as u32, kind] {
            out.extend(word.to_ne_bytes());
        }
        for part in [name, desc] {
            out.extend(part);
            out.resize(out.len().next_multiple_of(4), 0);
        }
        out
    }

    #[test]
    fn the_build_id_is_the_gnu_note() {
        let mut notes = note(1, b"Xen\0", &[1, 2, 3]);
        notes.extend(note(
            GNU_BUILD_ID,
            b"GNU\0",
            &[0xde, 0xad, 0xbe, 0xef, 0x01],
        ));
        assert_eq!(build_id(&notes).as_deref(), Some("deadbeef01"));
        assert_eq!(build_id(&note(1, b"GNU\0", &[1])), None);
        // Cut short or lying about its sizes: no id, no panic.
        for len in 0..notes.len() {
            let _ = build_id(&notes[..len]);
        }
        let mut huge = note(GNU_BUILD_ID, b"GNU\0", &[1]);
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(build_id(&huge), None);
    }

    fn layout() -> Layout {
        let mut ops = vec![None; crate::probe::callsites::OPS.len()];
        ops[2] = Some(0xd0);
        Layout {
            names: &crate::probe::callsites::OPS,
            ops,
            holders: vec![0x360, 0x68],
            marker: Some(0x360),
            first_argument: None,
        }
    }

    fn discovery() -> Discovery {
        Discovery {
            sites: vec![CallSite {
                function: "phy_init_hw".to_owned(),
                found: Found {
                    offset: 0x33,
                    op: 2,
                    target: Target::Register(80),
                    ret: Return::After(0x38),
                    owner: None,
                },
                op_offset: 0xd0,
                op_name: "soft_reset",
            }],
            functions_decoded: 314,
            text_bytes: 18 << 20,
            rewritten: Vec::new(),
        }
    }

    #[test]
    fn an_entry_serves_only_its_own_key() {
        let dir = std::env::temp_dir().join(format!("phytrace-cache-{}", std::process::id()));
        let key = Key::new("ab12".into(), "boot-1".into(), &layout());
        assert!(load(&dir, &key, &layout()).is_none());
        store(&dir, &key, &discovery()).unwrap();
        assert_eq!(
            load(&dir, &key, &layout()).unwrap().sites,
            discovery().sites
        );
        let other_boot = Key::new("ab12".into(), "boot-2".into(), &layout());
        assert!(load(&dir, &other_boot, &layout()).is_none());
        let mut other_layout = layout();
        other_layout.holders[0] = 0x358;
        let other = Key::new("ab12".into(), "boot-1".into(), &other_layout);
        assert!(load(&dir, &other, &other_layout).is_none());
        // A damaged entry is a miss.
        fs::write(key.file(&dir, PHY_OPS), b"{\"key\":").unwrap();
        assert!(load(&dir, &key, &layout()).is_none());
        // A search another tracer disturbed is not kept.
        let disturbed = Discovery {
            rewritten: vec!["phy_init_hw".to_owned()],
            ..discovery()
        };
        fs::remove_file(key.file(&dir, PHY_OPS)).unwrap();
        store(&dir, &key, &disturbed).unwrap();
        assert!(load(&dir, &key, &layout()).is_none());
        fs::remove_dir_all(&dir).unwrap();
    }
}
