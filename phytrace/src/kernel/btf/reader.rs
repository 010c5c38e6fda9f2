//! A lean reader of the BTF format (`include/uapi/linux/btf.h`, `Documentation/bpf/btf.rst`),
//! as Linux 7.3 defines it: a 7-bit kind and a 24-bit vlen in `btf_type.info`, and a header
//! that may be longer than the original 24 bytes and then may name a layout section (one
//! `struct btf_layout` per kind: the bytes following a record's fixed part), through which
//! records of kinds newer than this reader are skipped instead of misread.
//!
//! [`Btf::parse`] walks the type section once, recording where each type's record starts and
//! which struct, union, enum and forward declarations carry one of the names asked for.
//! Everything else (members, enumerators, names) is decoded on demand. Every read is bounds
//! checked: malformed input gives an error, never a panic. Only native byte order is read,
//! which is what the running kernel publishes.

use std::ops::Range;

use anyhow::{Context as _, Result, anyhow, bail};

/// `btf_header.magic` in native byte order.
const MAGIC: u16 = 0xeb9f;
/// The only BTF version there is.
const VERSION: u8 = 1;
/// Size of `struct btf_header` without the layout section's fields (before Linux 7.3).
const HEADER_LEN: usize = 24;
/// Size of `struct btf_header` with `layout_off` and `layout_len` (Linux 7.3).
const HEADER_LAYOUT_LEN: usize = 32;
/// Size of `struct btf_layout`: `info_sz` (u8), `elem_sz` (u8), `flags` (u16).
const LAYOUT_LEN: usize = 4;
/// `btf_type.info`: bits 24–30 are the kind, bits 0–23 the vlen.
const KIND_MASK: u32 = 0x7f;
const VLEN_MASK: u32 = 0xff_ffff;
/// Size of `struct btf_type`, the part every type record starts with.
const TYPE_LEN: usize = 12;
/// Longest typedef/const/volatile chain followed before giving up (a loop in malformed input).
const MAX_CHAIN: usize = 64;

// The `BTF_KIND_*` values (bits 24–30 of `btf_type.info`).
pub const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
pub const STRUCT: u32 = 4;
pub const UNION: u32 = 5;
pub const ENUM: u32 = 6;
const FWD: u32 = 7;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
pub const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const FLOAT: u32 = 16;
const DECL_TAG: u32 = 17;
const TYPE_TAG: u32 = 18;
pub const ENUM64: u32 = 19;

/// What follows a type record's fixed part, per kind, from a layout section: (`info_sz`,
/// `elem_sz`), indexed by kind.
type Layout = Vec<(u8, u8)>;

/// A BTF blob with an index of its type records.
pub struct Btf {
    data: Vec<u8>,
    types: Range<usize>,
    strings: Range<usize>,
    /// The layout section (empty: none).
    layout: Range<usize>,
    /// Offset in the type section of the record of type id `i + 1` (id 0 is `void`).
    records: Vec<u32>,
    named: Named,
}

/// For each wanted name, the ids of the struct/union/enum/fwd/func types carrying it.
type Named = Vec<(String, Vec<u32>)>;

/// One type record, decoded from its fixed part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Type {
    /// The type id.
    pub id: u32,
    /// `BTF_KIND_*`.
    pub kind: u32,
    /// `kind_flag`: bitfield encoding in members for structs and unions, signedness for enums.
    pub kflag: bool,
    /// Number of members, enumerators or parameters.
    pub vlen: u32,
    /// Offset of the name in the string section (0: anonymous).
    pub name_off: u32,
    /// Size in bytes (ints, structs, unions, enums) or the referenced type id (typedef, ...).
    pub size_or_type: u32,
    /// Offset in the type section of the data following the fixed part.
    body: usize,
}

/// One member of a struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Offset of the name in the string section (0: anonymous).
    pub name_off: u32,
    /// The member's type id.
    pub type_id: u32,
    /// Offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Width of a bitfield in bits; 0 when not a bitfield, or when the struct's `kind_flag` is
    /// clear (then the member's int type holds the width).
    pub bitfield_size: u32,
}

