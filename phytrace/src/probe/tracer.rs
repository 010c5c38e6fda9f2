//! A tracing session: programs loaded, MDIO probes attached, driver modules' callbacks armed
//! (before they load, where their module file is known), and kernel records turned into
//! [`Event`]s.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    maps::{MapData, PerCpuArray, RingBuf},
    programs::{Program, RawTracePoint},
};
use phytrace_common::{DropCause, RawEvent, RawKind, RawNamed};
use tokio::io::unix::AsyncFd;

use super::{
    attach::{Programs, attach},
    btf,
    call_site_probes::{self, CallSiteProbes, CallbackChoice, CallbackProbes, Finding, Sourcing},
    callsites::{Layout, cache},
    driver_probes::{self, DriverProbes},
    error::Stage,
    kmsg::{Kmsg, KmsgScope},
    loader::{self, LoadOptions, explain_refusal},
    mac_sites::{self, MacChoice, MacSites},
    mdio_inlining,
    mdio_probes::{self, MdioChoice},
    module_files::{self, ModuleTree},
    modules,
    preload::{self, Planned},
    symbols::{self, CallbackSymbol},
    trace_events,
};
use crate::event::{Event, EventKind, Guarantee, LossCause};
use crate::records::{
    clock::monotonic_ns,
    decode::{Decoder, c_string},
    raw::{self, Record},
    session::{KmsgHeader, MdioProbes},
    states::PhyStates,
};

/// Functions after which a PHY or bus may be re-created at the same address, or a PHY has
/// another driver: the programs then look the device up and name it anew.
const DEVICE_CHANGES: &[&str] = &[
    "phy_device_remove",
    "mdiobus_unregister",
    "phy_probe",
    "phy_remove",
];

/// The program of [`DEVICE_CHANGES`] (on return).
const DEVICE_CHANGE_PROGRAM: &str = "device_changed";

/// The module life-cycle tracepoints and their programs.
const MODULE_TRACEPOINTS: &[(&str, &str)] = &[
    ("module_load", "module_load"),
    ("module_free", "module_free"),
];

/// The MAC side of a phylink link: (module, function, program, on return). Armed before the
/// modules load, like the driver callbacks: a dongle's first link-up is seen too.
const MAC_PROBES: &[(&str, &str, &str, bool)] = &[
    ("phylink", "phylink_resolve", "phylink_resolve_enter", false),
    ("phylink", "phylink_resolve", "phylink_resolve_exit", true),
];

/// The AX88772's MAC ops by name: where phylink's MAC call sites ([`mac_sites`]) are not
/// traced (`--callback-probes symbol`, or sites that could not be armed).
const MAC_BY_NAME: &[(&str, &str, &str, bool)] = &[
    ("asix", "ax88772_mac_link_up", "mac_link_up", false),
    ("asix", "ax88772_mac_link_down", "mac_link_down", false),
];

/// Carrier changes of every network device (vmlinux).
const CARRIER_PROBES: &[(&str, &str)] = &[
    ("netif_carrier_on", "carrier_on"),
    ("netif_carrier_off", "carrier_off"),
];

/// Every program a session attaches: first those [`Tracer::start`] attaches while the others
/// load, in the order it attaches them, then the others, the callback programs (the costliest
/// to verify) first.
fn planned_programs(mdio: MdioChoice, btf: &btf::KernelBtf) -> Vec<Planned> {
    let mut planned = mdio_probes::planned(mdio, btf);
    let others = [DEVICE_CHANGE_PROGRAM]
        .iter()
        .chain(MODULE_TRACEPOINTS.iter().map(|(_, program)| program))
        .chain(CARRIER_PROBES.iter().map(|(_, program)| program))
        .chain(driver_probes::PROGRAMS.iter())
        .chain(MAC_PROBES.iter().map(|(_, _, program, _)| program))
        .chain(MAC_BY_NAME.iter().map(|(_, _, program, _)| program))
        .chain(mac_sites::PROGRAMS.iter());
    planned.extend(others.map(|program| Planned::program(program)));
    planned
}

/// How often drop counters are checked.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Most records [`Tracer::next_events`] takes in one call: under overload the caller writes
/// as it reads, and memory stays bounded however fast the kernel produces.
const MAX_BATCH: usize = 4096;

/// How long [`Tracer::next_events`] lets records gather after a call that found some. The
/// kernel wakes the reader for the first record after it emptied the ring: reading each time
/// it is woken costs a wake-up (two context switches and an inter-processor interrupt) per few
/// records under load. Pausing reads a millisecond's worth of records per wake-up instead, at
/// the price of this much latency (the default ring holds 26 000 records: over 140 ms at the
/// highest rate one CPU produces them).
const GATHER_PAUSE: Duration = Duration::from_millis(1);

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
}

