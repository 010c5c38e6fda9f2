//! The MAC side of a session: phylink's MAC call sites while phylink is live ([`mac_sites`]),
//! or the AX88772's MAC ops by name, and `phylink_resolve` itself.

use std::collections::BTreeSet;

use phytrace_common::RawKind;

use super::Tracer;
use crate::probe::{
    callsites::MAC_OPS,
    mac_sites::{self, MacChoice, MacSites},
};

/// The MAC side of a phylink link: (module, function, program, on return). Armed before the
/// modules load, like the driver callbacks: a dongle's first link-up is seen too.
pub const MAC_PROBES: &[(&str, &str, &str, bool)] = &[
    ("phylink", "phylink_resolve", "phylink_resolve_enter", false),
    ("phylink", "phylink_resolve", "phylink_resolve_exit", true),
];

/// The AX88772's MAC ops by name (their programs named by op): with `--mac-probes name`, and
/// for an op no site of which phylink's MAC call sites ([`mac_sites`]) could arm.
pub const MAC_BY_NAME: &[(&str, &str, &str, bool)] = &[
    ("asix", "ax88772_mac_link_up", "mac_link_up", false),
    ("asix", "ax88772_mac_link_down", "mac_link_down", false),
];

impl Tracer {
    /// Finds and arms the live phylink's MAC call sites; an op none of whose sites can be
    /// armed is probed by name instead, and said. An op once probed by name stays so (its
    /// sites are not armed: each call is seen once).
    pub(super) fn arm_mac_sites(&mut self) {
        let Some(btf) = &self.mac_btf else {
            return;
        };
        let by_name = &self.mac_by_name;
        let armed = mac_sites::find(btf).and_then(|mut found| {
            found
                .discovery
                .sites
                .retain(|site| !by_name.contains(site.op()));
            MacSites::arm(&mut self.ebpf, found, &mut self.notes)
        });
        let unarmed: Vec<&str> = match armed {
            Ok(sites) => {
                let unarmed: Vec<&str> = MAC_OPS
                    .into_iter()
                    .filter(|op| !by_name.contains(op))
                    .filter(|op| !sites.sites().iter().any(|site| site.op() == *op))
                    .collect();
                for op in &unarmed {
                    self.notes.push(format!(
                        "phylink's calls of mac_ops->{op} are not traced at a call site: asix's by name"
                    ));
                }
                self.mac_sites = Some(sites);
                unarmed
            }
            Err(err) => {
                self.notes.push(format!(
                    "MAC ops are not traced at phylink's call sites ({err:#}): asix's by name"
                ));
                MAC_OPS.to_vec()
            }
        };
        self.arm_mac_by_name(&BTreeSet::new(), &unarmed);
    }

    /// Arms the entries of [`MAC_BY_NAME`] for `ops` not armed yet.
    pub(super) fn arm_mac_by_name(&mut self, built_in: &BTreeSet<String>, ops: &[&str]) {
        let entries: Vec<_> = MAC_BY_NAME
            .iter()
            .filter(|(_, _, op, _)| ops.contains(op) && self.mac_by_name.insert(op))
            .copied()
            .collect();
        self.arm_mac(built_in, &entries);
    }

    /// Arms MAC probes by name (`probes`); a MAC the kernel cannot probe is reported, not fatal
    /// (the PHY side is traced without it).
    pub(super) fn arm_mac(
        &mut self,
        built_in: &BTreeSet<String>,
        probes: &[(&str, &str, &str, bool)],
    ) {
        for (module, symbol, program, on_return) in probes {
            let module = (!built_in.contains(*module)).then_some(*module);
            if let Err(err) =
                self.probes
                    .arm_function(&mut self.ebpf, module, symbol, program, *on_return)
            {
                self.notes
                    .push(format!("the MAC side will not show {symbol}: {err:#}"));
            }
        }
    }

    /// Module `module` loaded or went away (`kind`): phylink's kprobes went with its code, and
    /// a new phylink has its own sites.
    pub(super) fn mac_module_changed(&mut self, kind: RawKind, module: &str) {
        if module == mac_sites::MODULE && self.options.mac == MacChoice::Callsite {
            if let Some(mut sites) = self.mac_sites.take() {
                sites.disarm();
            }
            if kind == RawKind::ModuleLoad {
                self.arm_mac_sites();
            }
        }
    }

    /// phylink's MAC call sites armed, if they are.
    pub fn mac_sites(&self) -> Option<&MacSites> {
        self.mac_sites.as_ref()
    }
}
