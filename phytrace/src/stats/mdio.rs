//! MDIO accesses of one PHY: per one-second window since the capture's start, per register,
//! and their latencies (on a USB dongle each one is a series of control transfers).

use std::collections::BTreeMap;

use serde::Serialize;

use super::latency::Latencies;
use crate::event::MdioOp;

/// Length of a rate window.
pub const WINDOW_NS: u64 = 1_000_000_000;

/// Accesses to one register.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RegisterCount {
    /// Successful reads.
    pub reads: u64,
    /// Successful writes.
    pub writes: u64,
    /// Failed accesses.
    pub errors: u64,
}

/// MDIO accesses of one PHY.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MdioCounts {
    /// Accesses in window `i`: `[origin + i s, origin + (i + 1) s)`.
    pub windows: Vec<u64>,
    /// Per register number.
    pub registers: BTreeMap<u16, RegisterCount>,
    /// All accesses.
    pub total: u64,
    /// Latencies of the reads, successful or failed.
    pub read_latency: Latencies,
    /// Latencies of the writes, successful or failed.
    pub write_latency: Latencies,
}

impl MdioCounts {
    /// Counts an access at `offset_ns` after the origin that took `latency_ns`.
    pub fn record(&mut self, offset_ns: u64, op: MdioOp, reg: u16, failed: bool, latency_ns: u64) {
        let window = usize::try_from(offset_ns / WINDOW_NS).unwrap_or(usize::MAX);
        if window >= self.windows.len() {
            self.windows.resize(window.saturating_add(1), 0);
        }
        if let Some(w) = self.windows.get_mut(window) {
            *w += 1;
        }
        self.total += 1;
        match op {
            MdioOp::Read => self.read_latency.record(latency_ns),
            MdioOp::Write => self.write_latency.record(latency_ns),
        }
        let r = self.registers.entry(reg).or_default();
        match (failed, op) {
            (true, _) => r.errors += 1,
            (false, MdioOp::Read) => r.reads += 1,
            (false, MdioOp::Write) => r.writes += 1,
        }
    }

    /// Mean accesses per second over `windows` windows (the capture's length, rounded up), and
    /// the busiest window: `(mean, peak, index of the peak window)`.
    pub fn rate(&self, windows: u64) -> (f64, u64, Option<usize>) {
        let mean = self.total as f64 / windows.max(1) as f64;
        let peak = self
            .windows
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)));
        match peak {
            Some((i, &n)) if n > 0 => (mean, n, Some(i)),
            _ => (mean, 0, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_registers() {
        let mut m = MdioCounts::default();
        m.record(100, MdioOp::Read, 1, false, 36_000_000);
        m.record(900_000_000, MdioOp::Read, 1, true, 600_000_000);
        m.record(2_500_000_000, MdioOp::Write, 0, false, 35_000_000);
        assert_eq!(m.windows, [2, 0, 1]);
        assert_eq!(
            m.registers[&1],
            RegisterCount {
                reads: 1,
                writes: 0,
                errors: 1
            }
        );
        assert_eq!(m.rate(4), (0.75, 2, Some(0)));
        let reads = m.read_latency.summary();
        assert_eq!(
            (reads.count, reads.min_ns, reads.max_ns),
            (2, 36_000_000, 600_000_000)
        );
        assert_eq!(m.write_latency.summary().count, 1);
        assert_eq!(MdioCounts::default().rate(0), (0.0, 0, None));
    }
}
