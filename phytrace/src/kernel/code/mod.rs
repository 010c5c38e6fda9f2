//! Where phylib calls a PHY driver's operations: every instruction of the running kernel that
//! calls through `phydev->drv->OP`, found by decoding the live kernel text; and where phylink
//! calls a MAC driver's, through `pl->mac_ops->OP` (the same search, another chain of loads:
//! [`Layout::mac`]).
//!
//! A driver op is an indirect call: the target is loaded from `struct phy_driver` at the op's
//! offset, the driver from `phy_device.drv` (or from the device's `driver`, which is the same
//! `struct phy_driver` in `phy_probe`). A call site is such a call; its return site is the
//! instruction after it, or, for a tail call, the return of the function making it. Kprobes
//! there are accepted by kernels that refuse them in the driver's own code (Rust code has no
//! ftrace site), and they see every driver, C or Rust, loaded or not. What the decoding finds is
//! checked again at every hit by the programs (the called address must be the PHY's driver's
//! op), so a misread site reports nothing rather than something wrong.

pub(crate) mod arm64;
pub mod cache;
mod flow;
pub(crate) mod mac_sites;
pub mod mdio_inlining;
pub(crate) mod module_text;
pub(crate) mod phy_sites;
pub(crate) mod text;
pub(crate) mod text_symbols;
pub(crate) mod x86;

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::kernel::btf::KernelBtf;
use text_symbols::{Function, TextSymbols};

/// The `struct phy_driver` operations traced at their call sites: the eleven the Rust
/// abstractions implement, then those C drivers use on the same paths. A key's op is its index
/// here (`phytrace_common::CALL_SITE_OPS` at most).
pub const OPS: [&str; 17] = [
    "probe",
    "get_features",
    "soft_reset",
    "config_aneg",
    "read_status",
    "match_phy_device",
    "suspend",
    "resume",
    "read_mmd",
    "write_mmd",
    "link_change_notify",
    "config_init",
    "aneg_done",
    "config_intr",
    "handle_interrupt",
    "remove",
    "read_page",
];

/// The `struct phylink_mac_ops` operations traced at phylink's call sites (the MAC side's
/// events; a key's op is its index here).
pub const MAC_OPS: [&str; 2] = ["mac_link_up", "mac_link_down"];

/// What the decoders look for, from the kernel's BTF: a chain of two loads, a struct of ops
/// from a field of its holder, then an op from that struct, whose value is called.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The ops' names (a site's op is an index here).
    pub names: &'static [&'static str],
    /// Offset of each op of `names` in its struct (`None`: this kernel has no such op).
    pub ops: Vec<Option<u32>>,
    /// Displacements at which a load from the holder yields the ops struct; none: the ops
    /// are the holder's own fields (`bus->read`), loaded from any register.
    pub holders: Vec<i64>,
    /// A displacement only the functions worth decoding hold (`None`: all are decoded).
    pub marker: Option<u32>,
    /// For ops checked through their holder: the displacement, from the holder's pointer to
    /// the ops struct, of what every call passes first (phylink passes each MAC op
    /// `pl->config`). A register must then be proven to hold the holder at the call
    /// ([`Found::owner`]), and a call whose first argument was not loaded from that holder is
    /// another struct's op of the same shape (phylink's PCS ops), not a site.
    pub first_argument: Option<i64>,
}

impl Layout {
    /// phylib's calls of `struct phy_driver` ops: the driver loaded from `phy_device.drv`, or
    /// from `phy_device.mdio.dev.driver` (`struct device_driver`, first in `struct
    /// phy_driver`).
    pub fn from_btf(btf: &KernelBtf) -> Result<Self> {
        let bound_driver = btf.member_offset("phy_device", &["drv"])?;
        Ok(Self {
            names: &OPS,
            ops: OPS.iter().map(|op| btf.phy_driver_op(op)).collect(),
            holders: vec![
                i64::from(bound_driver),
                i64::from(btf.member_offset("phy_device", &["mdio", "dev", "driver"])?),
            ],
            marker: Some(bound_driver),
            first_argument: None,
        })
    }

