//! Keys and terminal events → state changes; what needs the source or the disk is returned as
//! an [`Action`] for the event loop.

use std::path::PathBuf;

use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};

use super::app::{App, LogEntry, Mode, Pane, PromptKind, View};
use super::filter::Filter;
use crate::render;

/// Lines moved by PgUp/PgDn.
const PAGE: usize = 10;

/// What the event loop must do for a key.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Pause or resume the source.
    Pause(bool),
    /// Deliver one event.
    Step,
    /// Multiply the replay speed.
    Speed(f64),
    /// Move a replay, or the view, to this time (`ts_ns`).
    Seek(u64),
    /// Write the held events to this file.
    Save(PathBuf),
    /// Clear the screen and draw it whole (something else may have written on it).
    Repaint,
}

/// Handles a terminal event.
pub fn on_terminal_event(app: &mut App, event: &TermEvent) -> Option<Action> {
    match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => on_key(app, key),
        TermEvent::Resize(..) => {
            app.dirty = true;
            Some(Action::Repaint)
        }
        _ => None,
    }
}

/// Handles a key press.
pub fn on_key(app: &mut App, key: &KeyEvent) -> Option<Action> {
    app.dirty = true;
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        app.quit = true;
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('l') {
        return Some(Action::Repaint);
    }
    match &mut app.mode {
        Mode::Help => {
            app.mode = Mode::Normal;
            if key.code == KeyCode::Char('q') {
                app.quit = true;
            }
            None
        }
        Mode::Prompt(kind, input) => {
            let kind = *kind;
            match key.code {
                KeyCode::Esc => app.mode = Mode::Normal,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) => input.push(c),
                KeyCode::Enter => {
                    let text = input.trim().to_owned();
                    app.mode = Mode::Normal;
                    return submit(app, kind, text);
                }
                _ => {}
            }
            None
        }
        Mode::Normal => normal_key(app, key),
    }
}

fn prompt(app: &mut App, kind: PromptKind, initial: String) {
    app.mode = Mode::Prompt(kind, initial);
}

fn normal_key(app: &mut App, key: &KeyEvent) -> Option<Action> {
    app.message = None;
    match key.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Char('?') | KeyCode::F(1) => app.mode = Mode::Help,
        KeyCode::Char(' ') => {
            app.paused = !app.paused;
            if !app.paused {
                app.follow_newest();
            }
            return Some(Action::Pause(app.paused));
        }
        KeyCode::Char('n') if app.search.is_some() => search(app, Search::Newer),
        KeyCode::Char('N') if app.search.is_some() => search(app, Search::Older),
        KeyCode::Char('n' | '.') if app.paused => return Some(Action::Step),
        KeyCode::Char('+' | '=') => return Some(Action::Speed(2.0)),
        KeyCode::Char('-') => return Some(Action::Speed(0.5)),
        KeyCode::Tab => app.focus = app.focus.cycle(app.view, true),
        KeyCode::BackTab => app.focus = app.focus.cycle(app.view, false),
        KeyCode::Char('s') => toggle_view(app),
        KeyCode::Left | KeyCode::Char('h') => app.select_phy(-1),
        KeyCode::Right | KeyCode::Char('l') => app.select_phy(1),
        KeyCode::Up | KeyCode::Char('k') => app.move_in_focus(-1),
        KeyCode::Down | KeyCode::Char('j') => app.move_in_focus(1),
        KeyCode::PageUp => app.move_in_focus(-(PAGE as isize)),
        KeyCode::PageDown => app.move_in_focus(PAGE as isize),
        KeyCode::Home => app.move_in_focus(isize::MIN / 2),
        KeyCode::End | KeyCode::Char('G') => app.move_in_focus(isize::MAX / 2),
        KeyCode::Char('z') | KeyCode::Enter => app.zoom = !app.zoom,
        KeyCode::Char('o') => app.panes.log.toggle_folded(),
        KeyCode::Char('/') => prompt(app, PromptKind::Search, String::new()),
        KeyCode::Char('f') => {
            let text = app.filter.text().to_owned();
            prompt(app, PromptKind::Filter, text);
        }
        KeyCode::Char('g') => prompt(app, PromptKind::Goto, String::new()),
        KeyCode::Char('w') => {
            let name = format!("phytrace-window-{}.ptrace", app.log.len());
            prompt(app, PromptKind::Save, name);
        }
        KeyCode::Esc => {
            app.search = None;
            app.zoom = false;
        }
        _ => app.dirty = false,
    }
    None
}

