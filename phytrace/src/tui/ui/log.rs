//! The event log, as `phytrace dump` prints it, through the filter, with search matches
//! marked.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::list::{Cursor, window};
use super::pane_block;
use crate::render;
use crate::tui::app::{App, LogEntry, Pane};
use crate::tui::filter::Filter;

/// The event log and its cursor.
#[derive(Debug, Default)]
pub struct LogPane {
    cursor: Cursor,
}

impl LogPane {
    /// Sequence number of the event the cursor stays on; `None` while following the newest.
    pub fn selected(&self) -> Option<u64> {
        self.cursor.selected()
    }

    /// Follows the newest event.
    pub fn follow(&mut self) {
        self.cursor.select(None);
    }

    /// Moves by `delta` events that `filter` shows; past the newest it follows again.
    pub fn move_by(&mut self, log: &VecDeque<LogEntry>, filter: &Filter, delta: isize) {
        self.cursor.step(log, |e| filter.matches(&e.event), delta);
    }

    /// Stays on the last event at or before `ts_ns` (the oldest if none is).
    pub fn show_time(&mut self, log: &VecDeque<LogEntry>, ts_ns: u64) {
        self.cursor.show_until(log, |e| e.event.ts_ns <= ts_ns);
    }

    /// Moves to the previous (`older`) or next event that `matches`; `false` if there is none.
    pub fn find(
        &mut self,
        log: &VecDeque<LogEntry>,
        matches: impl Fn(&LogEntry) -> bool,
        older: bool,
    ) -> bool {
        let start = self.cursor.index(log);
        let found = if older {
            let end = start.unwrap_or(log.len());
            (0..end).rev().find(|i| matches(&log[*i]))
        } else {
            let begin = start.map_or(log.len(), |i| i + 1);
            (begin..log.len()).find(|i| matches(&log[*i]))
        };
        if let Some(i) = found {
            self.cursor.select(Some(log[i].seq));
        }
        found.is_some()
    }

    /// Moves to the nearest event that `matches` looking from the one after the cursor towards
    /// older events (the cursor's own event first unless it is the newest held; every event
    /// while following); without a match, the cursor is left one event on.
    pub fn find_here(
        &mut self,
        log: &VecDeque<LogEntry>,
        matches: impl Fn(&LogEntry) -> bool,
    ) -> bool {
        self.cursor
            .select(self.cursor.selected().map(|seq| seq + 1));
        self.find(log, matches, true)
    }

    /// Draws the log, bottom-anchored at the cursor (or the newest event).
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let theme = app.theme;
        let mut title = vec![Span::raw(format!(" Events {} ", app.log.len()))];
        if !app.filter.is_empty() {
            title.push(Span::styled(
                format!("[f: {}] ", app.filter.text()),
                theme.name(),
            ));
        }
        if let Some(search) = &app.search {
            title.push(Span::styled(format!("[/{search}] "), theme.matched()));
        }
        let block = pane_block(app, Pane::Log, Line::from(title));
        let height = usize::from(area.height.saturating_sub(2));
        let end = self.cursor.index(&app.log);
        let rows = window(&app.log, end, height, |e| app.filter.matches(&e.event));
        let lines: Vec<Line> = rows
            .into_iter()
            .map(|(_, entry)| {
                let text = render::event_line(&entry.event, &entry.applied, app.start_ns);
                // Times below 1000 s leave three columns of padding: give them to the text.
                let text = text.strip_prefix("   ").map_or(text.clone(), str::to_owned);
                let matched = app
                    .search
                    .as_ref()
                    .is_some_and(|s| text.to_lowercase().contains(s.as_str()));
                let cursor = self.cursor.selected() == Some(entry.seq);
                let text = match (matched, theme.color) {
                    (true, false) => format!("»{}", text.get(1..).unwrap_or_default()),
                    _ => text,
                };
                let line = Line::from(text);
                match (cursor, matched) {
                    (true, _) => line.style(theme.selected()),
                    (false, true) => line.style(theme.matched()),
                    (false, false) => line,
                }
            })
            .collect();
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}
