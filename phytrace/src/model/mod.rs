//! Per-PHY state rebuilt from [`Event`]s, the same way for a live trace and for a replay.
//!
//! [`Model::apply`] takes events in order and returns what each one changed ([`Applied`]), so
//! a consumer such as `dump` can show register changes against the last known value. Made
//! [`Model::with_facts`], it also says what each event established ([`Fact`]s), which is what
//! `phytrace check` evaluates its rules on.

mod callbacks;
mod counters;
mod facts;
mod history;
mod phy;
mod update;

use std::collections::BTreeMap;

pub use callbacks::{
    Access, CallStacks, ClosedCallback, LostReturn, LostWhy, MAX_ACCESSES_PER_CALL, MAX_DEPTH,
    OpenCallback,
};
pub use counters::Counters;
pub use facts::{Fact, FactKind};
pub use history::History;
pub use phy::{LinkChange, PhyModel, RegisterValue, StateTransition};

use crate::event::{Event, EventKind, PhyRef};
use crate::registers::MmdAccess;
use facts::FactLog;
use update::PhyUpdate;

/// A traced driver module as last reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleStatus {
    /// Probes are attached now.
    pub attached: bool,
    /// Callbacks probed at the last attach.
    pub callbacks: usize,
    /// How many times it was attached.
    pub attaches: u64,
    /// When it was last attached or detached.
    pub since_ns: u64,
}

/// What applying one event changed. The TUI keeps one per event shown: what few events have
/// (a state change, a completed run) is boxed to keep it small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Key of the PHY concerned.
    pub key: Option<String>,
    /// MDIO: the register's value before this access, if known.
    pub previous: Option<u16>,
    /// MDIO: what an MMD_CTRL/MMD_DATA access meant.
    pub mmd: Option<MmdAccess>,
    /// `phy_state` changed.
    pub transition: Option<Box<StateTransition>>,
    /// Link, speed or duplex changed (callback exits).
    pub link_change: Option<LinkChange>,
    /// Callback exit: the completed run with its accesses.
    pub closed: Option<Box<ClosedCallback>>,
}

/// State of every PHY seen, keyed by [`PhyRef::key`](crate::event::PhyRef::key).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    /// PHYs by key (`phy_sim-0:01`).
    pub phys: BTreeMap<String, PhyModel>,
    /// Traced modules by name.
    pub modules: BTreeMap<String, ModuleStatus>,
    /// Counters of events not tied to a PHY (MDIO to an address without a PHY, lost events).
    pub unowned: Counters,
    /// Time of the first and last event applied.
    pub span_ns: Option<(u64, u64)>,
    /// Calls the last event applied showed will never be seen returning (rare: lost events,
    /// an unload); kept here rather than in [`Applied`], which the TUI holds per event.
    lost: Vec<LostReturn>,
    /// The facts of the last event applied, if asked for.
    facts: FactLog,
    /// Events applied so far: the number of the next one.
    events_applied: usize,
    history_cap: Option<usize>,
}

impl Model {
    /// A model keeping every state and link change.
    pub fn new() -> Self {
        Self::default()
    }

    /// A model keeping at most `cap` state and link changes per PHY (bounded memory).
    pub fn with_history_cap(cap: usize) -> Self {
        Self {
            history_cap: Some(cap),
            ..Self::default()
        }
    }

    /// A model keeping every state and link change that also says what each event
    /// established ([`Model::drain_facts`]).
    pub fn with_facts() -> Self {
        Self {
            facts: FactLog::enabled(),
            ..Self::default()
        }
    }

    /// The PHY with key `key`.
    pub fn phy(&self, key: &str) -> Option<&PhyModel> {
        self.phys.get(key)
    }

    /// Calls the last event applied showed will never be seen returning.
    pub fn lost_returns(&self) -> &[LostReturn] {
        &self.lost
    }

