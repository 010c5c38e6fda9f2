//! State of one PHY rebuilt from its events.

use std::collections::BTreeMap;

use super::callbacks::{Access, CallStacks, ClosedCallback, LostReturn, LostWhy, OpenCallback};
use super::counters::Counters;
use super::history::History;
use crate::event::{Callback, LinkState, MacChange, MdioOp, PhyRef, PhyState, Text};
use crate::registers::{MmdAccess, MmdTracker};

/// Last known value of a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterValue {
    /// The value.
    pub value: u16,
    /// When it was read or written.
    pub ts_ns: u64,
    /// Whether it was read or written.
    pub op: MdioOp,
}

/// A change of `phy_state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateTransition {
    /// When it was observed.
    pub ts_ns: u64,
    /// Previous state, unknown for the first observation.
    pub from: Option<PhyState>,
    /// New state.
    pub to: PhyState,
    /// Callback during which it was observed: at its return if it made the change, at its entry
    /// if phylib changed the state between callbacks.
    pub during: Option<String>,
}

/// A change of link, speed or duplex, as seen at a callback's return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkChange {
    /// Return time of the callback.
    pub ts_ns: u64,
    /// Previous state, unknown for the first observation.
    pub from: Option<LinkState>,
    /// New state.
    pub to: LinkState,
}

/// Everything known about one PHY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhyModel {
    /// Identity, as of its latest event.
    pub phy: PhyRef,
    /// Last value read or written, per register.
    pub registers: BTreeMap<u16, RegisterValue>,
    /// Progress of the MMD access sequence.
    pub mmd: MmdTracker,
    /// Last value read or written, per MMD `(devad, register)`.
    pub mmd_registers: BTreeMap<(u8, u16), u16>,
    /// Current `phy_state`.
    pub state: Option<PhyState>,
    /// Its changes.
    pub state_history: History<StateTransition>,
    /// Link, speed and duplex at the last callback return (what link changes are made of).
    pub link: Option<LinkState>,
    /// Link, speed and duplex as of the latest event that read them (a callback's return or an
    /// MDIO access): current even for a PHY whose status phylib reads without a callback.
    pub seen_link: Option<LinkState>,
    /// Their changes.
    pub link_history: History<LinkChange>,
    /// Callbacks running now.
    pub open: CallStacks,
    /// Latest completed run of each callback, by name.
    pub last_calls: BTreeMap<String, ClosedCallback>,
    /// Counters.
    pub counters: Counters,
    /// The MAC side of this PHY's link.
    pub mac: MacSide,
}

/// What the MAC side last did with the link of a PHY.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MacSide {
    /// The link the MAC was last configured for (`mac_link_up`), `None` once it went down.
    pub link: Option<MacChange>,
    /// Whether `mac_link_up`/`mac_link_down` was seen at all.
    pub seen: bool,
    /// Carrier of the PHY's network device, and its name.
    pub carrier: Option<(Text, bool)>,
}

impl MacSide {
    /// Takes in a MAC-side change.
    pub fn apply(&mut self, change: &MacChange) {
        match change {
            MacChange::LinkUp { .. } => {
                self.link = Some(change.clone());
                self.seen = true;
            }
            MacChange::LinkDown => {
                self.link = None;
                self.seen = true;
            }
            MacChange::Carrier { netdev, up } => self.carrier = Some((netdev.clone(), *up)),
            MacChange::Resolve { .. } => {}
        }
    }
}

impl PhyModel {
    /// A PHY seen for the first time; histories keep at most `cap` entries.
    pub fn new(phy: PhyRef, cap: Option<usize>) -> Self {
        Self {
            phy,
            registers: BTreeMap::new(),
            mmd: MmdTracker::default(),
            mmd_registers: BTreeMap::new(),
            state: None,
            state_history: History::new(cap),
            link: None,
            seen_link: None,
            link_history: History::new(cap),
            open: CallStacks::default(),
            last_calls: BTreeMap::new(),
            counters: Counters::default(),
            mac: MacSide::default(),
        }
    }

    /// Records `state` as current; returns the transition if it changed.
    pub(super) fn observe_state(
        &mut self,
        ts_ns: u64,
        state: &PhyState,
        during: Option<&Callback>,
    ) -> Option<StateTransition> {
        if self.state.as_ref() == Some(state) {
            return None;
        }
        let transition = StateTransition {
            ts_ns,
            from: self.state.replace(state.clone()),
            to: state.clone(),
            during: during.map(|c| c.name.to_string()),
        };
        self.state_history.push(transition.clone());
        Some(transition)
    }

