//! Keys and terminal events → state changes; what needs the source or the disk is returned as
//! an [`Action`] for the event loop.

use std::path::PathBuf;

use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};

use super::app::{App, Cursor, Mode, Pane, PromptKind, View};
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
                app.log_cursor = None;
                app.call_cursor = None;
            }
            return Some(Action::Pause(app.paused));
        }
        KeyCode::Char('n') if app.search.is_some() => search_next(app, false),
        KeyCode::Char('N') if app.search.is_some() => search_next(app, true),
        KeyCode::Char('n' | '.') if app.paused => return Some(Action::Step),
        KeyCode::Char('+' | '=') => return Some(Action::Speed(2.0)),
        KeyCode::Char('-') => return Some(Action::Speed(0.5)),
        KeyCode::Tab => app.focus = app.focus.cycle(app.view, true),
        KeyCode::BackTab => app.focus = app.focus.cycle(app.view, false),
        KeyCode::Char('s') => toggle_view(app),
        KeyCode::Left | KeyCode::Char('h') => select_phy(app, -1),
        KeyCode::Right | KeyCode::Char('l') => select_phy(app, 1),
        KeyCode::Up | KeyCode::Char('k') => move_in_pane(app, -1),
        KeyCode::Down | KeyCode::Char('j') => move_in_pane(app, 1),
        KeyCode::PageUp => move_in_pane(app, -(PAGE as isize)),
        KeyCode::PageDown => move_in_pane(app, PAGE as isize),
        KeyCode::Home => move_in_pane(app, isize::MIN / 2),
        KeyCode::End | KeyCode::Char('G') => move_in_pane(app, isize::MAX / 2),
        KeyCode::Char('z') | KeyCode::Enter => app.zoom = !app.zoom,
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
                app.log_cursor = app.log_cursor.map(|c| c + 1);
                search_next(app, true);
            }
        }
        PromptKind::Filter => match Filter::parse(&text) {
            Ok(filter) => {
                app.filter = filter;
                app.log_cursor = None;
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

/// Points the log and the timeline at the last entries at or before `ts_ns`.
pub fn show_time(app: &mut App, ts_ns: u64) {
    let log_end = app.log.partition_point(|e| e.event.ts_ns <= ts_ns);
    app.log_cursor = log_end
        .checked_sub(1)
        .map(|i| app.log[i].seq)
        .or(app.log.front().map(|e| e.seq));
    let call_end = app.calls.partition_point(|c| c.call.exit_ns <= ts_ns);
    app.call_cursor = call_end
        .checked_sub(1)
        .map(|i| app.calls[i].seq)
        .or(app.calls.front().map(|c| c.seq));
    app.dirty = true;
}

/// Switches between the trace panes and the stats panes; focus goes to the first pane.
fn toggle_view(app: &mut App) {
    app.view = match app.view {
        View::Trace => View::Stats,
        View::Stats => View::Trace,
    };
    app.focus = Pane::of(app.view)[0];
}

/// Moves the callback selection of the stats view by `delta` callbacks of the selected PHY.
fn select_callback(app: &mut App, delta: isize) {
    let Some(phy) = app.selected_stats() else {
        return;
    };
    let names: Vec<&String> = phy.callbacks.keys().collect();
    let Some(last) = names.len().checked_sub(1) else {
        return;
    };
    let current = app
        .selected_callback_stats()
        .and_then(|(name, _)| names.iter().position(|n| n.as_str() == name))
        .unwrap_or(0);
    let next = current.saturating_add_signed(delta).min(last);
    app.selected_callback = Some(names[next].clone());
}

fn select_phy(app: &mut App, delta: isize) {
    let keys: Vec<&String> = app.phy_keys().collect();
    if keys.is_empty() {
        return;
    }
    let current = app
        .selected_key()
        .and_then(|k| keys.iter().position(|x| *x == k))
        .unwrap_or(0);
    let next = current.saturating_add_signed(delta).min(keys.len() - 1);
    app.selected = Some(keys[next].clone());
    app.call_cursor = None;
    app.reg_scroll = 0;
    app.state_scroll = 0;
}

fn move_in_pane(app: &mut App, delta: isize) {
    match app.focus {
        Pane::Phys | Pane::Figures | Pane::Links | Pane::Mdio => {
            select_phy(app, delta.clamp(-1_000, 1_000))
        }
        Pane::Latency | Pane::Histogram => select_callback(app, delta.clamp(-1_000, 1_000)),
        Pane::Registers => {
            app.reg_scroll = app
                .reg_scroll
                .saturating_add_signed(delta.clamp(-1_000, 1_000) as i16)
        }
        Pane::States => {
            app.state_scroll = app.state_scroll.saturating_add_signed(-delta);
        }
        Pane::Kmsg => {
            app.kmsg_scroll = app.kmsg_scroll.saturating_add_signed(-delta);
        }
        Pane::Log => {
            let cursor = app.log_cursor;
            app.log_cursor = step_cursor(
                &app.log
                    .iter()
                    .map(|e| (e.seq, app.log_shows(e)))
                    .collect::<Vec<_>>(),
                cursor,
                delta,
            );
        }
        Pane::Timeline => {
            let cursor = app.call_cursor;
            app.call_cursor = step_cursor(
                &app.calls
                    .iter()
                    .map(|c| (c.seq, app.timeline_shows(c)))
                    .collect::<Vec<_>>(),
                cursor,
                delta,
            );
        }
    }
}

/// Moves a cursor by `delta` shown entries of `entries` (`(seq, shown)`, oldest first); past the
/// newest it follows again.
fn step_cursor(entries: &[(u64, bool)], cursor: Cursor, delta: isize) -> Cursor {
    let shown: Vec<u64> = entries.iter().filter(|e| e.1).map(|e| e.0).collect();
    let last = shown.len().checked_sub(1)?;
    let at = match cursor {
        Some(seq) => shown.partition_point(|s| *s <= seq).saturating_sub(1),
        None => last,
    };
    let to = at.saturating_add_signed(delta);
    (to < last).then(|| shown[to])
}

/// Moves the log cursor to the previous (older) or next match of the search.
fn search_next(app: &mut App, older: bool) {
    let Some(needle) = app.search.clone() else {
        return;
    };
    let start = app.log_cursor.and_then(|c| app.log_index(c));
    let matches = |i: &usize| {
        let e = &app.log[*i];
        app.log_shows(e)
            && render::event_line(&e.event, &e.applied, app.start_ns)
                .to_lowercase()
                .contains(&needle)
    };
    let found = if older {
        let end = start.unwrap_or(app.log.len());
        (0..end).rev().find(matches)
    } else {
        let begin = start.map_or(app.log.len(), |i| i + 1);
        (begin..app.log.len()).find(matches)
    };
    match found {
        Some(i) => app.log_cursor = Some(app.log[i].seq),
        None => app.message = Some(format!("search: no more matches for `{needle}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_steps_over_hidden_entries_and_follows_past_the_end() {
        let e = [(0, true), (1, false), (2, true), (3, true)];
        assert_eq!(step_cursor(&e, None, -1), Some(2));
        assert_eq!(step_cursor(&e, Some(2), -1), Some(0));
        assert_eq!(step_cursor(&e, Some(0), -5), Some(0));
        assert_eq!(step_cursor(&e, Some(2), 1), None);
        assert_eq!(step_cursor(&[], None, -1), None);
    }

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
        assert_eq!(app.selected_callback, None, "no PHY yet: nothing to choose");
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("8.5s"), Some(8.5));
        assert_eq!(parse_seconds("12"), Some(12.0));
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("x"), None);
    }
}
