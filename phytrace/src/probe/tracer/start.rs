//! Starting a session: reading the kernel's BTF, loading the programs while kallsyms and module
//! files are read on another thread, attaching what every session needs as the programs
//! arrive, then arming the driver callbacks and the MAC side.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use aya::{
    maps::{PerCpuArray, RingBuf},
    programs::RawTracePoint,
};
use tokio::io::unix::AsyncFd;

use super::{
    Tracer, TracerOptions,
    arming::Arming,
    drain::{Held, Read},
    loss::Losses,
    mac::{MAC_BY_NAME, MAC_PROBES},
    prefetch::Prefetched,
};
use crate::probe::{
    attach::{Programs, attach},
    btf,
    call_site_probes::{self, CallSiteProbes, CallbackChoice, Finding, Sourcing},
    callsites::{Layout, cache},
    driver_probes::{self, DriverProbes, SymbolArmer},
    error::Stage,
    kmsg::Kmsg,
    loader::{self, LoadOptions, explain_refusal},
    mac_sites::{self, MacChoice},
    mdio_inlining,
    mdio_probes::{self, MdioChoice},
    modules,
    preload::{self, Planned},
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
            arming: Arming::new(options.modules.clone(), prefetched.not_phy_drivers.clone()),
            options,
            losses: Losses::default(),
            notes,
            held: Held::default(),
            last_poll: Instant::now(),
            last_read: Read::Nothing,
            states,
            startup,
            _mdio_sites: mdio_sites,
            call_sites: None,
            mac_btf: None,
            mac_finding: None,
            newly_armed_mac_sites: None,
            mac_sites: None,
            mac_site_calls: Vec::new(),
            kmsg,
        };
        let built_in = prefetched.built_in.clone();
        tracer.arm_callbacks(finding, prefetched)?;
        tracer.arm_mac(&built_in, MAC_PROBES);
        tracer.arm_mac(&built_in, MAC_BY_NAME);
        if tracer.options.mac == MacChoice::Callsite {
            tracer.mac_btf = Some(Arc::new(kernel_btf));
            if modules::read()?.contains_key(mac_sites::MODULE) {
                tracer.find_mac_sites();
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
        let armed = self
            .arming
            .arm_symbols(&mut armer, prefetched, &mut hold)
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