    /// phylink's calls of `struct phylink_mac_ops` ops, from `btf` with phylink's module BTF
    /// on top: the ops loaded from `phylink.mac_ops`, through a pointer to the `struct
    /// phylink` or to a struct it holds (`phylink_resolve` gets its `resolve` work item).
    pub fn mac(btf: &KernelBtf) -> Result<Self> {
        let mac_ops = btf.member_offset("phylink", &["mac_ops"])?;
        let config = btf.member_offset("phylink", &["config"])?;
        let holders = std::iter::once(0)
            .chain(btf.embedded_members("phylink")?)
            .map(|inner| i64::from(mac_ops) - i64::from(inner))
            .collect();
        Ok(Self {
            names: &MAC_OPS,
            ops: MAC_OPS
                .iter()
                .map(|op| btf.member_offset("phylink_mac_ops", &[op]))
                .map(|offset| offset.map(Some))
                .collect::<Result<_>>()?,
            holders,
            marker: None,
            first_argument: Some(i64::from(config) - i64::from(mac_ops)),
        })
    }

    /// The MDIO bus's ops (`struct mii_bus`'s `read`, `write`, `read_c45`, `write_c45`,
    /// `None` where this kernel has no such field), called through the bus itself.
    pub fn mii_bus(btf: &KernelBtf, names: &'static [&'static str]) -> Self {
        Self {
            names,
            ops: names
                .iter()
                .map(|op| btf.member_offset("mii_bus", &[op]).ok())
                .collect(),
            holders: Vec::new(),
            marker: None,
            first_argument: None,
        }
    }

    /// The op whose offset in its struct is `offset`.
    pub fn op_at(&self, offset: i64) -> Option<u16> {
        let offset = u32::try_from(offset).ok()?;
        self.ops
            .iter()
            .position(|op| *op == Some(offset))
            .map(|index| index as u16)
    }

    /// Whether a load at `offset` from a holder yields its ops struct.
    pub fn loads_ops(&self, offset: i64) -> bool {
        self.holders.contains(&offset)
    }
}

/// phylink's MAC ops as the 6.12 test kernels lay them out, on both architectures: `struct
/// phylink` holds `mac_ops` at 8 and `config` at 0x10, and holds `link_config`, `link_poll`,
/// `state_mutex`, `phy_state` and `resolve` (`phylink_resolve`'s argument); `mac_link_up` is at
/// 0x30 in `struct phylink_mac_ops`, `mac_link_down` at 0x28.
#[cfg(test)]
fn phylink_6_12_layout() -> Layout {
    Layout {
        names: &MAC_OPS,
        ops: vec![Some(0x30), Some(0x28)],
        holders: [0, 88, 168, 216, 248, 304].map(|inner| 8 - inner).to_vec(),
        marker: None,
        first_argument: Some(8),
    }
}

/// Where the called address is at the call instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// In a register (a byte offset into `struct pt_regs`).
    Register(u32),
    /// In memory, at the op's offset from a register (`call *OFF(%reg)`).
    Memory(u32),
}

/// Where a call's return is seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Return {
    /// At this offset in the same function (the instruction after the call).
    After(u32),
    /// A tail call: at the return of the function itself.
    Tail,
}

/// The holder of a site's ops struct at its call: the register it was loaded from, proven to
/// still hold it, and the displacement of the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// A byte offset into `struct pt_regs`.
    pub register: u32,
    pub displacement: i32,
}

/// A call site as a decoder found it in one function's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// Offset of the call instruction in the function.
    pub offset: u32,
    /// Index of the op in [`Layout::names`].
    pub op: u16,
    pub target: Target,
    pub ret: Return,
    /// Where the holder is at the call, if [`Layout::first_argument`] asks and it could be proven.
    pub owner: Option<Owner>,
}

/// A call site of the running kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// The function the call instruction is in (inlined copies of phylib helpers are found in
    /// the functions they were inlined into).
    pub function: String,
    pub found: Found,
    /// The op's offset in its struct.
    pub op_offset: u32,
    /// The op's name (from the [`Layout`]'s names: not kept in the cache).
    #[serde(skip)]
    pub op_name: &'static str,
}

impl CallSite {
    /// The op's name.
    pub fn op(&self) -> &'static str {
        self.op_name
    }

    /// `function+0xOFF`, as kprobes and `probes` spell the call.
    pub fn place(&self) -> String {
        format!("{}+{:#x}", self.function, self.found.offset)
    }

    /// `function+0xOFF (op)`, as notes name a site.
    pub fn label(&self) -> String {
        format!("{} ({})", self.place(), self.op())
    }

    /// Where the call's return is seen, as [`Self::place`] spells it; `None` for a tail call
    /// (the function's own return).
    pub fn return_place(&self) -> Option<String> {
        match self.found.ret {
            Return::After(offset) => Some(format!("{}+{offset:#x}", self.function)),
            Return::Tail => None,
        }
    }

    /// Why the kernel's kprobes cannot take the call, if they cannot. x86 kprobes emulate
    /// `call *%reg` but not a call through memory (the kernel's `prepare_emulation` answers
    /// EOPNOTSUPP). And they emulate a direct call as five bytes long (Linux 6.12's
    /// `int3_emulate_call`): the callee of one with a prefix (GCC's `cs call` of a retpoline
    /// thunk through r8–r15) would return into its middle. arm64 has neither.
    pub fn unprobeable(&self) -> Option<&'static str> {
        match (self.found.target, self.found.ret) {
            (Target::Memory(_), _) => {
                Some("the kernel's kprobes cannot take an indirect call through memory")
            }
            (Target::Register(_), Return::After(ret))
                if ret.saturating_sub(self.found.offset) > DIRECT_CALL_LEN =>
            {
                Some(
                    "the kernel's kprobes would return from this call with a prefix into its \
                     middle",
                )
            }
            _ => None,
        }
    }
}

