//! The BTF fixture of phytrace's reader tests: Debian 7.3's own vmlinux BTF, cut down to the
//! types phytrace looks up and everything they embed (`cargo xtask stock --btf-fixture`).
//!
//! The records are the kernel's, byte for byte, except that type ids are renumbered and
//! pointers point to `void` (what a pointer points to does not change any offset, and not
//! following pointers keeps the closure to a few hundred types). Member offsets, sizes,
//! bitfields and enumerators are therefore those of the real kernel.

use std::{collections::BTreeMap, fs, path::Path};

use anyhow::{Context as _, Result, bail};

/// The names phytrace's BTF reader looks up (`phytrace/src/probe/btf.rs`, `WANTED`).
const ROOTS: &[&str] = &[
    "phy_device",
    "mdio_device",
    "mii_bus",
    "phy_driver",
    "phy_state",
    "module",
    "net_device",
    "__mdiobus_read",
    "__mdiobus_write",
    "__mdiobus_c45_read",
    "__mdiobus_c45_write",
    "bpf_rdonly_cast",
];

/// Where the fixture lives in the workspace.
pub const FIXTURE: &str = "phytrace/tests/data/btf/debian-7.3.4+deb13-amd64-phylib.btf";

const HEADER_LEN: usize = 24;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

/// One type record of the source blob.
struct Record<'a> {
    bytes: &'a [u8],
    kind: u32,
    vlen: usize,
}

fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn set_word(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// The records of `types`, by id from 1 (the kinds of Linux 7.3; 7-bit kind, 24-bit vlen).
fn records(types: &[u8]) -> Result<Vec<Record<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < types.len() {
        let info = word(types, at + 4);
        let (kind, vlen) = ((info >> 24) & 0x7f, (info & 0xff_ffff) as usize);
        let trailing = match kind {
            1 | 14 | 17 => 4,
            ARRAY => 12,
            STRUCT | UNION | 15 | ENUM64 => 12 * vlen,
            ENUM | FUNC_PROTO => 8 * vlen,
            PTR | 7 | TYPEDEF | VOLATILE | CONST | RESTRICT | FUNC | 16 | TYPE_TAG => 0,
            _ => bail!("kind {kind} at byte {at}: not a Linux 7.3 kind"),
        };
        let end = at + 12 + trailing;
        out.push(Record {
            bytes: types
                .get(at..end)
                .context("a record runs past the type section")?,
            kind,
            vlen,
        });
        at = end;
    }
    Ok(out)
}

/// Offsets (in a record) of the type ids it refers to.
fn type_refs(r: &Record) -> Vec<usize> {
    match r.kind {
        TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG | FUNC => vec![8],
        ARRAY => vec![12, 16],
        STRUCT | UNION => (0..r.vlen).map(|i| 12 + 12 * i + 4).collect(),
        FUNC_PROTO => std::iter::once(8)
            .chain((0..r.vlen).map(|i| 12 + 8 * i + 4))
            .collect(),
        _ => Vec::new(),
    }
}

/// Offsets (in a record) of the string offsets it holds.
fn name_refs(r: &Record) -> Vec<usize> {
    let each = match r.kind {
        STRUCT | UNION | ENUM64 => 12,
        ENUM | FUNC_PROTO => 8,
        _ => 0,
    };
    std::iter::once(0)
        .chain((0..if each > 0 { r.vlen } else { 0 }).map(|i| 12 + each * i))
        .collect()
}

fn name(strings: &[u8], off: u32) -> &[u8] {
    let rest = &strings[off as usize..];
    &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())]
}

