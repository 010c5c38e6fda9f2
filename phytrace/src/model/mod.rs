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

use std::collections::BTreeMap;

pub use callbacks::{
    Access, CallStacks, ClosedCallback, LostReturn, LostWhy, MAX_ACCESSES_PER_CALL, MAX_DEPTH,
    OpenCallback,
};
pub use counters::Counters;
pub use facts::{Fact, FactKind};
pub use history::History;
pub use phy::{LinkChange, PhyModel, RegisterValue, StateTransition};

use crate::event::{Event, EventKind};
use crate::registers::MmdAccess;
use facts::FactLog;
use phy::ExitInfo;

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
        let mut applied = Applied::default();
        let ts = event.ts_ns;
        let phy = match &event.phy {
            Some(phy_ref) => {
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
                applied.key = Some(key);
                Some(phy)
            }
            None => {
                self.unowned.events += 1;
                None
            }
        };
        match (&event.kind, phy) {
            (
                EventKind::CallbackEnter {
                    callback,
                    depth,
                    state,
                },
                Some(phy),
            ) => {
                let lost = phy.enter(ts, event.tid, number, callback, *depth, state);
                self.lost.extend(lost);
                let transition = phy.observe_state(ts, state, Some(callback));
                self.facts
                    .entered(phy, event.tid, callback, transition.as_ref());
                applied.transition = transition.map(Box::new);
            }
            (
                EventKind::CallbackExit {
                    callback,
                    depth,
                    latency_ns,
                    ret,
                    state_before,
                    state_after,
                    link,
                },
                Some(phy),
            ) => {
                let exit = ExitInfo {
                    callback,
                    depth: *depth,
                    latency_ns: *latency_ns,
                    ret: *ret,
                    state_before,
                    state_after,
                    link,
                };
                let (closed, link_change, lost) = phy.exit(ts, event.tid, exit);
                self.lost.extend(lost);
                let before = phy.observe_state(ts, state_before, Some(callback));
                let after = phy.observe_state(ts, state_after, Some(callback));
                let transitions = [before.as_ref(), after.as_ref()];
                self.facts
                    .returned(phy, event.tid, exit, transitions, link_change.as_ref());
                applied.transition = after.or(before).map(Box::new);
                applied.closed = Some(Box::new(closed));
                applied.link_change = link_change;
            }
            (
                EventKind::Mdio {
                    op,
                    reg,
                    devad,
                    value,
                    error,
                    state,
                    caller,
                    link,
                    ..
                },
                Some(phy),
            ) => {
                let access = Access {
                    ts_ns: ts,
                    op: *op,
                    reg: *reg,
                    value: *value,
                    error: *error,
                };
                match devad {
                    None => (applied.previous, applied.mmd) = phy.mdio(ts, event.tid, &access),
                    Some(devad) => applied.previous = phy.mdio_c45(event.tid, *devad, &access),
                }
                if let Some(link) = link {
                    phy.seen_link = Some(link.clone());
                }
                let transition = state
                    .as_ref()
                    .and_then(|state| phy.observe_state(ts, state, caller.as_ref()));
                // The check language names Clause-22 registers: a Clause-45 access is no
                // access to them.
                if devad.is_none() {
                    self.facts.accessed(
                        phy,
                        event.tid,
                        &access,
                        caller.as_ref(),
                        transition.as_ref(),
                    );
                }
                applied.transition = transition.map(Box::new);
            }
            (EventKind::Mdio { op, error, .. }, None) => {
                self.unowned.mdio_access(*op, error.is_some());
            }
            // A callback event always names its PHY; without one there is nothing to update.
            (EventKind::CallbackEnter { .. } | EventKind::CallbackExit { .. }, None) => {}
            (
                EventKind::Attached {
                    module, callbacks, ..
                },
                _,
            ) => {
                let status = self.modules.entry(module.clone()).or_insert(ModuleStatus {
                    attached: true,
                    callbacks: *callbacks,
                    attaches: 0,
                    since_ns: ts,
                });
                status.attached = true;
                status.callbacks = *callbacks;
                status.attaches += 1;
                status.since_ns = ts;
            }
            (EventKind::Detached { module }, _) => {
                if let Some(status) = self.modules.get_mut(module) {
                    status.attached = false;
                    status.since_ns = ts;
                }
                // Its return probes are gone: the calls running in it will never be seen
                // returning. Its callbacks' types are paths in the module (`ax88796b_rust::…`).
                let prefix = format!("{module}::");
                for phy in self.phys.values_mut() {
                    let gone = phy
                        .open
                        .abandon(|o| o.callback.driver_type.starts_with(&prefix));
                    if !gone.is_empty() {
                        self.lost.extend(phy.give_up(ts, gone, LostWhy::Unloaded));
                    }
                }
            }
            (EventKind::Lost { count, cause }, _) => {
                self.unowned.lost += count;
                self.unowned.lost_by_cause.add(*cause, *count);
            }
            (EventKind::Mac { change }, Some(phy)) => {
                phy.mac.apply(change);
                self.facts.mac(phy, event.tid, change);
            }
            (EventKind::Mac { .. }, None) => {}
            (EventKind::Kmsg { level, text }, Some(phy)) => {
                self.facts.kmsg(phy, event.tid, *level, text);
            }
            (EventKind::Kmsg { .. }, None) => {}
        }
        applied
    }

    /// Counters summed over all PHYs and the unowned events.
    pub fn totals(&self) -> Counters {
        let mut total = self.unowned.clone();
        for phy in self.phys.values() {
            let c = &phy.counters;
            total.events += c.events;
            total.mdio_reads += c.mdio_reads;
            total.mdio_writes += c.mdio_writes;
            total.mdio_errors += c.mdio_errors;
            total.mdio_outside_callbacks += c.mdio_outside_callbacks;
            total.unmatched_exits += c.unmatched_exits;
            total.unclosed += c.unclosed;
            total.lost += c.lost;
        }
        total
    }
}

#[cfg(test)]
mod tests;
