//! Latency percentiles of the selected PHY's callbacks, one row each: completed calls, errors,
//! lost returns, min/p50/p90/p99/max (from the statistics' HDR histograms, every completed
//! call taken in). Narrow panes drop min, p90, lost and errors, in that order. ↑/↓ choose the
//! callback the histogram shows (`▶`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::phy_pane_frame;
use crate::render;
use crate::stats::{CallbackCollector, PhyCollector, Summary};
use crate::tui::app::{App, Pane};

/// A column after the callback name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    Calls,
    Errors,
    Lost,
    Min,
    P50,
    P90,
    P99,
    Max,
}

/// Columns in display order.
const COLUMNS: [Column; 8] = [
    Column::Calls,
    Column::Errors,
    Column::Lost,
    Column::Min,
    Column::P50,
    Column::P90,
    Column::P99,
    Column::Max,
];

/// Columns dropped first when the pane is narrow.
const DROP_ORDER: [Column; 4] = [Column::Min, Column::P90, Column::Lost, Column::Errors];

/// Callback names (with the `▶ ` marker) get at least this many columns before others are
/// dropped: `▶ read_status`.
const MIN_NAME: usize = 13;

impl Column {
    fn head(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Errors => "err",
            Self::Lost => "lost",
            Self::Min => "min",
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
            Self::Max => "max",
        }
    }

    fn width(self) -> usize {
        match self {
            Self::Calls => 5,
            Self::Errors => 4,
            Self::Lost => 5,
            _ => 8,
        }
    }

    fn cell(self, c: &CallbackCollector, s: &Summary) -> String {
        let latency = |ns| {
            if s.count == 0 {
                "-".to_owned()
            } else {
                render::duration(ns)
            }
        };
        match self {
            Self::Calls => s.count.to_string(),
            Self::Errors => c.errors.values().sum::<u64>().to_string(),
            Self::Lost => c.lost.values().sum::<u64>().to_string(),
            Self::Min => latency(s.min_ns),
            Self::P50 => latency(s.p50_ns),
            Self::P90 => latency(s.p90_ns),
            Self::P99 => latency(s.p99_ns),
            Self::Max => latency(s.max_ns),
        }
    }
}

/// The columns that fit `width` with a name column of at least [`MIN_NAME`].
fn fitting(width: usize) -> Vec<Column> {
    let mut columns = COLUMNS.to_vec();
    for drop in DROP_ORDER {
        let used: usize = columns.iter().map(|c| c.width()).sum();
        if used + MIN_NAME <= width {
            break;
        }
        columns.retain(|c| *c != drop);
    }
    columns
}

/// The latency table and the callback chosen in it, the one the histogram shows.
#[derive(Debug, Default)]
pub struct LatencyPane {
    /// Name of the callback chosen (`None`: the first one of the selected PHY).
    chosen: Option<String>,
}

impl LatencyPane {
    /// Name and statistics of the selected callback of `phy`: the chosen one if `phy` has it,
    /// else its first.
    pub fn selected<'a>(&self, phy: &'a PhyCollector) -> Option<(&'a str, &'a CallbackCollector)> {
        self.chosen
            .as_deref()
            .and_then(|name| phy.callbacks.get_key_value(name))
            .or_else(|| phy.callbacks.iter().next())
            .map(|(name, c)| (name.as_str(), c))
    }

    /// Moves the choice by `delta` callbacks of `phy`.
    pub fn select_by(&mut self, phy: &PhyCollector, delta: isize) {
        let names: Vec<&String> = phy.callbacks.keys().collect();
        let Some(last) = names.len().checked_sub(1) else {
            return;
        };
        let current = self
            .selected(phy)
            .and_then(|(name, _)| names.iter().position(|n| n.as_str() == name))
            .unwrap_or(0);
        let next = current.saturating_add_signed(delta).min(last);
        self.chosen = Some(names[next].clone());
    }

    /// Draws the table.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let inner = phy_pane_frame(frame, app, Pane::Latency, "Latencies", area);
        let Some(phy) = app.selected_stats() else {
            return;
        };
        let theme = app.theme;
        let width = usize::from(inner.width);
        let columns = fitting(width);
        let name_width = width
            .saturating_sub(columns.iter().map(|c| c.width()).sum())
            .max(1);
        let mut head = format!("{:<name_width$}", "  callback");
        for c in &columns {
            head.push_str(&format!("{:>w$}", c.head(), w = c.width()));
        }
        let mut lines = vec![Line::from(Span::styled(head, theme.dim()))];
        let chosen = self.selected(phy).map(|(name, _)| name);
        let rows = usize::from(inner.height.saturating_sub(1)).max(1);
        let at = phy
            .callbacks
            .keys()
            .position(|name| Some(name.as_str()) == chosen)
            .unwrap_or(0);
        for (name, cb) in phy
            .callbacks
            .iter()
            .skip(at.saturating_sub(rows - 1))
            .take(rows)
        {
            let selected = Some(name.as_str()) == chosen;
            let marker = if selected { "▶ " } else { "  " };
            let shown: String = format!("{marker}{name}").chars().take(name_width).collect();
            let summary = cb.latencies.summary();
            let mut spans = vec![Span::styled(format!("{shown:<name_width$}"), theme.name())];
            for c in &columns {
                let text = format!("{:>w$}", c.cell(cb, &summary), w = c.width());
                let bad = matches!(c, Column::Errors | Column::Lost) && text.trim() != "0";
                spans.push(if bad {
                    Span::styled(text, theme.bad())
                } else {
                    Span::raw(text)
                });
            }
            let line = Line::from(spans);
            lines.push(if selected {
                line.style(theme.selected())
            } else {
                line
            });
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_tables_drop_min_then_p90() {
        assert_eq!(fitting(200).len(), 8);
        let narrow = fitting(46);
        assert!(!narrow.contains(&Column::Min) && !narrow.contains(&Column::P90));
        assert!(narrow.contains(&Column::P99) && narrow.contains(&Column::Errors));
        assert_eq!(
            fitting(10),
            [Column::Calls, Column::P50, Column::P99, Column::Max]
        );
    }
}
