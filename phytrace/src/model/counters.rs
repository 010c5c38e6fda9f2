//! Counters of what the model has seen, per PHY and in total. Per-callback calls, errors,
//! latencies and lost returns are statistics: [`crate::stats`] has them.

use crate::event::MdioOp;

/// Counters of one PHY, or of all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events applied.
    pub events: u64,
    /// Successful MDIO reads.
    pub mdio_reads: u64,
    /// Successful MDIO writes.
    pub mdio_writes: u64,
    /// Failed MDIO accesses (reads and writes).
    pub mdio_errors: u64,
    /// MDIO accesses made while no callback of the PHY was open on the thread (phylib's own).
    pub mdio_outside_callbacks: u64,
    /// Callback exits without a matching entry (tracing started inside it, or events lost).
    pub unmatched_exits: u64,
    /// Open callbacks given up: a later event showed they had returned unseen, or their module
    /// was unloaded while they ran.
    pub unclosed: u64,
    /// Events lost by the kernel side (sum of `Lost` events); only in the model's totals.
    pub lost: u64,
    /// The same, by cause.
    pub lost_by_cause: crate::event::LossCounts,
}

impl Counters {
    /// Counts an MDIO access: a read or a write, or an error if it `failed`.
    pub(super) fn mdio_access(&mut self, op: MdioOp, failed: bool) {
        match (failed, op) {
            (true, _) => self.mdio_errors += 1,
            (false, MdioOp::Read) => self.mdio_reads += 1,
            (false, MdioOp::Write) => self.mdio_writes += 1,
        }
    }
}
