//! The probes on a driver module's callbacks: one kprobe event pair per callback, defined in
//! tracefs on `MODULE:SYMBOL`, so that the kernel arms them whenever the module loads, before
//! its init runs (see [`super::trace_events`]).
//!
//! Each callback has a probe key, the cookie its programs are attached with: records name the
//! callback by key, which stays the same across reloads of the module.

use std::{collections::BTreeMap, os::fd::AsFd as _};

use anyhow::Result;
use aya::Ebpf;

use super::{
    attach::{ArmCallbacks, Armed, Programs, loaded_kprobe},
    trace_events::{self, EventGroup, EventLink, Probe, TraceEventError},
};
use crate::event::Callback;
use crate::kernel::{error::ProbeError, symbols::CallbackSymbol};
use crate::records::{clock::monotonic_ns, decode::Decoder};

/// A module's callbacks, armed.
pub struct ArmedModule {
    pub callbacks: Vec<ArmedCallback>,
    /// `CLOCK_MONOTONIC` just before the first of its events was defined: a load of the module
    /// before it was not probed from its first callback.
    pub armed_ns: u64,
}

/// One callback's probe pair: on entry, on return.
pub struct ArmedCallback {
    pub symbol: CallbackSymbol,
    probes: [ArmedEvent; 2],
}

/// The programs of a callback's entry and return.
pub const PROGRAMS: [&str; 2] = ["callback_enter", "callback_exit"];

/// A kprobe event of this session and the program attached to it.
struct ArmedEvent {
    name: String,
    program: String,
    link: EventLink,
}

impl ArmedEvent {
    /// Detaches the program, then removes the event (tracefs refuses to remove one in use).
    fn remove(self, group: &mut EventGroup) {
        drop(self.link);
        group.remove(&self.name);
    }
}

/// Calls in flight a return probe has room for by default: the kernel's own default,
/// max(10, 2 × CPUs), is soon exhausted by many PHYs polled at once (each poll holds an
/// instance for the callback's whole run).
pub fn default_max_active() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    (8 * cpus).max(64)
}

/// Every followed module's callback probes.
pub struct DriverProbes {
    // Declared before the group: the links close before the group removes their events
    // (tracefs refuses to remove an event in use).
    modules: BTreeMap<String, ArmedModule>,
    /// Probes on functions of fixed name (the MAC side).
    functions: Vec<ArmedEvent>,
    group: EventGroup,
    keys: BTreeMap<(String, String), u64>,
    next_event: u32,
    max_active: u32,
}

impl DriverProbes {
    /// An empty set of probes in this session's tracefs group; return probes have room for
    /// `max_active` calls in flight (default: [`default_max_active`]).
    pub fn new(max_active: Option<u32>) -> Result<Self> {
        Ok(Self {
            group: EventGroup::open().map_err(refused)?,
            keys: BTreeMap::new(),
            modules: BTreeMap::new(),
            functions: Vec::new(),
            next_event: 0,
            max_active: max_active.unwrap_or_else(default_max_active),
        })
    }

    /// Returns the kernel could not report since the session started (see
    /// [`EventGroup::missed_returns`]).
    pub fn missed_returns(&self) -> std::io::Result<u64> {
        self.group.missed_returns()
    }

    /// The key of `symbol`'s callback (the same for a reload of its module).
    fn key(&mut self, symbol: &CallbackSymbol) -> u64 {
        let next = self.keys.len() as u64 + 1;
        *self
            .keys
            .entry((symbol.driver_type.clone(), symbol.callback.clone()))
            .or_insert(next)
    }

