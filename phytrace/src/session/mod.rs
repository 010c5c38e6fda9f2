//! A tracing session: programs loaded, MDIO probes attached, driver modules' callbacks armed
//! (before they load, where their module file is known), and kernel records turned into
//! [`Event`]s. By job: what is read before the programs load ([`prefetch`]), the start
//! sequence ([`start`]), which modules are armed how as they come and go ([`arming`]), the
//! MAC side ([`mac`]), the MDIO accessors moved to trampolines as phylib loads
//! ([`mdio_move`]), reading the ring in order ([`drain`]) and counting what was lost
//! ([`loss`]).

mod arming;
mod drain;
mod header;
pub(crate) mod kmsg;
mod loss;
mod mac;
mod mdio_move;
mod prefetch;
mod start;

use std::{path::PathBuf, sync::Arc, time::Instant};

use aya::{
    Ebpf,
    maps::{MapData, PerCpuArray, RingBuf},
};
use tokio::io::unix::AsyncFd;

pub use drain::{POLL_INTERVAL, Received, Sink};
pub use mac::MacSide;
pub use start::StartupTimings;

use crate::event::{Event, EventKind};
use crate::kernel::{
    btf::{BtfSource, KernelBtf},
    code::mdio_inlining::OpSite,
    symbols::CallbackSymbol,
};
use crate::probe::{
    driver_probes::DriverProbes,
    mac_site_probes::MacChoice,
    mdio_copy_probes::ArmedCopies,
    mdio_probes::MdioChoice,
    phy_site_probes::{CallSiteProbes, CallbackChoice, CallbackProbes},
    ring_wait::Read,
};
use crate::records::{
    decode::Decoder,
    session::{ArmingEntry, KmsgHeader, MdioProbes},
    states::PhyStates,
};
use kmsg::{Kmsg, KmsgScope};

/// What to trace.
#[derive(Clone, Debug, Default)]
pub struct TracerOptions {
    /// Ring buffer size in bytes.
    pub ring_size: u32,
    /// Driver modules to follow; empty means every module with `kernel::net::phy` callbacks.
    pub modules: Vec<String>,
    /// Module files to read callbacks from (instead of looking them up in the module tree).
    pub module_files: Vec<PathBuf>,
    /// The module tree to look module files up in; default: the running kernel's.
    pub module_tree: Option<PathBuf>,
    /// How to probe the MDIO accessors.
    pub mdio: MdioChoice,
    /// How to probe driver callbacks.
    pub callbacks: CallbackChoice,
    /// How to probe the MAC side's link changes.
    pub mac: MacChoice,
    /// Calls in flight each callback's return probe has room for (default: see
    /// [`super::driver_probes::default_max_active`]).
    pub max_active: Option<u32>,
    /// Callbacks kept open per thread (default and most: `MAX_CALLBACK_DEPTH`).
    pub callback_depth: Option<u32>,
    /// Which kernel messages to take.
    pub kmsg: KmsgScope,
    /// Where the kernel's types come from.
    pub btf: BtfSource,
}

impl TracerOptions {
    /// The module tree module files are looked up in.
    pub fn module_tree(&self) -> PathBuf {
        self.module_tree
            .clone()
            .unwrap_or_else(crate::kernel::module_files::default_tree)
    }
}

/// A running tracing session.
pub struct Tracer {
    ebpf: Ebpf,
    ring: AsyncFd<RingBuf<MapData>>,
    drops: PerCpuArray<MapData, u64>,
    decoder: Decoder,
    mdio: MdioProbes,
    /// While the MDIO accessors wait for phylib's module to load (not loaded as the session
    /// started) to move from kprobes to its trampolines: vmlinux's BTF, which its BTF goes on.
    mdio_awaiting: Option<Arc<KernelBtf>>,
    /// The MDIO accessors moved to trampolines, not said yet.
    mdio_moved: bool,
    options: TracerOptions,
    probes: DriverProbes,
    /// The followed modules and how each is armed.
    arming: arming::Arming,
    /// Losses reported so far, and records discarded.
    losses: loss::Losses,
    /// What the user should know about the session, not yet handed out.
    notes: Vec<String>,
    /// Events phytrace stamped itself (attachments at start), waiting for their place.
    held: drain::Held,
    last_poll: Instant,
    /// What the last read found.
    last_read: Read,
    states: PhyStates,
    startup: StartupTimings,
    /// The bus-op calls of MDIO accessors inlined into other functions, armed.
    mdio_copies: ArmedCopies,
    /// The call sites armed, when callbacks are probed there.
    call_sites: Option<CallSiteProbes>,
    /// phylink's MAC call sites.
    mac: mac::MacSide,
    /// The kernel's log lines, waiting for their place in the stream.
    kmsg: Kmsg,
}

/// The CPU this thread runs on, for the events phytrace stamps itself.
fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    u32::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0)
}

/// An event phytrace itself reports, stamped `ts_ns` on `cpu`.
fn own_event_at(ts_ns: u64, cpu: u32, kind: EventKind) -> Event {
    Event {
        ts_ns,
        cpu,
        tid: 0,
        phy: None,
        kind,
    }
}

impl Tracer {
    /// Which callback probes run (`None`: callbacks are not traced).
    pub fn callback_probes(&self) -> Option<CallbackProbes> {
        self.arming.probes()
    }

    /// The call sites armed, if callbacks are probed there.
    pub fn call_sites(&self) -> Option<&CallSiteProbes> {
        self.call_sites.as_ref()
    }

    /// The bus-op calls of inlined MDIO accessors armed (none where the kernel calls them).
    pub fn mdio_copies(&self) -> &[OpSite] {
        &self.mdio_copies.sites
    }

    /// What the user should know about the session since the last call (a probe that could
    /// not be armed, a module attached late).
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Where start-up time went.
    pub fn startup(&self) -> StartupTimings {
        self.startup
    }

    /// What the session takes of the kernel's log.
    pub fn kmsg_header(&self) -> KmsgHeader {
        self.kmsg.header()
    }

    /// How the MDIO accessors are probed.
    pub fn mdio_probes(&self) -> MdioProbes {
        self.mdio
    }

    /// `enum phy_state` of the traced kernel.
    pub fn phy_states(&self) -> &PhyStates {
        &self.states
    }

    /// The callbacks armed right now (addresses 0 for modules not loaded).
    pub fn probe_table(&self) -> Vec<CallbackSymbol> {
        self.probes
            .modules()
            .flat_map(|(_, m)| m.callbacks.iter().map(|c| c.symbol.clone()))
            .collect()
    }

    /// How each followed module is armed.
    pub fn arming(&self) -> Vec<ArmingEntry> {
        self.arming.entries()
    }

    /// Names of the followed modules not loaded now.
    pub fn waiting_for(&self) -> Vec<String> {
        self.arming.waiting_for()
    }
}

/// What the tests of more than one job build on.
#[cfg(test)]
mod testing {
    use super::CallbackSymbol;

    /// `module`'s `callback`, as build `build` of the module names it.
    pub fn symbol(module: &str, callback: &str, build: &str) -> CallbackSymbol {
        CallbackSymbol {
            module: module.to_owned(),
            driver_type: format!("{module}::Phy"),
            callback: callback.to_owned(),
            address: 0,
            symbol: format!("_R{build}{module}{callback}"),
            demangled: format!("{module}::{callback}"),
        }
    }
}
