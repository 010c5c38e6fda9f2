//! The MAC side of a session: phylink's MAC call sites while phylink is live ([`mac_sites`]),
//! the AX88772's MAC ops by name, and `phylink_resolve` itself.

use std::{collections::BTreeSet, sync::Arc, thread::JoinHandle};

use anyhow::anyhow;
use aya::Ebpf;
use phytrace_common::RawKind;

use super::Tracer;
use crate::kernel::{
    btf,
    code::{
        CallSite, MAC_OPS,
        mac_sites::{self, Home},
    },
    snapshot::Snapshot,
};
use crate::probe::{
    bpf_memory::BpfMemory,
    mac_site_probes::{MacSiteCalls, MacSites},
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

/// The MAC side of a session, as [`Arming`](super::arming::Arming) is its driver modules':
/// the search for phylink's MAC call sites and the sites armed, with the calls each reported.
#[derive(Default)]
pub struct MacSide {
    /// vmlinux's BTF, for phylink's on top when it goes live (`None`: MAC ops are probed by
    /// name).
    btf: Option<Arc<btf::KernelBtf>>,
    /// The search for the live phylink's MAC call sites, while it runs.
    finding: Option<JoinHandle<anyhow::Result<mac_sites::Found>>>,
    /// phylink's MAC call sites, while it is live and they are armed.
    sites: Option<MacSites>,
    /// The MAC call sites armed and not said yet.
    newly_armed: Option<Vec<String>>,
    /// The calls of the MAC call sites disarmed so far.
    calls: Vec<MacSiteCalls>,
}

impl MacSide {
    /// phylink's MAC call sites, found with `btf` (vmlinux's): searched now at `home` if
    /// phylink is live, else when it loads.
    /// `kernel`: the kernel as the session started, where a live phylink is searched.
    pub(super) fn at_call_sites(
        btf: Arc<btf::KernelBtf>,
        home: Option<Home>,
        kernel: Arc<Snapshot>,
        notes: &mut Vec<String>,
    ) -> Self {
        let mut side = Self {
            btf: Some(btf),
            ..Self::default()
        };
        if let Some(home) = home {
            side.find(home, kernel, notes);
        }
        side
    }

    /// Starts finding phylink's MAC call sites (at `home`) on another thread (seconds in a
    /// slow guest), in `kernel`; asix's by-name probes report the calls meanwhile.
    fn find(&mut self, home: Home, kernel: Arc<Snapshot>, notes: &mut Vec<String>) {
        let Some(btf) = &self.btf else {
            return;
        };
        let btf = Arc::clone(btf);
        match std::thread::Builder::new()
            .name("mac-sites".to_owned())
            .spawn(move || mac_sites::find(&btf, home, &kernel))
        {
            Ok(finding) => self.finding = Some(finding),
            Err(err) => notes.push(format!(
                "MAC ops are not traced at phylink's call sites (no thread to find them: {err}): asix's by name"
            )),
        }
    }

    /// Arms (with `ebpf`'s programs) the MAC call sites found, once the search is over; an op
    /// none of whose sites can be armed is said (asix's by-name probes trace it). Either way
    /// the sites armed, none included, are [`Self::take_newly_armed`]'s.
    pub(super) fn arm_found(&mut self, ebpf: &mut Ebpf, notes: &mut Vec<String>) {
        let Some(finding) = self.finding.take_if(|finding| finding.is_finished()) else {
            return;
        };
        let armed = finding
            .join()
            .unwrap_or_else(|_| Err(anyhow!("the search for them failed")))
            .and_then(|found| MacSites::arm(ebpf, found, notes));
        match armed {
            Ok(sites) => {
                for op in MAC_OPS
                    .into_iter()
                    .filter(|op| !sites.sites().any(|site| site.op() == *op))
                {
                    notes.push(format!(
                        "phylink's calls of mac_ops->{op} are not traced at a call site: asix's by name"
                    ));
                }
                self.newly_armed = Some(sites.sites().map(CallSite::label).collect());
                self.sites = Some(sites);
            }
            Err(err) => {
                notes.push(format!(
                    "MAC ops are not traced at phylink's call sites ({err:#}): asix's by name"
                ));
                self.newly_armed = Some(Vec::new());
            }
        }
    }

    /// Disarms phylink's MAC call sites, keeping the count of calls each reported (a search
    /// still running is left to end unheard).
    pub(super) fn disarm(&mut self, notes: &mut Vec<String>) {
        self.finding = None;
        let Some(mut sites) = self.sites.take() else {
            return;
        };
        match sites.disarm() {
            Ok(calls) => self.calls.extend(calls),
            Err(err) => notes.push(format!(
                "the MAC call sites' counts could not be read: {err:#}"
            )),
        }
    }

    /// Module `module` loaded or went away (`kind`): phylink's kprobes went with its code, and
    /// a new phylink has its own sites.
    pub(super) fn module_changed(&mut self, kind: RawKind, module: &str, notes: &mut Vec<String>) {
        if module == mac_sites::MODULE && self.btf.is_some() {
            self.disarm(notes);
            if kind == RawKind::ModuleLoad {
                // The kernel as phylink loaded.
                let kernel = Arc::new(Snapshot::new(BpfMemory::reader));
                self.find(Home::Module, kernel, notes);
            }
        }
    }

    /// The call sites the programs disabled since the last call, said once each.
    pub(super) fn newly_disabled(&mut self) -> anyhow::Result<Vec<String>> {
        match &mut self.sites {
            Some(sites) => sites.newly_disabled(),
            None => Ok(Vec::new()),
        }
    }

    /// phylink's MAC call sites armed, if they are.
    pub fn sites(&self) -> Option<&MacSites> {
        self.sites.as_ref()
    }

    /// The MAC call sites armed by a search ended since the last call (`function+0xOFFSET
    /// (op)`; empty if it could arm none), if one ended.
    pub fn take_newly_armed(&mut self) -> Option<Vec<String>> {
        self.newly_armed.take()
    }

    /// The calls each MAC call site reported, of the sites disarmed (all, once the session
    /// is finished).
    pub fn calls(&self) -> &[MacSiteCalls] {
        &self.calls
    }
}

impl Tracer {
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

    /// The MAC side.
    pub fn mac(&self) -> &MacSide {
        &self.mac
    }

    /// The MAC side, to take what it has not said yet.
    pub fn mac_mut(&mut self) -> &mut MacSide {
        &mut self.mac
    }
}
