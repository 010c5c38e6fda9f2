//! A module's code read from its file, before the module loads: each executable section at an
//! address of this reader's choosing, with the relocations of its PC-relative calls and jumps
//! applied, so that a call of a retpoline thunk (an undefined symbol in the file) reads as the
//! kernel will run it. A site found here is a function and an offset in it, which hold wherever
//! the kernel places the module.

use std::{collections::BTreeMap, io};

use anyhow::{Context as _, Result, bail};
use object::{
    Object as _, ObjectSection as _, ObjectSymbol as _, RelocationFlags, RelocationKind,
    RelocationTarget, SectionKind, SymbolKind, elf,
};

use super::{text::KernelMemory, text_symbols::TextSymbols, x86};
use crate::kernel::kallsyms::Line;

/// Where the first section is placed; each next one a [`SECTION_SPACING`] further.
const FIRST_SECTION: u64 = 0xffff_ffff_c000_0000;
/// Room for each section (a module's sections are far smaller).
const SECTION_SPACING: u64 = 1 << 24;
/// Where the symbols the file uses but does not define are placed, one byte apart.
const EXTERNAL: u64 = 0xffff_ffff_8000_0000;

/// A module's executable sections, placed.
pub struct ModuleText {
    /// Each section's address and bytes.
    sections: Vec<(u64, Vec<u8>)>,
}

impl ModuleText {
    /// Reads the ELF object `data`, the file of module `module`: its code, and its functions
    /// (tagged with the module's name) and the thunks it calls at their places.
    pub fn parse(data: &[u8], module: &str) -> Result<(TextSymbols, Self)> {
        let file = object::File::parse(data).context("not an ELF object")?;
        let mut placed: BTreeMap<usize, u64> = BTreeMap::new();
        let mut sections = Vec::new();
        for section in file
            .sections()
            .filter(|section| section.kind() == SectionKind::Text)
        {
            let address = FIRST_SECTION + SECTION_SPACING * placed.len() as u64;
            let bytes = section.data().context("a text section's bytes")?;
            if bytes.len() as u64 >= SECTION_SPACING {
                bail!("the section {} is too large", section.name().unwrap_or("?"));
            }
            placed.insert(section.index().0, address);
            sections.push((section.index(), address, bytes.to_vec()));
        }
        if sections.is_empty() {
            bail!("the file has no code");
        }
        // What the module calls outside itself (the kernel's functions, the thunks), each at
        // an address of its own: a jump there leaves the function (`jmp __x86_return_thunk`
        // returns), as it does once the module is loaded.
        let mut external: BTreeMap<String, u64> = BTreeMap::new();
        let mut address_of = |symbol: &object::Symbol<'_, '_>| -> Option<u64> {
            let name = symbol.name().ok()?;
            if symbol.is_undefined() {
                let next = EXTERNAL + external.len() as u64;
                return Some(*external.entry(name.to_owned()).or_insert(next));
            }
            let base = placed.get(&symbol.section_index()?.0)?;
            base.checked_add(symbol.address())
        };
        let mut lines = Vec::new();
        for symbol in file.symbols() {
            if symbol.kind() != SymbolKind::Text || symbol.is_undefined() {
                continue;
            }
            if let (Ok(name), Some(address)) = (symbol.name(), address_of(&symbol)) {
                lines.push((address, name.to_owned()));
            }
        }
        for (index, address, bytes) in &mut sections {
            let section = file.section_by_index(*index)?;
            for (offset, relocation) in section.relocations() {
                let RelocationTarget::Symbol(target) = relocation.target() else {
                    continue;
                };
                let pc_relative = matches!(
                    relocation.kind(),
                    RelocationKind::Relative | RelocationKind::PltRelative
                ) || matches!(
                    relocation.flags(),
                    RelocationFlags::Elf {
                        r_type: elf::R_X86_64_PLT32 | elf::R_X86_64_PC32
                    }
                );
                if !pc_relative || relocation.size() != 32 {
                    continue;
                }
                let Some(target) = address_of(&file.symbol_by_index(target)?) else {
                    continue;
                };
                let field = usize::try_from(offset)
                    .ok()
                    .and_then(|at| Some(at..at.checked_add(4)?))
                    .filter(|field| field.end <= bytes.len())
                    .context("a relocation past its section's end")?;
                // Inside the section: its place is, too.
                let place = *address + offset;
                let value = target
                    .wrapping_add_signed(relocation.addend())
                    .wrapping_sub(place) as i64;
                let Ok(value) = i32::try_from(value) else {
                    bail!("a relocation at {offset:#x} does not fit its 32 bits");
                };
                bytes[field].copy_from_slice(&value.to_le_bytes());
            }
        }
        let thunk_lines = external
            .iter()
            .filter(|(name, _)| x86::thunk_register(name).is_some())
            .map(|(name, &address)| Line {
                address,
                kind: "T",
                name,
                module: None,
            });
        let function_lines = lines.iter().map(|(address, name)| Line {
            address: *address,
            kind: "t",
            name,
            module: Some(module),
        });
        let symbols = TextSymbols::from_lines(thunk_lines.chain(function_lines));
        let sections = sections
            .into_iter()
            .map(|(_, address, bytes)| (address, bytes))
            .collect();
        Ok((symbols, Self { sections }))
    }
}