/// The `u32` at `at` in `bytes`, in native byte order.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    Some(u32::from_ne_bytes(bytes.get(at..end)?.try_into().ok()?))
}

/// What follows the fixed part of a record of `kind`, as (bytes once, bytes per vlen entry),
/// `None` for a kind this reader does not know.
fn known_layout(kind: u32) -> Option<(u8, u8)> {
    Some(match kind {
        INT | VAR | DECL_TAG => (4, 0),
        ARRAY => (12, 0),
        STRUCT | UNION | DATASEC | ENUM64 => (0, 12),
        ENUM | FUNC_PROTO => (0, 8),
        PTR | FWD | TYPEDEF | VOLATILE | CONST | RESTRICT | FUNC | FLOAT | TYPE_TAG => (0, 0),
        _ => return None,
    })
}

/// Bytes following the fixed part of record `id` of `kind` with `vlen` entries: by this
/// reader's knowledge of the kind, else by the blob's layout section; an error for a kind
/// neither describes.
fn trailing_len(id: usize, kind: u32, vlen: u32, layout: &Layout) -> Result<usize> {
    let (once, each) = match known_layout(kind) {
        Some(sizes) => sizes,
        None => *layout.get(kind as usize).ok_or_else(|| {
            anyhow!(
                "BTF type {id} has unknown kind {kind}{}",
                if layout.is_empty() {
                    " (and the BTF has no layout section describing it)"
                } else {
                    ", which the BTF's layout section does not describe either"
                }
            )
        })?,
    };
    Ok(usize::from(once) + usize::from(each) * vlen as usize)
}

/// The layout section `range` of `data`: one (`info_sz`, `elem_sz`) per kind. Sizes that are
/// not whole words, or that contradict what this reader knows of a kind, are errors: such a
/// blob is laid out differently from what this reader understands.
fn parse_layout(data: &[u8], range: Range<usize>) -> Result<Layout> {
    let bytes = data.get(range).unwrap_or_default();
    if !bytes.len().is_multiple_of(LAYOUT_LEN) {
        bail!(
            "the BTF layout section is {} bytes, not a whole number of {LAYOUT_LEN}-byte entries",
            bytes.len()
        );
    }
    let layout: Layout = bytes
        .chunks_exact(LAYOUT_LEN)
        .map(|entry| (entry[0], entry[1]))
        .collect();
    for (kind, &(once, each)) in layout.iter().enumerate() {
        if !once.is_multiple_of(4) || !each.is_multiple_of(4) {
            bail!("the BTF layout section gives kind {kind} sizes {once}+{each}: not whole words");
        }
        // Kind 0 (`BTF_KIND_UNKN`) is listed with zero sizes and never used.
        if let Some(known) = known_layout(kind as u32).filter(|_| kind != 0)
            && known != (once, each)
        {
            bail!(
                "the BTF layout section gives kind {kind} {once} bytes + {each} per entry, \
                 this reader knows it as {} + {}",
                known.0,
                known.1
            );
        }
    }
    Ok(layout)
}

/// Whether the NUL-terminated string at `off` in `strings` is `want`.
fn name_is(strings: &[u8], off: usize, want: &str) -> bool {
    let want = want.as_bytes();
    strings
        .get(off..)
        .is_some_and(|rest| rest.starts_with(want) && rest.get(want.len()) == Some(&0))
}

/// The first four bytes of a NUL-terminated name, as [`u32_at`] reads them, and which of them
/// a name must match (fewer for a name shorter than four bytes, whose NUL is then compared).
#[derive(Clone, Copy)]
struct Prefix {
    bits: u32,
    mask: u32,
}

impl Prefix {
    fn of(name: &str) -> Self {
        let mut bytes = [0u8; 4];
        let mut mask = [0u8; 4];
        for (at, byte) in name.bytes().chain([0]).take(4).enumerate() {
            bytes[at] = byte;
            mask[at] = 0xff;
        }
        Self {
            bits: u32::from_ne_bytes(bytes),
            mask: u32::from_ne_bytes(mask),
        }
    }
}

