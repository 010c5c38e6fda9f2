//! Open driver callbacks per thread, with the MDIO accesses made while they run.

use std::collections::BTreeMap;

use crate::event::{Callback, LinkState, MdioOp, PhyState};
use crate::registers::Register;

/// Most accesses kept per callback run; later ones are counted in `accesses_dropped`.
pub const MAX_ACCESSES_PER_CALL: usize = 256;
/// Deepest nesting kept per thread; deeper entries mean lost exits and are given up.
pub const MAX_DEPTH: usize = 16;

/// One MDIO access attributed to a callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Boot-clock time in nanoseconds.
    pub ts_ns: u64,
    /// Read or write.
    pub op: MdioOp,
    /// Register number (within its MMD for Clause 45).
    pub reg: u16,
    /// The MMD of a Clause 45 access; none for Clause 22.
    pub devad: Option<u8>,
    /// Value read or written.
    pub value: u16,
    /// Negative errno if the access failed.
    pub error: Option<i32>,
}

impl Access {
    /// The register it names.
    pub fn register(&self) -> Register {
        Register::of(self.devad, self.reg)
    }
}

/// A callback that was entered and has not returned yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCallback {
    /// The callback.
    pub callback: Callback,
    /// Nesting depth on its thread.
    pub depth: u8,
    /// Entry time.
    pub enter_ns: u64,
    /// Number of its entry event among the events the model applied, from 0.
    pub enter_event: usize,
    /// `phy_state` at entry.
    pub state: PhyState,
    /// MDIO accesses so far.
    pub accesses: Vec<Access>,
    /// Accesses beyond [`MAX_ACCESSES_PER_CALL`].
    pub accesses_dropped: u64,
}

impl OpenCallback {
    /// Attaches an access, up to the cap.
    pub(super) fn attach(&mut self, access: Access) {
        if self.accesses.len() < MAX_ACCESSES_PER_CALL {
            self.accesses.push(access);
        } else {
            self.accesses_dropped += 1;
        }
    }
}

/// A callback run from entry (if seen) to return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedCallback {
    /// The callback.
    pub callback: Callback,
    /// Nesting depth on its thread.
    pub depth: u8,
    /// Entry time, if the entry was seen.
    pub enter_ns: Option<u64>,
    /// Return time.
    pub exit_ns: u64,
    /// Time inside, from the exit event.
    pub latency_ns: u64,
    /// Return value.
    pub ret: i64,
    /// `phy_state` at entry and at return.
    pub state_before: PhyState,
    /// `phy_state` at return.
    pub state_after: PhyState,
    /// Link at return.
    pub link: LinkState,
    /// MDIO accesses made inside (empty if the entry was not seen).
    pub accesses: Vec<Access>,
    /// Accesses not kept (cap).
    pub accesses_dropped: u64,
}

/// Why a callback's return will never be seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LostWhy {
    /// A later event on its thread showed it had returned unseen (its exit event was lost).
    Superseded,
    /// Its driver module was unloaded while it ran, taking the return probe away.
    Unloaded,
    /// The capture ended while it ran (said by consumers that stop, not by the model).
    CaptureEnded,
}

/// A callback entered whose return was not seen, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostReturn {
    /// Key of its PHY.
    pub key: String,
    /// The call as it was open.
    pub open: OpenCallback,
    /// When the model gave it up (the event that showed it, or the end of the capture).
    pub known_at_ns: u64,
    /// Why.
    pub why: LostWhy,
}

/// Open callbacks of one PHY, per thread, innermost last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallStacks {
    stacks: BTreeMap<u32, Vec<OpenCallback>>,
}

impl CallStacks {
    /// The open callbacks of thread `tid`, outermost first.
    pub fn of(&self, tid: u32) -> &[OpenCallback] {
        self.stacks.get(&tid).map_or(&[], Vec::as_slice)
    }

    /// Threads with open callbacks and their stacks.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[OpenCallback])> {
        self.stacks.iter().map(|(tid, s)| (*tid, s.as_slice()))
    }

    /// Opens a callback; returns the stale entries (returns never seen) it gives up.
    pub(super) fn enter(&mut self, tid: u32, open: OpenCallback) -> Vec<OpenCallback> {
        let stack = self.stacks.entry(tid).or_default();
        let keep = usize::from(open.depth.saturating_sub(1)).min(MAX_DEPTH - 1);
        let stale = stack.split_off(keep.min(stack.len()));
        stack.push(open);
        stale
    }

    /// Closes the innermost open callback of `tid` matching `callback` and `depth`; returns it
    /// and the stale entries above it that are given up.
    pub(super) fn exit(
        &mut self,
        tid: u32,
        callback: &Callback,
        depth: u8,
    ) -> (Option<OpenCallback>, Vec<OpenCallback>) {
        let Some(stack) = self.stacks.get_mut(&tid) else {
            return (None, Vec::new());
        };
        let Some(pos) = stack
            .iter()
            .rposition(|o| o.depth == depth && o.callback == *callback)
        else {
            return (None, Vec::new());
        };
        let stale = stack.split_off(pos + 1);
        let open = stack.pop();
        if stack.is_empty() {
            self.stacks.remove(&tid);
        }
        (open, stale)
    }

    /// Gives up every open callback `gone` selects (their returns can no longer be traced).
    pub(super) fn abandon(&mut self, gone: impl Fn(&OpenCallback) -> bool) -> Vec<OpenCallback> {
        let mut given_up = Vec::new();
        for stack in self.stacks.values_mut() {
            // Inner calls of a callback given up are given up with it.
            if let Some(pos) = stack.iter().position(&gone) {
                given_up.extend(stack.split_off(pos));
            }
        }
        self.stacks.retain(|_, s| !s.is_empty());
        given_up
    }

    /// The innermost open callback of `tid`, to attach an access to.
    pub(super) fn innermost(&mut self, tid: u32) -> Option<&mut OpenCallback> {
        self.stacks.get_mut(&tid).and_then(|s| s.last_mut())
    }
}
