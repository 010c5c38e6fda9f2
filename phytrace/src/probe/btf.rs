//! Struct offsets and `enum phy_state` read from the running kernel's BTF.
//!
//! Rust eBPF has no CO-RE, so the loader passes these offsets to the programs as a global.
//! `enum phy_state` was renumbered in 6.5, so its names come from BTF too.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};
use btf_rs::{Btf, Type};
use phytrace_common::KernelOffsets;

use crate::event::PhyState;

/// Where the kernel publishes its own BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The kernel's BTF, with the look-ups phytrace needs.
pub struct KernelBtf {
    btf: Btf,
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
}

impl KernelBtf {
    /// Reads BTF from `path` (normally [`VMLINUX_BTF`]).
    pub fn open(path: &Path) -> Result<Self> {
        let btf = Btf::from_file(path)
            .map_err(|err| anyhow!("reading BTF from {}: {err}", path.display()))?;
        Ok(Self { btf })
    }

    fn struct_named(&self, name: &str) -> Result<btf_rs::Struct> {
        let types = self.btf.resolve_types_by_name(name).map_err(|_| {
            anyhow!("the kernel's BTF has no `struct {name}` (is CONFIG_PHYLIB enabled?)")
        })?;
        types
            .into_iter()
            .find_map(|ty| match ty {
                Type::Struct(s) if !s.members.is_empty() => Some(s),
                _ => None,
            })
            .ok_or_else(|| anyhow!("the kernel's BTF has no definition of `struct {name}`"))
    }

    /// Finds `member` in `st`, looking inside anonymous structs and unions.
    fn find_member(&self, st: &btf_rs::Struct, member: &str) -> Result<Option<(Place, Type)>> {
        for m in &st.members {
            let name = self.btf.resolve_name(m).unwrap_or_default();
            let bitfield = m.bitfield_size().is_some_and(|size| size > 0);
            let place = Place {
                bits: m.bit_offset(),
                bitfield,
            };
            if name == member {
                let ty = self
                    .btf
                    .resolve_chained_type(m)
                    .map_err(|e| anyhow!("{e}"))?;
                return Ok(Some((place, ty)));
            }
            if !name.is_empty() {
                continue;
            }
            if let Ok(Type::Struct(inner) | Type::Union(inner)) = self.btf.resolve_chained_type(m)
                && let Some((inner_place, ty)) = self.find_member(&inner, member)?
            {
                let place = Place {
                    bits: place.bits + inner_place.bits,
                    ..inner_place
                };
                return Ok(Some((place, ty)));
            }
        }
        Ok(None)
    }

    /// The place of `path` (e.g. `["mdio", "bus"]`) inside `struct root`.
    fn place(&self, root: &str, path: &[&str]) -> Result<Place> {
        let mut st = self.struct_named(root)?;
        let mut bits = 0;
        for (i, member) in path.iter().enumerate() {
            let (place, ty) = self.find_member(&st, member)?.ok_or_else(|| {
                anyhow!("`struct {root}` has no member `{}`", path[..=i].join("."))
            })?;
            bits += place.bits;
            if i + 1 == path.len() {
                return Ok(Place {
                    bits,
                    bitfield: place.bitfield,
                });
            }
            st = match ty {
                Type::Struct(inner) | Type::Union(inner) => inner,
                _ => bail!("`{root}.{}` is not a struct", path[..=i].join(".")),
            };
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
        })
    }

    /// `enum phy_state` as this kernel defines it.
    pub fn phy_states(&self) -> Result<PhyStates> {
        let types = self.btf.resolve_types_by_name("phy_state").map_err(|_| {
            anyhow!("the kernel's BTF has no `enum phy_state` (is CONFIG_PHYLIB enabled?)")
        })?;
        let Some(Type::Enum(en)) = types.into_iter().find(|ty| matches!(ty, Type::Enum(_))) else {
            bail!("`phy_state` in the kernel's BTF is not an enum");
        };
        let names = en
            .members
            .iter()
            .map(|m| {
                let name = self.btf.resolve_name(m).context("enumerator name")?;
                Ok((m.val(), name.trim_start_matches("PHY_").to_owned()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PhyStates { names })
    }
}

/// The values and names of `enum phy_state`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhyStates {
    /// (value, name without `PHY_`), in declaration order.
    pub names: Vec<(u32, String)>,
}

impl PhyStates {
    /// The states as a list (for capture headers).
    pub fn to_list(&self) -> Vec<PhyState> {
        self.names
            .iter()
            .map(|(value, name)| PhyState {
                value: *value,
                name: name.clone(),
            })
            .collect()
    }

    /// The state `value`, named (`UNKNOWN_7` for a value the enum does not have).
    pub fn state(&self, value: u32) -> PhyState {
        let name = self
            .names
            .iter()
            .find(|(v, _)| *v == value)
            .map_or_else(|| format!("UNKNOWN_{value}"), |(_, name)| name.clone());
        PhyState { value, name }
    }
}