fn submit(app: &mut App, kind: PromptKind, text: String) -> Option<Action> {
    match kind {
        PromptKind::Search => {
            app.search = (!text.is_empty()).then(|| text.to_lowercase());
            if app.search.is_some() {
                app.view = View::Trace;
                app.focus = Pane::Log;
                search(app, Search::Here);
            }
        }
        PromptKind::Filter => match Filter::parse(&text) {
            Ok(filter) => {
                app.filter = filter;
                app.panes.log.follow();
            }
            Err(err) => app.message = Some(err.to_string()),
        },
        PromptKind::Goto => match parse_seconds(&text) {
            Some(secs) => {
                let target = app.start_ns.saturating_add((secs * 1e9) as u64);
                return Some(Action::Seek(target));
            }
            None => app.message = Some(format!("go to: `{text}` is not a time in seconds")),
        },
        PromptKind::Save if !text.is_empty() => return Some(Action::Save(PathBuf::from(text))),
        PromptKind::Save => {}
    }
    None
}

/// `8.87`, `8.87s`, `12` → seconds.
fn parse_seconds(text: &str) -> Option<f64> {
    let secs: f64 = text.trim_end_matches('s').trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then_some(secs)
}

/// Switches between the trace panes and the stats panes; focus goes to the first pane.
fn toggle_view(app: &mut App) {
    app.view = match app.view {
        View::Trace => View::Stats,
        View::Stats => View::Trace,
    };
    app.focus = Pane::of(app.view)[0];
}

/// Where a search looks from the log cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    /// The event the cursor stays on and older ones
    /// ([`find_here`](super::ui::LogPane::find_here)).
    Here,
    /// Events before the cursor.
    Older,
    /// Events after the cursor.
    Newer,
}

/// Moves the log cursor to a match of the search: a shown event whose line holds the text.
fn search(app: &mut App, from: Search) {
    let Some(needle) = app.search.clone() else {
        return;
    };
    let (log, filter, start_ns) = (&app.log, &app.filter, app.start_ns);
    let matches = |e: &LogEntry| {
        filter.matches(&e.event)
            && render::event_line(&e.event, &e.applied, start_ns)
                .to_lowercase()
                .contains(&needle)
    };
    let found = match from {
        Search::Here => app.panes.log.find_here(log, matches),
        Search::Older => app.panes.log.find(log, matches, true),
        Search::Newer => app.panes.log.find(log, matches, false),
    };
    if !found {
        app.message = Some(format!("search: no more matches for `{needle}`"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_switches_views_and_a_search_shows_the_log() {
        use crate::synth::header;
        use crate::tui::ui::theme::Theme;
        let mut app = App::new(header(), 0, 10, Theme::mono());
        let press = |app: &mut App, code| {
            on_key(app, &KeyEvent::new(code, KeyModifiers::NONE));
        };
        press(&mut app, KeyCode::Char('s'));
        assert_eq!((app.view, app.focus), (View::Stats, Pane::Latency));
        press(&mut app, KeyCode::BackTab);
        assert_eq!(app.focus, Pane::Mdio);
        press(&mut app, KeyCode::Char('/'));
        for c in "bmsr".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        press(&mut app, KeyCode::Enter);
        assert_eq!((app.view, app.focus), (View::Trace, Pane::Log));
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Char('s'));
        press(&mut app, KeyCode::Down);
        assert!(
            app.selected_callback_stats().is_none(),
            "no PHY yet: nothing to choose"
        );
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("8.5s"), Some(8.5));
        assert_eq!(parse_seconds("12"), Some(12.0));
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("x"), None);
    }
}
