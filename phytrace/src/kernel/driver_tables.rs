//! The `struct phy_driver` tables a module file defines, C or Rust: each driver's name, PHY ID
//! and the functions its ops point to, read from the file's symbols and relocations with the
//! struct's layout from the kernel's BTF. No module needs to be loaded, and nothing of the
//! kernel's memory is read.

use std::collections::BTreeMap;

use anyhow::Result;
use object::{
    Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget, SymbolKind, SymbolSection,
};

use super::{btf::KernelBtf, code::OPS};

/// Where `struct phy_driver` keeps what is read here, from the kernel's BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverLayout {
    /// `sizeof(struct phy_driver)`.
    pub size: u32,
    pub name: u32,
    pub phy_id: u32,
    pub phy_id_mask: u32,
    /// The offset of each op of [`OPS`] this kernel has.
    pub ops: Vec<(&'static str, u32)>,
}

impl DriverLayout {
    /// The layout of this kernel's `struct phy_driver`.
    pub fn from_btf(btf: &KernelBtf) -> Result<Self> {
        Ok(Self {
            size: btf.struct_size("phy_driver")?,
            name: btf.member_offset("phy_driver", &["name"])?,
            phy_id: btf.member_offset("phy_driver", &["phy_id"])?,
            phy_id_mask: btf.member_offset("phy_driver", &["phy_id_mask"])?,
            ops: OPS
                .iter()
                .filter_map(|&op| Some((op, btf.phy_driver_op(op)?)))
                .collect(),
        })
    }
}

/// One `struct phy_driver` of a module file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverTable {
    /// Its `name`: the driver's name in sysfs (`/sys/bus/mdio_bus/drivers/NAME`).
    pub name: String,
    pub phy_id: u32,
    pub phy_id_mask: u32,
    /// Each op it sets, in [`OPS`]' order, with the function it points to (a Rust driver's
    /// callbacks demangled, without their hash).
    pub ops: Vec<(&'static str, String)>,
}

/// The relocations of one section: offset in it → (target symbol, addend).
type Relocations = BTreeMap<u64, (object::SymbolIndex, i64)>;

/// The `struct phy_driver` tables the ELF object `data` (a module file) defines, in the order
/// of its symbols and their entries.
pub fn read(data: &[u8], layout: &DriverLayout) -> Result<Vec<DriverTable>, String> {
    let file = object::File::parse(data).map_err(|err| err.to_string())?;
    let mut relocations: BTreeMap<usize, Relocations> = BTreeMap::new();
    for section in file.sections() {
        for (offset, relocation) in section.relocations() {
            if let RelocationTarget::Symbol(symbol) = relocation.target() {
                relocations
                    .entry(section.index().0)
                    .or_default()
                    .insert(offset, (symbol, relocation.addend()));
            }
        }
    }
    let size = u64::from(layout.size);
    let mut tables = Vec::new();
    for symbol in file.symbols() {
        let SymbolSection::Section(index) = symbol.section() else {
            continue;
        };
        let Some(relocated) = relocations.get(&index.0) else {
            continue;
        };
        if symbol.kind() != SymbolKind::Data || size == 0 || symbol.size() % size != 0 {
            continue;
        }
        let Ok(bytes) = file.section_by_index(index).and_then(|s| s.data()) else {
            continue;
        };
        let entries: Option<Vec<DriverTable>> = (0..symbol.size() / size)
            .map(|n| {
                let base = symbol.address() + n * size;
                entry(&file, bytes, relocated, base, layout)
            })
            .collect();
        tables.extend(entries.unwrap_or_default());
    }
    Ok(tables)
}

/// The `struct phy_driver` at `base` of a section (`bytes`, `relocated`), if it is one: a name
/// that points at a string and at least one op.
fn entry(
    file: &object::File<'_>,
    bytes: &[u8],
    relocated: &Relocations,
    base: u64,
    layout: &DriverLayout,
) -> Option<DriverTable> {
    let name = relocated
        .get(&(base + u64::from(layout.name)))
        .and_then(|&(symbol, addend)| string_at(file, symbol, addend))?;
    let ops: Vec<(&'static str, String)> = layout
        .ops
        .iter()
        .filter_map(|&(op, offset)| {
            let &(symbol, addend) = relocated.get(&(base + u64::from(offset)))?;
            Some((op, function_at(file, symbol, addend)?))
        })
        .collect();
    if ops.is_empty() {
        return None;
    }
    let word = |offset: u32| -> Option<u32> {
        let at = usize::try_from(base + u64::from(offset)).ok()?;
        let raw: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if file.is_little_endian() {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        })
    };
    Some(DriverTable {
        name,
        phy_id: word(layout.phy_id)?,
        phy_id_mask: word(layout.phy_id_mask)?,
        ops,
    })
}

/// The NUL-terminated string a relocation to `symbol` + `addend` points at.
fn string_at(file: &object::File<'_>, symbol: object::SymbolIndex, addend: i64) -> Option<String> {
    let symbol = file.symbol_by_index(symbol).ok()?;
    let SymbolSection::Section(index) = symbol.section() else {
        return None;
    };
    let data = file.section_by_index(index).ok()?.data().ok()?;
    let start = usize::try_from(symbol.address().checked_add_signed(addend)?).ok()?;
    let text = data.get(start..)?;
    let end = memchr::memchr(0, text)?;
    String::from_utf8(text[..end].to_vec())
        .ok()
        .filter(|s| !s.is_empty())
}

