//! The call sites found in this boot of this kernel build, kept for the next session: finding
//! them reads and decodes the kernel text, most of a call-site session's start-up. The PHY ops'
//! sites ([`load`], [`store`]) and other searches of the text ([`read`], [`write`]: the
//! inlined MDIO accessors' bus-op calls) each have an entry of their own.
//!
//! An entry is valid for one kernel build (its GNU build id), one boot (the text is patched at
//! boot: alternatives, retpolines, static calls), one [`Layout`] and one phytrace version. A
//! search that another tracer's kprobes may have disturbed is not kept. An entry that cannot be
//! read, parsed or checked is damaged: the session says why, finds the sites as without a
//! cache, and replaces it. An entry that cannot be written costs the next session the search.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::{Discovery, Layout, Return};
use crate::kernel::modules;

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
    /// With phylib a live module, its build id: its sites are the entry's too.
    #[serde(default)]
    phylib: Option<String>,
}

impl Key {
    /// The running kernel's key for `layout`; `None` when the kernel does not say its build
    /// id or boot.
    pub fn running(layout: &Layout) -> Option<Self> {
        let build_id = build_id(&fs::read(NOTES).ok()?)?;
        let boot_id = fs::read_to_string(BOOT_ID).ok()?.trim().to_owned();
        let phylib_notes = format!("/sys/module/{}/notes/.note.gnu.build-id", modules::PHYLIB);
        Some(Self {
            phylib: fs::read(phylib_notes)
                .ok()
                .and_then(|notes| self::build_id(&notes)),
            ..Self::new(build_id, boot_id, layout)
        })
    }

    /// The key of kernel build `build_id` in boot `boot_id`, for `layout`.
    pub fn new(build_id: String, boot_id: String, layout: &Layout) -> Self {
        Self {
            build_id,
            boot_id,
            phytrace: env!("CARGO_PKG_VERSION").to_owned(),
            ops: layout.ops.clone(),
            holders: layout.holders.clone(),
            marker: layout.marker,
            phylib: None,
        }
    }

    /// The file in `dir` of the entry of `kind`: one per kernel build and kind.
    pub fn file(&self, dir: &Path, kind: &str) -> PathBuf {
        dir.join(format!("{}-{kind}.json", self.build_id))
    }
}

/// An entry as stored: owned when read, borrowed when written.
#[derive(Serialize, Deserialize)]
struct Entry<K, D> {
    key: K,
    discovery: D,
}

/// The cache's directory: the first of the home's (`$XDG_CACHE_HOME/phytrace/call-sites`,
/// else under `~/.cache`), this boot's of the user (`$XDG_RUNTIME_DIR/phytrace/call-sites`)
/// and, for root only, this boot's of the machine (`/run/phytrace/call-sites`) that is, or can
/// be made, writable: a read-only home or a service account's keeps its sites for the boot.
/// Another user's process never shares root's entries, whatever its capabilities (a site read
/// from the cache is armed unsearched). None: why not, as the note a session gives.
pub fn default_dir() -> Result<PathBuf, String> {
    let home = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from);
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let machine = root.then(|| PathBuf::from("/run"));
    let candidates: Vec<PathBuf> = [home, runtime, machine]
        .into_iter()
        .flatten()
        .map(|base| base.join("phytrace").join("call-sites"))
        .collect();
    first_writable(&candidates)
}

/// The first of `candidates` that is, or can be made, writable; why none is.
fn first_writable(candidates: &[PathBuf]) -> Result<PathBuf, String> {
    let mut refused = Vec::new();
    for dir in candidates {
        match writable(dir) {
            Ok(()) => return Ok(dir.clone()),
            Err(err) => refused.push(format!("{}: {err}", dir.display())),
        }
    }
    Err(format!(
        "no directory for the call-site cache can be written ({}): every start searches the \
         kernel's code; set XDG_CACHE_HOME to a writable directory to keep the sites",
        refused.join("; ")
    ))
}

/// Whether a file can be made in `dir`, made if missing.
fn writable(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".writable.{}", std::process::id()));
    fs::write(&probe, b"")?;
    fs::remove_file(&probe)
}

/// The kind of the PHY ops' call sites' entries.
pub const PHY_OPS: &str = "phy-ops";

/// What the cache holds for a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<D> {
    /// The discovery kept for it, checked.
    Hit(D),
    /// Nothing kept for it (no entry, or one of another boot, build, layout or phytrace).
    Miss,
    /// An entry that cannot be used, and why (its file named): the search runs again and
    /// replaces it.
    Damaged(String),
}

