//! A history that keeps the newest entries, optionally up to a cap.

use std::collections::VecDeque;

/// Entries in arrival order; with a cap, the oldest are dropped and counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History<T> {
    entries: VecDeque<T>,
    cap: Option<usize>,
    dropped: u64,
}

impl<T> History<T> {
    /// An empty history keeping at most `cap` entries (`None`: all of them).
    pub fn new(cap: Option<usize>) -> Self {
        Self {
            entries: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    /// Appends an entry, dropping the oldest if the cap is reached.
    pub fn push(&mut self, entry: T) {
        if let Some(cap) = self.cap {
            if cap == 0 {
                self.dropped += 1;
                return;
            }
            if self.entries.len() >= cap {
                self.entries.pop_front();
                self.dropped += 1;
            }
        }
        self.entries.push_back(entry);
    }

    /// The kept entries, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.entries.iter()
    }

    /// The newest entry.
    pub fn last(&self) -> Option<&T> {
        self.entries.back()
    }

    /// Number of kept entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries the cap dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn cap_keeps_newest_and_counts_dropped() {
        let mut h = History::new(Some(2));
        for i in 0..5 {
            h.push(i);
        }
        assert_eq!(h.iter().copied().collect::<Vec<_>>(), [3, 4]);
        assert_eq!(h.dropped(), 3);
        assert_eq!(h.last(), Some(&4));
    }

    #[test]
    fn unbounded_and_zero_cap() {
        let mut all = History::new(None);
        let mut none = History::new(Some(0));
        for i in 0..100 {
            all.push(i);
            none.push(i);
        }
        assert_eq!(all.len(), 100);
        assert!(none.is_empty());
        assert_eq!(none.dropped(), 100);
    }
}
