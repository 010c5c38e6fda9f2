//! `probes --format json`: the [`Survey`] as one JSON document, for CI. Every part the text
//! shows, typed; a part that cannot be read is `{"unavailable": "why"}`.

use phytrace_common::KernelOffsets;
use serde::Serialize;

use crate::diagnose::survey::Survey;
use crate::event::PhyState;
use crate::kernel::code::{CallSite, Discovery, MAC_OPS, OPS, mac_sites};

/// The document's schema: a field's change of meaning or removal bumps it.
pub const SCHEMA: &str = "phytrace-probes/1";

/// What phytrace would probe on this kernel.
#[derive(Serialize)]
pub struct Probes<'a> {
    schema: &'static str,
    /// The Rust drivers' callbacks in kallsyms (`--callback-probes symbol`).
    callbacks: Vec<Callback<'a>>,
    /// phylib's call sites of the `phy_driver` ops (`--callback-probes callsite`).
    call_sites: Part<CallSites<'a>>,
    /// phylink's call sites of the MAC ops.
    mac_sites: Part<Search<MacSite<'a>>>,
    /// The MDIO bus accessors.
    mdio_accessors: Vec<Accessor>,
    /// The PHY devices on MDIO buses and their drivers.
    phys: Vec<Phy<'a>>,
    /// The struct offsets and `enum phy_state` of the kernel's BTF.
    offsets: Part<Offsets<'a>>,
}

impl<'a> Probes<'a> {
    /// The document of `survey`.
    pub fn of(survey: &'a Survey) -> Self {
        Self {
            schema: SCHEMA,
            callbacks: survey
                .callbacks
                .iter()
                .map(|s| Callback {
                    module: &s.module,
                    driver_type: &s.driver_type,
                    callback: &s.callback,
                    address: (s.address != 0).then(|| format!("{:#x}", s.address)),
                    symbol: &s.symbol,
                    demangled: &s.demangled,
                })
                .collect(),
            call_sites: Part::of(&survey.call_sites, |(discovery, cached)| CallSites {
                source: match (cached, &discovery.pending) {
                    (true, _) => "cache",
                    (false, Some(_)) => "module_file",
                    (false, None) => "kernel_text",
                },
                pending_module: discovery.pending.as_deref(),
                search: Search::of(discovery, &OPS, Site::of),
            }),
            mac_sites: Part::of(&survey.mac_sites, |found| {
                Search::of(&found.discovery, &MAC_OPS, MacSite::of)
            }),
            mdio_accessors: survey
                .accessors
                .iter()
                .map(|a| Accessor {
                    name: a.name,
                    required: a.required,
                    present: a.present,
                })
                .collect(),
            phys: survey
                .phys
                .iter()
                .map(|phy| Phy {
                    name: &phy.name,
                    phy_id: &phy.phy_id,
                    driver: &phy.driver,
                    module: &phy.module,
                })
                .collect(),
            offsets: Part::of(&survey.offsets, |(offsets, states)| {
                Offsets::of(&survey.btf, offsets, states.to_list())
            }),
        }
    }
}

/// A part of the survey, or why it cannot be read.
#[derive(Serialize)]
#[serde(untagged)]
enum Part<T> {
    Read(T),
    Unavailable { unavailable: String },
}

impl<T> Part<T> {
    /// `read` of what was found, or the error that stopped the search.
    fn of<'a, F>(found: &'a anyhow::Result<F>, read: impl FnOnce(&'a F) -> T) -> Self {
        match found {
            Ok(found) => Self::Read(read(found)),
            Err(err) => Self::Unavailable {
                unavailable: format!("{err:#}"),
            },
        }
    }
}

/// A Rust driver's callback, as kallsyms names it.
#[derive(Serialize)]
struct Callback<'a> {
    module: &'a str,
    driver_type: &'a str,
    callback: &'a str,
    /// A hex string (kernel addresses exceed JSON's exact integers); null where kallsyms hides
    /// addresses from this user.
    address: Option<String>,
    symbol: &'a str,
    demangled: &'a str,
}

/// phylib's call sites and where they came from.
#[derive(Serialize)]
struct CallSites<'a> {
    /// `kernel_text` (decoded now), `module_file` (phylib's module, not loaded, decoded from
    /// its file) or `cache` (this boot's, kept by a session that decoded them).
    source: &'static str,
    /// The module the sites are in, when it is not loaded: a session arms them as it loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_module: Option<&'a str>,
    #[serde(flatten)]
    search: Search<Site<'a>>,
}

