//! The time axis the link/state strip and the MDIO sparkline share: the same columns for every
//! PHY, from the whole second before the first link, state or MDIO access seen to the latest
//! event, after a label column of the same width in both panes. Times are since the origin
//! (the start of the capture or session), as everywhere else.

use crate::stats::{Collector, WINDOW_NS};
use crate::tui::app::App;

/// Columns of a pane's inner width given to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis {
    /// Width of the label column before the first time column.
    pub label_width: u16,
    /// Time columns.
    pub columns: u16,
    /// First time shown, ns since the origin (a whole second).
    pub start_ns: u64,
    /// Time covered from `start_ns` (at least 1 ns).
    pub span_ns: u64,
}

/// Width of the row names after a PHY key: `state `.
const ROW_NAME: u16 = 6;

/// Time columns kept at least, narrowing the labels if needed.
const MIN_COLUMNS: u16 = 8;

/// Columns between two tick labels, at least.
const TICK_EVERY: u16 = 12;

impl Axis {
    /// The axis of a pane `width` columns wide inside its border, for the PHYs of `app`.
    pub fn new(app: &App, width: u16) -> Self {
        let longest = app.phy_keys().map(|k| k.chars().count()).max().unwrap_or(0);
        let wanted = u16::try_from(longest)
            .unwrap_or(u16::MAX)
            .saturating_add(2 + ROW_NAME);
        let label_width = wanted.min(width.saturating_sub(MIN_COLUMNS));
        let end_ns = app.stats.last_ns.saturating_sub(app.stats.origin_ns);
        let start_ns = first_seen(&app.stats).min(end_ns) / WINDOW_NS * WINDOW_NS;
        Self {
            label_width,
            columns: width.saturating_sub(label_width),
            start_ns,
            span_ns: end_ns.saturating_sub(start_ns).max(1),
        }
    }

    /// The end of the axis, ns since the origin.
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.span_ns)
    }

    /// The time column `c` covers: `[start, end)` ns since the origin.
    pub fn column(&self, c: u16) -> (u64, u64) {
        let at = |c: u16| {
            let ns = u128::from(self.span_ns) * u128::from(c) / u128::from(self.columns.max(1));
            self.start_ns
                .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
        };
        (at(c), at(c.saturating_add(1)))
    }

    /// The tick line: `|0s         |4.1s        |8.2s`, `columns` wide; each `|` is the column
    /// whose start is the time after it.
    pub fn ticks(&self) -> String {
        let columns = usize::from(self.columns);
        let mut line = String::with_capacity(columns);
        let mut used = 0;
        let mut c = 0u16;
        while usize::from(c) < columns {
            let label = format!("|{}", seconds(self.column(c).0, self.span_ns));
            let width = label.chars().count();
            if used + width > columns {
                break;
            }
            line.push_str(&label);
            used += width;
            let next =
                c.saturating_add(TICK_EVERY.max(u16::try_from(width + 1).unwrap_or(u16::MAX)));
            let pad = usize::from(next - c)
                .saturating_sub(width)
                .min(columns - used);
            line.extend(std::iter::repeat_n(' ', pad));
            used += pad;
            c = next;
        }
        line
    }

    /// For each column, the value that covers most of it among `spans` (`(start, duration,
    /// value)`, ns since the origin), `None` where none does.
    pub fn dominant<T: Copy + PartialEq>(
        &self,
        spans: impl IntoIterator<Item = (u64, u64, T)>,
    ) -> Vec<Option<T>> {
        let mut cover: Vec<Vec<(T, u64)>> = vec![Vec::new(); usize::from(self.columns)];
        for (start, duration, value) in spans {
            let end = start.saturating_add(duration);
            let first = self.column_of(start);
            let last = self.column_of(end.saturating_sub(1).max(start));
            for c in first..=last {
                let (from, to) = self.column(c);
                let overlap = end.min(to).saturating_sub(start.max(from));
                let Some(slot) = cover.get_mut(usize::from(c)) else {
                    break;
                };
                if overlap == 0 {
                    continue;
                }
                match slot.iter_mut().find(|(v, _)| *v == value) {
                    Some((_, ns)) => *ns += overlap,
                    None => slot.push((value, overlap)),
                }
            }
        }
        cover
            .into_iter()
            .map(|slot| {
                slot.into_iter()
                    .fold(None, |best: Option<(T, u64)>, (v, ns)| match best {
                        Some((_, top)) if top >= ns => best,
                        _ => Some((v, ns)),
                    })
                    .map(|(v, _)| v)
            })
            .collect()
    }

    /// The column holding `offset_ns` (the first one before the start, the last one for the
    /// end and beyond).
    fn column_of(&self, offset_ns: u64) -> u16 {
        let from_start = offset_ns.saturating_sub(self.start_ns);
        let c = u128::from(from_start) * u128::from(self.columns) / u128::from(self.span_ns);
        u16::try_from(c)
            .unwrap_or(u16::MAX)
            .min(self.columns.saturating_sub(1))
    }
}

/// The earliest link change, state or MDIO window of any PHY, ns since the origin (the end when
/// nothing was seen).
fn first_seen(stats: &Collector) -> u64 {
    stats
        .phys
        .values()
        .flat_map(|p| {
            let window = p.mdio.windows.nonempty().next();
            [
                p.link.first_seen_ns(),
                window.map(|(w, _)| w.saturating_mul(WINDOW_NS)),
            ]
        })
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
}

/// `4.1s` (tenths below 100 s, whole seconds above).
fn seconds(ns: u64, span_ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if span_ns < 100_000_000_000 {
        format!("{s:.1}s")
    } else {
        format!("{s:.0}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(columns: u16, span_ns: u64) -> Axis {
        Axis {
            label_width: 0,
            columns,
            start_ns: 0,
            span_ns,
        }
    }

    #[test]
    fn columns_split_the_span() {
        let a = axis(4, 100);
        assert_eq!(a.column(0), (0, 25));
        assert_eq!(a.column(3), (75, 100));
        assert_eq!(a.column_of(100), 3);
        let later = Axis {
            start_ns: 1_000,
            ..a
        };
        assert_eq!(later.column(0), (1_000, 1_025));
        assert_eq!(later.column_of(10), 0);
        assert_eq!(later.end_ns(), 1_100);
    }

    #[test]
    fn the_longest_cover_wins_each_column() {
        let a = axis(4, 100);
        let got = a.dominant([(0, 30, 'a'), (30, 40, 'b'), (70, 30, 'c')]);
        assert_eq!(got, [Some('a'), Some('b'), Some('b'), Some('c')]);
        assert_eq!(
            a.dominant([(50, 50, 'x')]),
            [None, None, Some('x'), Some('x')]
        );
    }

    #[test]
    fn ticks_fit_the_width() {
        let t = axis(30, 15_000_000_000).ticks();
        assert_eq!(t, "|0.0s       |6.0s       |12.0s");
        assert!(axis(3, 1).ticks().chars().count() <= 3);
    }
}
