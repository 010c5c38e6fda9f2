//! Starting a session: reading the kernel's BTF, loading the programs while kallsyms, module
//! files and the kernel text are read on other threads, attaching what every session needs and
//! the call sites as the programs arrive, then arming the driver callbacks (or following the
//! modules at the call sites) and the MAC side.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use aya::{
    maps::{PerCpuArray, RingBuf},
    programs::RawTracePoint,
};
use tokio::io::unix::AsyncFd;

use super::kmsg::Kmsg;
use super::{
    Tracer, TracerOptions,
    arming::Arming,
    drain::Held,
    loss::Losses,
    mac::{MAC_BY_NAME, MAC_PROBES, MacSide},
    prefetch::Prefetched,
};
use crate::kernel::{
    btf,
    code::{
        Layout, cache, mac_sites, mdio_inlining,
        phy_sites::{self, Sourcing},
    },
    error::{ProbeError, Stage},
    modules,
    snapshot::Snapshot,
    support,
};
use crate::probe::{
    attach::{Programs, attach},
    bpf_memory::BpfMemory,
    driver_probes::{self, DriverProbes, SymbolArmer},
    loader::{self, LoadOptions, explain_refusal},
    mac_site_probes::{self, MacChoice},
    mdio_copy_probes::ArmedCopies,
    mdio_probes::{self, MdioChoice},
    phy_site_probes::{self, CallSiteProbes, CallbackChoice},
    preload::{self, Planned},
    ring_wait::Read,
    site_table,
};
use crate::records::{decode::Decoder, session::MdioProbes};

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

/// Carrier changes of every network device (vmlinux).
const CARRIER_PROBES: &[(&str, &str)] = &[
    ("netif_carrier_on", "carrier_on"),
    ("netif_carrier_off", "carrier_off"),
];

/// Every program a session attaches: first those [`Tracer::start`] attaches while the others
/// load, in the order it attaches them, then the others, the callback programs (the costliest
/// to verify) first: the call sites' unless only the symbols are asked for (a fallback to the
/// symbols loads theirs then).
fn planned_programs(
    mdio: MdioChoice,
    callbacks: CallbackChoice,
    btf: &btf::KernelBtf,
) -> Vec<Planned> {
    let mut planned = mdio_probes::planned(mdio, btf);
    let callback_programs: &[&str] = match callbacks {
        CallbackChoice::Symbol => &driver_probes::PROGRAMS,
        CallbackChoice::Auto | CallbackChoice::Callsite => &phy_site_probes::PROGRAMS,
    };
    let others = [DEVICE_CHANGE_PROGRAM]
        .iter()
        .chain(MODULE_TRACEPOINTS.iter().map(|(_, program)| program))
        .chain(CARRIER_PROBES.iter().map(|(_, program)| program))
        .chain(callback_programs)
        .chain(MAC_PROBES.iter().map(|(_, _, program, _)| program))
        .chain(MAC_BY_NAME.iter().map(|(_, _, program, _)| program))
        .chain(mac_site_probes::PROGRAMS.iter());
    planned.extend(others.map(|program| Planned::program(program)));
    planned
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
    /// Of `load`, with call-site probes: waiting for the sites to be found, then arming them,
    /// while the other programs were being loaded.
    pub call_sites_armed: Duration,
    /// Finding driver modules and arming their callbacks (kallsyms and module files are read
    /// meanwhile during the phases before: only what is left of that is waited for here), or
    /// following them at the call sites armed.
    pub modules: Duration,
    /// With call-site probes: finding the sites (reading and decoding the kernel text, on
    /// another thread from the start), or reading them from the cache.
    pub call_sites: Sourcing,
}

