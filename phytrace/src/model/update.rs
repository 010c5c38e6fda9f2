//! One event applied to the PHY it names: one step per kind of event, each saying what it
//! changed ([`Applied`]) and what it established (facts) or gave up (lost returns).

use super::Applied;
use super::callbacks::{Access, LostReturn};
use super::facts::FactLog;
use super::phy::{ExitInfo, PhyModel};
use crate::event::{Callback, EventKind, LinkState, MacChange, PhyState, Text};

/// The parts of the model one event of a PHY changes.
pub(super) struct PhyUpdate<'m> {
    /// The PHY the event names.
    pub phy: &'m mut PhyModel,
    /// The facts of the event.
    pub facts: &'m mut FactLog,
    /// The calls the event showed will never be seen returning.
    pub lost: &'m mut Vec<LostReturn>,
    /// The event's number among the events applied.
    pub event: usize,
    /// Its time.
    pub ts_ns: u64,
    /// Its thread.
    pub tid: u32,
}

impl PhyUpdate<'_> {
    /// Applies an event of kind `kind` to the PHY; the session's own events (a module attached
    /// or detached, events lost) change nothing of it.
    pub fn apply(mut self, kind: &EventKind) -> Applied {
        match kind {
            EventKind::CallbackEnter {
                callback,
                depth,
                state,
            } => self.callback_enter(callback, *depth, state),
            EventKind::CallbackExit {
                callback,
                depth,
                latency_ns,
                ret,
                state_before,
                state_after,
                link,
            } => self.callback_exit(ExitInfo {
                callback,
                depth: *depth,
                latency_ns: *latency_ns,
                ret: *ret,
                state_before,
                state_after,
                link,
            }),
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
            } => {
                let access = Access {
                    ts_ns: self.ts_ns,
                    op: *op,
                    reg: *reg,
                    devad: *devad,
                    value: *value,
                    error: *error,
                };
                self.mdio(
                    &access,
                    *devad,
                    caller.as_ref(),
                    state.as_ref(),
                    link.as_ref(),
                )
            }
            EventKind::Mac { change } => self.mac(change),
            EventKind::Kmsg { level, text } => self.kmsg(*level, text),
            EventKind::Attached { .. } | EventKind::Detached { .. } | EventKind::Lost { .. } => {
                Applied::default()
            }
        }
    }

    /// A callback was entered in `state`.
    fn callback_enter(&mut self, callback: &Callback, depth: u8, state: &PhyState) -> Applied {
        let (ts, tid) = (self.ts_ns, self.tid);
        let lost = self.phy.enter(ts, tid, self.event, callback, depth, state);
        self.lost.extend(lost);
        let transition = self.phy.observe_state(ts, state, Some(callback));
        self.facts
            .entered(self.phy, tid, callback, transition.as_ref());
        Applied {
            transition: transition.map(Box::new),
            ..Applied::default()
        }
    }

    /// A callback returned.
    fn callback_exit(&mut self, exit: ExitInfo<'_>) -> Applied {
        let (ts, tid) = (self.ts_ns, self.tid);
        let (closed, link_change, lost) = self.phy.exit(ts, tid, exit);
        self.lost.extend(lost);
        let before = self
            .phy
            .observe_state(ts, exit.state_before, Some(exit.callback));
        let after = self
            .phy
            .observe_state(ts, exit.state_after, Some(exit.callback));
        let transitions = [before.as_ref(), after.as_ref()];
        self.facts
            .returned(self.phy, tid, exit, transitions, link_change.as_ref());
        Applied {
            transition: after.or(before).map(Box::new),
            closed: Some(Box::new(closed)),
            link_change,
            ..Applied::default()
        }
    }

    /// An MDIO access, Clause 22 or (with `devad`) Clause 45, made during `caller` if the probe
    /// saw one, with the `state` and `link` it read.
    fn mdio(
        &mut self,
        access: &Access,
        devad: Option<u8>,
        caller: Option<&Callback>,
        state: Option<&PhyState>,
        link: Option<&LinkState>,
    ) -> Applied {
        let (ts, tid) = (self.ts_ns, self.tid);
        let mut applied = Applied::default();
        match devad {
            None => (applied.previous, applied.mmd) = self.phy.mdio(ts, tid, access),
            Some(devad) => applied.previous = self.phy.mdio_c45(tid, devad, access),
        }
        if let Some(link) = link {
            self.phy.seen_link = Some(link.clone());
        }
        let transition = state.and_then(|state| self.phy.observe_state(ts, state, caller));
        self.facts
            .accessed(self.phy, tid, devad, access, caller, transition.as_ref());
        applied.transition = transition.map(Box::new);
        applied
    }

    /// A MAC-side change of the PHY's link.
    fn mac(&mut self, change: &MacChange) -> Applied {
        self.phy.mac.apply(change);
        self.facts.mac(self.phy, self.tid, change);
        Applied::default()
    }

    /// A kernel message about the PHY.
    fn kmsg(&mut self, level: Option<u8>, text: &Text) -> Applied {
        self.facts.kmsg(self.phy, self.tid, level, text);
        Applied::default()
    }
}