/// The call sites a search of the kernel's code found, and what it covered.
#[derive(Serialize)]
struct Search<S> {
    sites: Vec<S>,
    /// The ops no call site was found for.
    ops_without_sites: Vec<&'static str>,
    functions_decoded: usize,
    text_bytes: usize,
    /// Functions another tracer's kprobes rewrote: a call site there may be missing.
    rewritten: Vec<String>,
}

impl<S> Search<S> {
    fn of<'a>(discovery: &'a Discovery, ops: &[&'static str], site: fn(&'a CallSite) -> S) -> Self {
        Self {
            sites: discovery.sites.iter().map(site).collect(),
            ops_without_sites: discovery.ops_without_sites(ops),
            functions_decoded: discovery.functions_decoded,
            text_bytes: discovery.text_bytes,
            rewritten: discovery.rewritten.clone(),
        }
    }
}

/// A call of an op, and where its return is seen.
#[derive(Serialize)]
struct Site<'a> {
    /// `function+0xOFFSET`, as kprobes spell it.
    call: String,
    function: &'a str,
    offset: u32,
    op: &'static str,
    /// Where the return is seen, as `call` spells it; absent for a tail call (seen at the
    /// function's own return).
    #[serde(skip_serializing_if = "Option::is_none")]
    ret: Option<String>,
    /// Why the site is not traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_traced: Option<&'static str>,
}

impl<'a> Site<'a> {
    fn of(site: &'a CallSite) -> Self {
        Self {
            call: site.place(),
            function: &site.function,
            offset: site.found.offset,
            op: site.op(),
            ret: site.return_place(),
            not_traced: site.unprobeable(),
        }
    }
}

/// A call of a MAC op, and how a call is told to be one of that op.
#[derive(Serialize)]
struct MacSite<'a> {
    #[serde(flatten)]
    site: Site<'a>,
    /// Where the call's `struct phylink` holds `mac_ops`: traced calls are those whose target
    /// is `pl->mac_ops->OP`.
    #[serde(skip_serializing_if = "Option::is_none")]
    mac_ops: Option<MacOps>,
}

impl<'a> MacSite<'a> {
    fn of(site: &'a CallSite) -> Self {
        let mut found = Site::of(site);
        found.not_traced = mac_sites::unarmable(site).or(found.not_traced);
        Self {
            site: found,
            mac_ops: site.found.owner.map(|owner| MacOps {
                pt_regs_offset: owner.register,
                displacement: owner.displacement,
            }),
        }
    }
}

/// `mac_ops`' place: `displacement` bytes from the register at `pt_regs_offset` in `struct
/// pt_regs`.
#[derive(Serialize)]
struct MacOps {
    pt_regs_offset: u32,
    displacement: i32,
}

/// An MDIO accessor and whether this kernel has it.
#[derive(Serialize)]
struct Accessor {
    name: &'static str,
    /// Whether tracing cannot do without it.
    required: bool,
    present: bool,
}

/// A PHY device, as sysfs shows it.
#[derive(Serialize)]
struct Phy<'a> {
    name: &'a str,
    phy_id: &'a str,
    driver: &'a str,
    module: &'a str,
}

/// The struct offsets phytrace reads, by struct, and `enum phy_state`.
#[derive(Serialize)]
struct Offsets<'a> {
    btf: &'a str,
    phy_device: PhyDevice,
    phy_driver: PhyDriver,
    mii_bus: MiiBus,
    mdio_device: MdioDevice,
    phy_states: Vec<PhyState>,
}

impl<'a> Offsets<'a> {
    fn of(btf: &'a str, o: &KernelOffsets, phy_states: Vec<PhyState>) -> Self {
        Self {
            btf,
            phy_device: PhyDevice {
                mdio_bus: o.phy_bus,
                mdio_addr: o.phy_addr,
                phy_id: o.phy_id,
                drv: o.phy_drv,
                state: o.phy_state,
                speed: o.phy_speed,
                duplex: o.phy_duplex,
                link_byte: o.phy_link_byte,
                link_bit: o.phy_link_bit,
            },
            phy_driver: PhyDriver { name: o.drv_name },
            mii_bus: MiiBus {
                id: o.bus_id,
                mdio_map: o.bus_mdio_map,
            },
            mdio_device: MdioDevice {
                flags: o.mdio_flags,
            },
            phy_states,
        }
    }
}

