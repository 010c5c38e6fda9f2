//! Facts: what each event established, one by one, as rules of `phytrace check` see it.
//!
//! The model emits them as it applies events when made [`Model::with_facts`](super::Model):
//! a callback entered or returned, an MDIO access, a change of `phy_state` or of the link, a
//! MAC-side change. One event may establish several, in the order they happened: a callback
//! entered in a new state gives `state NOLINK`, then `enter link_change_notify`.

use super::callbacks::{Access, OpenCallback};
use super::phy::{ExitInfo, LinkChange, PhyModel, StateTransition};
use crate::event::{Callback, MacChange, MdioOp, PhyState, Text};

/// One fact about one PHY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Number of the event it comes from among the events applied, from 0.
    pub event: usize,
    /// The event's time.
    pub ts_ns: u64,
    /// What happened.
    pub kind: FactKind,
    /// `phy_state` when it happened (at entry for callback entries and returns).
    pub state: Option<Text>,
    /// Callbacks running on the same thread for the same PHY, outermost first, not counting
    /// the callback this fact is the entry or return of; for an MDIO access, also the callback
    /// the probe saw it in when that one's entry was not seen.
    pub inside: Vec<Text>,
}

/// What a fact records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FactKind {
    /// A callback was entered.
    Enter(Text),
    /// A callback returned.
    Exit {
        /// The callback's name.
        callback: Text,
        /// Its return value.
        ret: i64,
        /// Time inside, from its exit event.
        latency_ns: u64,
    },
    /// An MDIO access.
    Mdio {
        /// Read or write.
        op: MdioOp,
        /// The MMD of a Clause 45 access.
        devad: Option<u8>,
        /// Register (in the MMD for Clause 45).
        reg: u16,
        /// Value read or written.
        value: u16,
        /// Negative errno, if it failed.
        error: Option<i32>,
    },
    /// `phy_state` became `to` (`from` is `None` the first time a state is seen).
    State {
        /// Previous state.
        from: Option<Text>,
        /// New state.
        to: Text,
    },
    /// The link went up (`true`) or down.
    Link(bool),
    /// A MAC-side change ([`crate::event::MacChange::name`]).
    Mac(&'static str),
    /// A kernel message about the PHY.
    Kmsg {
        /// Its syslog level, if known.
        level: Option<u8>,
        /// Its text.
        text: Text,
    },
}

/// The facts of the event being applied, when the model was asked for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct FactLog {
    /// Facts are asked for; the model builds none otherwise.
    enabled: bool,
    facts: Vec<Fact>,
    /// The event being applied: its number and time.
    event: usize,
    ts_ns: u64,
}

impl FactLog {
    /// A log that records facts.
    pub(super) fn enabled() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }

    /// Forgets the facts of the previous event; the next ones come from event `event`.
    pub(super) fn start(&mut self, event: usize, ts_ns: u64) {
        self.facts.clear();
        self.event = event;
        self.ts_ns = ts_ns;
    }

    /// Takes the facts of the last event applied out.
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Fact> {
        self.facts.drain(..)
    }

    /// A callback was entered, in a state that may be new; it is the innermost open call of
    /// `tid` now.
    pub(super) fn entered(
        &mut self,
        phy: &PhyModel,
        tid: u32,
        callback: &Callback,
        transition: Option<&StateTransition>,
    ) {
        if !self.enabled {
            return;
        }
        let open = phy.open.of(tid);
        let inside = names(&open[..open.len().saturating_sub(1)]);
        self.transition(transition, &inside);
        let kind = FactKind::Enter(callback.name.clone());
        self.push(kind, phy.state.as_ref(), &inside);
    }

    /// A callback returned: its entry state may be new (`before`), then its return state
    /// (`after`), then the link.
    pub(super) fn returned(
        &mut self,
        phy: &PhyModel,
        tid: u32,
        exit: ExitInfo<'_>,
        [before, after]: [Option<&StateTransition>; 2],
        link_change: Option<&LinkChange>,
    ) {
        if !self.enabled {
            return;
        }
        let inside = names(phy.open.of(tid));
        self.transition(before, &inside);
        let kind = FactKind::Exit {
            callback: exit.callback.name.clone(),
            ret: exit.ret,
            latency_ns: exit.latency_ns,
        };
        self.push(kind, Some(exit.state_before), &inside);
        self.transition(after, &inside);
        // The link going up or down is a fact (a change of speed or duplex is not); first seen,
        // only a link up is.
        if let Some(change) = link_change
            && change
                .from
                .as_ref()
                .map_or(change.to.up, |from| from.up != change.to.up)
        {
            self.push(
                FactKind::Link(change.to.up),
                Some(exit.state_after),
                &inside,
            );
        }
    }

    /// An MDIO access (to MMD `devad` for Clause 45), made in a state that may be new;
    /// `caller` is the callback the probe saw it in.
    pub(super) fn accessed(
        &mut self,
        phy: &PhyModel,
        tid: u32,
        devad: Option<u8>,
        access: &Access,
        caller: Option<&Callback>,
        transition: Option<&StateTransition>,
    ) {
        if !self.enabled {
            return;
        }
        // Inside the callbacks open on its thread, and inside its caller if that one's entry
        // was not seen (tracing started inside it).
        let mut inside = names(phy.open.of(tid));
        if let Some(caller) = caller
            && !inside.contains(&caller.name)
        {
            inside.push(caller.name.clone());
        }
        self.transition(transition, &inside);
        let kind = FactKind::Mdio {
            op: access.op,
            devad,
            reg: access.reg,
            value: access.value,
            error: access.error,
        };
        self.push(kind, phy.state.as_ref(), &inside);
    }

    /// A MAC-side change for `phy`.
    pub(super) fn mac(&mut self, phy: &PhyModel, tid: u32, change: &MacChange) {
        if self.enabled {
            let inside = names(phy.open.of(tid));
            self.push(FactKind::Mac(change.name()), phy.state.as_ref(), &inside);
        }
    }

    /// A kernel message about `phy`.
    pub(super) fn kmsg(&mut self, phy: &PhyModel, tid: u32, level: Option<u8>, text: &Text) {
        if self.enabled {
            let inside = names(phy.open.of(tid));
            let kind = FactKind::Kmsg {
                level,
                text: text.clone(),
            };
            self.push(kind, phy.state.as_ref(), &inside);
        }
    }

    fn push(&mut self, kind: FactKind, state: Option<&PhyState>, inside: &[Text]) {
        self.facts.push(Fact {
            event: self.event,
            ts_ns: self.ts_ns,
            kind,
            state: state.map(|s| s.name.clone()),
            inside: inside.to_vec(),
        });
    }

    fn transition(&mut self, transition: Option<&StateTransition>, inside: &[Text]) {
        if let Some(t) = transition {
            let kind = FactKind::State {
                from: t.from.as_ref().map(|s| s.name.clone()),
                to: t.to.name.clone(),
            };
            self.push(kind, Some(&t.to), inside);
        }
    }
}

/// The names of the callbacks `open`, outermost first.
fn names(open: &[OpenCallback]) -> Vec<Text> {
    open.iter().map(|o| o.callback.name.clone()).collect()
}
