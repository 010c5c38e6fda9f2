//! MDIO accesses of one PHY: per one-second window since the capture's start, per register,
//! and their latencies (on a USB dongle each one is a series of control transfers).

use std::collections::BTreeMap;

use serde::Serialize;

use super::latency::Latencies;
use crate::event::MdioOp;
use crate::registers::Register;

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

/// Accesses per one-second window, `[origin + i s, origin + (i + 1) s)` for window `i`, the
/// empty ones left out: memory grows with the accesses, not with the time between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Windows(BTreeMap<u64, u64>);

impl Windows {
    /// Accesses in window `i`.
    pub fn get(&self, i: u64) -> u64 {
        self.0.get(&i).copied().unwrap_or(0)
    }

    /// The windows with accesses, in order: `(index, accesses)`.
    pub fn nonempty(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter().map(|(&i, &n)| (i, n))
    }

    /// The most accesses of a window in `range`, 0 if none.
    pub fn max_in(&self, range: std::ops::RangeInclusive<u64>) -> u64 {
        self.0.range(range).map(|(_, &n)| n).max().unwrap_or(0)
    }
}

/// MDIO accesses of one PHY.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MdioCounts {
    /// Accesses per window.
    pub windows: Windows,
    /// Per register, Clause 22 or (by MMD) Clause 45.
    pub registers: BTreeMap<Register, RegisterCount>,
    /// All accesses.
    pub total: u64,
    /// Latencies of the reads, successful or failed.
    pub read_latency: Latencies,
    /// Latencies of the writes, successful or failed.
    pub write_latency: Latencies,
}

impl MdioCounts {
    /// Counts an access at `offset_ns` after the origin that took `latency_ns`.
    pub fn record(
        &mut self,
        offset_ns: u64,
        op: MdioOp,
        reg: Register,
        failed: bool,
        latency_ns: u64,
    ) {
        *self.windows.0.entry(offset_ns / WINDOW_NS).or_default() += 1;
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
    pub fn rate(&self, windows: u64) -> (f64, u64, Option<u64>) {
        let mean = self.total as f64 / windows.max(1) as f64;
        let peak = self
            .windows
            .nonempty()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        match peak {
            Some((i, n)) => (mean, n, Some(i)),
            None => (mean, 0, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_registers() {
        let mut m = MdioCounts::default();
        m.record(100, MdioOp::Read, Register::C22(1), false, 36_000_000);
        m.record(
            900_000_000,
            MdioOp::Read,
            Register::C22(1),
            true,
            600_000_000,
        );
        m.record(
            2_500_000_000,
            MdioOp::Write,
            Register::C22(0),
            false,
            35_000_000,
        );
        let stat1 = Register::C45 { devad: 3, reg: 1 };
        m.record(3_500_000_000, MdioOp::Read, stat1, false, 1_000);
        assert_eq!(
            m.windows.nonempty().collect::<Vec<_>>(),
            [(0, 2), (2, 1), (3, 1)]
        );
        assert_eq!((m.windows.get(1), m.windows.max_in(1..=5)), (0, 1));
        assert_eq!(
            m.registers[&Register::C22(1)],
            RegisterCount {
                reads: 1,
                writes: 0,
                errors: 1
            }
        );
        assert_eq!(m.registers[&stat1].reads, 1, "apart from BMSR");
        assert_eq!(m.rate(4), (1.0, 2, Some(0)));
        let reads = m.read_latency.summary();
        assert_eq!(
            (reads.count, reads.min_ns, reads.max_ns),
            (3, 1_000, 600_000_000)
        );
        assert_eq!(m.write_latency.summary().count, 1);
        assert_eq!(MdioCounts::default().rate(0), (0.0, 0, None));
    }
}
