//! Positions in the lists the panes show: a cursor in a list that grows at the bottom (the log,
//! the timeline) and a scroll counted from the newest line (the `phy_state` history, the
//! kernel's lines).

use std::collections::VecDeque;

/// An entry with a sequence number; a list holds them in increasing order.
pub trait Sequenced {
    /// Sequence number since the start (or the last replay rewind).
    fn seq(&self) -> u64;
}

/// A bottom-anchored list position: follows the newest entry, or stays on the entry with a
/// given sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor(Option<u64>);

impl Cursor {
    /// Sequence number of the entry it stays on; `None` while following the newest.
    pub fn selected(self) -> Option<u64> {
        self.0
    }

    /// Stays on the entry with sequence number `seq`; `None` follows the newest.
    pub fn select(&mut self, seq: Option<u64>) {
        self.0 = seq;
    }

    /// Index in `entries` of the entry it stays on, or of the nearest before it; `None` while
    /// following (or before every entry).
    pub fn index<T: Sequenced>(self, entries: &VecDeque<T>) -> Option<usize> {
        index_of(entries, self.0?)
    }

    /// Moves by `delta` entries that `shows`; past the newest it follows again.
    pub fn step<T: Sequenced>(
        &mut self,
        entries: &VecDeque<T>,
        shows: impl Fn(&T) -> bool,
        delta: isize,
    ) {
        let shown: Vec<u64> = entries
            .iter()
            .filter(|e| shows(e))
            .map(Sequenced::seq)
            .collect();
        self.0 = step(&shown, self.0, delta);
    }

    /// Stays on the last of `entries` that `until` keeps (they keep a first part of the list),
    /// or on the oldest if it keeps none.
    pub fn show_until<T: Sequenced>(&mut self, entries: &VecDeque<T>, until: impl Fn(&T) -> bool) {
        let end = entries.partition_point(until);
        self.0 = end
            .checked_sub(1)
            .map(|i| entries[i].seq())
            .or(entries.front().map(Sequenced::seq));
    }
}

/// Where a cursor at `at` lands after `delta` steps over `shown` (sequence numbers, oldest
/// first); `None` (following) past the newest.
fn step(shown: &[u64], at: Option<u64>, delta: isize) -> Option<u64> {
    let last = shown.len().checked_sub(1)?;
    let from = match at {
        Some(seq) => shown.partition_point(|s| *s <= seq).saturating_sub(1),
        None => last,
    };
    let to = from.saturating_add_signed(delta);
    (to < last).then(|| shown[to])
}

/// Position of the last entry whose sequence number is at most `seq`.
fn index_of<T: Sequenced>(entries: &VecDeque<T>, seq: u64) -> Option<usize> {
    entries.partition_point(|e| e.seq() <= seq).checked_sub(1)
}

/// Up to `height` entries of `entries` that `shows`, ending at index `end` (the newest when
/// `None`), oldest first, with their indices.
pub fn window<T>(
    entries: &VecDeque<T>,
    end: Option<usize>,
    height: usize,
    shows: impl Fn(&T) -> bool,
) -> Vec<(usize, &T)> {
    let end = match end {
        Some(i) => (i + 1).min(entries.len()),
        None => entries.len(),
    };
    let mut rows: Vec<_> = entries
        .range(..end)
        .enumerate()
        .rev()
        .filter(|(_, e)| shows(e))
        .take(height)
        .collect();
    rows.reverse();
    rows
}

/// A scroll in lines from the newest, for a pane that shows the newest last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scrollback(usize);

impl Scrollback {
    /// Scrolls by `delta` lines: towards the newest when positive.
    pub fn scroll_by(&mut self, delta: isize) {
        self.0 = self.0.saturating_add_signed(-delta);
    }

    /// Back to the newest lines.
    pub fn scroll_to_newest(&mut self) {
        self.0 = 0;
    }

    /// Lines to leave out after the newest, of `len`, in a pane `height` lines high: the
    /// scroll, but never so far that the pane is not full.
    pub fn skipped(self, len: usize, height: usize) -> usize {
        self.0.min(len.saturating_sub(height))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Sequenced for u64 {
        fn seq(&self) -> u64 {
            *self
        }
    }

    #[test]
    fn cursor_steps_over_hidden_entries_and_follows_past_the_end() {
        let shown = [0, 2, 3];
        assert_eq!(step(&shown, None, -1), Some(2));
        assert_eq!(step(&shown, Some(2), -1), Some(0));
        assert_eq!(step(&shown, Some(0), -5), Some(0));
        assert_eq!(step(&shown, Some(2), 1), None);
        assert_eq!(step(&[], None, -1), None);
        let entries: VecDeque<u64> = (0..4).collect();
        let mut cursor = Cursor::default();
        cursor.step(&entries, |seq| *seq != 1, -2);
        assert_eq!(cursor.selected(), Some(0));
    }

    #[test]
    fn cursor_shows_the_last_entry_before_a_time_or_the_oldest() {
        let entries: VecDeque<u64> = (10..20).collect();
        let mut cursor = Cursor::default();
        cursor.show_until(&entries, |seq| *seq <= 14);
        assert_eq!(cursor.selected(), Some(14));
        assert_eq!(cursor.index(&entries), Some(4));
        cursor.show_until(&entries, |_| false);
        assert_eq!(cursor.selected(), Some(10));
        assert_eq!(index_of(&entries, 9), None);
    }

    #[test]
    fn window_is_bottom_anchored_and_filtered() {
        let entries: VecDeque<u32> = (0..10).collect();
        let rows = window(&entries, None, 3, |v| v % 2 == 0);
        assert_eq!(rows, vec![(4, &4), (6, &6), (8, &8)]);
        let rows = window(&entries, Some(5), 2, |_| true);
        assert_eq!(rows, vec![(4, &4), (5, &5)]);
        assert!(window(&entries, Some(99), 0, |_| true).is_empty());
    }

    #[test]
    fn scrollback_keeps_the_pane_full() {
        let mut scroll = Scrollback::default();
        scroll.scroll_by(-30);
        assert_eq!(scroll.skipped(100, 10), 30);
        assert_eq!(scroll.skipped(35, 10), 25);
        scroll.scroll_by(isize::MAX / 2);
        assert_eq!(scroll.skipped(100, 10), 0);
        scroll.scroll_by(-3);
        scroll.scroll_to_newest();
        assert_eq!(scroll, Scrollback::default());
    }
}
