//! A tracing session: programs loaded, MDIO probes attached, driver modules followed as they
//! load, unload and reload, and kernel records turned into [`Event`]s.

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    maps::{MapData, PerCpuArray, RingBuf},
    programs::{KProbe, kprobe::KProbeLinkId},
};
use phytrace_common::{DROP_COUNTERS, RawEvent};
use tokio::io::unix::AsyncFd;

use super::{
    attach::attach,
    btf::{self, PhyStates},
    decode::Decoder,
    loader::{self, LoadOptions},
    modules::{self, LoadedModule},
    raw,
    symbols::{self, CallbackSymbol},
};
use crate::event::{Callback, Event, EventKind};

/// The bus accessors every phylib register access goes through (`phy_modify` included).
const MDIO_PROBES: &[(&str, &str, &str)] = &[
    ("__mdiobus_read", "mdio_read_enter", "mdio_read_exit"),
    ("__mdiobus_write", "mdio_write_enter", "mdio_write_exit"),
];

/// How often module loads and drop counters are checked.
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
#[derive(Clone, Debug)]
pub struct TracerOptions {
    /// Ring buffer size in bytes.
    pub ring_size: u32,
    /// Driver modules to follow; empty means every module with `kernel::net::phy` callbacks.
    pub modules: Vec<String>,
}

/// Where start-up time went, for `record`'s first line and the benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartupTimings {
    /// Reading vmlinux BTF (offsets, `enum phy_state`).
    pub btf: Duration,
    /// Loading the eBPF object (verifier included).
    pub load: Duration,
    /// Attaching the MDIO kprobes and kretprobes.
    pub mdio: Duration,
    /// Finding driver modules and attaching their callbacks (kallsyms is read meanwhile
    /// during the phases before: only what is left of that is waited for here).
    pub modules: Duration,
}

impl StartupTimings {
    /// The whole start-up.
    pub fn total(&self) -> Duration {
        self.btf + self.load + self.mdio + self.modules
    }
}

/// A driver module whose callbacks are probed.
struct AttachedModule {
    instance: LoadedModule,
    links: Vec<(&'static str, KProbeLinkId)>,
    symbols: Vec<CallbackSymbol>,
}

/// Callbacks read from kallsyms just after the module list they hold for.
struct Prefetched {
    loaded: BTreeMap<String, LoadedModule>,
    symbols: Vec<CallbackSymbol>,
}

impl Prefetched {
    /// Reads the module list, then kallsyms if a live module in it is to be followed
    /// (`follow`, empty for all); `None` if not or if reading fails.
    fn read(follow: &[String]) -> Option<Self> {
        let loaded = modules::read(follow).ok()?;
        if !loaded
            .iter()
            .any(|(name, m)| m.state == "Live" && modules::follows(follow, name))
        {
            return None;
        }
        let symbols = read_callbacks().ok()?;
        Some(Self { loaded, symbols })
    }