/// The section `off`, `len` (relative to the end of the header) checked against `data`.
fn section(data: &[u8], header_len: usize, off: u32, len: u32, what: &str) -> Result<Range<usize>> {
    let start = header_len.checked_add(off as usize);
    let end = start.and_then(|start| start.checked_add(len as usize));
    match (start, end) {
        (Some(start), Some(end)) if end <= data.len() => Ok(start..end),
        _ => bail!(
            "the {what} section ({len} bytes at {off}) lies outside the {} bytes of BTF",
            data.len()
        ),
    }
}

/// The single pass over the type section `types`: where each type's record starts (by id,
/// from 1) and, for each `wanted` name, the ids of the structs, unions, enums, forward
/// declarations and functions carrying it (names are in `strings`).
fn index(
    types: &[u8],
    strings: &[u8],
    layout: &Layout,
    wanted: &[&str],
) -> Result<(Vec<u32>, Named)> {
    let mut records = Vec::with_capacity(types.len() / TYPE_LEN);
    let mut named: Named = wanted
        .iter()
        .map(|name| (name.to_string(), Vec::new()))
        .collect();
    let prefixes: Vec<Prefix> = wanted.iter().map(|name| Prefix::of(name)).collect();
    let mut at = 0;
    while at < types.len() {
        let id = records.len() + 1;
        let (Some(name_off), Some(info)) = (u32_at(types, at), u32_at(types, at + 4)) else {
            bail!("BTF type {id} is cut off by the end of the type section");
        };
        let kind = (info >> 24) & KIND_MASK;
        let trailing = trailing_len(id, kind, info & VLEN_MASK, layout)?;
        let end = at
            .checked_add(TYPE_LEN)
            .and_then(|end| end.checked_add(trailing))
            .unwrap_or(usize::MAX);
        if end > types.len() {
            bail!("BTF type {id} is cut off by the end of the type section");
        }
        if matches!(kind, STRUCT | UNION | ENUM | ENUM64 | FWD | FUNC) && name_off != 0 {
            // Most names differ from every wanted one in their first four bytes: one integer
            // compare each instead of a string compare (the kernel's BTF has ~60 000 such).
            let head = u32_at(strings, name_off as usize);
            for ((name, ids), &prefix) in named.iter_mut().zip(&prefixes) {
                if head.is_none_or(|head| head & prefix.mask == prefix.bits)
                    && name_is(strings, name_off as usize, name)
                {
                    ids.push(id as u32);
                }
            }
        }
        // The type section is at most `u32::MAX` bytes long.
        records.push(at as u32);
        at = end;
    }
    Ok((records, named))
}

impl Btf {
    /// Checks the header of `data` and indexes its types, noting the ids of the structs,
    /// unions, enums, forward declarations and functions named in `wanted`.
    pub fn parse(data: Vec<u8>, wanted: &[&str]) -> Result<Self> {
        let header = data
            .get(..HEADER_LEN)
            .ok_or_else(|| anyhow!("{} bytes are too short for a BTF header", data.len()))?;
        let magic = u16::from_ne_bytes([header[0], header[1]]);
        if magic == MAGIC.swap_bytes() {
            bail!("the BTF is in foreign byte order");
        }
        if magic != MAGIC {
            bail!("not BTF (magic {magic:#06x}, expected {MAGIC:#06x})");
        }
        if header[2] != VERSION {
            bail!(
                "BTF version {} is not supported (only {VERSION})",
                header[2]
            );
        }
        let field = |at| u32_at(header, at).unwrap_or_default();
        let header_len = field(4) as usize;
        if header_len < HEADER_LEN || header_len > data.len() {
            bail!("BTF header length {header_len} is out of range");
        }
        let types = section(&data, header_len, field(8), field(12), "type")?;
        let strings = section(&data, header_len, field(16), field(20), "string")?;
        // A header long enough to have them names the layout section (Linux 7.3); a longer
        // header's further fields are for later kernels and not needed to read the types.
        let long_field = |at| u32_at(&data[..header_len], at).unwrap_or_default();
        let (layout, layout_range) = if header_len >= HEADER_LAYOUT_LEN && long_field(28) > 0 {
            let (off, len) = (long_field(24), long_field(28));
            let range = section(&data, header_len, off, len, "layout")?;
            if range.start < types.end || range.end > strings.start || !off.is_multiple_of(4) {
                bail!(
                    "the BTF layout section ({len} bytes at {off}) does not lie aligned between \
                     the type and string sections"
                );
            }
            (parse_layout(&data, range.clone())?, range)
        } else {
            (Layout::new(), 0..0)
        };
        let (records, named) = index(
            data.get(types.clone()).unwrap_or_default(),
            data.get(strings.clone()).unwrap_or_default(),
            &layout,
            wanted,
        )?;
        Ok(Self {
            data,
            types,
            strings,
            layout: layout_range,
            records,
            named,
        })
    }

