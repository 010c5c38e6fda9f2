//! Events per second, over whole seconds of the caller's clock.

use std::time::Duration;

/// Counts events in one-second buckets and shows the last full one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateMeter {
    bucket_start: Duration,
    count: u64,
    rate: u64,
}

impl RateMeter {
    /// Counts `n` events at `now`; returns `true` when the shown rate changed.
    pub fn add(&mut self, n: u64, now: Duration) -> bool {
        let before = self.rate;
        let elapsed = now.saturating_sub(self.bucket_start);
        if elapsed >= Duration::from_secs(2) {
            self.rate = 0;
            self.count = 0;
            self.bucket_start = now;
        } else if elapsed >= Duration::from_secs(1) {
            self.rate = self.count;
            self.count = 0;
            self.bucket_start += Duration::from_secs(1);
        }
        self.count += n;
        self.rate != before
    }

    /// Events in the last full second.
    pub fn per_second(&self) -> u64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_last_full_second_and_decays() {
        let mut m = RateMeter::default();
        assert!(!m.add(500, Duration::from_millis(100)));
        assert!(!m.add(500, Duration::from_millis(900)));
        assert!(m.add(0, Duration::from_millis(1100)));
        assert_eq!(m.per_second(), 1000);
        assert!(m.add(0, Duration::from_millis(3500)));
        assert_eq!(m.per_second(), 0);
    }
}
