//! Latencies of one callback: an HDR histogram for percentiles, exact minimum, maximum and sum.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant decimal digits the histogram keeps: a percentile is within 0.1% of a latency
/// that was recorded (said in every output that shows one).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// The percentiles reported, in order.
pub const PERCENTILES: [u8; 3] = [50, 90, 99];

/// Longest latency the histogram tells apart (2^42 ns, 73 minutes), which bounds its memory
/// (about 270 KiB); longer ones count as this in the percentiles, minimum, maximum and mean
/// stay exact.
const MAX_TRACKED_NS: u64 = 1 << 42;

/// Every latency recorded for one callback (or one kind of MDIO access).
#[derive(Clone, Debug, PartialEq)]
pub struct Latencies {
    histogram: Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Self {
            // Auto-resizing from 1 ns: memory grows with the longest latency seen (about
            // 150 KiB for 100 ms) up to `MAX_TRACKED_NS`, never a value refused.
            histogram: match Histogram::new(SIGNIFICANT_DIGITS) {
                Ok(h) => h,
                Err(e) => unreachable!("3 significant digits is a valid precision: {e:?}"),
            },
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

/// What `phytrace stats` and the TUI show of a callback's latencies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Latencies recorded.
    pub count: u64,
    /// Shortest, exact.
    pub min_ns: u64,
    /// 50th percentile (nearest rank, within 0.1%).
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest, exact.
    pub max_ns: u64,
    /// Mean, exact (sum over count, rounded down).
    pub mean_ns: u64,
}

impl Latencies {
    /// Records one latency.
    pub fn record(&mut self, ns: u64) {
        // 0 ns (a clock that did not move) is recorded as 1 ns, the histogram's lowest value.
        if self.histogram.record(ns.clamp(1, MAX_TRACKED_NS)).is_err() {
            self.histogram.saturating_record(ns);
        }
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The `p`th percentile (0 < p ≤ 100; nearest rank: the smallest recorded latency that at
    /// least `p`% of the calls do not exceed), within 0.1%; the exact maximum at 100.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count() == 0 {
            return None;
        }
        if p >= 100.0 {
            return Some(self.max_ns);
        }
        let value = self.histogram.value_at_quantile(p / 100.0);
        Some(
            self.histogram
                .highest_equivalent(value)
                .clamp(self.min_ns, self.max_ns),
        )
    }

    /// Count, min, p50, p90, p99, max and mean.
    pub fn summary(&self) -> Summary {
        let count = self.count();
        if count == 0 {
            return Summary::default();
        }
        let p = |q: u8| self.percentile(f64::from(q)).unwrap_or(0);
        Summary {
            count,
            min_ns: self.min_ns,
            p50_ns: p(PERCENTILES[0]),
            p90_ns: p(PERCENTILES[1]),
            p99_ns: p(PERCENTILES[2]),
            max_ns: self.max_ns,
            mean_ns: self.sum_ns / count,
        }
    }

    /// Calls per bucket of `buckets` equal slices of the logarithm of the latency, from the
    /// minimum to the maximum: `(upper bound in ns, calls)`, for a histogram picture.
    pub fn log_buckets(&self, buckets: usize) -> Vec<(u64, u64)> {
        if self.count() == 0 || buckets == 0 {
            return Vec::new();
        }
        let lo = (self.min_ns.max(1) as f64).ln();
        let hi = (self.max_ns.max(1) as f64).ln();
        let step = ((hi - lo) / buckets as f64).max(f64::EPSILON);
        let bounds: Vec<u64> = (1..=buckets)
            .map(|i| (lo + step * i as f64).exp().round() as u64)
            .collect();
        let mut counts = vec![0u64; buckets];
        for v in self.histogram.iter_recorded() {
            let value = v.value_iterated_to().min(self.max_ns);
            let at = bounds.partition_point(|&b| b < value).min(buckets - 1);
            counts[at] += v.count_at_value();
        }
        let mut out: Vec<(u64, u64)> = bounds.into_iter().zip(counts).collect();
        if let Some(last) = out.last_mut() {
            last.0 = self.max_ns;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_within_a_thousandth() {
        let mut l = Latencies::default();
        for ns in 1..=1000u64 {
            l.record(ns * 1_000);
        }
        let s = l.summary();
        assert_eq!((s.count, s.min_ns, s.max_ns), (1000, 1_000, 1_000_000));
        for (got, want) in [
            (s.p50_ns, 500_000),
            (s.p90_ns, 900_000),
            (s.p99_ns, 990_000),
        ] {
            assert!(got >= want && got <= want + want / 1000, "{got} vs {want}");
        }
        assert_eq!(s.mean_ns, 500_500);
        assert_eq!(l.percentile(100.0), Some(1_000_000));
    }

    #[test]
    fn one_call_and_none() {
        let mut l = Latencies::default();
        assert_eq!(l.summary(), Summary::default());
        assert_eq!(l.percentile(99.0), None);
        l.record(73_400);
        let s = l.summary();
        assert_eq!(
            (s.min_ns, s.p50_ns, s.p99_ns, s.max_ns),
            (73_400, 73_400, 73_400, 73_400)
        );
    }

    #[test]
    fn log_buckets_cover_every_call() {
        let mut l = Latencies::default();
        for ns in [10_000, 11_000, 12_000, 50_000, 1_000_000] {
            l.record(ns);
        }
        let b = l.log_buckets(4);
        assert_eq!(b.len(), 4);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 5);
        assert_eq!(b[0].1, 3);
        assert_eq!(b[3], (1_000_000, 1));
    }
}