    /// Arms `symbols` of `module`, replacing what was armed for it, and teaches `decoder`
    /// their keys.
    pub fn arm(
        &mut self,
        programs: &mut impl Programs,
        decoder: &mut Decoder,
        module: &str,
        symbols: Vec<CallbackSymbol>,
    ) -> Result<()> {
        self.disarm(module);
        let armed_ns = monotonic_ns();
        let mut callbacks = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            let key = self.key(&symbol);
            let name = format!("{module}_{}", symbol.callback);
            let place = (Some(module), symbol.symbol.as_str());
            let probes = [
                self.probe(programs, PROGRAMS[0], &name, false, place, key)?,
                self.probe(programs, PROGRAMS[1], &name, true, place, key)?,
            ];
            decoder.add_callback(
                key,
                Callback {
                    name: symbol.callback.as_str().into(),
                    driver_type: symbol.driver_type.as_str().into(),
                },
            );
            callbacks.push(ArmedCallback { symbol, probes });
        }
        self.modules.insert(
            module.to_owned(),
            ArmedModule {
                callbacks,
                armed_ns,
            },
        );
        Ok(())
    }

    /// Attaches kprobe program `program` to `symbol` (in `module`, loaded or not; `None`: in
    /// vmlinux or a built-in module), on return if `on_return`.
    pub fn arm_function(
        &mut self,
        programs: &mut impl Programs,
        module: Option<&str>,
        symbol: &str,
        program: &str,
        on_return: bool,
    ) -> Result<()> {
        let probe = self.probe(programs, program, program, on_return, (module, symbol), 0)?;
        self.functions.push(probe);
        Ok(())
    }

    /// Attaches kprobe program `program` to `place` (a function, or `function+0xOFF`) of
    /// `module` (loaded or not; `None`: vmlinux or a live module), on return if `on_return`,
    /// with `cookie`.
    pub fn arm_site(
        &mut self,
        programs: &mut impl Programs,
        program: &str,
        name: &str,
        on_return: bool,
        (module, place): (Option<&str>, &str),
        cookie: u64,
    ) -> Result<()> {
        let probe = self.probe(programs, program, name, on_return, (module, place), cookie)?;
        self.functions.push(probe);
        Ok(())
    }

    /// Removes the probes [`Self::arm_function`] attached program `program` to.
    pub fn disarm_function(&mut self, program: &str) {
        let (removed, kept) = std::mem::take(&mut self.functions)
            .into_iter()
            .partition(|probe| probe.program == program);
        self.functions = kept;
        for probe in removed {
            probe.remove(&mut self.group);
        }
    }

    /// Removes the probe [`Self::arm_site`] attached last.
    pub fn disarm_last_site(&mut self) {
        if let Some(probe) = self.functions.pop() {
            probe.remove(&mut self.group);
        }
    }

    /// Defines an event named after `name` on `place` (module, symbol), on entry or on return,
    /// and attaches kprobe program `program` to it with `cookie`.
    fn probe(
        &mut self,
        programs: &mut impl Programs,
        program: &str,
        name: &str,
        on_return: bool,
        (module, symbol): (Option<&str>, &str),
        cookie: u64,
    ) -> Result<ArmedEvent> {
        let fd = loaded_kprobe(programs, program)?.fd()?.try_clone()?;
        self.next_event += 1;
        let (probe, end) = if on_return {
            let max_active = self.max_active;
            (Probe::Return { max_active }, "r")
        } else {
            (Probe::Entry, "e")
        };
        let name = format!("{name}_{}_{end}", self.next_event);
        let id = self
            .group
            .define(&name, probe, module, symbol)
            .map_err(refused)?;
        let link = trace_events::attach(fd.as_fd(), id, cookie, &name).map_err(refused)?;
        Ok(ArmedEvent {
            name,
            program: program.to_owned(),
            link,
        })
    }

    /// Removes `module`'s probes.
    pub fn disarm(&mut self, module: &str) {
        let Some(armed) = self.modules.remove(module) else {
            return;
        };
        for callback in armed.callbacks {
            for probe in callback.probes {
                probe.remove(&mut self.group);
            }
        }
    }

    /// Removes every probe (their missed returns are kept, see [`Self::missed_returns`]).
    pub fn disarm_all(&mut self) {
        let modules: Vec<String> = self.modules.keys().cloned().collect();
        for module in modules {
            self.disarm(&module);
        }
        for probe in std::mem::take(&mut self.functions) {
            probe.remove(&mut self.group);
        }
    }

    /// Every armed module.
    pub fn modules(&self) -> impl Iterator<Item = (&String, &ArmedModule)> {
        self.modules.iter()
    }
}

/// [`DriverProbes`] arming on the session's object, teaching the decoder their keys.
pub struct SymbolArmer<'a> {
    pub probes: &'a mut DriverProbes,
    pub ebpf: &'a mut Ebpf,
    pub decoder: &'a mut Decoder,
}

impl ArmCallbacks for SymbolArmer<'_> {
    fn arm(&mut self, module: &str, symbols: Vec<CallbackSymbol>) -> Result<()> {
        self.probes.arm(self.ebpf, self.decoder, module, symbols)
    }

    fn armed(&self, module: &str) -> Option<Armed<'_>> {
        self.probes.modules.get(module).map(|armed| Armed {
            callbacks: armed.callbacks.iter().map(|c| &c.symbol).collect(),
            armed_ns: armed.armed_ns,
        })
    }
}

/// A trace event the kernel refused, as the failure phytrace exits with.
fn refused(err: TraceEventError) -> anyhow::Error {
    let hint = match err.os_error() {
        Some(libc::EPERM | libc::EACCES) => format!(
            ": not permitted: phytrace defines kprobe events in tracefs, a root-only file: {}",
            crate::kernel::privileges::fix()
        ),
        _ => String::new(),
    };
    ProbeError::unavailable(format!("{err}{hint}")).into()
}
