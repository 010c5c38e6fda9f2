//! The event log, as `phytrace dump` prints it, through the filter, with search matches
//! marked.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane_block;
use crate::render;
use crate::tui::app::{App, Pane, window};

/// Draws the log, bottom-anchored at the cursor (or the newest event).
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
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
    let end = app.log_cursor.and_then(|seq| app.log_index(seq));
    let rows = window(&app.log, end, height, |e| app.log_shows(e));
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
            let cursor = app.log_cursor == Some(entry.seq);
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
