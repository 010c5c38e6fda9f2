//! The MAC side of a session: phylink's MAC call sites while phylink is live ([`mac_sites`]),
//! or the AX88772's MAC ops by name, and `phylink_resolve` itself.

use std::collections::BTreeSet;

use phytrace_common::RawKind;

use super::Tracer;
use crate::probe::mac_sites::{self, MacSites};

/// The MAC side of a phylink link: (module, function, program, on return). Armed before the
/// modules load, like the driver callbacks: a dongle's first link-up is seen too.
pub const MAC_PROBES: &[(&str, &str, &str, bool)] = &[
    ("phylink", "phylink_resolve", "phylink_resolve_enter", false),
    ("phylink", "phylink_resolve", "phylink_resolve_exit", true),
];

/// The AX88772's MAC ops by name: where phylink's MAC call sites ([`mac_sites`]) are not
/// traced (`--callback-probes symbol`, or sites that could not be armed).
pub const MAC_BY_NAME: &[(&str, &str, &str, bool)] = &[
    ("asix", "ax88772_mac_link_up", "mac_link_up", false),
    ("asix", "ax88772_mac_link_down", "mac_link_down", false),
];

impl Tracer {
    /// Finds and arms the live phylink's MAC call sites; where they cannot be, says why and
    /// probes the MAC ops by name instead.
    pub(super) fn arm_mac_sites(&mut self) {
        let Some(btf) = &self.mac_btf else {
            return;
        };
        let armed = mac_sites::find(btf)
            .and_then(|found| MacSites::arm(&mut self.ebpf, found, &mut self.notes));
        match armed {
            Ok(sites) => self.mac_sites = Some(sites),
            Err(err) => {
                self.notes.push(format!(
                    "MAC ops are not traced at phylink's call sites ({err:#}): asix's by name"
                ));
                self.arm_mac_by_name(&BTreeSet::new());
            }
        }
    }

    /// Arms [`MAC_BY_NAME`], once.
    pub(super) fn arm_mac_by_name(&mut self, built_in: &BTreeSet<String>) {
        if !std::mem::replace(&mut self.mac_by_name, true) {
            self.arm_mac(built_in, MAC_BY_NAME);
        }
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
        if module == mac_sites::MODULE && !self.mac_by_name {
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
