//! Latency histogram of the selected callback of the selected PHY: one row per bucket of equal
//! slices of the logarithm of the latency from the fastest call to the slowest (the statistics'
//! log buckets, every completed call taken in), a bar of `█` and the count; the rows holding
//! p50, p90 and p99 say so.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane_block;
use crate::render;
use crate::stats::PERCENTILES;
use crate::tui::app::{App, Pane};

/// Columns of the bucket bound: `≤ 562.3µs`.
const BOUND: usize = 10;

/// Draws the histogram.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let Some((name, cb)) = app.selected_callback_stats() else {
        frame.render_widget(pane_block(app, Pane::Histogram, " Histogram "), area);
        return;
    };
    let summary = cb.latencies.summary();
    let full = format!(" Histogram {name}: {} calls, log scale ", summary.count);
    let title = if full.chars().count() + 2 <= usize::from(area.width) {
        full
    } else {
        format!(" {name}: {} calls ", summary.count)
    };
    let block = pane_block(app, Pane::Histogram, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let buckets = cb.latencies.log_buckets(usize::from(inner.height));
    let most = buckets.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let percentiles = [summary.p50_ns, summary.p90_ns, summary.p99_ns];
    let count_width = summary.count.to_string().len();
    let marks_width = PERCENTILES.len() * 4;
    let bar_width = usize::from(inner.width)
        .saturating_sub(BOUND + 1 + count_width + 1 + marks_width)
        .max(1);
    let theme = app.theme;
    let mut below = 0;
    let lines: Vec<Line> = buckets
        .iter()
        .map(|&(bound, calls)| {
            let filled = if calls == 0 {
                0
            } else {
                usize::try_from(u128::from(calls) * bar_width as u128 / u128::from(most))
                    .unwrap_or(bar_width)
                    .max(1)
            };
            let marks: String = PERCENTILES
                .iter()
                .zip(percentiles)
                .filter(|(_, ns)| *ns > below && *ns <= bound)
                .map(|(p, _)| format!(" p{p}"))
                .collect();
            below = bound;
            Line::from(vec![
                Span::styled(
                    format!("{:>BOUND$} ", format!("≤{}", render::duration(bound))),
                    theme.dim(),
                ),
                Span::styled("█".repeat(filled), theme.name()),
                Span::raw(format!(
                    "{} {calls:>count_width$}",
                    " ".repeat(bar_width - filled)
                )),
                Span::styled(marks, theme.dim()),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
