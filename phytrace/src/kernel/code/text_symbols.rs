//! The kernel's text symbols from `/proc/kallsyms`: function bounds for the decoders, the
//! retpoline thunks, and the names of called addresses.

use std::collections::{BTreeMap, HashMap};

use super::x86;
use crate::kernel::kallsyms::{self, Line};

/// The most bytes of a module function decoded.
const MAX_MODULE_FUNCTION: u64 = 64 * 1024;

/// A function of the kernel's text: `[address, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function<'a> {
    pub name: &'a str,
    pub address: u64,
    pub end: u64,
}

/// A text symbol: its address, name and module (`None`: vmlinux).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Symbol {
    address: u64,
    name: String,
    module: Option<String>,
}

/// Text symbols of vmlinux (sorted, for function bounds) and of every module (by address, to
/// name a called function).
#[derive(Debug, Default)]
pub struct TextSymbols {
    core: Vec<Symbol>,
    by_address: HashMap<u64, usize>,
    modules: Vec<Symbol>,
    text: Option<(u64, u64)>,
    thunks: BTreeMap<u64, u32>,
}

impl TextSymbols {
    /// Parses the symbols of `module` and the retpoline thunks in kallsyms text `text`: all a
    /// search in that module reads ([`Self::module_functions`], [`Self::thunks`]). Parsing all
    /// of Debian's kallsyms (10 MiB) took 7 s in a debug build under QEMU, so long that a
    /// dongle's link came up before phylink's call sites were armed.
    pub fn parse_module(text: &str, module: &str) -> Self {
        let tag = format!("[{module}]");
        Self::from_lines(
            text.lines()
                .filter(|line| line.ends_with(&tag) || line.contains("__x86_indirect_"))
                .filter_map(Line::parse),
        )
    }

    /// Whether it holds no function.
    pub fn is_empty(&self) -> bool {
        self.core.is_empty() && self.modules.is_empty()
    }

    /// Parses kallsyms text (addresses must be visible: root or CAP_SYSLOG).
    pub fn parse(text: &str) -> Self {
        Self::from_lines(kallsyms::lines(text))
    }