impl<D> Lookup<D> {
    /// The hit that `check` finds sound; damaged, for the reason `check` gives, if not.
    fn checked(self, check: impl FnOnce(&mut D) -> Result<(), String>) -> Self {
        match self {
            Self::Hit(mut discovery) => match check(&mut discovery) {
                Ok(()) => Self::Hit(discovery),
                Err(why) => Self::Damaged(why),
            },
            other => other,
        }
    }

    /// The damage, as the note a session gives: what was wrong and what was done instead.
    pub fn damage_note(&self) -> Option<String> {
        match self {
            Self::Damaged(why) => Some(format!(
                "the call-site cache entry is damaged ({why}): the sites are searched \
                 again in the kernel's code"
            )),
            _ => None,
        }
    }

    /// The same lookup, its damage said of `file`.
    fn of_file(self, file: &Path) -> Self {
        match self {
            Self::Damaged(why) => Self::Damaged(format!("{}: {why}", file.display())),
            other => other,
        }
    }
}

/// Where a search at `layout` keeps its result: the cache directory `dir` if there is one, with
/// this boot's key; and what `read` finds kept there.
pub fn lookup<'a, D>(
    dir: Option<&'a Path>,
    layout: &Layout,
    read: impl FnOnce(&Path, &Key) -> Lookup<D>,
) -> (Option<(&'a Path, Key)>, Lookup<D>) {
    let place = dir.and_then(|dir| Some((dir, Key::running(layout)?)));
    let lookup = place
        .as_ref()
        .map_or(Lookup::Miss, |(dir, key)| read(dir, key));
    (place, lookup)
}

/// The entry of `kind` kept in `dir` for `key`, if `check` finds it sound.
pub fn read<D: DeserializeOwned>(
    dir: &Path,
    key: &Key,
    kind: &str,
    check: impl FnOnce(&mut D) -> Result<(), String>,
) -> Lookup<D> {
    let file = key.file(dir, kind);
    let lookup = match fs::read(&file) {
        Ok(bytes) => parse(&bytes, key).checked(check),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Lookup::Miss,
        Err(err) => Lookup::Damaged(err.to_string()),
    };
    lookup.of_file(&file)
}

/// An entry's `bytes`: its discovery if it was kept for `key`. The key is read first: an
/// entry another phytrace or boot kept is a miss whatever its discovery holds.
fn parse<D: DeserializeOwned>(bytes: &[u8], key: &Key) -> Lookup<D> {
    #[derive(Deserialize)]
    struct Keyed {
        key: Key,
    }
    match serde_json::from_slice::<Keyed>(bytes) {
        Err(err) => Lookup::Damaged(err.to_string()),
        Ok(keyed) if keyed.key != *key => Lookup::Miss,
        Ok(_) => match serde_json::from_slice::<Entry<Key, D>>(bytes) {
            Ok(entry) => Lookup::Hit(entry.discovery),
            Err(err) => Lookup::Damaged(err.to_string()),
        },
    }
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

/// The sites kept in `dir` for `key` (made with `layout`), each checked: its op one of the
/// layout's, its return after its call.
pub fn load(dir: &Path, key: &Key, layout: &Layout) -> Lookup<Discovery> {
    read(dir, key, PHY_OPS, |discovery: &mut Discovery| {
        for site in &mut discovery.sites {
            let op = usize::from(site.found.op);
            site.op_name = layout.names.get(op).ok_or_else(|| {
                format!("{} calls op {op}, of {}", site.place(), layout.names.len())
            })?;
            if let Return::After(ret) = site.found.ret
                && ret <= site.found.offset
            {
                return Err(format!("{} returns before its call", site.place()));
            }
        }
        Ok(())
    })
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
    use crate::kernel::code::{CallSite, Found, Return, Target};

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
        let mut ops = vec![None; crate::kernel::code::OPS.len()];
        ops[2] = Some(0xd0);
        Layout {
            names: &crate::kernel::code::OPS,
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
            cache_damage: None,
            pending: None,
        }
    }

    #[test]
    fn the_first_writable_directory_keeps_the_cache() {
        let dir = dir("writable");
        let unwritable = PathBuf::from("/dev/null/phytrace");
        assert_eq!(
            first_writable(&[unwritable.clone(), dir.clone()]),
            Ok(dir.clone())
        );
        assert!(dir.is_dir());
        let note = first_writable(std::slice::from_ref(&unwritable)).unwrap_err();
        assert!(note.contains("/dev/null/phytrace: "), "{note}");
        assert!(note.contains("every start searches"), "{note}");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A directory of its own for a test.
    fn dir(test: &str) -> PathBuf {
        std::env::temp_dir().join(format!("phytrace-cache-{test}-{}", std::process::id()))
    }

    fn hit(lookup: Lookup<Discovery>) -> Option<Vec<CallSite>> {
        match lookup {
            Lookup::Hit(discovery) => Some(discovery.sites),
            _ => None,
        }
    }

    #[test]
    fn an_entry_serves_only_its_own_key() {
        let dir = dir("key");
        let key = Key::new("ab12".into(), "boot-1".into(), &layout());
        assert!(matches!(load(&dir, &key, &layout()), Lookup::Miss));
        store(&dir, &key, &discovery()).unwrap();
        assert_eq!(hit(load(&dir, &key, &layout())), Some(discovery().sites));
        let other_boot = Key::new("ab12".into(), "boot-2".into(), &layout());
        assert!(matches!(load(&dir, &other_boot, &layout()), Lookup::Miss));
        let mut other_layout = layout();
        other_layout.holders[0] = 0x358;
        let other = Key::new("ab12".into(), "boot-1".into(), &other_layout);
        assert!(matches!(load(&dir, &other, &other_layout), Lookup::Miss));
        // A search another tracer disturbed is not kept.
        let disturbed = Discovery {
            rewritten: vec!["phy_init_hw".to_owned()],
            ..discovery()
        };
        fs::remove_file(key.file(&dir, PHY_OPS)).unwrap();
        store(&dir, &key, &disturbed).unwrap();
        assert!(matches!(load(&dir, &key, &layout()), Lookup::Miss));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The damage `load` finds in an entry for `key` whose JSON `edit` changed.
    fn damage(key: &Key, edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let dir = dir("damage");
        store(&dir, key, &discovery()).unwrap();
        let file = key.file(&dir, PHY_OPS);
        let mut entry: serde_json::Value =
            serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        edit(&mut entry);
        fs::write(&file, serde_json::to_vec(&entry).unwrap()).unwrap();
        let lookup = load(&dir, key, &layout());
        fs::remove_dir_all(&dir).unwrap();
        let note = lookup.damage_note().unwrap_or_else(|| panic!("{lookup:?}"));
        assert!(note.contains(&file.display().to_string()), "{note}");
        note
    }

    #[test]
    fn a_damaged_entry_says_why() {
        let key = Key::new("ab12".into(), "boot-1".into(), &layout());
        let site = "/discovery/sites/0/found";
        let note = damage(&key, |entry| *entry.pointer_mut(site).unwrap() = "x".into());
        assert!(note.contains("invalid type"), "{note}");
        let note = damage(&key, |entry| {
            *entry.pointer_mut(&format!("{site}/op")).unwrap() = 99.into();
        });
        assert!(note.contains("phy_init_hw+0x33 calls op 99"), "{note}");
        let note = damage(&key, |entry| {
            *entry.pointer_mut(&format!("{site}/ret")).unwrap() = serde_json::json!({"After": 2});
        });
        assert!(note.contains("returns before its call"), "{note}");
        let note = damage(&key, |entry| *entry = serde_json::json!([1, 2]));
        assert!(note.contains("damaged"), "{note}");
    }

    proptest::proptest! {
        /// Whatever a damaged file holds, `load` never panics, says what is wrong when it
        /// refuses it, and takes only sites whose op the layout names.
        #[test]
        fn a_damaged_file_is_refused_or_sound(
            cut in 0usize..400,
            flips in proptest::collection::vec((0usize..400, proptest::num::u8::ANY), 0..4),
        ) {
            let dir = dir(&format!("prop-{cut}"));
            let key = Key::new("ab12".into(), "boot-1".into(), &layout());
            store(&dir, &key, &discovery()).unwrap();
            let file = key.file(&dir, PHY_OPS);
            let mut bytes = fs::read(&file).unwrap();
            for (at, byte) in flips {
                if let Some(b) = bytes.get_mut(at) {
                    *b = byte;
                }
            }
            bytes.truncate(cut.max(1) * bytes.len() / 400);
            fs::write(&file, &bytes).unwrap();
            let lookup = load(&dir, &key, &layout());
            fs::remove_dir_all(&dir).unwrap();
            match lookup {
                Lookup::Hit(discovery) => {
                    for site in &discovery.sites {
                        proptest::prop_assert!(usize::from(site.found.op) < layout().names.len());
                    }
                }
                Lookup::Damaged(why) => proptest::prop_assert!(!why.trim().is_empty()),
                Lookup::Miss => {}
            }
        }
    }
}