/// Where start-up time went, for `record`'s first line and the benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartupTimings {
    /// Reading vmlinux BTF (offsets, `enum phy_state`).
    pub btf: Duration,
    /// Loading the eBPF object (verifier included), with the start's first attachments made
    /// meanwhile.
    pub load: Duration,
    /// Of `load`: attaching the MDIO probes, module tracepoints and device and carrier kprobes,
    /// while the other programs were being loaded.
    pub mdio: Duration,
    /// Finding driver modules and arming their callbacks (kallsyms and module files are read
    /// meanwhile during the phases before: only what is left of that is waited for here), or
    /// finding and arming the call sites.
    pub modules: Duration,
    /// Of `modules`, with call-site probes: finding the sites (reading and decoding the
    /// kernel text), or reading them from the cache.
    pub call_sites: Sourcing,
}

/// How a followed module is traced.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModuleArming {
    pub module: String,
    /// What the capture holds of its callbacks at its next load.
    pub guarantee: Guarantee,
    /// Where its callbacks were read, or why they could not be read in advance.
    pub source: String,
}

/// What is read before the programs are loaded, on another thread.
struct Prefetched {
    /// Callbacks of the live followed modules, from kallsyms.
    live_callbacks: Vec<CallbackSymbol>,
    /// Followed modules not loaded: their module file's callbacks, or why there are none.
    files: BTreeMap<String, Result<(PathBuf, Vec<CallbackSymbol>), String>>,
    /// Modules of the tree known not to be PHY drivers (no `mdio:` alias).
    not_phy_drivers: BTreeSet<String>,
    /// The modules of [`MAC_PROBES`] that are built into the kernel.
    built_in: BTreeSet<String>,
}

impl Prefetched {
    fn read(options: &TracerOptions) -> Result<Self> {
        let loaded: BTreeSet<String> = modules::read()?
            .into_iter()
            .filter(|(name, state)| state == "Live" && modules::follows(&options.modules, name))
            .map(|(name, _)| name)
            .collect();
        let live_callbacks = if loaded.is_empty() {
            Vec::new()
        } else {
            read_callbacks()?
                .into_iter()
                .filter(|s| loaded.contains(&s.module))
                .collect()
        };
        let tree = ModuleTree::read(
            &options
                .module_tree
                .clone()
                .unwrap_or_else(module_files::default_tree),
        );
        let read_file = |path: &Path| {
            module_files::read(path)
                .map(|file| (file.path, file.callbacks))
                .map_err(|err| err.to_string())
        };
        let mut files = BTreeMap::new();
        for path in &options.module_files {
            let name = module_files::module_name(path).unwrap_or_default();
            files.insert(name, read_file(path));
        }
        let wanted: Vec<String> = if options.modules.is_empty() {
            tree.phy_drivers().to_vec()
        } else {
            options.modules.clone()
        };
        for name in wanted {
            if loaded.contains(&name) || files.contains_key(&name) {
                continue;
            }
            let read = match tree.file(&name) {
                Some(path) => read_file(path),
                None => Err(
                    "not in the module tree (modules.dep); give it with --module-file".to_owned(),
                ),
            };
            // Following every Rust PHY driver: C drivers in the tree are not followed.
            if options.modules.is_empty() && read.as_ref().is_ok_and(|(_, c)| c.is_empty()) {
                continue;
            }
            files.insert(name, read);
        }
        let not_phy_drivers = tree
            .modules()
            .filter(|name| !tree.phy_drivers().contains(name))
            .cloned()
            .collect();
        let built_in = MAC_PROBES
            .iter()
            .map(|(module, ..)| *module)
            .filter(|module| tree.is_built_in(module))
            .map(str::to_owned)
            .collect();
        Ok(Self {
            live_callbacks,
            files,
            not_phy_drivers,
            built_in,
        })
    }
}

/// The driver callbacks in kallsyms.
fn read_callbacks() -> Result<Vec<CallbackSymbol>> {
    symbols::read_kallsyms(Path::new(symbols::KALLSYMS))
        .with_context(|| format!("reading {}", symbols::KALLSYMS))
}

