//! Counters of what the model has seen, per PHY and in total. Per-callback calls, errors,
//! latencies and lost returns, and MDIO accesses by register, are statistics: [`crate::stats`]
//! has them.

/// Counters of one PHY, or of all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events applied.
    pub events: u64,
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
