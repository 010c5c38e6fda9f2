//! MDIO accesses per second of the selected PHY over time: a sparkline on the time axis of the
//! link/state strip, from the statistics' one-second windows (every access taken in). A column
//! narrower than a window shows its window's rate; a wider one, the busiest window in it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use super::axis::Axis;
use super::pane_block;
use crate::stats::WINDOW_NS;
use crate::tui::app::{App, Pane};

/// Draws the sparkline, its scale and the ticks.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let key = app.selected_key().unwrap_or("");
    let Some(mdio) = app.selected_stats().map(|p| &p.mdio) else {
        frame.render_widget(pane_block(app, Pane::Mdio, format!(" MDIO/s {key} ")), area);
        return;
    };
    let (mean, peak, _) = mdio.rate(app.stats.windows_until(app.stats.last_ns));
    let block = pane_block(
        app,
        Pane::Mdio,
        format!(" MDIO/s {key}: mean {mean:.1}, peak {peak} (1 s windows) "),
    );
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let axis = Axis::new(app, inner.width);
    let bars: Vec<u64> = (0..axis.columns)
        .map(|c| {
            let (start, end) = axis.column(c);
            let first = start / WINDOW_NS;
            let last = end.saturating_sub(1).max(start) / WINDOW_NS;
            mdio.windows.max_in(first..=last)
        })
        .collect();
    let theme = app.theme;
    let chart_height = inner.height.saturating_sub(1).max(1);
    let scale = |row: u16| match row {
        0 => format!("{peak}/s"),
        r if r + 1 == chart_height => "0/s".to_owned(),
        _ => String::new(),
    };
    let labels: Vec<Line> = (0..chart_height)
        .map(|r| {
            Line::from(Span::styled(
                format!(
                    "{:>w$} ",
                    scale(r),
                    w = usize::from(axis.label_width.saturating_sub(1))
                ),
                theme.dim(),
            ))
        })
        .collect();
    let label_area = Rect {
        width: axis.label_width,
        height: chart_height,
        ..inner
    };
    frame.render_widget(Paragraph::new(labels), label_area);
    let chart_area = Rect {
        x: inner.x + axis.label_width,
        width: axis.columns,
        height: chart_height,
        ..inner
    };
    frame.render_widget(
        Sparkline::default()
            .data(bars)
            .max(peak.max(1))
            .style(theme.name()),
        chart_area,
    );
    if inner.height > 1 {
        let ticks_area = Rect {
            y: inner.y + chart_height,
            height: 1,
            ..chart_area
        };
        frame.render_widget(
            Paragraph::new(Span::styled(axis.ticks(), theme.dim())),
            ticks_area,
        );
    }
}