    /// The callbacks, if the module list they hold for has every one of `fresh` as it is now.
    fn callbacks_for(self, fresh: &[(String, LoadedModule)]) -> Option<Vec<CallbackSymbol>> {
        fresh
            .iter()
            .all(|(name, m)| self.loaded.get(name) == Some(m))
            .then_some(self.symbols)
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
    options: TracerOptions,
    attached: BTreeMap<String, AttachedModule>,
    /// Module instances seen without callbacks, so kallsyms is read once per instance.
    ignored: HashMap<String, LoadedModule>,
    ever_attached: Vec<String>,
    lost_reported: u64,
    last_poll: Instant,
    /// What the last read found.
    last_read: Read,
    states: PhyStates,
    startup: StartupTimings,
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

/// `CLOCK_MONOTONIC` now, the clock the eBPF programs stamp events with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An event phytrace itself reports, stamped now.
fn own_event(kind: EventKind) -> Event {
    own_event_at(monotonic_ns(), kind)
}

/// An event phytrace itself reports, stamped `ts_ns`.
fn own_event_at(ts_ns: u64, kind: EventKind) -> Event {
    Event {
        ts_ns,
        cpu: 0,
        tid: 0,
        phy: None,
        kind,
    }
}

impl Tracer {
    /// Must be called inside a tokio runtime. Loads the programs, attaches the MDIO probes and the callbacks of loaded driver
    /// modules; returns the session and its first events (one `Attached` per module).
    pub fn start(options: TracerOptions) -> Result<(Self, Vec<Event>)> {
        let mut startup = StartupTimings::default();
        let mut phase = Instant::now();
        let mut lap = || {
            let elapsed = phase.elapsed();
            phase = Instant::now();
            elapsed
        };
        // Reading kallsyms takes about as long as loading the programs in a slow guest: read
        // it meanwhile on another thread (no thread, no harm: it is read when needed).
        let follow = options.modules.clone();
        let prefetch = std::thread::Builder::new()
            .name("phytrace-kallsyms".into())
            .spawn(move || Prefetched::read(&follow))
            .ok();
        let kernel_btf = btf::KernelBtf::open(Path::new(btf::VMLINUX_BTF))?;
        let offsets = kernel_btf.offsets()?;
        let states = kernel_btf.phy_states()?;
        startup.btf = lap();
        let mut ebpf = loader::load(&LoadOptions {
            ring_size: options.ring_size,
            offsets,
            selftest_tgid: 0,
        })?;
        startup.load = lap();
        for (symbol, enter, exit) in MDIO_PROBES {
            attach(&mut ebpf, enter, symbol)?;
            attach(&mut ebpf, exit, symbol)?;
        }
        startup.mdio = lap();
        let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
        let drops = PerCpuArray::try_from(ebpf.take_map("DROPS").context("DROPS map")?)?;
        // SAFETY: the ring buffer owns its map fd, which stays open and unchanged for as long
        // as the `AsyncFd` owns the ring buffer.
        let ring = unsafe { AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) }
            .map_err(|err| anyhow::anyhow!("watching the ring buffer: {err}"))?;
        let mut tracer = Self {
            ebpf,
            ring,
            drops,
            decoder: Decoder::new(states.clone()),
            options,
            attached: BTreeMap::new(),
            ignored: HashMap::new(),
            ever_attached: Vec::new(),
            lost_reported: 0,
            last_poll: Instant::now(),
            last_read: Read::Nothing,
            states,
            startup,
        };
        let prefetched = prefetch.and_then(|thread| thread.join().ok().flatten());
        let mut events = Vec::new();
        tracer.sync_modules(prefetched, &mut |event| events.push(event))?;
        tracer.startup.modules = lap();
        Ok((tracer, events))
    }

    /// Where start-up time went.
    pub fn startup(&self) -> StartupTimings {
        self.startup
    }

    /// `enum phy_state` of the traced kernel.
    pub fn phy_states(&self) -> &PhyStates {
        &self.states
    }

    /// The callbacks probed right now.
    pub fn probe_table(&self) -> Vec<CallbackSymbol> {
        self.attached
            .values()
            .flat_map(|m| m.symbols.iter().cloned())
            .collect()
    }

    /// Names of the modules being waited for (asked for, not loaded yet).
    pub fn waiting_for(&self) -> Vec<String> {
        self.options
            .modules
            .iter()
            .filter(|m| !self.attached.contains_key(*m))
            .cloned()
            .collect()
    }

    /// Waits until records arrive or [`POLL_INTERVAL`] passes, then hands `out` what happened:
    /// driver events, module (re)attachments, and lost-event counts. Cancel-safe.
    pub async fn next_events(&mut self, out: &mut impl FnMut(Event)) -> Result<()> {
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
        self.last_read = self.drain(out, MAX_BATCH);
        if self.last_poll.elapsed() >= POLL_INTERVAL {
            self.last_poll = Instant::now();
            self.sync_modules(None, out)?;
            self.report_drops(out)?;
        }
        Ok(())
    }

    /// Hands `out` the records in the ring buffer (at most a full ring's worth, should the
    /// kernel still be producing), then any lost-event count.
    pub fn flush(&mut self, out: &mut impl FnMut(Event)) -> Result<()> {
        self.drain(out, self.ring_capacity());
        self.report_drops(out)
    }

    /// How many records a full ring buffer holds.
    fn ring_capacity(&self) -> usize {
        self.options.ring_size as usize / size_of::<RawEvent>()
    }

    /// Hands `out` up to `limit` records from the ring buffer.
    fn drain(&mut self, out: &mut impl FnMut(Event), limit: usize) -> Read {
        let ring = self.ring.get_mut();
        for taken in 0..limit {
            let Some(record) = ring.next() else {
                return if taken == 0 {
                    Read::Nothing
                } else {
                    Read::CaughtUp
                };
            };
            if let Some(event) = raw::parse(&record).and_then(|raw| self.decoder.decode(&raw)) {
                out(event);
            }
        }
        Read::Backlog
    }

    /// Events lost in the kernel so far (ring full or callback stack overflow).
    pub fn lost_total(&self) -> Result<u64> {
        let mut total = 0;
        for index in 0..DROP_COUNTERS {
            total += self.drops.get(&index, 0)?.iter().sum::<u64>();
        }
        Ok(total)
    }

    fn report_drops(&mut self, out: &mut impl FnMut(Event)) -> Result<()> {
        let total = self.lost_total()?;
        if total > self.lost_reported {
            out(own_event(EventKind::Lost {
                count: total - self.lost_reported,
            }));
            self.lost_reported = total;
        }
        Ok(())
    }

    /// Attaches to driver modules that appeared, detaches from those that went away.
    /// Callbacks in `prefetched` serve if it lists the new modules as they are now.
    fn sync_modules(
        &mut self,
        prefetched: Option<Prefetched>,
        out: &mut impl FnMut(Event),
    ) -> Result<()> {
        let loaded = modules::read(&self.options.modules)?;
        let gone: Vec<String> = self
            .attached
            .iter()
            .filter(|(name, m)| loaded.get(*name) != Some(&m.instance))
            .map(|(name, _)| name.clone())
            .collect();
        if !gone.is_empty() {
            // Records already in the ring happened before this moment: keep the stream in order.
            self.drain(out, self.ring_capacity());
        }
        for name in gone {
            self.detach_module(&name);
            out(own_event(EventKind::Detached { module: name }));
        }
        let fresh: Vec<(String, LoadedModule)> = loaded
            .into_iter()
            .filter(|(name, m)| {
                m.state == "Live"
                    && modules::follows(&self.options.modules, name)
                    && !self.attached.contains_key(name)
                    && self.ignored.get(name) != Some(m)
            })
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let symbols = match prefetched.and_then(|p| p.callbacks_for(&fresh)) {
            Some(symbols) => symbols,
            None => read_callbacks()?,
        };
        self.drain(out, self.ring_capacity());
        for (name, instance) in fresh {
            let mine: Vec<CallbackSymbol> = symbols
                .iter()
                .filter(|s| s.module == name)
                .cloned()
                .collect();
            if mine.is_empty() {
                self.ignored.insert(name, instance);
                continue;
            }
            let callbacks = mine.len();
            // Stamped before the first probe is armed, so that its callbacks come after it.
            let arming = monotonic_ns();
            self.attach_module(&name, instance, mine)?;
            let reattached = self.ever_attached.contains(&name);
            if !reattached {
                self.ever_attached.push(name.clone());
            }
            out(own_event_at(
                arming,
                EventKind::Attached {
                    module: name,
                    callbacks,
                    reattached,
                },
            ));
        }
        Ok(())
    }

    fn attach_module(
        &mut self,
        name: &str,
        instance: LoadedModule,
        symbols: Vec<CallbackSymbol>,
    ) -> Result<()> {
        let mut links = Vec::new();
        for symbol in &symbols {
            for program in ["callback_enter", "callback_exit"] {
                links.push((program, attach(&mut self.ebpf, program, &symbol.symbol)?));
            }
            self.decoder.add_callback(
                symbol.address,
                Callback {
                    name: symbol.callback.as_str().into(),
                    driver_type: symbol.driver_type.as_str().into(),
                },
            );
        }
        self.ignored.remove(name);
        self.attached.insert(
            name.to_owned(),
            AttachedModule {
                instance,
                links,
                symbols,
            },
        );
        Ok(())
    }

    fn detach_module(&mut self, name: &str) {
        let Some(module) = self.attached.remove(name) else {
            return;
        };
        for (program, link) in module.links {
            // The kernel already disarmed probes of an unloaded module; detaching frees them.
            if let Some(Ok(probe)) = self.ebpf.program_mut(program).map(<&mut KProbe>::try_from) {
                let _ = probe.detach(link);
            }
        }
        self.decoder
            .remove_callbacks(module.symbols.iter().map(|s| s.address));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(sysfs_inode: u64) -> LoadedModule {
        LoadedModule {
            state: "Live".to_owned(),
            base: 0xffff_ffff_c000_0000,
            sysfs_inode,
        }
    }

    #[test]
    fn prefetched_callbacks_serve_only_the_module_instances_they_were_read_for() {
        let callback = CallbackSymbol {
            module: "ax88796b_rust".to_owned(),
            driver_type: "ax88796b_rust::PhyAX88772A".to_owned(),
            callback: "read_status".to_owned(),
            address: 0xffff_ffff_c000_2000,
            symbol: "_R…".to_owned(),
            demangled: "…".to_owned(),
        };
        let prefetched = || Prefetched {
            loaded: BTreeMap::from([("ax88796b_rust".to_owned(), instance(7))]),
            symbols: vec![callback.clone()],
        };
        let fresh = |name: &str, inode| vec![(name.to_owned(), instance(inode))];
        assert_eq!(
            prefetched().callbacks_for(&fresh("ax88796b_rust", 7)),
            Some(vec![callback.clone()])
        );
        // Reloaded since (at the same address), or loaded since.
        assert_eq!(prefetched().callbacks_for(&fresh("ax88796b_rust", 8)), None);
        assert_eq!(prefetched().callbacks_for(&fresh("other", 7)), None);
    }

    #[test]
    fn nothing_is_prefetched_without_a_module_to_follow() {
        assert!(Prefetched::read(&["phytrace_no_such_module".to_owned()]).is_none());
    }
}
