//! Struct offsets and `enum phy_state` read from the running kernel's BTF.
//!
//! Rust eBPF has no CO-RE, so the loader passes these offsets to the programs as a global.
//! `enum phy_state` was renumbered in 6.5, so its names come from BTF too.
//!
//! vmlinux BTF holds ~100k types and phytrace needs five of them: its own reader
//! (`btf/reader.rs`) indexes the blob in one pass, and the look-ups here decode only the types
//! they walk through.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, anyhow, bail};
use phytrace_common::KernelOffsets;
use reader::{Btf, ENUM, ENUM64, FUNC, INT, Member, STRUCT, Type, UNION};

use super::modules;
use crate::records::states::PhyStates;

#[cfg(test)]
mod builder;
mod object;
mod reader;
#[cfg(test)]
mod tests;

/// Where the kernel publishes its own BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Where it publishes its modules' (`CONFIG_DEBUG_INFO_BTF_MODULES`), one file per module.
const MODULES_BTF: &str = "/sys/kernel/btf";

/// The named types phytrace looks up: the structs [`KernelBtf::offsets`] starts from (`module`
/// for the name the module tracepoints report, `net_device` for the MAC side), phylink's
/// (in its module's BTF, [`KernelBtf::with_module`]), `enum phy_state`
/// and the MDIO accessors the trampolines attach to ([`KernelBtf::function_id`]).
const WANTED: &[&str] = &[
    "phy_device",
    "mdio_device",
    "mii_bus",
    "phy_driver",
    "phy_state",
    "module",
    "net_device",
    "phylink",
    "phylink_mac_ops",
    "__mdiobus_read",
    "__mdiobus_write",
    "__mdiobus_c45_read",
    "__mdiobus_c45_write",
    "bpf_rdonly_cast",
];

/// The kernel's BTF ids that the eBPF programs need; zeros where the kernel has no BTF of its
/// own (`--btf FILE`): the programs then read PHYs with helper calls and keep each thread's
/// state in a hash by thread id, as the verifier checks typed loads and task-local storage
/// against the kernel's own BTF.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelTypes {
    /// `struct phy_device`, which the programs read their PHY's status through.
    pub phy_device: u32,
    /// The kfunc `bpf_rdonly_cast`, which gives them a typed pointer to read through.
    pub rdonly_cast: u32,
}

/// Why a kernel without BTF needs `--btf FILE`, and how to make one.
pub const NO_KERNEL_BTF: &str = "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing, \
     CONFIG_DEBUG_INFO_BTF is off): give phytrace its types with `--btf FILE`, made from the \
     kernel's vmlinux with `pahole --btf_encode_detached=FILE vmlinux` (it needs \
     CONFIG_DEBUG_INFO), or boot a kernel built with CONFIG_DEBUG_INFO_BTF=y";

/// How many anonymous structs and unions one member look-up may search before the BTF is taken
/// for malformed (nested in a loop, say).
const MAX_ANONYMOUS: u32 = 256;

/// Where phytrace reads the kernel's types from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BtfSource {
    /// The kernel's own BTF (CONFIG_DEBUG_INFO_BTF).
    #[default]
    Kernel,
    /// A BTF file made for a kernel built without BTF (`--btf FILE`: `pahole
    /// --btf_encode_detached` on its vmlinux, or a BTFHub file).
    File(PathBuf),
}

impl BtfSource {
    /// `--btf`'s value: the file if one was given, else the kernel's own.
    pub fn new(file: Option<&Path>) -> Self {
        file.map_or(Self::Kernel, |file| Self::File(file.to_owned()))
    }

    /// The kernel's BTF from this source.
    pub fn load(&self) -> Result<KernelBtf> {
        match self {
            Self::Kernel => KernelBtf::running(),
            Self::File(path) => Ok(KernelBtf {
                from_kernel: false,
                ..KernelBtf::open(path).map_err(|err| {
                    super::error::ProbeError::bad_option(format!(
                        "--btf {}: {err:#}",
                        path.display()
                    ))
                })?
            }),
        }
    }

