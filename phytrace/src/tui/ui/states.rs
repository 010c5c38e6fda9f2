//! The `phy_state` history of the selected PHY, newest last.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::list::Scrollback;
use super::{pane_block, short_time};
use crate::tui::app::{App, Pane};

/// The `phy_state` history of the selected PHY and how far back it is scrolled.
#[derive(Debug, Default)]
pub struct StatesPane {
    scroll: Scrollback,
}

impl StatesPane {
    /// Scrolls by `delta` entries, towards the newest when positive.
    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll.scroll_by(delta);
    }

    /// Back to the newest entries.
    pub fn scroll_to_newest(&mut self) {
        self.scroll.scroll_to_newest();
    }

    /// Draws the history: `8.869432 UP→RUNNING link_change_notify`.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let block = pane_block(app, Pane::States, " phy_state ");
        let Some(phy) = app.selected_key().and_then(|k| app.model.phy(k)) else {
            frame.render_widget(block, area);
            return;
        };
        let height = usize::from(area.height.saturating_sub(2));
        let history = &phy.state_history;
        let back = self.scroll.skipped(history.len(), height);
        let theme = app.theme;
        let lines: Vec<Line> = history
            .iter()
            .rev()
            .skip(back)
            .take(height)
            .map(|t| {
                let from = t.from.as_ref().map_or("?", |s| s.name.as_ref());
                let style = if matches!(t.to.name.as_ref(), "NOLINK" | "ERROR" | "HALTED") {
                    theme.bad()
                } else {
                    theme.good()
                };
                Line::from(vec![
                    Span::styled(format!("{:>7} ", short_time(app, t.ts_ns)), theme.dim()),
                    Span::raw(format!("{from}→")),
                    Span::styled(t.to.name.to_string(), style),
                    Span::styled(
                        format!(" {}", t.during.as_deref().unwrap_or("phylib")),
                        theme.dim(),
                    ),
                ])
            })
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}