    /// Counts the open callbacks given up at `ts_ns` and says what they were.
    pub(super) fn give_up(
        &mut self,
        ts_ns: u64,
        given_up: Vec<OpenCallback>,
        why: LostWhy,
    ) -> Vec<LostReturn> {
        self.counters.unclosed += given_up.len() as u64;
        given_up
            .into_iter()
            .map(|open| LostReturn {
                key: self.phy.key(),
                open,
                known_at_ns: ts_ns,
                why,
            })
            .collect()
    }

    /// A callback was entered by event number `event`; returns the calls on its thread this
    /// showed had returned unseen.
    pub(super) fn enter(
        &mut self,
        ts_ns: u64,
        tid: u32,
        event: usize,
        callback: &Callback,
        depth: u8,
        state: &PhyState,
    ) -> Vec<LostReturn> {
        let open = OpenCallback {
            callback: callback.clone(),
            depth,
            enter_ns: ts_ns,
            enter_event: event,
            state: state.clone(),
            accesses: Vec::new(),
            accesses_dropped: 0,
        };
        let stale = self.open.enter(tid, open);
        self.give_up(ts_ns, stale, LostWhy::Superseded)
    }

    /// A callback returned; returns the completed run, the link change it showed and the calls
    /// above it on its thread whose returns were not seen.
    pub(super) fn exit(
        &mut self,
        ts_ns: u64,
        tid: u32,
        exit: ExitInfo<'_>,
    ) -> (ClosedCallback, Option<LinkChange>, Vec<LostReturn>) {
        let (open, stale) = self.open.exit(tid, exit.callback, exit.depth);
        let lost = self.give_up(ts_ns, stale, LostWhy::Superseded);
        self.counters.unmatched_exits += u64::from(open.is_none());
        let (enter_ns, accesses, accesses_dropped) = match open {
            Some(o) => (Some(o.enter_ns), o.accesses, o.accesses_dropped),
            None => (None, Vec::new(), 0),
        };
        let closed = ClosedCallback {
            callback: exit.callback.clone(),
            depth: exit.depth,
            enter_ns,
            exit_ns: ts_ns,
            latency_ns: exit.latency_ns,
            ret: exit.ret,
            state_before: exit.state_before.clone(),
            state_after: exit.state_after.clone(),
            link: exit.link.clone(),
            accesses,
            accesses_dropped,
        };
        match self.last_calls.get_mut(&*exit.callback.name) {
            Some(last) => *last = closed.clone(),
            None => {
                self.last_calls
                    .insert(exit.callback.name.to_string(), closed.clone());
            }
        }
        self.seen_link = Some(exit.link.clone());
        let link_change = (self.link.as_ref() != Some(exit.link)).then(|| {
            let change = LinkChange {
                ts_ns,
                from: self.link.replace(exit.link.clone()),
                to: exit.link.clone(),
            };
            self.link_history.push(change.clone());
            change
        });
        (closed, link_change, lost)
    }

    /// An MDIO access; returns the register's previous value and the MMD meaning.
    pub(super) fn mdio(
        &mut self,
        ts_ns: u64,
        tid: u32,
        access: &Access,
    ) -> (Option<u16>, Option<MmdAccess>) {
        if let Some(open) = self.open.innermost(tid) {
            open.attach(access.clone());
        }
        if access.error.is_some() {
            return (self.registers.get(&access.reg).map(|r| r.value), None);
        }
        let previous = self.registers.insert(
            access.reg,
            RegisterValue {
                value: access.value,
                ts_ns,
                op: access.op,
            },
        );
        let mmd = self.mmd.observe(access.op, access.reg, access.value);
        if let Some(MmdAccess::Data {
            devad,
            addr: Some(addr),
            value,
            ..
        }) = mmd
        {
            self.mmd_registers.insert((devad, addr), value);
        }
        (previous.map(|r| r.value), mmd)
    }

    /// A Clause-45 access to MMD `devad`; returns the register's previous value.
    pub(super) fn mdio_c45(&mut self, tid: u32, devad: u8, access: &Access) -> Option<u16> {
        if let Some(open) = self.open.innermost(tid) {
            open.attach(access.clone());
        }
        let key = (devad, access.reg);
        if access.error.is_some() {
            return self.mmd_registers.get(&key).copied();
        }
        self.mmd_registers.insert(key, access.value)
    }

    /// `PHYSID1 << 16 | PHYSID2` if both were read.
    pub fn id_from_registers(&self) -> Option<crate::registers::PhyId> {
        let id1 = self.registers.get(&0x02)?.value;
        let id2 = self.registers.get(&0x03)?.value;
        Some(crate::registers::PhyId::from_registers(id1, id2))
    }
}

/// The fields of a `CallbackExit` event.
#[derive(Clone, Copy)]
pub(super) struct ExitInfo<'a> {
    pub callback: &'a Callback,
    pub depth: u8,
    pub latency_ns: u64,
    pub ret: i64,
    pub state_before: &'a PhyState,
    pub state_after: &'a PhyState,
    pub link: &'a LinkState,
}