    /// Where the types come from, as the user named it.
    pub fn describe(&self) -> String {
        match self {
            Self::Kernel => VMLINUX_BTF.to_owned(),
            Self::File(path) => path.display().to_string(),
        }
    }
}

/// The kernel's BTF, with the look-ups phytrace needs.
pub struct KernelBtf {
    btf: Btf,
    /// The kernel's own (its ids are those the kernel resolves trampolines and kfuncs by), not
    /// a file made for it.
    from_kernel: bool,
    /// The module whose BTF is on top of vmlinux's, and how many types vmlinux's has (the
    /// module's ids follow).
    module: Option<(String, u32)>,
}

pub use object::module as module_object;

/// A kernel function's BTF id, and the module whose BTF object holds it (`None`: vmlinux's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionId {
    pub id: u32,
    pub module: Option<String>,
}

/// A member's place in its struct: byte offset and, for bitfields, the bit inside that byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    bits: u32,
    bitfield: bool,
}

impl Place {
    fn byte(self) -> u32 {
        self.bits / 8
    }

    /// This place shifted by `bits` (the offset of the struct it lies in).
    fn after(self, bits: u32) -> Result<Self> {
        let bits = self
            .bits
            .checked_add(bits)
            .context("member offset overflows in the kernel's BTF")?;
        Ok(Self { bits, ..self })
    }
}

impl KernelBtf {
    /// The running kernel's BTF: copied out of its BTF object in one call where the kernel
    /// allows it (CAP_SYS_ADMIN), else read from [`VMLINUX_BTF`].
    pub fn running() -> Result<Self> {
        match object::vmlinux() {
            Ok(data) => Self::parse(data).context("reading the kernel's BTF object"),
            Err(_) if !Path::new(VMLINUX_BTF).exists() => {
                Err(super::error::ProbeError::unavailable(NO_KERNEL_BTF).into())
            }
            Err(_) => Self::open(Path::new(VMLINUX_BTF)),
        }
    }

    /// Reads BTF from `path` (normally [`VMLINUX_BTF`]).
    pub fn open(path: &Path) -> Result<Self> {
        let data =
            fs::read(path).with_context(|| format!("reading BTF from {}", path.display()))?;
        Self::parse(data).with_context(|| format!("reading BTF from {}", path.display()))
    }

    /// This BTF with module `module`'s on top (`/sys/kernel/btf/MODULE`, split BTF): the
    /// module's private types, such as phylink's `struct phylink`, and its functions. Only on
    /// vmlinux's: a module's BTF is split from it.
    pub fn with_module(&self, module: &str) -> Result<Self> {
        let path = Path::new(MODULES_BTF).join(module);
        let split = fs::read(&path).with_context(|| {
            format!(
                "reading {}: the module's BTF (CONFIG_DEBUG_INFO_BTF_MODULES)",
                path.display()
            )
        })?;
        self.on_top(module, &split)
            .with_context(|| format!("reading BTF from {}", path.display()))
    }

    /// With phylib a live module ([`modules::PHYLIB`]), its BTF on top of this, vmlinux's:
    /// where phylib's functions are. `None` where phylib is built in or not loaded.
    pub fn phylib(&self) -> Result<Option<Self>> {
        if !self.from_kernel || !Path::new(MODULES_BTF).join(modules::PHYLIB).exists() {
            return Ok(None);
        }
        self.with_module(modules::PHYLIB).map(Some)
    }

    /// This BTF with module `module`'s split BTF `split` on top.
    fn on_top(&self, module: &str, split: &[u8]) -> Result<Self> {
        if let Some((on_top, _)) = &self.module {
            bail!("{module}'s BTF goes on vmlinux's, not on {on_top}'s");
        }
        Ok(Self {
            btf: self.btf.with_split(split, WANTED)?,
            from_kernel: self.from_kernel,
            module: Some((module.to_owned(), self.btf.type_count())),
        })
    }

    /// Indexes the BTF blob `data`.
    fn parse(data: Vec<u8>) -> Result<Self> {
        Ok(Self {
            btf: Btf::parse(data, WANTED)?,
            from_kernel: true,
            module: None,
        })
    }