/// A running tracing session.
pub struct Tracer {
    ebpf: Ebpf,
    ring: AsyncFd<RingBuf<MapData>>,
    drops: PerCpuArray<MapData, u64>,
    decoder: Decoder,
    mdio: MdioProbes,
    options: TracerOptions,
    probes: DriverProbes,
    /// Followed modules that are live now.
    live: BTreeSet<String>,
    /// Modules that were live at some point of the session.
    ever_attached: BTreeSet<String>,
    /// How each followed module is armed.
    arming: BTreeMap<String, ModuleArming>,
    /// Modules of the tree known not to be PHY drivers.
    not_phy_drivers: BTreeSet<String>,
    /// Losses reported so far, by cause (in [`LossCause::ALL`]'s order).
    lost_reported: [u64; 4],
    /// Ring-buffer records that could not be read.
    discarded: u64,
    /// What the user should know about the session, not yet handed out.
    notes: Vec<String>,
    /// Time and CPU of the last record read: events phytrace adds are stamped with them, so
    /// that every CPU's records stay in time order.
    last_seen: (u64, u32),
    /// Events phytrace stamped itself (attachments at start), in time order, waiting for their
    /// place in the stream: handed out before the first record of their CPU stamped later,
    /// or when the ring is found empty.
    held: VecDeque<Event>,
    last_poll: Instant,
    /// What the last read found.
    last_read: Read,
    states: PhyStates,
    startup: StartupTimings,
    /// The bus-op calls of MDIO accessors inlined into other functions, armed.
    _mdio_sites: Vec<trace_events::EventLink>,
    /// The call sites armed, when callbacks are probed there.
    call_sites: Option<CallSiteProbes>,
    /// Which callback probes ran (`None`: none could be armed).
    callback_probes: Option<CallbackProbes>,
    /// vmlinux's BTF, for phylink's on top when it goes live (`None`: MAC ops are probed by
    /// name).
    mac_btf: Option<btf::KernelBtf>,
    /// phylink's MAC call sites, while it is live and they are armed.
    mac_sites: Option<MacSites>,
    /// Whether the MAC ops are probed by name ([`MAC_BY_NAME`]).
    mac_by_name: bool,
    /// The kernel's log lines, waiting for their place in the stream.
    kmsg: Kmsg,
}