    /// Split BTF `split` (a module's, `/sys/kernel/btf/MODULE`) on top of this base (vmlinux's),
    /// indexed as one blob: its type ids continue the base's and its string offsets start at
    /// the end of the base's strings, so the base's sections followed by the split's are the
    /// BTF they describe together.
    pub fn with_split(&self, split: &[u8], wanted: &[&str]) -> Result<Self> {
        let split = Self::parse(split.to_vec(), &[]).context("the module's BTF")?;
        if !split.layout.is_empty()
            && split.data.get(split.layout.clone()) != self.data.get(self.layout.clone())
        {
            bail!("the module's BTF layout section differs from the base's");
        }
        let parts = [
            self.type_section(),
            split.type_section(),
            self.data.get(self.layout.clone()).unwrap_or_default(),
            self.string_section(),
            split.string_section(),
        ];
        let header_len = if self.layout.is_empty() {
            HEADER_LEN
        } else {
            HEADER_LAYOUT_LEN
        };
        let types_len = parts[0].len() + parts[1].len();
        let layout_len = parts[2].len();
        let strings_len = parts[3].len() + parts[4].len();
        let mut header = vec![0u8; header_len];
        header[..2].copy_from_slice(&MAGIC.to_ne_bytes());
        header[2] = VERSION;
        let mut fields = vec![
            header_len,
            0,
            types_len,
            types_len + layout_len,
            strings_len,
        ];
        if header_len == HEADER_LAYOUT_LEN {
            fields.extend([types_len, layout_len]);
        }
        for (at, value) in fields.into_iter().enumerate() {
            let value = u32::try_from(value).context("BTF too large")?;
            header[4 + 4 * at..8 + 4 * at].copy_from_slice(&value.to_ne_bytes());
        }
        let mut data = header;
        parts.iter().for_each(|part| data.extend_from_slice(part));
        Self::parse(data, wanted)
    }

    /// How many types the blob has (ids 1 to this).
    pub fn type_count(&self) -> u32 {
        self.records.len() as u32
    }

    fn type_section(&self) -> &[u8] {
        self.data.get(self.types.clone()).unwrap_or_default()
    }

    fn string_section(&self) -> &[u8] {
        self.data.get(self.strings.clone()).unwrap_or_default()
    }