    fn struct_named(&self, name: &str) -> Result<Type> {
        let ids = self.btf.named(name);
        if ids.is_empty() {
            bail!("the kernel's BTF has no `struct {name}` (is CONFIG_PHYLIB enabled?)");
        }
        for &id in ids {
            let ty = self.btf.get(id)?;
            if ty.kind == STRUCT && ty.vlen > 0 {
                return Ok(ty);
            }
        }
        bail!("the kernel's BTF has no definition of `struct {name}`")
    }

    /// The BTF id of the kernel function `name` (one of [`WANTED`]), which a BPF trampoline
    /// attaches to and a kfunc is called by: only the kernel's own BTF has the kernel's ids.
    pub fn function_id(&self, name: &str) -> Result<FunctionId> {
        if !self.from_kernel {
            bail!(
                "`{name}` is resolved through the kernel's own BTF, which this kernel does not \
                 have (the types come from --btf)"
            );
        }
        for &id in self.btf.named(name) {
            if self.btf.get(id)?.kind == FUNC {
                let module = self
                    .module
                    .as_ref()
                    .filter(|(_, base)| id > *base)
                    .map(|(module, _)| module.clone());
                return Ok(FunctionId { id, module });
            }
        }
        bail!("the kernel's BTF has no function `{name}`")
    }

    /// Finds `member` in `st`, looking inside anonymous structs and unions (at most `budget`
    /// more of them). Returns its place and its type, typedefs and qualifiers stripped.
    fn find_member(
        &self,
        st: &Type,
        member: &str,
        budget: &mut u32,
    ) -> Result<Option<(Place, Type)>> {
        for m in self.btf.members(st)? {
            let name = self.btf.name(m.name_off)?;
            if name == member {
                let ty = self.btf.resolve(m.type_id)?;
                return Ok(Some((self.member_place(st, m, &ty)?, ty)));
            }
            if !name.is_empty() {
                continue;
            }
            let inner = self.btf.resolve(m.type_id)?;
            if !matches!(inner.kind, STRUCT | UNION) {
                continue;
            }
            *budget = budget.checked_sub(1).with_context(|| {
                format!(
                    "the kernel's BTF nests `{member}` in over {MAX_ANONYMOUS} anonymous structs"
                )
            })?;
            if let Some((place, ty)) = self.find_member(&inner, member, budget)? {
                return Ok(Some((place.after(m.bit_offset)?, ty)));
            }
        }
        Ok(None)
    }

    /// The place of member `m` of `st`, whose type is `ty`. A bitfield is flagged by its size
    /// when `st` has `kind_flag` set, and otherwise by an int type narrower than its size.
    fn member_place(&self, st: &Type, m: Member, ty: &Type) -> Result<Place> {
        let place = Place {
            bits: m.bit_offset,
            bitfield: m.bitfield_size > 0,
        };
        if st.kflag || ty.kind != INT {
            return Ok(place);
        }
        let (offset, bits) = self.btf.int_bits(ty)?;
        let bitfield = offset != 0 || u64::from(bits) != u64::from(ty.size_or_type) * 8;
        Ok(Place {
            bitfield,
            ..place.after(offset)?
        })
    }

    /// The place of `path` (e.g. `["mdio", "bus"]`) inside `struct root`.
    fn place(&self, root: &str, path: &[&str]) -> Result<Place> {
        let mut st = self.struct_named(root)?;
        let mut bits = 0;
        for (i, member) in path.iter().enumerate() {
            let mut budget = MAX_ANONYMOUS;
            let (place, ty) = self.find_member(&st, member, &mut budget)?.ok_or_else(|| {
                anyhow!("`struct {root}` has no member `{}`", path[..=i].join("."))
            })?;
            let place = place.after(bits)?;
            if i + 1 == path.len() {
                return Ok(place);
            }
            if !matches!(ty.kind, STRUCT | UNION) {
                bail!("`{root}.{}` is not a struct", path[..=i].join("."));
            }
            bits = place.bits;
            st = ty;
        }
        bail!("empty member path in `struct {root}`")
    }

    fn offset(&self, root: &str, path: &[&str]) -> Result<u32> {
        let place = self.place(root, path)?;
        if place.bitfield || place.bits % 8 != 0 {
            bail!(
                "`{root}.{}` is a bitfield, not a byte offset",
                path.join(".")
            );
        }
        Ok(place.byte())
    }