impl Tracer {
    /// Must be called inside a tokio runtime. Loads the programs, attaches the MDIO probes and
    /// the module tracepoints, and arms the callbacks of the followed driver modules, loaded or
    /// not. The session's first events (one `Attached` per live module) come from
    /// [`Self::next_events`], in their place in the stream.
    pub fn start(options: TracerOptions) -> Result<Self> {
        if let Some(refusal) = support::refused_by_lockdown() {
            return Err(ProbeError::unavailable(refusal).into());
        }
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
        // Making a tracefs instance takes tens of milliseconds there too.
        let (kmsg_scope, kmsg_modules) = (options.kmsg, options.modules.clone());
        let kmsg = std::thread::Builder::new()
            .name("phytrace-kmsg".into())
            .spawn(move || Kmsg::start(kmsg_scope, &kmsg_modules))
            .context("starting a thread")?;
        let kernel_btf = Arc::new(options.btf.load()?);
        // phylib as a module: its functions and call sites are in its code and BTF.
        let phylib_btf = kernel_btf.phylib()?;
        let phylib_pending = modules::phylib_pending(&options.module_tree());
        let btf = phylib_btf.as_ref().unwrap_or(&*kernel_btf);
        let offsets = btf.offsets()?;
        let types = btf.types()?;
        let states = btf.phy_states()?;
        // Whether the compiler inlined the MDIO accessors: kallsyms and the kernel text again.
        let (cache_dir, cache_note) = match cache::default_dir() {
            Ok(dir) => (Some(dir), None),
            Err(note) => (None, Some(note)),
        };
        // What the searches read of the kernel, read once for all of them.
        let kernel = Arc::new(Snapshot::new(BpfMemory::reader));
        let mdio_survey =
            mdio_inlining::Surveying::start(btf, cache_dir.clone(), Arc::clone(&kernel))?;
        startup.btf = lap();
        let mut probes = DriverProbes::new(options.max_active)?;
        // Finding the call sites reads kallsyms and the kernel text: meanwhile too.
        let finding = (options.callbacks != CallbackChoice::Symbol)
            .then(|| {
                phy_sites::find_meanwhile(Layout::from_btf(btf), cache_dir, Arc::clone(&kernel))
            })
            .transpose()?;
        let defaults = LoadOptions::new(options.ring_size, offsets);
        let mut ebpf = loader::load(&LoadOptions {
            types,
            callback_depth: options.callback_depth.unwrap_or(defaults.callback_depth),
            ..defaults
        })?;
        let mut notes = Vec::from_iter(cache_note);
        let mut attaching = Duration::ZERO;
        let mut arming = Duration::ZERO;
        let call_site_records = finding
            .as_ref()
            .map(|_| site_table::records(&ebpf, "CALL_SITES"))
            .transpose()?;
        let (mdio, call_sites) = preload::load_while(
            &mut ebpf,
            &planned_programs(options.mdio, options.callbacks, btf),
            |programs| {
                let started = Instant::now();
                let pending = phylib_pending.then_some((modules::PHYLIB, &mut probes));
                let attached = attach_at_start(programs, options.mdio, btf, pending, &mut notes);
                attaching = started.elapsed();
                // The call sites' tens of kprobes, while the later programs are verified.
                let started = Instant::now();
                let call_sites = finding.zip(call_site_records).map(|(finding, records)| {
                    finding.join().and_then(|(found, sourcing)| {
                        CallSiteProbes::arm(programs, &mut probes, records, found, &mut notes)
                            .map(|sites| (sites, sourcing))
                    })
                });
                arming = started.elapsed();
                (attached, call_sites)
            },
        );
        let mdio = mdio?;
        let mdio_awaiting =
            (phylib_pending && options.mdio != MdioChoice::Kprobe).then(|| Arc::clone(&kernel_btf));
        // The accessors' copies a compiler inlined, at their bus-op calls (after the load: the
        // kprobe twins of the MDIO programs are loaded for them here).
        let mdio_copies = ArmedCopies::arm(&mut ebpf, mdio_survey.join(), &mut notes);
        startup.load = lap();
        startup.mdio = attaching;
        startup.call_sites_armed = arming;
        let prefetched = prefetch
            .join()
            .map_err(|_| anyhow::anyhow!("the symbol reader stopped"))??;
        let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
        let drops = PerCpuArray::try_from(ebpf.take_map("DROPS").context("DROPS map")?)?;
        // SAFETY: the ring buffer owns its map fd, which stays open and unchanged for as long
        // as the `AsyncFd` owns the ring buffer.
        let ring = unsafe { AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) }
            .map_err(|err| anyhow::anyhow!("watching the ring buffer: {err}"))?;
        let kmsg = kmsg
            .join()
            .map_err(|_| anyhow::anyhow!("the kernel-message reader stopped"))?;
        let mut tracer = Self {
            ebpf,
            ring,
            drops,
            decoder: Decoder::new(states.clone()),
            mdio,
            mdio_awaiting,
            mdio_moved: false,
            probes,
            arming: Arming::new(options.modules.clone(), prefetched.not_phy_drivers.clone()),
            options,
            losses: Losses::default(),
            notes,
            held: Held::default(),
            last_poll: Instant::now(),
            last_read: Read::Nothing,
            states,
            startup,
            mdio_copies,
            call_sites: None,
            mac: MacSide::default(),
            kmsg,
        };
        let built_in = prefetched.built_in.clone();
        tracer.arm_callbacks(call_sites, prefetched)?;
        tracer.arm_mac(&built_in, MAC_PROBES);
        tracer.arm_mac(&built_in, MAC_BY_NAME);
        if tracer.options.mac == MacChoice::Callsite {
            let home = mac_sites::home(built_in.contains(mac_sites::MODULE))?;
            tracer.mac = MacSide::at_call_sites(kernel_btf, home, kernel, &mut tracer.notes);
        }
        tracer.startup.modules = lap();
        Ok(tracer)
    }

    /// Follows the driver modules at the call sites armed (`call_sites`), else (or if arming
    /// them failed, unless they were asked for) arms the callback probes on the Rust symbols.
    /// Callbacks that cannot be traced are said in a note; MDIO and the MAC side are traced all
    /// the same.
    fn arm_callbacks(
        &mut self,
        call_sites: Option<Result<(CallSiteProbes, Sourcing)>>,
        mut prefetched: Prefetched,
    ) -> Result<()> {
        let choice = self.options.callbacks;
        let falling_back = call_sites.is_some();
        if let Some(armed) = call_sites {
            match armed {
                Ok((sites, sourcing)) => {
                    self.startup.call_sites = sourcing;
                    self.call_sites = Some(sites);
                    self.arming
                        .at_call_sites(&prefetched, &mut |event| self.held.hold(event));
                    return Ok(());
                }
                Err(err) if choice == CallbackChoice::Callsite => return Err(err),
                Err(err) => self.notes.push(format!(
                    "callbacks are not traced at phylib's call sites ({err:#}): trying the Rust symbols"
                )),
            }
        }
        let mut armer = SymbolArmer {
            probes: &mut self.probes,
            ebpf: &mut self.ebpf,
            decoder: &mut self.decoder,
        };
        let mut hold = |event| self.held.hold(event);
        // Prefetched for the call sites, the live modules' callbacks may be their files'.
        let armed = (if falling_back {
            prefetched.live_from_kallsyms()
        } else {
            Ok(())
        })
        .and_then(|()| self.arming.arm_symbols(&mut armer, prefetched, &mut hold))
        .and_then(|()| modules::read());
        match armed {
            Ok(loaded) => {
                self.arming
                    .symbols_armed(&armer, loaded, &mut self.notes, &mut hold);
            }
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
}

/// What every session attaches as it starts: the MDIO probes (returning which kind ran), the
/// device-change kprobes, the module tracepoints and the carrier kprobes. What the user should
/// know goes to `notes`.
fn attach_at_start(
    programs: &mut impl Programs,
    mdio: MdioChoice,
    btf: &btf::KernelBtf,
    mut pending: Option<(&str, &mut DriverProbes)>,
    notes: &mut Vec<String>,
) -> Result<MdioProbes> {
    let mdio = mdio_probes::attach_all(
        programs,
        mdio,
        btf,
        pending
            .as_mut()
            .map(|(module, probes)| (*module, &mut **probes)),
        notes,
    )?;
    for symbol in DEVICE_CHANGES {
        // phylib's functions: in a phylib not loaded yet, kprobes the kernel places as it loads.
        let attached = match &mut pending {
            Some((module, probes)) => {
                probes.arm_function(programs, Some(module), symbol, DEVICE_CHANGE_PROGRAM, true)
            }
            None => attach(programs, DEVICE_CHANGE_PROGRAM, symbol).map(drop),
        };
        if let Err(err) = attached {
            notes.push(format!(
                "a PHY re-created where a removed one was, or bound to another driver, may \
                 keep its old name: {err:#}"
            ));
        }
    }
    // From here on every module load is reported; one that loaded while the module list was
    // read on the other thread is found by `Arming::symbols_armed`.
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

#[cfg(test)]
mod tests {
    use aya::programs::Program;

    use super::*;

    /// An object with no programs at all.
    struct NoPrograms;

    impl Programs for NoPrograms {
        fn program_mut(&mut self, _name: &str) -> Option<&mut Program> {
            None
        }
    }

    #[test]
    fn a_missing_tracepoint_program_is_named() {
        let err = attach_raw_tracepoint(&mut NoPrograms, "module_load", "module_load").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the eBPF object has no program `module_load`"
        );
    }
}