/// The length of x86's direct call (`call rel32`); longer, a call has a prefix.
const DIRECT_CALL_LEN: u32 = 5;

/// The instruction set of the running kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    X86_64,
    Aarch64,
}

impl Isa {
    /// The architecture phytrace was built for (the kernel it traces runs the same).
    pub const fn native() -> Self {
        if cfg!(target_arch = "aarch64") {
            Self::Aarch64
        } else {
            Self::X86_64
        }
    }

    /// The call sites in `code`, the function at `address`.
    pub(crate) fn scan(
        self,
        code: &[u8],
        address: u64,
        layout: &Layout,
        thunks: &BTreeMap<u64, u32>,
    ) -> Vec<Found> {
        match self {
            Self::X86_64 => x86::scan(code, address, layout, thunks),
            Self::Aarch64 => arm64::scan(code, layout),
        }
    }

    /// Whether `code`, the function at `address`, holds a direct call of or jump to `target`.
    pub(crate) fn branches_to(self, code: &[u8], address: u64, target: u64) -> bool {
        match self {
            Self::X86_64 => x86::branches_to(code, address, target),
            Self::Aarch64 => arm64::branches_to(code, address, target),
        }
    }

    /// Whether `code` may load or store at [`Layout::marker`] (`phy_device.drv`): the
    /// functions worth decoding (the device's driver, which `phy_probe` calls through, is a
    /// `struct device` field every bus has: it is followed only in these).
    fn may_touch_driver(self, code: &[u8], layout: &Layout) -> bool {
        let Some(marker) = layout.marker else {
            return true;
        };
        match self {
            Self::X86_64 => x86::may_touch(code, marker),
            Self::Aarch64 => arm64::may_touch(code, marker),
        }
    }
}

/// The call sites of the running kernel's core text, and what the search covered.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Discovery {
    pub sites: Vec<CallSite>,
    /// Functions decoded (those that touch a PHY's driver).
    pub functions_decoded: usize,
    /// Bytes of kernel text searched.
    pub text_bytes: usize,
    /// Decoded functions whose code another tracer's kprobes had rewritten (a breakpoint or a
    /// jump over an instruction): a call site there may have been missed.
    pub rewritten: Vec<String>,
    /// What was wrong with the cache entry this search replaced, if it was damaged.
    #[serde(skip)]
    pub cache_damage: Option<String>,
    /// The module the sites are in, read from its file as it is not loaded yet: they are
    /// armed before it loads, as `MODULE:FUNCTION+OFFSET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