/// Offsets in `struct phy_device` (`link` a bitfield: its byte and bit).
#[derive(Serialize)]
struct PhyDevice {
    mdio_bus: u32,
    mdio_addr: u32,
    phy_id: u32,
    drv: u32,
    state: u32,
    speed: u32,
    duplex: u32,
    link_byte: u32,
    link_bit: u32,
}

/// Offsets in `struct phy_driver`.
#[derive(Serialize)]
struct PhyDriver {
    name: u32,
}

/// Offsets in `struct mii_bus`.
#[derive(Serialize)]
struct MiiBus {
    id: u32,
    mdio_map: u32,
}

/// Offsets in `struct mdio_device`.
#[derive(Serialize)]
struct MdioDevice {
    flags: u32,
}

#[cfg(test)]
mod tests {
    use anyhow::anyhow;
    use serde_json::json;

    use super::*;
    use crate::diagnose::survey::{Accessor as SurveyAccessor, BoundPhy};
    use crate::kernel::code::{Found, Owner, Return, Target};
    use crate::kernel::symbols::CallbackSymbol;
    use crate::records::states::PhyStates;

    fn site(function: &str, offset: u32, op: &'static str, ret: Return) -> CallSite {
        CallSite {
            function: function.into(),
            found: Found {
                offset,
                op: 0,
                target: Target::Register(80),
                ret,
                owner: None,
            },
            op_offset: 0x10,
            op_name: op,
        }
    }

    /// A survey with every part: one found from the cache, one failed, the rest read.
    fn survey() -> Survey {
        let mut mac_up = site("phylink_link_up", 0x80, "mac_link_up", Return::After(0x84));
        mac_up.found.owner = Some(Owner {
            register: 80,
            displacement: 8,
        });
        let offsets = KernelOffsets {
            phy_bus: 0x310,
            phy_addr: 0x318,
            phy_id: 0x334,
            phy_drv: 0x58,
            phy_state: 0x3c0,
            phy_speed: 0x44c,
            phy_duplex: 0x450,
            phy_link_byte: 0x3d8,
            phy_link_bit: 2,
            drv_name: 0x8,
            bus_id: 0x20,
            bus_mdio_map: 0x4a8,
            mdio_flags: 0x3a0,
            ..KernelOffsets::default()
        };
        Survey {
            callbacks: vec![CallbackSymbol {
                module: "ax88796b_rust".into(),
                driver_type: "ax88796b_rust::PhyAX88772A".into(),
                callback: "read_status".into(),
                address: 0xffff_ffff_c080_0080,
                symbol: "_RNvXs_read_status".into(),
                demangled: "<Adapter<PhyAX88772A>>::read_status_callback".into(),
            }],
            call_sites: Ok((
                Discovery {
                    sites: vec![
                        site(
                            "phy_check_link_status",
                            0x4c,
                            "read_status",
                            Return::After(0x51),
                        ),
                        CallSite {
                            found: Found {
                                target: Target::Memory(0x10),
                                ..site("phy_suspend", 0x9a, "suspend", Return::Tail).found
                            },
                            ..site("phy_suspend", 0x9a, "suspend", Return::Tail)
                        },
                    ],
                    functions_decoded: 40,
                    text_bytes: 65536,
                    rewritten: vec!["phy_start_aneg".into()],
                    cache_damage: None,
                    pending: None,
                },
                true,
            )),
            mac_sites: Ok(mac_sites::Found {
                discovery: Discovery {
                    sites: vec![
                        mac_up,
                        site("phylink_link_down", 0x20, "mac_link_down", Return::Tail),
                    ],
                    functions_decoded: 3,
                    text_bytes: 4096,
                    rewritten: Vec::new(),
                    cache_damage: None,
                    pending: None,
                },
                config_from_ops: 8,
            }),
            accessors: vec![SurveyAccessor {
                name: "__mdiobus_read",
                required: true,
                present: true,
            }],
            phys: vec![BoundPhy {
                name: "phy_sim-0:01".into(),
                phy_id: "0x003b1861".into(),
                driver: "Asix Electronics AX88772A".into(),
                module: "ax88796b_rust".into(),
            }],
            offsets: Ok((
                offsets,
                PhyStates {
                    names: vec![(0, "DOWN".into()), (5, "RUNNING".into())],
                },
            )),
            btf: "/sys/kernel/btf/vmlinux".into(),
        }
    }

