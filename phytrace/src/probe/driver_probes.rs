//! The probes on a driver module's callbacks: one kprobe event pair per callback, defined in
//! tracefs on `MODULE:SYMBOL`, so that the kernel arms them whenever the module loads, before
//! its init runs (see [`super::trace_events`]).
//!
//! Each callback has a probe key, the cookie its programs are attached with: records name the
//! callback by key, which stays the same across reloads of the module.

use std::{collections::BTreeMap, os::fd::AsFd as _, path::PathBuf};

use anyhow::{Context as _, Result};
use aya::{Ebpf, programs::KProbe};

use super::{
    decode::Decoder,
    loader::explain_refusal,
    symbols::CallbackSymbol,
    trace_events::{self, EventGroup, EventLink, Probe},
};
use crate::event::Callback;

/// Where a module's callback symbols were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymbolSource {
    /// The module file, before the module loaded.
    ModuleFile(PathBuf),
    /// `/proc/kallsyms`, with the module loaded.
    Kallsyms,
}

impl std::fmt::Display for SymbolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ModuleFile(path) => write!(f, "{}", path.display()),
            Self::Kallsyms => f.write_str("/proc/kallsyms"),
        }
    }
}

/// A module's callbacks, armed.
pub struct ArmedModule {
    pub source: SymbolSource,
    pub callbacks: Vec<ArmedCallback>,
}

/// One callback's probe pair.
pub struct ArmedCallback {
    pub symbol: CallbackSymbol,
    events: [String; 2],
    _links: [EventLink; 2],
}

/// Every followed module's callback probes.
pub struct DriverProbes {
    // Declared before the group: the links close before the group removes their events
    // (tracefs refuses to remove an event in use).
    modules: BTreeMap<String, ArmedModule>,
    /// Probes on functions of fixed name (the MAC side), with their events.
    functions: Vec<(String, EventLink)>,
    group: EventGroup,
    keys: BTreeMap<(String, String), u64>,
    next_event: u32,
    max_active: u32,
}

impl DriverProbes {
    /// An empty set of probes in this session's tracefs group.
    pub fn new() -> Result<Self> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Ok(Self {
            group: EventGroup::open()?,
            keys: BTreeMap::new(),
            modules: BTreeMap::new(),
            functions: Vec::new(),
            next_event: 0,
            // The kernel's default, max(10, 2 × CPUs), is soon exhausted by many PHYs polled
            // at once (each poll holds an instance for the callback's whole run).
            max_active: (8 * cpus).max(64),
        })
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
        ebpf: &mut Ebpf,
        decoder: &mut Decoder,
        module: &str,
        symbols: Vec<CallbackSymbol>,
        source: SymbolSource,
    ) -> Result<()> {
        self.disarm(module);
        let enter = program_fd(ebpf, "callback_enter")?;
        let exit = program_fd(ebpf, "callback_exit")?;
        let mut callbacks = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            let key = self.key(&symbol);
            self.next_event += 1;
            let base = format!("{module}_{}_{}", symbol.callback, self.next_event);
            let events = [format!("{base}_e"), format!("{base}_r")];
            let mut links = Vec::with_capacity(2);
            for (event, probe, program) in [
                (&events[0], Probe::Entry, &enter),
                (
                    &events[1],
                    Probe::Return {
                        max_active: self.max_active,
                    },
                    &exit,
                ),
            ] {
                let id = self
                    .group
                    .define(event, probe, Some(module), &symbol.symbol)
                    .context("arming a driver callback")?;
                links.push(trace_events::attach(program.as_fd(), id, key, event)?);
            }
            let [first, second]: [EventLink; 2] = links
                .try_into()
                .map_err(|_| anyhow::anyhow!("two links per callback"))?;
            decoder.add_callback(
                key,
                Callback {
                    name: symbol.callback.as_str().into(),
                    driver_type: symbol.driver_type.as_str().into(),
                },
            );
            callbacks.push(ArmedCallback {
                symbol,
                events,
                _links: [first, second],
            });
        }
        self.modules
            .insert(module.to_owned(), ArmedModule { source, callbacks });
        Ok(())
    }

    /// Attaches kprobe program `program` to `symbol` (in `module`, loaded or not; `None`: in
    /// vmlinux or a built-in module), on return if `on_return`.
    pub fn arm_function(
        &mut self,
        ebpf: &mut Ebpf,
        module: Option<&str>,
        symbol: &str,
        program: &str,
        on_return: bool,
    ) -> Result<()> {
        let fd = program_fd(ebpf, program)?;
        self.next_event += 1;
        let event = format!("{program}_{}", self.next_event);
        let probe = if on_return {
            Probe::Return {
                max_active: self.max_active,
            }
        } else {
            Probe::Entry
        };
        let id = self.group.define(&event, probe, module, symbol)?;
        let link = trace_events::attach(fd.as_fd(), id, 0, &event)?;
        self.functions.push((event, link));
        Ok(())
    }

    /// Removes `module`'s probes.
    pub fn disarm(&mut self, module: &str) {
        let Some(armed) = self.modules.remove(module) else {
            return;
        };
        for callback in armed.callbacks {
            let ArmedCallback { events, _links, .. } = callback;
            drop(_links);
            for event in &events {
                self.group.remove(event);
            }
        }
    }

    /// What is armed for `module`.
    pub fn armed(&self, module: &str) -> Option<&ArmedModule> {
        self.modules.get(module)
    }

    /// Every armed module.
    pub fn modules(&self) -> impl Iterator<Item = (&String, &ArmedModule)> {
        self.modules.iter()
    }
}

/// The descriptor of kprobe program `name`, loaded if it was not.
fn program_fd(ebpf: &mut Ebpf, name: &str) -> Result<aya::programs::ProgramFd> {
    let probe: &mut KProbe = ebpf
        .program_mut(name)
        .with_context(|| format!("the eBPF object has no program `{name}`"))?
        .try_into()?;
    if probe.fd().is_err() {
        probe
            .load()
            .map_err(|err| explain_refusal(&format!("loading the `{name}` program"), &err))?;
    }
    Ok(probe.fd()?.try_clone()?)
}