    /// Ids of the structs, unions, enums, forward declarations and functions called `name`, in id order
    /// (empty unless `name` was asked for in [`Btf::parse`]).
    pub fn named(&self, name: &str) -> &[u32] {
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, ids)| ids)
    }

    /// The type `id`.
    pub fn get(&self, id: u32) -> Result<Type> {
        let at = id
            .checked_sub(1)
            .and_then(|index| self.records.get(index as usize))
            .ok_or_else(|| anyhow!("BTF type id {id} does not exist"))?;
        let at = *at as usize;
        let types = self.type_section();
        let field = |n: usize| u32_at(types, at + 4 * n).context("BTF type record out of bounds");
        let info = field(1)?;
        Ok(Type {
            id,
            kind: (info >> 24) & KIND_MASK,
            kflag: info >> 31 == 1,
            vlen: info & VLEN_MASK,
            name_off: field(0)?,
            size_or_type: field(2)?,
            body: at + TYPE_LEN,
        })
    }

    /// The type `id` with typedefs, qualifiers and type tags stripped.
    pub fn resolve(&self, id: u32) -> Result<Type> {
        let mut ty = self.get(id)?;
        for _ in 0..MAX_CHAIN {
            if !matches!(ty.kind, TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG) {
                return Ok(ty);
            }
            ty = self.get(ty.size_or_type)?;
        }
        bail!("BTF type {id} is a chain of more than {MAX_CHAIN} typedefs or qualifiers")
    }

    /// The NUL-terminated string at `off` in the string section.
    pub fn name(&self, off: u32) -> Result<&str> {
        let rest = self
            .string_section()
            .get(off as usize..)
            .ok_or_else(|| anyhow!("BTF string offset {off} is out of bounds"))?;
        let len = memchr::memchr(0, rest)
            .ok_or_else(|| anyhow!("BTF string at {off} is not terminated"))?;
        std::str::from_utf8(&rest[..len]).with_context(|| format!("BTF string at {off}"))
    }

    /// The `u32` at `index` of the data following the fixed part of `ty`.
    fn body_u32(&self, ty: &Type, index: usize) -> Result<u32> {
        u32_at(self.type_section(), ty.body + 4 * index)
            .ok_or_else(|| anyhow!("BTF type {} is cut off", ty.id))
    }

    /// The members of struct or union `ty`.
    pub fn members(&self, ty: &Type) -> Result<Vec<Member>> {
        if !matches!(ty.kind, STRUCT | UNION) {
            bail!("BTF type {} is not a struct or union", ty.id);
        }
        (0..ty.vlen as usize)
            .map(|i| {
                let offset = self.body_u32(ty, 3 * i + 2)?;
                let (bit_offset, bitfield_size) = if ty.kflag {
                    (offset & 0xff_ffff, offset >> 24)
                } else {
                    (offset, 0)
                };
                Ok(Member {
                    name_off: self.body_u32(ty, 3 * i)?,
                    type_id: self.body_u32(ty, 3 * i + 1)?,
                    bit_offset,
                    bitfield_size,
                })
            })
            .collect()
    }

    /// The bit offset and width of int `ty` (`BTF_INT_OFFSET`, `BTF_INT_BITS`).
    pub fn int_bits(&self, ty: &Type) -> Result<(u32, u32)> {
        if ty.kind != INT {
            bail!("BTF type {} is not an int", ty.id);
        }
        let encoding = self.body_u32(ty, 0)?;
        Ok(((encoding >> 16) & 0xff, encoding & 0xff))
    }

    /// The enumerators of enum or enum64 `ty`: name offset and value, signed if `kind_flag`
    /// says so.
    pub fn enumerators(&self, ty: &Type) -> Result<Vec<(u32, i128)>> {
        let (stride, wide) = match ty.kind {
            ENUM => (2, false),
            ENUM64 => (3, true),
            _ => bail!("BTF type {} is not an enum", ty.id),
        };
        (0..ty.vlen as usize)
            .map(|i| {
                let name_off = self.body_u32(ty, stride * i)?;
                let low = self.body_u32(ty, stride * i + 1)?;
                let value = match (wide, ty.kflag) {
                    (false, false) => i128::from(low),
                    (false, true) => i128::from(low as i32),
                    (true, signed) => {
                        let raw =
                            u64::from(self.body_u32(ty, stride * i + 2)?) << 32 | u64::from(low);
                        if signed {
                            i128::from(raw as i64)
                        } else {
                            i128::from(raw)
                        }
                    }
                };
                Ok((name_off, value))
            })
            .collect()
    }
}
