//! The kernel's log lines of the session, newest last, beside the callbacks.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::list::Scrollback;
use super::{pane_block, short_time};
use crate::event::KmsgLevel;
use crate::render;
use crate::tui::app::{App, Pane};

/// The kernel's lines and how far back they are scrolled.
#[derive(Debug, Default)]
pub struct KmsgPane {
    scroll: Scrollback,
}

impl KmsgPane {
    /// Scrolls by `delta` lines, towards the newest when positive.
    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll.scroll_by(delta);
    }

    /// Draws the messages: `32.406 err  asix 1-1:1.0 eth0: Failed to enable software MII
    /// access`, errors and worse marked bad. Without any, what the session takes of the log.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let theme = app.theme;
        let title = format!(" Kernel messages {} ", app.kmsgs.len());
        let block = pane_block(app, Pane::Kmsg, title);
        let height = usize::from(area.height.saturating_sub(2));
        let back = self.scroll.skipped(app.kmsgs.len(), height);
        let mut lines: Vec<Line> = app
            .kmsgs
            .iter()
            .rev()
            .skip(back)
            .take(height)
            .map(|m| {
                let style = if m.level.is_some_and(|l| l <= 3) {
                    theme.bad()
                } else {
                    theme.dim()
                };
                Line::from(vec![
                    Span::styled(format!("{:>7} ", short_time(app, m.ts_ns)), theme.dim()),
                    Span::styled(format!("{:<6} ", KmsgLevel::name(m.level)), style),
                    Span::raw(render::printable(&m.text)),
                ])
            })
            .collect();
        lines.reverse();
        if lines.is_empty() {
            let note = match &app.header.kmsg {
                None => "none: the capture was made without them".to_owned(),
                Some(kmsg) => kmsg.note().unwrap_or_else(|| "none yet".to_owned()),
            };
            lines.push(Line::styled(note, theme.dim()));
        }
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}
