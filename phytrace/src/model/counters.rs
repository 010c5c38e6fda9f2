//! Counters of what the model has seen, per PHY and in total.

use std::collections::BTreeMap;

/// Calls of one callback.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallbackStats {
    /// Completed calls (exits seen).
    pub calls: u64,
    /// Calls that returned a negative value.
    pub errors: u64,
    /// Sum of the latencies, in nanoseconds.
    pub total_latency_ns: u64,
    /// Longest call, in nanoseconds.
    pub max_latency_ns: u64,
    /// Calls entered whose return was never seen (given up by the model; see
    /// [`LostWhy`](super::LostWhy)).
    pub lost_returns: u64,
}

/// Counters of one PHY, or of all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events applied.
    pub events: u64,
    /// Per callback name (`read_status`).
    pub callbacks: BTreeMap<String, CallbackStats>,
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
    /// The stats of callback `name`, created empty (the name is copied only then).
    fn of(&mut self, name: &str) -> &mut CallbackStats {
        if !self.callbacks.contains_key(name) {
            self.callbacks
                .insert(name.to_owned(), CallbackStats::default());
        }
        match self.callbacks.get_mut(name) {
            Some(stats) => stats,
            None => unreachable!("inserted above"),
        }
    }

    /// Counts a call of `name` whose return was lost.
    pub(super) fn lost_return(&mut self, name: &str) {
        self.of(name).lost_returns += 1;
    }

    /// Counts a completed callback.
    pub(super) fn callback(&mut self, name: &str, latency_ns: u64, ret: i64) {
        let stats = self.of(name);
        stats.calls += 1;
        stats.errors += u64::from(ret < 0);
        stats.total_latency_ns = stats.total_latency_ns.saturating_add(latency_ns);
        stats.max_latency_ns = stats.max_latency_ns.max(latency_ns);
    }
}