impl Discovery {
    /// The ops of `names` no call site was found for.
    pub fn ops_without_sites(&self, names: &[&'static str]) -> Vec<&'static str> {
        names
            .iter()
            .filter(|name| !self.sites.iter().any(|s| s.op_name == **name))
            .copied()
            .collect()
    }

    /// Adds the search of more code, `other`.
    fn absorb(&mut self, other: Self) {
        self.sites.extend(other.sites);
        self.functions_decoded += other.functions_decoded;
        self.text_bytes += other.text_bytes;
        self.rewritten.extend(other.rewritten);
    }

    /// Decodes `function` (its code `body`) if it may hold sites, adding those it holds.
    fn search(
        &mut self,
        function: text_symbols::Function<'_>,
        body: &[u8],
        (layout, isa, symbols, probed): (&Layout, Isa, &TextSymbols, &[u64]),
    ) {
        if !isa.may_touch_driver(body, layout) {
            return;
        }
        self.functions_decoded += 1;
        if probed
            .iter()
            .any(|&at| (function.address..function.end).contains(&at))
        {
            self.rewritten.push(function.name.to_owned());
        }
        for found in isa.scan(body, function.address, layout, symbols.thunks()) {
            self.sites.push(CallSite {
                function: function.name.to_owned(),
                found,
                op_offset: layout.ops[usize::from(found.op)].unwrap_or_default(),
                op_name: layout.names[usize::from(found.op)],
            });
        }
    }
}

/// Finds every call site of a [`OPS`] op in the core kernel's text, read through `text`, where
/// kprobes sit at `probed` (addresses whose instruction they rewrote).
pub fn discover(
    symbols: &TextSymbols,
    text: &mut impl text::KernelMemory,
    layout: &Layout,
    isa: Isa,
    probed: &[u64],
) -> Result<Discovery> {
    let (start, end) = core_text(symbols)?;
    let len = usize::try_from(end - start).context("kernel text size")?;
    let code = text.read(start, len)?;
    let mut discovery = Discovery {
        text_bytes: code.len(),
        ..Discovery::default()
    };
    for function in symbols.functions_in(start, end) {
        let from = (function.address - start) as usize;
        let to = ((function.end - start) as usize).min(code.len());
        let Some(body) = code.get(from..to) else {
            continue;
        };
        discovery.search(function, body, (layout, isa, symbols, probed));
    }
    Ok(discovery)
}

/// Finds every call site of an op of `layout` in the text of `module` (loaded), read through
/// `text` one function at a time.
pub fn discover_module(
    symbols: &TextSymbols,
    text: &mut impl text::KernelMemory,
    layout: &Layout,
    isa: Isa,
    probed: &[u64],
    module: &str,
) -> Result<Discovery> {
    let functions = symbols.module_functions(module);
    if functions.is_empty() {
        anyhow::bail!(
            "/proc/kallsyms has no function of {module} (not loaded, or addresses hidden: \
             phytrace needs CAP_SYSLOG or root to read them)"
        );
    }
    discover_in(functions, symbols, text, layout, isa, probed)
}

/// Finds every call site of an op of `layout` in the core kernel's functions named `prefix…`
/// (a subsystem built in), read through `text` one at a time.
pub fn discover_named(
    symbols: &TextSymbols,
    text: &mut impl text::KernelMemory,
    layout: &Layout,
    isa: Isa,
    probed: &[u64],
    prefix: &str,
) -> Result<Discovery> {
    let (start, end) = core_text(symbols)?;
    let functions: Vec<_> = symbols
        .functions_in(start, end)
        .filter(|function| function.name.starts_with(prefix))
        .collect();
    if functions.is_empty() {
        anyhow::bail!("/proc/kallsyms has no function {prefix}… in the core kernel");
    }
    discover_in(functions, symbols, text, layout, isa, probed)
}

/// The core kernel's text, `[_stext, _etext)`.
fn core_text(symbols: &TextSymbols) -> Result<(u64, u64)> {
    symbols.core_text().context(
        "/proc/kallsyms has no _stext/_etext (are addresses hidden? phytrace needs CAP_SYSLOG \
         or root to read them)",
    )
}

/// Finds every call site of an op of `layout` in `functions` (of `symbols`), read through
/// `text` one at a time.
fn discover_in(
    functions: Vec<Function<'_>>,
    symbols: &TextSymbols,
    text: &mut impl text::KernelMemory,
    layout: &Layout,
    isa: Isa,
    probed: &[u64],
) -> Result<Discovery> {
    let mut discovery = Discovery::default();
    for function in functions {
        let body = text.read(function.address, (function.end - function.address) as usize)?;
        discovery.text_bytes += body.len();
        discovery.search(function, &body, (layout, isa, symbols, probed));
    }
    Ok(discovery)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(offset: u32, target: Target, ret: Return) -> CallSite {
        CallSite {
            function: "phylink_resolve".to_owned(),
            found: Found {
                offset,
                op: 0,
                target,
                ret,
                owner: None,
            },
            op_offset: 0x30,
            op_name: "mac_link_up",
        }
    }

    #[test]
    fn calls_the_kernels_kprobes_cannot_take_are_said() {
        // Debian 13's phylink_resolve+0x26e: `cs call __x86_indirect_thunk_r10`, six bytes.
        let r10 = Target::Register(72);
        assert!(
            site(0x26e, r10, Return::After(0x274))
                .unprobeable()
                .is_some()
        );
        // A call of a thunk without a prefix, or a tail call, is taken; a call through memory
        // is not.
        assert_eq!(site(0xeb, r10, Return::After(0xf0)).unprobeable(), None);
        assert_eq!(site(0x26e, r10, Return::Tail).unprobeable(), None);
        let memory = Target::Memory(0x10);
        assert!(
            site(0x36, memory, Return::After(0x3c))
                .unprobeable()
                .is_some()
        );
    }
}
