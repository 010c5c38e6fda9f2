//! What rules match against: each capture event becomes one or more facts, grouped per PHY.
//!
//! A fact is an event seen by a rule: a callback entry or return, an MDIO access, a change of
//! `phy_state` or of the link. State and link changes are derived from the states and links the
//! events carry, so one event may give several facts, in the order they happened: a callback
//! entered in a new state gives `state NOLINK` then `enter link_change_notify`.

use std::collections::BTreeMap;

use crate::event::{Event, EventKind, MdioOp, PhyState};

/// One fact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact<'a> {
    /// Index of the event it comes from, in the capture.
    pub event: usize,
    /// The event's time.
    pub ts_ns: u64,
    /// What happened.
    pub kind: FactKind<'a>,
    /// `phy_state` when it happened (at entry for callback entries and returns).
    pub state: Option<&'a str>,
    /// Callbacks running on the same thread for the same PHY, outermost first, not counting
    /// the callback this fact is the entry or return of.
    pub inside: Vec<&'a str>,
}

/// What a fact records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FactKind<'a> {
    /// A callback was entered.
    Enter(&'a str),
    /// A callback returned `ret` after `latency_ns` (from its exit event).
    Exit(&'a str, i64, u64),
    /// An MDIO access; `error` set if it failed.
    Mdio {
        /// Read or write.
        op: MdioOp,
        /// Register.
        reg: u16,
        /// Value read or written.
        value: u16,
        /// Negative errno.
        error: Option<i32>,
    },
    /// `phy_state` became `to` (`from` is `None` the first time a state is seen).
    State {
        /// Previous state.
        from: Option<&'a str>,
        /// New state.
        to: &'a str,
    },
    /// The link went up (`true`) or down.
    Link(bool),
    /// A MAC-side change ([`crate::event::MacChange::name`]).
    Mac(&'static str),
}

/// The facts of one PHY and who it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhyFacts<'a> {
    /// Bound driver name (latest non-empty).
    pub driver: &'a str,
    /// PHY ID (latest non-zero).
    pub phy_id: u32,
    /// Facts in capture order.
    pub facts: Vec<Fact<'a>>,
    state: Option<&'a str>,
    link: Option<bool>,
    stacks: BTreeMap<u32, Vec<(&'a str, u8)>>,
}

impl<'a> PhyFacts<'a> {
    fn push(&mut self, event: usize, ts_ns: u64, kind: FactKind<'a>, inside: &[&'a str]) {
        self.facts.push(Fact {
            event,
            ts_ns,
            kind,
            state: self.state,
            inside: inside.to_vec(),
        });
    }

    /// Records `state` as current, with a fact if it changed.
    fn observe(&mut self, event: usize, ts_ns: u64, state: &'a PhyState, inside: &[&'a str]) {
        let to = state.name.as_ref();
        if self.state != Some(to) {
            let from = self.state.replace(to);
            self.push(event, ts_ns, FactKind::State { from, to }, inside);
        }
    }

    /// The callbacks open on thread `tid`, outermost first.
    fn stack(&self, tid: u32) -> Vec<&'a str> {
        self.stacks
            .get(&tid)
            .map(|s| s.iter().map(|&(name, _)| name).collect())
            .unwrap_or_default()
    }

    fn add(&mut self, index: usize, event: &'a Event) {
        let ts = event.ts_ns;
        let tid = event.tid;
        if let Some(phy) = &event.phy {
            if !phy.driver.is_empty() {
                self.driver = &phy.driver;
            }
            if phy.phy_id != 0 {
                self.phy_id = phy.phy_id;
            }
        }
        match &event.kind {
            EventKind::CallbackEnter {
                callback,
                depth,
                state,
            } => {
                let stack = self.stacks.entry(tid).or_default();
                stack.truncate(usize::from(depth.saturating_sub(1)));
                let inside = self.stack(tid);
                self.observe(index, ts, state, &inside);
                self.push(index, ts, FactKind::Enter(&callback.name), &inside);
                self.stacks
                    .entry(tid)
                    .or_default()
                    .push((&callback.name, *depth));
            }
            EventKind::CallbackExit {
                callback,
                depth,
                ret,
                state_before,
                state_after,
                link,
                latency_ns,
            } => {
                if let Some(stack) = self.stacks.get_mut(&tid)
                    && let Some(pos) = stack
                        .iter()
                        .rposition(|&(n, d)| n == &*callback.name && d == *depth)
                {
                    stack.truncate(pos);
                }
                let inside = self.stack(tid);
                self.observe(index, ts, state_before, &inside);
                self.push(
                    index,
                    ts,
                    FactKind::Exit(&callback.name, *ret, *latency_ns),
                    &inside,
                );
                self.observe(index, ts, state_after, &inside);
                let was = self.link.replace(link.up);
                if was.map_or(link.up, |was| was != link.up) {
                    self.push(index, ts, FactKind::Link(link.up), &inside);
                }
            }
            EventKind::Mdio {
                op,
                reg,
                value,
                error,
                caller,
                state,
                ..
            } => {
                let mut inside = self.stack(tid);
                if let Some(caller) = caller
                    && !inside.contains(&caller.name.as_ref())
                {
                    inside.push(&caller.name);
                }
                if let Some(state) = state {
                    self.observe(index, ts, state, &inside);
                }
                let kind = FactKind::Mdio {
                    op: *op,
                    reg: *reg,
                    value: *value,
                    error: *error,
                };
                self.push(index, ts, kind, &inside);
            }
            EventKind::Mac { change } => {
                let inside = self.stack(tid);
                self.push(index, ts, FactKind::Mac(change.name()), &inside);
            }
            EventKind::Attached { .. } | EventKind::Detached { .. } | EventKind::Lost { .. } => {}
        }
    }
}

/// The facts of every PHY of a capture, by `bus:addr` key.
pub fn per_phy(events: &[Event]) -> BTreeMap<String, PhyFacts<'_>> {
    let mut phys: BTreeMap<String, PhyFacts<'_>> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        if let Some(phy) = &event.phy {
            phys.entry(phy.key()).or_default().add(index, event);
        }
    }
    phys
}