    /// The byte offset of `path` in `struct root` (an error names a missing member).
    pub fn member_offset(&self, root: &str, path: &[&str]) -> Result<u32> {
        self.offset(root, path)
    }

    /// The offsets of the struct and union members of `struct root` (those held in it, not
    /// pointed to).
    pub fn embedded_members(&self, root: &str) -> Result<Vec<u32>> {
        let st = self.struct_named(root)?;
        let mut offsets = Vec::new();
        for m in self.btf.members(&st)? {
            if matches!(self.btf.resolve(m.type_id)?.kind, STRUCT | UNION) && m.bit_offset % 8 == 0
            {
                offsets.push(m.bit_offset / 8);
            }
        }
        Ok(offsets)
    }

    /// `sizeof(struct name)`.
    pub fn struct_size(&self, name: &str) -> Result<u32> {
        Ok(self.struct_named(name)?.size_or_type)
    }

    /// The offset of operation `op` in `struct phy_driver`, if this kernel has it.
    pub fn phy_driver_op(&self, op: &str) -> Option<u32> {
        self.offset("phy_driver", &[op]).ok()
    }

    /// The offsets the eBPF programs need.
    pub fn offsets(&self) -> Result<KernelOffsets> {
        let link = self.place("phy_device", &["link"])?;
        Ok(KernelOffsets {
            phy_bus: self.offset("phy_device", &["mdio", "bus"])?,
            phy_addr: self.offset("phy_device", &["mdio", "addr"])?,
            phy_id: self.offset("phy_device", &["phy_id"])?,
            phy_drv: self.offset("phy_device", &["drv"])?,
            phy_state: self.offset("phy_device", &["state"])?,
            phy_speed: self.offset("phy_device", &["speed"])?,
            phy_duplex: self.offset("phy_device", &["duplex"])?,
            phy_link_byte: link.byte(),
            phy_link_bit: link.bits % 8,
            drv_name: self.offset("phy_driver", &["name"])?,
            bus_id: self.offset("mii_bus", &["id"])?,
            bus_mdio_map: self.offset("mii_bus", &["mdio_map"])?,
            mdio_flags: self.offset("mdio_device", &["flags"])?,
            module_name: self.offset("module", &["name"])?,
            netdev_name: self.offset("net_device", &["name"])?,
            netdev_phydev: self.offset("net_device", &["phydev"])?,
        })
    }

    /// The BTF ids the eBPF programs need (zeros without the kernel's own BTF).
    pub fn types(&self) -> Result<KernelTypes> {
        if !self.from_kernel {
            return Ok(KernelTypes::default());
        }
        Ok(KernelTypes {
            phy_device: self.struct_named("phy_device")?.id,
            rdonly_cast: self.function_id("bpf_rdonly_cast").map(|f| f.id).context(
                "phytrace reads PHYs through the kfunc bpf_rdonly_cast: Linux 6.2 or later, \
                 built with CONFIG_DEBUG_INFO_BTF and CONFIG_BPF_JIT",
            )?,
        })
    }

    /// `enum phy_state` as this kernel defines it.
    pub fn phy_states(&self) -> Result<PhyStates> {
        let ids = self.btf.named("phy_state");
        if ids.is_empty() {
            bail!("the kernel's BTF has no `enum phy_state` (is CONFIG_PHYLIB enabled?)");
        }
        let mut en = None;
        for &id in ids {
            let ty = self.btf.get(id)?;
            if matches!(ty.kind, ENUM | ENUM64) {
                en = Some(ty);
                break;
            }
        }
        let Some(en) = en else {
            bail!("`phy_state` in the kernel's BTF is not an enum");
        };
        let names = self
            .btf
            .enumerators(&en)?
            .into_iter()
            .map(|(name_off, value)| {
                let name = self.btf.name(name_off).context("enumerator name")?;
                let value = u32::try_from(value)
                    .map_err(|_| anyhow!("`enum phy_state` has {name} = {value}, not a u32"))?;
                Ok((value, name.trim_start_matches("PHY_").into()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PhyStates { names })
    }
}