/// What one read of the ring buffer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// No record.
    Nothing,
    /// Records, up to the last one in the ring.
    CaughtUp,
    /// As many records as one read takes: more are waiting.
    Backlog,
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
    /// Must be called inside a tokio runtime. Loads the programs, attaches the MDIO probes and
    /// the module tracepoints, and arms the callbacks of the followed driver modules, loaded or
    /// not. The session's first events (one `Attached` per live module) come from
    /// [`Self::next_events`], in their place in the stream.
    pub fn start(options: TracerOptions) -> Result<Self> {
        let mut startup = StartupTimings::default();
        let mut phase = Instant::now();
        let mut lap = || {
            let elapsed = phase.elapsed();
            phase = Instant::now();
            elapsed
        };
        // Reading kallsyms and module files takes about as long as loading the programs in a
        // slow guest: read them meanwhile on another thread.
        let prefetch_options = options.clone();
        let prefetch = std::thread::Builder::new()
            .name("phytrace-symbols".into())
            .spawn(move || Prefetched::read(&prefetch_options))
            .context("starting a thread")?;
        let kernel_btf = btf::KernelBtf::running()?;
        let offsets = kernel_btf.offsets()?;
        let types = kernel_btf.types()?;
        let states = kernel_btf.phy_states()?;
        startup.btf = lap();
        let probes = DriverProbes::new(options.max_active)?;
        // Finding the call sites reads kallsyms and the kernel text: meanwhile too.
        let finding = (options.callbacks != CallbackChoice::Symbol)
            .then(|| {
                call_site_probes::find_meanwhile(
                    Layout::from_btf(&kernel_btf),
                    cache::default_dir(),
                )
            })
            .transpose()?;
        let defaults = LoadOptions::new(options.ring_size, offsets);
        let mut ebpf = loader::load(&LoadOptions {
            types,
            callback_depth: options.callback_depth.unwrap_or(defaults.callback_depth),
            ..defaults
        })?;
        let mut notes = Vec::new();
        let mut attaching = Duration::ZERO;
        let mdio = preload::load_while(
            &mut ebpf,
            &planned_programs(options.mdio, &kernel_btf),
            |programs| {
                let started = Instant::now();
                let attached = attach_at_start(programs, options.mdio, &kernel_btf, &mut notes);
                attaching = started.elapsed();
                attached
            },
        )?;
        // The accessors' copies a compiler inlined, at their bus-op calls (after the load: the
        // kprobe twins of the MDIO programs are loaded for them here).
        let mdio_sites = mdio_inlining::arm_inlined(&mut ebpf, &kernel_btf, &mut notes);
        startup.load = lap();
        startup.mdio = attaching;
        let prefetched = prefetch
            .join()
            .map_err(|_| anyhow::anyhow!("the symbol reader stopped"))??;
        let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
        let drops = PerCpuArray::try_from(ebpf.take_map("DROPS").context("DROPS map")?)?;
        // SAFETY: the ring buffer owns its map fd, which stays open and unchanged for as long
        // as the `AsyncFd` owns the ring buffer.
        let ring = unsafe { AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) }
            .map_err(|err| anyhow::anyhow!("watching the ring buffer: {err}"))?;
        let kmsg = Kmsg::start(options.kmsg, &options.modules);
        let mut tracer = Self {
            ebpf,
            ring,
            drops,
            decoder: Decoder::new(states.clone()),
            mdio,
            probes,
            options,
            live: BTreeSet::new(),
            ever_attached: BTreeSet::new(),
            arming: BTreeMap::new(),
            not_phy_drivers: prefetched.not_phy_drivers.clone(),
            lost_reported: [0; 4],
            discarded: 0,
            notes,
            last_seen: (0, 0),
            held: VecDeque::new(),
            last_poll: Instant::now(),
            last_read: Read::Nothing,
            states,
            startup,
            _mdio_sites: mdio_sites,
            call_sites: None,
            callback_probes: None,
            mac_btf: None,
            mac_sites: None,
            mac_by_name: false,
            kmsg,
        };
        let built_in = prefetched.built_in.clone();
        tracer.arm_callbacks(finding, prefetched)?;
        tracer.arm_mac(&built_in, MAC_PROBES);
        if tracer.options.mac == MacChoice::Name {
            tracer.arm_mac_by_name(&built_in);
        } else {
            tracer.mac_btf = Some(kernel_btf);
            if modules::read()?.contains_key(mac_sites::MODULE) {
                tracer.arm_mac_sites();
            }
        }
        tracer.startup.modules = lap();
        Ok(tracer)
    }

    /// Arms the callback probes: at the call sites `finding` finds, else (or if it fails, unless
    /// they were asked for) on the Rust symbols. Callbacks that cannot be traced are said in a
    /// note; MDIO and the MAC side are traced all the same.
    fn arm_callbacks(&mut self, finding: Option<Finding>, prefetched: Prefetched) -> Result<()> {
        let choice = self.options.callbacks;
        if let Some(finding) = finding {
            let armed = finding.join().and_then(|(found, sourcing)| {
                self.startup.call_sites = sourcing;
                CallSiteProbes::arm(&mut self.ebpf, &mut self.probes, found, &mut self.notes)
            });
            match armed {
                Ok(sites) => {
                    self.call_sites = Some(sites);
                    self.callback_probes = Some(CallbackProbes::Callsite);
                    let mut live: BTreeMap<String, usize> = BTreeMap::new();
                    for symbol in prefetched.live_callbacks {
                        *live.entry(symbol.module).or_default() += 1;
                    }
                    // Every driver, loaded or not, is traced from its first callback on; the
                    // Rust ones are named (as the symbol probes would follow them).
                    let rust_files = prefetched
                        .files
                        .iter()
                        .filter(|(_, file)| file.as_ref().is_ok_and(|(_, s)| !s.is_empty()))
                        .map(|(module, _)| module);
                    for module in live.keys().chain(rust_files) {
                        self.set_arming(
                            module,
                            Guarantee::FirstCallback,
                            "phylib's call sites".to_owned(),
                        );
                    }
                    for (module, callbacks) in live {
                        self.attached_live(module, callbacks, monotonic_ns());
                    }
                    return Ok(());
                }
                Err(err) if choice == CallbackChoice::Callsite => return Err(err),
                Err(err) => self.notes.push(format!(
                    "callbacks are not traced at phylib's call sites ({err:#}): trying the Rust symbols"
                )),
            }
        }
        match self
            .arm_at_start(prefetched)
            .and_then(|()| self.attach_loaded_meanwhile())
        {
            Ok(()) => self.callback_probes = Some(CallbackProbes::Symbol),
            Err(err) if choice == CallbackChoice::Symbol => return Err(err),
            Err(err) => {
                self.probes.disarm_all();
                self.notes.push(format!(
                    "driver callbacks are not traced ({err:#}); MDIO and the MAC side are"
                ));
            }
        }
        Ok(())
    }

    /// Which callback probes run (`None`: callbacks are not traced).
    pub fn callback_probes(&self) -> Option<CallbackProbes> {
        self.callback_probes
    }

    /// The call sites armed, if callbacks are probed there.
    pub fn call_sites(&self) -> Option<&CallSiteProbes> {
        self.call_sites.as_ref()
    }

    /// Arms the live followed modules from kallsyms (their `Attached` events wait in `held`)
    /// and the others from their module files.
    fn arm_at_start(&mut self, prefetched: Prefetched) -> Result<()> {
        let mut by_module: BTreeMap<String, Vec<CallbackSymbol>> = BTreeMap::new();
        for symbol in prefetched.live_callbacks {
            by_module
                .entry(symbol.module.clone())
                .or_default()
                .push(symbol);
        }
        for (module, symbols) in by_module {
            let callbacks = symbols.len();
            // Stamped before the first probe is armed, so that its callbacks come after it.
            let arming = monotonic_ns();
            self.probes
                .arm(&mut self.ebpf, &mut self.decoder, &module, symbols)?;
            self.set_arming(
                &module,
                Guarantee::FirstCallback,
                "/proc/kallsyms".to_owned(),
            );
            self.attached_live(module, callbacks, arming);
        }
        for (module, file) in prefetched.files {
            match file {
                Ok((path, symbols)) if !symbols.is_empty() => {
                    self.probes
                        .arm(&mut self.ebpf, &mut self.decoder, &module, symbols)?;
                    self.set_arming(
                        &module,
                        Guarantee::FirstCallback,
                        path.display().to_string(),
                    );
                }
                Ok((path, _)) => self.set_arming(
                    &module,
                    Guarantee::AfterLoad,
                    format!("{} defines no kernel::net::phy callbacks", path.display()),
                ),
                Err(why) => self.set_arming(&module, Guarantee::AfterLoad, why),
            }
        }
        Ok(())
    }

    /// Reports `module`, live when the session began, traced from `at` on (in `held`): its
    /// callbacks until then are not recorded.
    fn attached_live(&mut self, module: String, callbacks: usize, at: u64) {
        self.live.insert(module.clone());
        self.ever_attached.insert(module.clone());
        self.held.push_back(own_event_at(
            at,
            current_cpu(),
            EventKind::Attached {
                module,
                callbacks,
                reattached: false,
                guarantee: Some(Guarantee::AfterLoad),
            },
        ));
    }

    /// Finds and arms the live phylink's MAC call sites; where they cannot be, says why and
    /// probes the MAC ops by name instead.
    fn arm_mac_sites(&mut self) {
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
    fn arm_mac_by_name(&mut self, built_in: &BTreeSet<String>) {
        if !std::mem::replace(&mut self.mac_by_name, true) {
            self.arm_mac(built_in, MAC_BY_NAME);
        }
    }

    /// phylink's MAC call sites armed, if they are.
    pub fn mac_sites(&self) -> Option<&MacSites> {
        self.mac_sites.as_ref()
    }

    /// Arms MAC probes by name (`probes`); a MAC the kernel cannot probe is reported, not fatal
    /// (the PHY side is traced without it).
    fn arm_mac(&mut self, built_in: &BTreeSet<String>, probes: &[(&str, &str, &str, bool)]) {
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

    /// Says that `module`'s callbacks were attached after it loaded, and `why`.
    fn late_attach(&mut self, module: &str, why: String) {
        self.notes.push(format!(
            "{module}: callbacks attached after the module loaded ({why}): its first callbacks may be missing"
        ));
        self.set_arming(module, Guarantee::AfterLoad, why);
    }

    /// A followed module armed from its file that went live while the symbols were read, before
    /// the module tracepoints were attached, left no `module_load` record: reports it (in
    /// `held`).
    fn attach_loaded_meanwhile(&mut self) -> Result<()> {
        for (module, state) in modules::read()? {
            if state != "Live" || self.live.contains(&module) {
                continue;
            }
            let Some(armed) = self.probes.armed(&module) else {
                continue;
            };
            let callbacks = armed.callbacks.len();
            self.late_attach(&module, "it loaded while phytrace was starting".to_owned());
            self.attached_live(module, callbacks, monotonic_ns());
        }
        Ok(())
    }

    fn set_arming(&mut self, module: &str, guarantee: Guarantee, source: String) {
        self.arming.insert(
            module.to_owned(),
            ModuleArming {
                module: module.to_owned(),
                guarantee,
                source,
            },
        );
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

    /// Ring-buffer records that could not be read so far.
    pub fn discarded(&self) -> u64 {
        self.discarded
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
    pub fn arming(&self) -> Vec<ModuleArming> {
        self.arming.values().cloned().collect()
    }

    /// Names of the followed modules not loaded now.
    pub fn waiting_for(&self) -> Vec<String> {
        self.arming
            .keys()
            .chain(self.options.modules.iter())
            .filter(|m| !self.live.contains(*m))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Waits until records arrive or [`POLL_INTERVAL`] passes, then hands `out` what happened:
    /// driver events, module (re)attachments, and lost-event counts. Cancel-safe.
    pub async fn next_events(&mut self, out: &mut impl Sink) -> Result<()> {
        match self.last_read {
            // Let the other tasks (signals, the writer's caller) run between batches.
            Read::Backlog => tokio::task::yield_now().await,
            Read::CaughtUp => tokio::time::sleep(GATHER_PAUSE).await,
            Read::Nothing => {
                let wait = POLL_INTERVAL.saturating_sub(self.last_poll.elapsed());
                if let Ok(guard) = tokio::time::timeout(wait, self.ring.readable_mut()).await {
                    // Cleared before reading: a record committed after the read wakes us.
                    guard?.clear_ready();
                }
            }
        }
        self.last_read = self.drain(out, MAX_BATCH)?;
        if self.last_poll.elapsed() >= POLL_INTERVAL {
            self.last_poll = Instant::now();
            self.report_drops(out)?;
        }
        Ok(())
    }

    /// Ends the session: detaches every program (none runs any more once this returns), then
    /// hands `out` every record left in the ring and the last lost-event counts.
    pub fn finish(&mut self, out: &mut impl Sink) -> Result<()> {
        if let Some(sites) = &mut self.call_sites {
            sites.disarm();
        }
        if let Some(sites) = &mut self.mac_sites {
            sites.disarm();
        }
        self.probes.disarm_all();
        for (_, program) in self.ebpf.programs_mut() {
            // Unloading detaches its links; one that fails to unload is detached when the
            // session is dropped.
            let _ = match program {
                Program::KProbe(p) => p.unload(),
                Program::FEntry(p) => p.unload(),
                Program::FExit(p) => p.unload(),
                Program::RawTracePoint(p) => p.unload(),
                _ => Ok(()),
            };
        }
        self.flush(out)
    }

    /// Hands `out` every record in the ring buffer until it is empty (at most a full ring's
    /// worth, should the kernel still be producing), then any lost-event count.
    pub fn flush(&mut self, out: &mut impl Sink) -> Result<()> {
        while self.drain(out, self.ring_capacity())? == Read::Backlog {}
        self.report_drops(out)
    }

    /// How many records a full ring buffer holds (at most: the smallest is a `RawEvent` and
    /// its 8-byte header).
    fn ring_capacity(&self) -> usize {
        self.options.ring_size as usize / (size_of::<RawEvent>() + 8)
    }

    /// Hands `out` up to `limit` records from the ring buffer.
    fn drain(&mut self, out: &mut impl Sink, limit: usize) -> Result<Read> {
        // The kernel's lines printed so far, before the records stamped after them.
        self.kmsg.poll();
        for taken in 0..limit {
            let Some(record) = self.ring.get_mut().next() else {
                // Every record stamped before now has been read.
                self.held.drain(..).for_each(|event| out.event(event));
                self.kmsg.release_all(out);
                return Ok(if taken == 0 {
                    Read::Nothing
                } else {
                    Read::CaughtUp
                });
            };
            let Some(parsed) = raw::parse(&record) else {
                self.discarded += 1;
                continue;
            };
            let stamped = match &parsed {
                Record::Event(raw) => Some(&**raw),
                Record::Named(named) => Some(&named.event),
                Record::Identity(_) => None,
            };
            if let Some(raw) = stamped {
                self.last_seen = (raw.ts_ns, u32::from(raw.cpu));
                release_held(&mut self.held, raw.ts_ns, u32::from(raw.cpu), out);
                self.kmsg.release(raw.ts_ns, u32::from(raw.cpu), out);
            }
            // The PHYs and the network devices they are attached to, for the kernel's lines
            // naming them. The decoder learns the identities here too: a binary capture's
            // sink does not decode them, and a carrier change names its PHY by them.
            match &parsed {
                Record::Identity(identity) => {
                    self.decoder.decode(&parsed);
                    self.kmsg.learn_phy(identity);
                }
                Record::Named(_) => {
                    if let Some(event) = self.decoder.decode(&parsed) {
                        self.kmsg.learn(&event);
                    }
                }
                Record::Event(_) => {}
            }
            if let Record::Named(named) = &parsed
                && let Some(kind @ (RawKind::ModuleLoad | RawKind::ModuleFree)) =
                    RawKind::from_u8(named.event.kind)
            {
                let named: RawNamed = **named;
                drop(record);
                self.module_changed(kind, &named, out)?;
                continue;
            }
            if let Some(sites) = &mut self.call_sites {
                sites.teach(&mut self.decoder, &parsed);
            }
            out.record(&mut self.decoder, &record, &parsed);
        }
        Ok(Read::Backlog)
    }

    /// A module went live or away: reports it where it happened in the stream and, with the
    /// symbol probes, arms the callbacks of a followed module whose probes the kernel could not
    /// arm in advance. Call sites trace a driver from its first callback by construction.
    fn module_changed(
        &mut self,
        kind: RawKind,
        named: &RawNamed,
        out: &mut impl Sink,
    ) -> Result<()> {
        let raw = &named.event;
        let module = c_string(&named.name);
        if module == mac_sites::MODULE && !self.mac_by_name {
            // Its kprobes went with its code; a new phylink has its own sites.
            if let Some(mut sites) = self.mac_sites.take() {
                sites.disarm();
            }
            if kind == RawKind::ModuleLoad {
                self.arm_mac_sites();
            }
        }
        if kind == RawKind::ModuleFree {
            if self.live.remove(&module) {
                out.event(own_event_at(
                    raw.ts_ns,
                    u32::from(raw.cpu),
                    EventKind::Detached { module },
                ));
            }
            return Ok(());
        }
        if self.callback_probes.is_none()
            || !modules::follows(&self.options.modules, &module)
            || self.live.contains(&module)
            || (self.options.modules.is_empty()
                && self.probes.armed(&module).is_none()
                && self.not_phy_drivers.contains(&module))
        {
            return Ok(());
        }
        // The module is live: its callbacks as the kernel has them.
        let live: Vec<CallbackSymbol> = read_callbacks()?
            .into_iter()
            .filter(|s| s.module == module)
            .collect();
        if live.is_empty() {
            return Ok(());
        }
        let callbacks = live.len();
        let guarantee = match self.callback_probes {
            Some(CallbackProbes::Symbol) => self.arm_loaded(&module, live, raw.ts_ns)?,
            _ => Guarantee::FirstCallback,
        };
        let reattached = !self.ever_attached.insert(module.clone());
        self.live.insert(module.clone());
        out.event(own_event_at(
            raw.ts_ns,
            u32::from(raw.cpu),
            EventKind::Attached {
                module,
                callbacks,
                reattached,
                guarantee: Some(guarantee),
            },
        ));
        Ok(())
    }

    /// The symbol probes of `module`, live since `loaded_ns` with the callbacks `live`: armed
    /// now unless they were in time. Returns what the capture holds of its callbacks.
    fn arm_loaded(
        &mut self,
        module: &str,
        live: Vec<CallbackSymbol>,
        loaded_ns: u64,
    ) -> Result<Guarantee> {
        let names = |symbols: &mut dyn Iterator<Item = &CallbackSymbol>| {
            symbols.map(|s| s.symbol.clone()).collect::<BTreeSet<_>>()
        };
        let armed = self.probes.armed(module);
        let matches = armed.is_some_and(|armed| {
            names(&mut armed.callbacks.iter().map(|c| &c.symbol)) == names(&mut live.iter())
        });
        // Defined after the module loaded (while phytrace was starting), they were registered
        // late: its first callbacks ran unprobed.
        let in_time = armed.is_some_and(|armed| armed.armed_ns <= loaded_ns);
        if matches && !in_time {
            self.late_attach(module, "it loaded while phytrace was arming it".to_owned());
        } else if !matches {
            // Not armed in advance, or armed with symbols of another build of the module.
            self.probes
                .arm(&mut self.ebpf, &mut self.decoder, module, live)?;
            let why = match self.arming.get(module) {
                Some(a) if a.guarantee == Guarantee::FirstCallback => format!(
                    "{} did not match the module that loaded: armed from /proc/kallsyms after it loaded",
                    a.source
                ),
                Some(a) => a.source.clone(),
                None => "not known before it loaded".to_owned(),
            };
            self.late_attach(module, why);
        }
        Ok(if matches && in_time {
            Guarantee::FirstCallback
        } else {
            Guarantee::AfterLoad
        })
    }

    /// Events lost in the kernel so far, by cause (in [`LossCause::ALL`]'s order).
    pub fn lost_by_cause(&self) -> Result<[u64; 4]> {
        let mut lost = [0; 4];
        for (slot, cause) in lost.iter_mut().zip(LossCause::ALL) {
            let index = match cause {
                LossCause::RingFull => DropCause::RingFull,
                LossCause::TooDeep => DropCause::TooDeep,
                LossCause::MapFull => DropCause::MapFull,
                LossCause::MissedReturn => {
                    // Unreadable kprobe_profile: the count stays where it was.
                    *slot = self
                        .probes
                        .missed_returns()
                        .unwrap_or(self.lost_reported[3]);
                    continue;
                }
            };
            *slot = self.drops.get(&(index as u32), 0)?.iter().sum::<u64>();
        }
        Ok(lost)
    }

    /// Hands `out` the losses counted since the last call, and notes the call sites disabled
    /// since.
    fn report_drops(&mut self, out: &mut impl Sink) -> Result<()> {
        if let Some(sites) = &mut self.call_sites {
            self.notes.extend(sites.newly_disabled(&self.ebpf)?);
        }
        if let Some(sites) = &mut self.mac_sites {
            self.notes.extend(sites.newly_disabled(&self.ebpf)?);
        }
        let lost = self.lost_by_cause()?;
        for (i, cause) in LossCause::ALL.into_iter().enumerate() {
            if lost[i] > self.lost_reported[i] {
                let (ts, cpu) = self.last_seen;
                out.event(own_event_at(
                    ts,
                    cpu,
                    EventKind::Lost {
                        count: lost[i] - self.lost_reported[i],
                        cause: Some(cause),
                    },
                ));
                self.lost_reported[i] = lost[i];
            }
        }
        Ok(())
    }
}

/// Where a session's records go: decoded into events, or kept as the ring buffer held them.
pub trait Sink {
    /// An event phytrace itself made (a module attached or detached, events lost).
    fn event(&mut self, event: Event);

    /// A ring-buffer record (`bytes`, `parsed`), which `decoder` decodes; by default decoded
    /// and handed to [`Sink::event`].
    fn record(&mut self, decoder: &mut Decoder, _bytes: &[u8], parsed: &Record<'_>) {
        if let Some(event) = decoder.decode(parsed) {
            self.event(event);
        }
    }
}

impl<F: FnMut(Event)> Sink for F {
    fn event(&mut self, event: Event) {
        self(event);
    }
}

/// Hands out the `held` events that come before a record stamped `ts_ns` on `cpu`: the
/// records of one CPU come in time order, so none of that CPU stamped earlier follows.
fn release_held(held: &mut VecDeque<Event>, ts_ns: u64, cpu: u32, out: &mut impl Sink) {
    while let Some(event) = held.pop_front_if(|event| event.cpu == cpu && event.ts_ns <= ts_ns) {
        out.event(event);
    }
}

/// What every session attaches as it starts: the MDIO probes (returning which kind ran), the
/// device-change kprobes, the module tracepoints and the carrier kprobes. What the user should
/// know goes to `notes`.
fn attach_at_start(
    programs: &mut impl Programs,
    mdio: MdioChoice,
    btf: &btf::KernelBtf,
    notes: &mut Vec<String>,
) -> Result<MdioProbes> {
    let mdio = mdio_probes::attach_all(programs, mdio, btf, notes)?;
    for symbol in DEVICE_CHANGES {
        if let Err(err) = attach(programs, DEVICE_CHANGE_PROGRAM, symbol) {
            notes.push(format!(
                "a PHY re-created where a removed one was, or bound to another driver, may \
                 keep its old name: {err:#}"
            ));
        }
    }
    // From here on every module load is reported; one that loaded while the module list was
    // read on the other thread is found by `attach_loaded_meanwhile`.
    for (tracepoint, program) in MODULE_TRACEPOINTS {
        attach_raw_tracepoint(programs, program, tracepoint)?;
    }
    for (symbol, program) in CARRIER_PROBES {
        attach(programs, program, symbol)?;
    }
    Ok(mdio)
}

/// Loads (once) the raw tracepoint program `program` and attaches it to `tracepoint`.
fn attach_raw_tracepoint(
    programs: &mut impl Programs,
    program: &str,
    tracepoint: &str,
) -> Result<()> {
    let probe: &mut RawTracePoint = programs.typed(program)?;
    if probe.fd().is_err() {
        probe.load().map_err(|err| {
            explain_refusal(
                &format!("loading the `{program}` program"),
                Stage::Load,
                &err,
            )
        })?;
    }
    probe.attach(tracepoint).map_err(|err| {
        explain_refusal(
            &format!("attaching to the `{tracepoint}` tracepoint (module loads and unloads)"),
            Stage::Attach,
            &err,
        )
    })?;
    Ok(())
}