    /// The text symbols of `lines`.
    pub(super) fn from_lines<'a>(lines: impl Iterator<Item = Line<'a>>) -> Self {
        let mut symbols = Self::default();
        let (mut stext, mut etext) = (None, None);
        for Line {
            address,
            kind,
            name,
            module,
        } in lines
        {
            match name {
                "_stext" => stext = Some(address),
                "_etext" => etext = Some(address),
                _ => {}
            }
            if address == 0 || !kind.eq_ignore_ascii_case("t") {
                continue;
            }
            if let Some(reg) = x86::thunk_register(name) {
                symbols.thunks.insert(address, reg);
            }
            let symbol = Symbol {
                address,
                name: name.to_owned(),
                module: module.map(str::to_owned),
            };
            if symbol.module.is_some() {
                symbols.modules.push(symbol);
            } else {
                symbols.core.push(symbol);
            }
        }
        symbols.core.sort_by_key(|s| s.address);
        symbols.modules.sort_by_key(|s| s.address);
        symbols.text = stext.zip(etext).filter(|(start, end)| start < end);
        symbols.by_address = symbols
            .core
            .iter()
            .enumerate()
            .map(|(index, s)| (s.address, index))
            .collect();
        symbols
    }

    /// `[_stext, _etext)`, if kallsyms shows them.
    pub fn core_text(&self) -> Option<(u64, u64)> {
        self.text
    }

    /// The retpoline thunks: address → the register they jump through (`pt_regs` offset).
    pub fn thunks(&self) -> &BTreeMap<u64, u32> {
        &self.thunks
    }

    /// The vmlinux functions starting in `[start, end)`, each up to the next symbol.
    pub fn functions_in(&self, start: u64, end: u64) -> impl Iterator<Item = Function<'_>> {
        let first = self.core.partition_point(|s| s.address < start);
        self.core[first..]
            .iter()
            .take_while(move |s| s.address < end)
            .enumerate()
            .map(move |(i, s)| Function {
                name: &s.name,
                address: s.address,
                end: self
                    .core
                    .get(first + i + 1)
                    .map_or(end, |next| next.address.min(end)),
            })
            .filter(|f| f.end > f.address)
    }

    /// The functions of `module`, each up to the next text symbol (at most [`MAX_MODULE_FUNCTION`]
    /// bytes: a module's last function may be followed by another allocation's).
    pub fn module_functions(&self, module: &str) -> Vec<Function<'_>> {
        self.modules
            .iter()
            .enumerate()
            .filter(|(_, s)| s.module.as_deref() == Some(module))
            .filter_map(|(index, _)| self.module_function(index))
            .collect()
    }

    /// The module text symbol at `index`, up to the next one (within [`MAX_MODULE_FUNCTION`]
    /// bytes); `None` if that is empty.
    fn module_function(&self, index: usize) -> Option<Function<'_>> {
        let s = self.modules.get(index)?;
        let end = self
            .modules
            .get(index + 1)
            .map_or(u64::MAX, |next| next.address)
            .min(s.address.saturating_add(MAX_MODULE_FUNCTION));
        (end > s.address).then_some(Function {
            name: &s.name,
            address: s.address,
            end,
        })
    }

    /// The text function named `name`, of vmlinux or else of a module, up to the next text
    /// symbol (a module's within [`MAX_MODULE_FUNCTION`] bytes).
    pub fn function(&self, name: &str) -> Option<Function<'_>> {
        if let Some(index) = self.core.iter().position(|s| s.name == name) {
            let s = &self.core[index];
            let end = self
                .core
                .get(index + 1)
                .map_or(s.address.saturating_add(MAX_MODULE_FUNCTION), |next| {
                    next.address
                });
            return Some(Function {
                name: &s.name,
                address: s.address,
                end,
            })
            .filter(|f| f.end > f.address);
        }
        self.module_function(self.modules.iter().position(|s| s.name == name)?)
    }

    /// The function starting at `address` and its module (`None`: vmlinux).
    pub fn function_at(&self, address: u64) -> Option<(&str, Option<&str>)> {
        if let Some(&index) = self.by_address.get(&address) {
            return Some((&self.core[index].name, None));
        }
        let index = self.modules.partition_point(|s| s.address < address);
        self.modules
            .get(index)
            .filter(|s| s.address == address)
            .map(|s| (s.name.as_str(), s.module.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81100000 T phy_init_hw
ffffffff81100200 t phy_probe
ffffffff81200000 T __x86_indirect_thunk_rax
ffffffff81300000 T _etext
ffffffff81400000 D some_data
ffffffffa0000000 t asix_ax88772a_read_status\t[ax88796b]
";

    #[test]
    fn functions_end_at_the_next_symbol() {
        let symbols = TextSymbols::parse(KALLSYMS);
        assert_eq!(
            symbols.core_text(),
            Some((0xffffffff81000000, 0xffffffff81300000))
        );
        let functions: Vec<_> = symbols
            .functions_in(0xffffffff81100000, 0xffffffff81300000)
            .map(|f| (f.name, f.end - f.address))
            .collect();
        assert_eq!(
            functions,
            [
                ("phy_init_hw", 0x200),
                ("phy_probe", 0xffe00),
                ("__x86_indirect_thunk_rax", 0x100000)
            ]
        );
        assert_eq!(symbols.thunks().get(&0xffffffff81200000), Some(&80));
    }

    #[test]
    fn a_module_search_keeps_the_module_and_the_thunks() {
        let whole = TextSymbols::parse(KALLSYMS);
        let module = TextSymbols::parse_module(KALLSYMS, "ax88796b");
        assert_eq!(module.thunks(), whole.thunks());
        let names = |symbols: &TextSymbols| -> Vec<String> {
            symbols
                .module_functions("ax88796b")
                .iter()
                .map(|f| format!("{}+{:#x}", f.name, f.end - f.address))
                .collect()
        };
        assert_eq!(names(&module), names(&whole));
        assert_eq!(names(&module).len(), 1);
        assert_eq!(module.function_at(0xffffffff81100000), None);
    }

    #[test]
    fn called_addresses_are_named_with_their_module() {
        let symbols = TextSymbols::parse(KALLSYMS);
        assert_eq!(
            symbols.function_at(0xffffffff81100200),
            Some(("phy_probe", None))
        );
        assert_eq!(
            symbols.function_at(0xffffffffa0000000),
            Some(("asix_ax88772a_read_status", Some("ax88796b")))
        );
        assert_eq!(symbols.function_at(0xffffffffa0000001), None);
    }

    #[test]
    fn a_function_is_found_by_name_in_vmlinux_or_a_module() {
        let symbols = TextSymbols::parse(KALLSYMS);
        let phy_init_hw = symbols.function("phy_init_hw").expect("in vmlinux");
        assert_eq!(
            (phy_init_hw.address, phy_init_hw.end),
            (0xffffffff81100000, 0xffffffff81100200)
        );
        let read_status = symbols
            .function("asix_ax88772a_read_status")
            .expect("in a module");
        assert_eq!(read_status.end - read_status.address, MAX_MODULE_FUNCTION);
        assert_eq!(symbols.function("mdiobus_read"), None);
    }

    #[test]
    fn a_modules_functions_end_at_the_next_symbol() {
        let symbols = TextSymbols::parse(&format!(
            "{KALLSYMS}ffffffffa0000100 t phylink_resolve\t[phylink]\n\
             ffffffffa0000400 t phylink_link_down\t[phylink]\n\
             ffffffffa0000480 t other_function\t[ax88796b]\n"
        ));
        let functions: Vec<_> = symbols
            .module_functions("phylink")
            .iter()
            .map(|f| (f.name, f.end - f.address))
            .collect();
        assert_eq!(
            functions,
            [("phylink_resolve", 0x300), ("phylink_link_down", 0x80)]
        );
        assert!(symbols.module_functions("asix").is_empty());
    }
}