/// The cut-down blob of `source` (a whole vmlinux BTF, native = little-endian byte order).
pub fn cut(source: &[u8]) -> Result<Vec<u8>> {
    if source.len() < HEADER_LEN || source[..2] != [0x9f, 0xeb] {
        bail!("not little-endian BTF");
    }
    let header_len = word(source, 4) as usize;
    let section = |off: usize, len: usize| -> Result<&[u8]> {
        source
            .get(header_len + word(source, off) as usize..)
            .and_then(|rest| rest.get(..word(source, len) as usize))
            .context("a section lies outside the blob")
    };
    let (types, strings) = (section(8, 12)?, section(16, 20)?);
    let recs = records(types)?;
    // The roots: definitions (not forward declarations) of the names phytrace reads.
    let mut stack: Vec<usize> = recs
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(r.kind, STRUCT | ENUM | ENUM64 | FUNC)
                && (r.kind != STRUCT || r.vlen > 0)
                && ROOTS
                    .iter()
                    .any(|root| name(strings, word(r.bytes, 0)) == root.as_bytes())
        })
        .map(|(i, _)| i + 1)
        .collect();
    let mut kept = BTreeMap::new();
    while let Some(id) = stack.pop() {
        if id == 0 || kept.contains_key(&id) {
            continue;
        }
        kept.insert(id, 0u32);
        let r = recs.get(id - 1).context("a type id past the last type")?;
        if r.kind != PTR {
            stack.extend(type_refs(r).iter().map(|&at| word(r.bytes, at) as usize));
        }
    }
    for (new, id) in kept.values_mut().zip(1..) {
        *new = id;
    }
    let mut out_types = Vec::new();
    let mut out_strings = vec![0u8];
    let mut interned: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    for &id in kept.keys() {
        let r = &recs[id - 1];
        let mut bytes = r.bytes.to_vec();
        if r.kind == PTR {
            set_word(&mut bytes, 8, 0);
        }
        for at in type_refs(r) {
            let old = word(&bytes, at) as usize;
            let new = if old == 0 { 0 } else { kept[&old] };
            set_word(&mut bytes, at, new);
        }
        for at in name_refs(r) {
            let text = name(strings, word(&bytes, at)).to_vec();
            let off = if text.is_empty() {
                0
            } else {
                *interned.entry(text.clone()).or_insert_with(|| {
                    let off = out_strings.len() as u32;
                    out_strings.extend_from_slice(&text);
                    out_strings.push(0);
                    off
                })
            };
            set_word(&mut bytes, at, off);
        }
        out_types.extend_from_slice(&bytes);
    }
    let mut blob = Vec::with_capacity(HEADER_LEN + out_types.len() + out_strings.len());
    blob.extend_from_slice(&source[..4]); // magic, version, flags
    for value in [
        HEADER_LEN as u32,
        0,
        out_types.len() as u32,
        out_types.len() as u32,
        out_strings.len() as u32,
    ] {
        blob.extend_from_slice(&value.to_le_bytes());
    }
    blob.extend_from_slice(&out_types);
    blob.extend_from_slice(&out_strings);
    Ok(blob)
}

/// Writes the fixture from the stock kernel's BTF at `source`.
pub fn write(source: &Path, workspace: &Path) -> Result<()> {
    let blob = cut(&fs::read(source).with_context(|| format!("reading {}", source.display()))?)?;
    let out = workspace.join(FIXTURE);
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(&out, &blob)?;
    eprintln!("    {} ({} bytes)", out.display(), blob.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// int; struct phy_device { int a; phy_device *next; }; the pointer; two typedefs.
    fn blob() -> Vec<u8> {
        // Offsets: int 1, phy_device 5, a 16, next 18, t 23, other 25.
        let strings = b"\0int\0phy_device\0a\0next\0t\0other\0";
        let mut types = Vec::new();
        let mut rec = |words: &[u32]| {
            for w in words {
                types.extend_from_slice(&w.to_le_bytes());
            }
        };
        rec(&[1, 1 << 24, 4, 32]); // 1: int
        rec(&[5, (STRUCT << 24) | 2, 16, 16, 1, 0, 18, 3, 64]); // 2: struct phy_device
        rec(&[0, PTR << 24, 2]); // 3: phy_device *
        rec(&[23, TYPEDEF << 24, 2]); // 4: typedef t (nothing refers to it)
        rec(&[25, TYPEDEF << 24, 1]); // 5: typedef other
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for w in [
            24,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&types);
        b.extend_from_slice(strings);
        b
    }

    #[test]
    fn keeps_the_closure_and_cuts_pointers() {
        let cut = cut(&blob()).unwrap();
        let types_len = word(&cut, 12) as usize;
        let recs = records(&cut[24..24 + types_len]).unwrap();
        // int, the struct, the pointer (now to void); not the typedefs.
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].kind, STRUCT);
        assert_eq!(word(recs[1].bytes, 16), 1, "a: int");
        assert_eq!(word(recs[1].bytes, 28), 3, "next: the pointer");
        assert_eq!(word(recs[1].bytes, 32), 64, "offsets kept");
        assert_eq!(word(recs[2].bytes, 8), 0, "the pointer points to void");
        let strings = &cut[24 + types_len..];
        assert_eq!(name(strings, word(recs[1].bytes, 0)), b"phy_device");
        assert_eq!(name(strings, word(recs[1].bytes, 24)), b"next");
        assert_eq!(strings, b"\0int\0phy_device\0a\0next\0");
    }
}
