//! Up and down periods of a signal seen changing: the PHY's link, the MAC's carrier.

use serde::Serialize;

/// A period with the signal up or down.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    /// Up during it.
    pub up: bool,
    /// When it started (the event that showed the change), ns since the origin.
    pub start_ns: u64,
    /// How long it lasted; to the end of the capture when `open`.
    pub duration_ns: u64,
    /// Still going at the end of the capture (its length is a lower bound).
    pub open: bool,
}

/// The periods of one signal, as it changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpDown {
    closed: Vec<Interval>,
    /// The current period: up, since.
    current: Option<(bool, u64)>,
}

impl UpDown {
    /// The signal was seen `up` at `offset_ns`. `None` if that is no change; else the period
    /// it ended (`None` for the first report).
    pub fn set(&mut self, offset_ns: u64, up: bool) -> Option<Option<Interval>> {
        let ended = match self.current {
            Some((was, _)) if was == up => return None,
            Some((was, since)) => Some(Interval {
                up: was,
                start_ns: since,
                duration_ns: offset_ns.saturating_sub(since),
                open: false,
            }),
            None => None,
        };
        self.closed.extend(ended.clone());
        self.current = Some((up, offset_ns));
        Some(ended)
    }

    /// Every period, the current one closed at `end_ns` (and `open`).
    pub fn until(&self, end_ns: u64) -> Vec<Interval> {
        let mut all = self.closed.clone();
        if let Some((up, since)) = self.current {
            all.push(Interval {
                up,
                start_ns: since,
                duration_ns: end_ns.saturating_sub(since),
                open: true,
            });
        }
        all
    }

    /// When the signal was first seen, ns since the origin.
    pub fn first_seen_ns(&self) -> Option<u64> {
        self.closed
            .first()
            .map(|i| i.start_ns)
            .or(self.current.map(|c| c.1))
    }
}

/// Total time of `intervals` with the signal `up` (or down).
pub fn time(intervals: &[Interval], up: bool) -> u64 {
    intervals
        .iter()
        .filter(|i| i.up == up)
        .map(|i| i.duration_ns)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_close_periods() {
        let mut s = UpDown::default();
        assert_eq!(s.first_seen_ns(), None);
        assert_eq!(s.set(10, false), Some(None));
        assert_eq!(s.set(20, false), None);
        let ended = s.set(50, true).flatten().unwrap();
        assert_eq!(
            (ended.up, ended.start_ns, ended.duration_ns),
            (false, 10, 40)
        );
        let all = s.until(80);
        assert_eq!(all.len(), 2);
        assert!(all[1].open && all[1].duration_ns == 30);
        assert_eq!((time(&all, true), time(&all, false)), (30, 40));
        assert_eq!(s.first_seen_ns(), Some(10));
    }
}
