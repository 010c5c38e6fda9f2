//! The MAC side of a session: phylink's MAC call sites while phylink is live ([`mac_sites`]),
//! the AX88772's MAC ops by name, and `phylink_resolve` itself.

use std::{collections::BTreeSet, sync::Arc};

use anyhow::anyhow;
use phytrace_common::RawKind;

use super::Tracer;
use crate::probe::{
    callsites::{CallSite, MAC_OPS},
    mac_sites::{self, Home, MacChoice, MacSiteCalls, MacSites},
};

/// The MAC side of a phylink link: (module, function, program, on return). Armed before the
/// modules load, like the driver callbacks: a dongle's first link-up is seen too.
pub const MAC_PROBES: &[(&str, &str, &str, bool)] = &[
    ("phylink", "phylink_resolve", "phylink_resolve_enter", false),
    ("phylink", "phylink_resolve", "phylink_resolve_exit", true),
];

/// The AX88772's MAC ops by name (their programs named by op): the MAC side with
/// `--mac-probes name`; beside phylink's MAC call sites ([`mac_sites`]), the calls no site
/// reported (a site's call is left for the by-name probe to skip: each is reported once).
pub const MAC_BY_NAME: &[(&str, &str, &str, bool)] = &[
    ("asix", "ax88772_mac_link_up", "mac_link_up", false),
    ("asix", "ax88772_mac_link_down", "mac_link_down", false),
];

impl Tracer {
    /// Starts finding phylink's MAC call sites (at `home`) on another thread (seconds in a
    /// slow guest); asix's by-name probes report the calls meanwhile.
    pub(super) fn find_mac_sites(&mut self, home: Home) {
        let Some(btf) = &self.mac_btf else {
            return;
        };
        let btf = Arc::clone(btf);
        match std::thread::Builder::new()
            .name("mac-sites".to_owned())
            .spawn(move || mac_sites::find(&btf, home))
        {
            Ok(finding) => self.mac_finding = Some(finding),
            Err(err) => self.notes.push(format!(
                "MAC ops are not traced at phylink's call sites (no thread to find them: {err}): asix's by name"
            )),
        }
    }

    /// Arms the MAC call sites found, once the search is over; an op none of whose sites can
    /// be armed is said (asix's by-name probes trace it). Either way the sites armed, none
    /// included, are [`Self::take_newly_armed_mac_sites`]'s.
    pub(super) fn arm_found_mac_sites(&mut self) {
        let Some(finding) = self.mac_finding.take_if(|finding| finding.is_finished()) else {
            return;
        };
        let armed = finding
            .join()
            .unwrap_or_else(|_| Err(anyhow!("the search for them failed")))
            .and_then(|found| MacSites::arm(&mut self.ebpf, found, &mut self.notes));
        match armed {
            Ok(sites) => {
                for op in MAC_OPS
                    .into_iter()
                    .filter(|op| !sites.sites().any(|site| site.op() == *op))
                {
                    self.notes.push(format!(
                        "phylink's calls of mac_ops->{op} are not traced at a call site: asix's by name"
                    ));
                }
                self.newly_armed_mac_sites = Some(sites.sites().map(CallSite::label).collect());
                self.mac_sites = Some(sites);
            }
            Err(err) => {
                self.notes.push(format!(
                    "MAC ops are not traced at phylink's call sites ({err:#}): asix's by name"
                ));
                self.newly_armed_mac_sites = Some(Vec::new());
            }
        }
    }

    /// Disarms phylink's MAC call sites, keeping the count of calls each reported (a search
    /// still running is left to end unheard).
    pub(super) fn disarm_mac_sites(&mut self) {
        self.mac_finding = None;
        let Some(mut sites) = self.mac_sites.take() else {
            return;
        };
        match sites.disarm() {
            Ok(calls) => self.mac_site_calls.extend(calls),
            Err(err) => self.notes.push(format!(
                "the MAC call sites' counts could not be read: {err:#}"
            )),
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
        if module == mac_sites::MODULE && self.options.mac == MacChoice::Callsite {
            self.disarm_mac_sites();
            if kind == RawKind::ModuleLoad {
                self.find_mac_sites(Home::Module);
            }
        }
    }

    /// phylink's MAC call sites armed, if they are.
    pub fn mac_sites(&self) -> Option<&MacSites> {
        self.mac_sites.as_ref()
    }

    /// The MAC call sites armed by a search ended since the last call (`function+0xOFFSET
    /// (op)`; empty if it could arm none), if one ended.
    pub fn take_newly_armed_mac_sites(&mut self) -> Option<Vec<String>> {
        self.newly_armed_mac_sites.take()
    }

    /// The calls each MAC call site reported, of the sites disarmed (all, once the session
    /// is finished).
    pub fn mac_site_calls(&self) -> &[MacSiteCalls] {
        &self.mac_site_calls
    }
}