    /// Takes out the facts the last event applied established, in the order they happened;
    /// none unless the model was made [`Model::with_facts`].
    pub fn drain_facts(&mut self) -> impl Iterator<Item = Fact> + '_ {
        self.facts.drain()
    }

    /// The calls still running, given up as if the capture ended at `end_ns`.
    pub fn still_running(&self, end_ns: u64) -> impl Iterator<Item = LostReturn> + '_ {
        self.phys.iter().flat_map(move |(key, phy)| {
            phy.open.iter().flat_map(move |(_, stack)| {
                stack.iter().map(move |open| LostReturn {
                    key: key.clone(),
                    open: open.clone(),
                    known_at_ns: end_ns,
                    why: LostWhy::CaptureEnded,
                })
            })
        })
    }

    /// Applies one event and says what it changed.
    pub fn apply(&mut self, event: &Event) -> Applied {
        let number = self.events_applied;
        self.events_applied += 1;
        self.lost.clear();
        self.facts.start(number, event.ts_ns);
        self.span_ns = Some(match self.span_ns {
            Some((first, last)) => (first.min(event.ts_ns), last.max(event.ts_ns)),
            None => (event.ts_ns, event.ts_ns),
        });
        self.apply_to_session(event);
        match &event.phy {
            Some(phy) => self.apply_to_phy(number, phy, event),
            None => {
                // An MDIO access to an address without a PHY, a callback, MAC-side or
                // kernel-log event: no PHY to update.
                self.unowned.events += 1;
                Applied::default()
            }
        }
    }

    /// Event number `number`, which names `phy_ref`, applied to that PHY.
    fn apply_to_phy(&mut self, number: usize, phy_ref: &PhyRef, event: &Event) -> Applied {
        let key = phy_ref.key();
        let cap = self.history_cap;
        let phy = self
            .phys
            .entry(key.clone())
            .or_insert_with(|| PhyModel::new(phy_ref.clone(), cap));
        if phy.phy != *phy_ref {
            phy.phy = phy_ref.clone();
        }
        phy.counters.events += 1;
        let update = PhyUpdate {
            phy,
            facts: &mut self.facts,
            lost: &mut self.lost,
            event: number,
            ts_ns: event.ts_ns,
            tid: event.tid,
        };
        Applied {
            key: Some(key),
            ..update.apply(&event.kind)
        }
    }

    /// What an event of the tracing session rather than of a PHY changes: a module attached or
    /// detached, events lost.
    fn apply_to_session(&mut self, event: &Event) {
        match &event.kind {
            EventKind::Attached {
                module, callbacks, ..
            } => self.attached(module, *callbacks, event.ts_ns),
            EventKind::Detached { module } => self.detached(module, event.ts_ns),
            EventKind::Lost { count, cause } => {
                self.unowned.lost += count;
                self.unowned.lost_by_cause.add(*cause, *count);
            }
            _ => {}
        }
    }

    /// Module `module` was attached with `callbacks` callbacks probed.
    fn attached(&mut self, module: &str, callbacks: usize, ts_ns: u64) {
        let status = self
            .modules
            .entry(module.to_owned())
            .or_insert(ModuleStatus {
                attached: true,
                callbacks,
                attaches: 0,
                since_ns: ts_ns,
            });
        status.attached = true;
        status.callbacks = callbacks;
        status.attaches += 1;
        status.since_ns = ts_ns;
    }

    /// Module `module` was detached: its return probes are gone, so the calls running in it
    /// will never be seen returning.
    fn detached(&mut self, module: &str, ts_ns: u64) {
        if let Some(status) = self.modules.get_mut(module) {
            status.attached = false;
            status.since_ns = ts_ns;
        }
        // Its callbacks' types are paths in the module (`ax88796b_rust::…`).
        let prefix = format!("{module}::");
        for phy in self.phys.values_mut() {
            let gone = phy
                .open
                .abandon(|o| o.callback.driver_type.starts_with(&prefix));
            if !gone.is_empty() {
                self.lost
                    .extend(phy.give_up(ts_ns, gone, LostWhy::Unloaded));
            }
        }
    }

    /// Counters summed over all PHYs and the unowned events.
    pub fn totals(&self) -> Counters {
        let mut total = self.unowned.clone();
        for phy in self.phys.values() {
            let c = &phy.counters;
            total.events += c.events;
            total.unmatched_exits += c.unmatched_exits;
            total.unclosed += c.unclosed;
            total.lost += c.lost;
        }
        total
    }
}

#[cfg(test)]
mod tests;
