//! The `?` overlay: every key.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use crate::tui::app::App;

/// Keys and what they do.
const KEYS: &[(&str, &str)] = &[
    ("?  F1", "this help (any key closes it)"),
    ("q  Ctrl-C", "quit"),
    ("Ctrl-L", "draw the screen anew"),
    (
        "space",
        "pause / follow (live events are held while paused)",
    ),
    ("n  .", "paused: one event forward"),
    ("+  -", "replay faster / slower"),
    ("Tab S-Tab", "next / previous pane"),
    ("s", "stats view: percentiles, figures, link/state, MDIO/s"),
    ("←→  h l", "previous / next PHY"),
    ("↑↓  j k", "move in the pane (PHYs, log, callbacks, scroll)"),
    ("PgUp PgDn", "move by a page"),
    ("Home End G", "oldest / newest (End follows again)"),
    ("z  Enter", "zoom the focused pane"),
    (
        "o",
        "fold runs of like MDIO accesses into one line / unfold",
    ),
    ("/", "search the log; n N next / previous match; Esc clears"),
    (
        "f",
        "filter the log: mdio cb enter exit session err reg:BMSR phy:0:02 cb:NAME",
    ),
    ("g", "go to a time (seconds, as shown); replay seeks there"),
    ("w", "save the held events to a capture file"),
];

/// Draws the overlay centred on `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let width = area.width.min(76);
    let height = area.height.min(KEYS.len() as u16 + 4);
    let [_, row, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, popup, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width),
        Constraint::Fill(1),
    ])
    .areas(row);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(format!("{key:>12}  "), app.theme.name()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        "   Changed register bits are highlighted (* without colours).",
        app.theme.dim(),
    )));
    let block = Block::bordered()
        .title(" phytrace tui — keys ")
        .border_style(app.theme.focused());
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        popup,
    );
}