impl KernelMemory for ModuleText {
    fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        self.sections
            .iter()
            .find(|(base, bytes)| address >= *base && address < base + bytes.len() as u64)
            .map(|(base, bytes)| {
                let from = (address - base) as usize;
                // A function's bounds run to the next symbol: at most to its section's end.
                bytes[from..bytes.len().min(from + len)].to_vec()
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no section of the module's file at {address:#x}"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use object::{
        Architecture, BinaryFormat, Endianness, RelocationEncoding, SymbolFlags, SymbolScope,
        write::{Object, Relocation, StandardSection, Symbol, SymbolSection},
    };

    use super::*;
    use crate::kernel::{
        code::{Isa, Layout, OPS, Return, discover_module},
        test_elf,
    };

    /// `phy_suspend` of Debian 13's `libphy.ko` (6.12.117+deb13-amd64), as its file holds it.
    const PHY_SUSPEND: [&str; 6] = [
        "f30f1efae8000000004155415455534883ec200fb68708040000654c8b2425280000004c896424184c8ba768030000c0",
        "e80583e0014d85e40f94c208d0742531c0488b54241865482b1425280000000f85c00000004883c4205b5d415c415de9",
        "00000000488d74240489c34889fd48c74424080000000048c7442410000000004c8bafb0050000c744240405000000e8",
        "000000008b44240c85c075684d85ed7410498b85800900000fb6403083e00189c30fb6950904000089d8c1e00483e2ef",
        "09d0888509040000a810740b41f68424b8000000087434498b8424f00000004885c00f8457ffffff4889efe800000000",
        "85c00f8549ffffff808d0804000020e93dffffffbb01000000eba6b8f0ffffffe92cffffffe800000000",
    ];
    /// Its calls and jumps outside itself: each a `R_X86_64_PLT32` at this offset.
    const CALLS: [(u64, &str); 5] = [
        (0x05, "__fentry__"),
        (0x60, "__x86_return_thunk"),
        (0x90, "phy_ethtool_get_wol"),
        (0xec, "__x86_indirect_thunk_rax"),
        (0x116, "__stack_chk_fail"),
    ];

    /// A relocatable object holding `phy_suspend` and its relocations.
    fn module() -> Vec<u8> {
        let code: Vec<u8> = PHY_SUSPEND
            .concat()
            .as_bytes()
            .chunks(2)
            .map(|hex| u8::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap())
            .collect();
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        let at = obj.append_section_data(text, &code, 16);
        obj.add_symbol(Symbol {
            name: b"phy_suspend".to_vec(),
            value: at,
            size: code.len() as u64,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        for (offset, name) in CALLS {
            let symbol = test_elf::undefined(&mut obj, name);
            let flags = RelocationFlags::Generic {
                kind: RelocationKind::PltRelative,
                encoding: RelocationEncoding::X86Branch,
                size: 32,
            };
            obj.add_relocation(
                text,
                Relocation {
                    offset: at + offset,
                    symbol,
                    addend: -4,
                    flags,
                },
            )
            .unwrap();
        }
        obj.write().unwrap()
    }

    /// Debian 13's `struct phy_device.drv` and `struct phy_driver.suspend`.
    fn layout() -> Layout {
        Layout {
            names: &OPS,
            ops: OPS
                .iter()
                .map(|op| (*op == "suspend").then_some(0xf0))
                .collect(),
            holders: vec![0x368],
            marker: Some(0x368),
            first_argument: None,
        }
    }

    #[test]
    fn a_call_of_a_retpoline_thunk_in_a_module_file_is_a_site_as_in_the_loaded_module() {
        let (symbols, mut text) = ModuleText::parse(&module(), "libphy").unwrap();
        let found =
            discover_module(&symbols, &mut text, &layout(), Isa::X86_64, &[], "libphy").unwrap();
        // Where the loaded module has it (`phytrace probes` on Debian 13 with libphy live):
        // the `jmp __x86_return_thunk` before it returns, rather than falling into the code
        // that calls the op with the driver's register restored.
        let places: Vec<_> = found
            .sites
            .iter()
            .map(|site| (site.place(), site.op(), site.found.ret))
            .collect();
        assert_eq!(
            places,
            [(
                "phy_suspend+0xeb".to_owned(),
                "suspend",
                Return::After(0xf0)
            )]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// A module file cut short or with bytes changed is an error or a reading, never a
        /// panic, and its search neither.
        #[test]
        fn damaged_files_do_not_panic(
            len in 0usize..2_000,
            edits in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
                0..8,
            ),
        ) {
            let mut data = module();
            data.truncate(len.max(64).min(data.len()));
            for (at, byte) in edits {
                let at = at.index(data.len());
                data[at] = byte;
            }
            if let Ok((symbols, mut text)) = ModuleText::parse(&data, "libphy") {
                let _ = discover_module(&symbols, &mut text, &layout(), Isa::X86_64, &[], "libphy");
            }
        }
    }

    #[test]
    fn a_file_without_code_is_said() {
        let obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let err = ModuleText::parse(&obj.write().unwrap(), "libphy")
            .err()
            .unwrap();
        assert!(err.to_string().contains("no code"), "{err}");
        assert!(ModuleText::parse(b"not elf", "libphy").is_err());
    }
}
