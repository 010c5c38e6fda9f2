//! Link and `phy_state` of every PHY over time, on one time axis: a `link` row (`█` up, `▁`
//! down) and a `state` row (one letter per state, named in the legend) per PHY, each column
//! showing what covered most of its time. From the statistics' link intervals and state
//! periods, so it covers every event taken in, not only the held ones.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::axis::Axis;
use super::pane_block;
use super::theme::Theme;
use crate::tui::app::{App, Pane};

/// Letters of the kernel's `phy_state` names; others show as `?`.
const STATE_LETTERS: &[(&str, char)] = &[
    ("DOWN", 'D'),
    ("READY", 'Y'),
    ("HALTED", 'H'),
    ("ERROR", 'E'),
    ("UP", 'U'),
    ("RUNNING", 'R'),
    ("NOLINK", 'N'),
    ("CABLETEST", 'C'),
];

/// Link up and down in the `link` row.
const UP: char = '█';
const DOWN: char = '▁';

/// Draws the strip.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let block = pane_block(app, Pane::Links, " Link & phy_state over time ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let axis = Axis::new(app, inner.width);
    let end = axis.end_ns();
    let theme = app.theme;
    let selected = app.selected_key();
    let keys: Vec<&String> = app.phy_keys().collect();
    // Two rows per PHY, then the ticks and the legend; PHYs scroll to keep the selected one.
    let fit = usize::from(inner.height.saturating_sub(2) / 2).max(1);
    let at = keys
        .iter()
        .position(|k| Some(k.as_str()) == selected)
        .unwrap_or(0);
    let first = at.saturating_sub(fit - 1);
    let mut seen: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    for key in keys.iter().skip(first).take(fit) {
        let is_selected = Some(key.as_str()) == selected;
        let history = app.stats.phys.get(key.as_str()).map(|p| &p.link);
        let link = history.map_or_else(Vec::new, |h| {
            axis.dominant(
                h.intervals_until(end)
                    .into_iter()
                    .map(|i| (i.start_ns, i.duration_ns, i.up)),
            )
        });
        let states = history.map_or_else(Vec::new, |h| {
            axis.dominant(
                h.periods_until(end)
                    .map(|p| (p.start_ns, p.duration_ns, p.state)),
            )
        });
        for state in states.iter().flatten() {
            if !seen.iter().any(|s| s == state) {
                seen.push((*state).to_owned());
            }
        }
        let marker = if is_selected { "▶" } else { " " };
        let name_style = if is_selected {
            theme.selected()
        } else {
            theme.name()
        };
        let mut row = vec![label(&axis, format!("{marker}{key} link "), name_style)];
        row.extend(runs(&link, |up| match up {
            Some(true) => (UP, theme.good()),
            Some(false) => (DOWN, theme.bad()),
            None => (' ', Style::new()),
        }));
        lines.push(Line::from(row));
        let blank = " ".repeat(key.chars().count() + 1);
        let mut row = vec![label(&axis, format!("{blank}state"), theme.dim())];
        row.extend(runs(&states, |state| match state {
            Some(name) => (letter(name), state_style(theme, name)),
            None => (' ', Style::new()),
        }));
        lines.push(Line::from(row));
    }
    lines.push(Line::from(vec![
        label(&axis, String::new(), Style::new()),
        Span::styled(axis.ticks(), theme.dim()),
    ]));
    lines.push(legend(theme, &seen));
    frame.render_widget(Paragraph::new(lines), inner);
}

/// `text` cut or padded to the label column.
fn label(axis: &Axis, text: String, style: Style) -> Span<'static> {
    let width = usize::from(axis.label_width);
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    let pad = width.saturating_sub(cut.chars().count());
    cut.extend(std::iter::repeat_n(' ', pad));
    Span::styled(cut, style)
}

/// One span per run of equal characters and styles.
fn runs<T: Copy>(
    columns: &[Option<T>],
    look: impl Fn(Option<T>) -> (char, Style),
) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    let mut run_style = None;
    for &c in columns {
        let (ch, style) = look(c);
        if run_style != Some(style) && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                run_style.unwrap_or_default(),
            ));
        }
        run_style = Some(style);
        run.push(ch);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, run_style.unwrap_or_default()));
    }
    spans
}

/// The letter of a state in the strip.
fn letter(state: &str) -> char {
    STATE_LETTERS
        .iter()
        .find(|(name, _)| *name == state)
        .map_or('?', |(_, l)| *l)
}

fn state_style(theme: Theme, state: &str) -> Style {
    match state {
        "NOLINK" | "ERROR" | "HALTED" => theme.bad(),
        "RUNNING" => theme.good(),
        _ => Style::new(),
    }
}

/// `█ up ▁ down  R RUNNING N NOLINK` for the states shown.
fn legend(theme: Theme, states: &[String]) -> Line<'static> {
    let mut text = format!("{UP} up {DOWN} down ");
    for state in states {
        text.push_str(&format!(" {} {state}", letter(state)));
    }
    Line::from(Span::styled(text, theme.dim()))
}