    #[test]
    fn every_part_is_typed_and_named() {
        let survey = survey();
        let document = serde_json::to_value(Probes::of(&survey)).unwrap();
        let ops_without_phy_sites: Vec<&str> = OPS
            .iter()
            .copied()
            .filter(|op| !["read_status", "suspend"].contains(op))
            .collect();
        assert_eq!(
            document,
            json!({
                "schema": "phytrace-probes/1",
                "callbacks": [{
                    "module": "ax88796b_rust",
                    "driver_type": "ax88796b_rust::PhyAX88772A",
                    "callback": "read_status",
                    "address": "0xffffffffc0800080",
                    "symbol": "_RNvXs_read_status",
                    "demangled": "<Adapter<PhyAX88772A>>::read_status_callback",
                }],
                "call_sites": {
                    "source": "cache",
                    "sites": [
                        {
                            "call": "phy_check_link_status+0x4c",
                            "function": "phy_check_link_status",
                            "offset": 0x4c,
                            "op": "read_status",
                            "ret": "phy_check_link_status+0x51",
                        },
                        {
                            "call": "phy_suspend+0x9a",
                            "function": "phy_suspend",
                            "offset": 0x9a,
                            "op": "suspend",
                            "not_traced": "the kernel's kprobes cannot take an indirect call through memory",
                        },
                    ],
                    "ops_without_sites": ops_without_phy_sites,
                    "functions_decoded": 40,
                    "text_bytes": 65536,
                    "rewritten": ["phy_start_aneg"],
                },
                "mac_sites": {
                    "sites": [
                        {
                            "call": "phylink_link_up+0x80",
                            "function": "phylink_link_up",
                            "offset": 0x80,
                            "op": "mac_link_up",
                            "ret": "phylink_link_up+0x84",
                            "mac_ops": {"pt_regs_offset": 80, "displacement": 8},
                        },
                        {
                            "call": "phylink_link_down+0x20",
                            "function": "phylink_link_down",
                            "offset": 0x20,
                            "op": "mac_link_down",
                            "not_traced": mac_sites::unarmable(&site("f", 0, "x", Return::Tail)),
                        },
                    ],
                    "ops_without_sites": [],
                    "functions_decoded": 3,
                    "text_bytes": 4096,
                    "rewritten": [],
                },
                "mdio_accessors": [{"name": "__mdiobus_read", "required": true, "present": true}],
                "phys": [{
                    "name": "phy_sim-0:01",
                    "phy_id": "0x003b1861",
                    "driver": "Asix Electronics AX88772A",
                    "module": "ax88796b_rust",
                }],
                "offsets": {
                    "btf": "/sys/kernel/btf/vmlinux",
                    "phy_device": {
                        "mdio_bus": 0x310, "mdio_addr": 0x318, "phy_id": 0x334, "drv": 0x58,
                        "state": 0x3c0, "speed": 0x44c, "duplex": 0x450, "link_byte": 0x3d8,
                        "link_bit": 2,
                    },
                    "phy_driver": {"name": 8},
                    "mii_bus": {"id": 0x20, "mdio_map": 0x4a8},
                    "mdio_device": {"flags": 0x3a0},
                    "phy_states": [{"value": 0, "name": "DOWN"}, {"value": 5, "name": "RUNNING"}],
                },
            })
        );
    }

    #[test]
    fn a_part_that_cannot_be_read_says_why_and_hidden_addresses_are_null() {
        let mut survey = survey();
        survey.call_sites = Err(anyhow!("cannot read /proc/kcore").context("decoding"));
        survey.offsets = Err(anyhow!("no BTF"));
        survey.callbacks[0].address = 0;
        let document = serde_json::to_value(Probes::of(&survey)).unwrap();
        assert_eq!(
            document["call_sites"],
            json!({"unavailable": "decoding: cannot read /proc/kcore"})
        );
        assert_eq!(document["offsets"], json!({"unavailable": "no BTF"}));
        assert_eq!(document["callbacks"][0]["address"], json!(null));
    }
}