/// The function a relocation to `symbol` + `addend` points at: the symbol itself (the
/// module's or, undefined, the kernel's), or the function at `addend` in a section symbol's
/// section.
fn function_at(
    file: &object::File<'_>,
    symbol: object::SymbolIndex,
    addend: i64,
) -> Option<String> {
    let target = file.symbol_by_index(symbol).ok()?;
    let named = match target.kind() {
        // A function of the module, or of the kernel (`genphy_suspend`: undefined here).
        SymbolKind::Text | SymbolKind::Unknown if addend == 0 => target,
        SymbolKind::Section => {
            let index = target.section_index()?;
            let address = u64::try_from(addend).ok()?;
            file.symbols().find(|s| {
                s.kind() == SymbolKind::Text
                    && s.section_index() == Some(index)
                    && s.address() == address
            })?
        }
        _ => return None,
    };
    let name = named.name().ok()?;
    Some(format!("{:#}", rustc_demangle::demangle(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relocatable ELF object built with `object::write`: a `.data` array of two drivers of
    /// `layout`, the first with two ops (one through the `.text` section symbol), the second
    /// with one, plus a data symbol that is no driver.
    fn module(layout: &DriverLayout) -> Vec<u8> {
        use object::write::{Object, Relocation, StandardSection, Symbol, SymbolSection};
        use object::{
            Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags,
            RelocationKind, SymbolFlags, SymbolScope,
        };
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        let rodata = obj.section_id(StandardSection::ReadOnlyString);
        let data = obj.section_id(StandardSection::Data);
        let function = |obj: &mut Object<'_>, name: &str, at: u64| {
            obj.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value: at,
                size: 16,
                kind: SymbolKind::Text,
                scope: SymbolScope::Compilation,
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            })
        };
        obj.append_section_data(text, &[0xc3; 64], 16);
        let reset = function(&mut obj, "asix_soft_reset", 0);
        function(&mut obj, "asix_read_status", 16);
        let rust = function(
            &mut obj,
            "_RNvMs_NtNtCs1234567890a_6kernel3net3phyINtB4_7AdapterNtCs0987654321b_13ax88796b_rust11PhyAX88772AE20read_status_callback",
            32,
        );
        let kernel = crate::kernel::test_elf::undefined(&mut obj, "genphy_suspend");
        let names = obj.append_section_data(rodata, b"PHY A\0PHY B\0", 1);
        let size = layout.size as usize;
        let mut table = vec![0u8; 2 * size + 8];
        table[layout.phy_id as usize..][..4].copy_from_slice(&0x003b_1861u32.to_le_bytes());
        table[layout.phy_id_mask as usize..][..4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        let table_at = obj.append_section_data(data, &table, 8);
        obj.add_symbol(Symbol {
            name: b"drivers".to_vec(),
            value: table_at,
            size: 2 * layout.size as u64,
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(data),
            flags: SymbolFlags::None,
        });
        obj.add_symbol(Symbol {
            name: b"not_a_driver".to_vec(),
            value: table_at + 2 * layout.size as u64,
            size: 8,
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(data),
            flags: SymbolFlags::None,
        });
        let rodata_symbol = obj.section_symbol(rodata);
        let text_symbol = obj.section_symbol(text);
        let op = |name: &str| layout.ops.iter().find(|(op, _)| *op == name).unwrap().1;
        let flags = RelocationFlags::Generic {
            kind: RelocationKind::Absolute,
            encoding: RelocationEncoding::Generic,
            size: 64,
        };
        let second = table_at + layout.size as u64;
        for (offset, symbol, addend) in [
            (table_at + layout.name as u64, rodata_symbol, names as i64),
            (table_at + op("soft_reset") as u64, reset, 0),
            (table_at + op("read_status") as u64, text_symbol, 16),
            (second + layout.name as u64, rodata_symbol, names as i64 + 6),
            (second + op("read_status") as u64, rust, 0),
            (second + op("suspend") as u64, kernel, 0),
        ] {
            obj.add_relocation(
                data,
                Relocation {
                    offset,
                    symbol,
                    addend,
                    flags,
                },
            )
            .unwrap();
        }
        obj.write().unwrap()
    }

    fn layout() -> DriverLayout {
        DriverLayout {
            size: 64,
            name: 8,
            phy_id: 0,
            phy_id_mask: 4,
            ops: vec![("soft_reset", 16), ("read_status", 24), ("suspend", 32)],
        }
    }

    #[test]
    fn tables_name_each_op_function_c_or_rust() {
        let layout = layout();
        let tables = read(&module(&layout), &layout).unwrap();
        assert_eq!(
            tables,
            [
                DriverTable {
                    name: "PHY A".into(),
                    phy_id: 0x003b_1861,
                    phy_id_mask: 0xffff_fff0,
                    ops: vec![
                        ("soft_reset", "asix_soft_reset".into()),
                        ("read_status", "asix_read_status".into())
                    ],
                },
                DriverTable {
                    name: "PHY B".into(),
                    phy_id: 0,
                    phy_id_mask: 0,
                    ops: vec![
                        (
                            "read_status",
                            "<kernel::net::phy::Adapter<ax88796b_rust::PhyAX88772A>>::read_status_callback"
                                .into()
                        ),
                        ("suspend", "genphy_suspend".into())
                    ],
                },
            ]
        );
    }

    #[test]
    fn damaged_files_are_errors_not_panics() {
        let layout = layout();
        let whole = module(&layout);
        assert!(read(b"not elf", &layout).is_err());
        for len in (0..whole.len()).step_by(97) {
            let _ = read(&whole[..len], &layout);
        }
    }
}
