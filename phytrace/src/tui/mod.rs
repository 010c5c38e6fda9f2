//! `phytrace tui`: live or replayed events in a terminal UI.
//!
//! The [`source`] yields events (kernel or capture file), [`app::App::ingest`] applies them to
//! the model, [`update`] turns keys into state changes and [`ui`] draws the state. The event loop
//! below is the only place with I/O; it redraws at most every [`FRAME`] and only when something
//! changed, and sleeps while nothing happens.

pub mod app;
pub mod console;
pub mod filter;
mod input;
pub mod rate;
mod save;
pub mod source;
mod terminal;
pub mod ui;
pub mod update;

use std::time::Duration;

use anyhow::Result;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::{Position, Rect};
use tokio::time::Instant;

use app::App;
use source::Source;
use update::Action;

/// Shortest time between two frames (at most 20 frames per second).
const FRAME: Duration = Duration::from_millis(50);

/// How often the events/s figure is refreshed while nothing else happens.
const TICK: Duration = Duration::from_secs(1);

/// Runs the TUI on the terminal until the user quits. The terminal is restored on return,
/// error or panic.
pub async fn run(app: &mut App, source: &mut Source) -> Result<()> {
    let mut guard = terminal::TerminalGuard::enter()?;
    let inputs = input::spawn();
    event_loop(guard.terminal(), app, source, inputs).await
}

async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    source: &mut Source,
    mut inputs: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<input::TermEvent>>,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let started = Instant::now();
    let mut next_frame = started;
    let mut batch = Vec::new();
    app.set_source_status(source.status());
    while !app.quit {
        if app.dirty && Instant::now() >= next_frame {
            if app.repaint {
                // Clears the screen and forgets what it drew: the next frame writes every cell.
                // (`Terminal::clear` would ask the terminal where its cursor is, and the reply
                // would go to the input thread.)
                let size = terminal.size()?;
                terminal.resize(Rect::from((Position::ORIGIN, size)))?;
                app.repaint = false;
            }
            terminal.draw(|frame| ui::draw(frame, app))?;
            app.dirty = false;
            next_frame = Instant::now() + FRAME;
        }
        tokio::select! {
            input = inputs.recv() => match input {
                Some(event) => {
                    if let Some(action) = update::on_terminal_event(app, &event?) {
                        perform(app, source, action, started.elapsed())?;
                    }
                    app.set_source_status(source.status());
                }
                None => break,
            },
            result = source.next_events(&mut batch) => {
                result?;
                app.ingest(batch.drain(..), started.elapsed());
                app.set_source_status(source.status());
            }
            () = tokio::time::sleep_until(next_frame), if app.dirty => {}
            () = tokio::time::sleep(TICK), if !app.dirty => app.tick(started.elapsed()),
        }
    }
    Ok(())
}

/// Does what a key asked of the source or the disk.
fn perform(app: &mut App, source: &mut Source, action: Action, now: Duration) -> Result<()> {
    match action {
        Action::Pause(paused) => source.set_paused(paused),
        Action::Step => {
            let mut one = Vec::with_capacity(1);
            source.step(&mut one);
            if one.is_empty() {
                app.message = Some("no event to step to".to_owned());
            }
            app.follow_newest();
            app.ingest(one, now);
        }
        Action::Speed(factor) => match source.scale_speed(factor) {
            Some(speed) => app.message = Some(format!("speed ×{speed}")),
            None => app.message = Some("live: the speed is the kernel's".to_owned()),
        },
        Action::Seek(target) => {
            if let Source::Replay(replay) = source {
                if replay.is_past(target) {
                    replay.rewind()?;
                    app.reset();
                }
                replay.seek(target, |event| app.ingest(std::iter::once(event), now));
                // Stay at the chosen time; space resumes from there.
                app.paused = true;
                replay.set_paused(true);
            }
            app.show_time(target);
        }
        Action::Repaint => app.repaint = true,
        Action::Save(path) => {
            app.message = Some(match save::save_window(&path, app) {
                Ok(n) => format!("saved {n} events to {}", path.display()),
                Err(err) => format!("save failed: {err}"),
            });
        }
    }
    app.dirty = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::tui::source::ReplaySource;
    use crate::tui::ui::theme::Theme;

    const CAPTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/rust-plug-unplug.ptrace"
    );

    fn paused_replay() -> (App, Source) {
        let replay = ReplaySource::open(Path::new(CAPTURE), 1.0, true).unwrap();
        let start = replay.header().clock.mono_ns;
        let app = App::new(replay.header().clone(), start, 1_000, Theme::mono());
        (app, Source::Replay(Box::new(replay)))
    }

    #[test]
    fn step_seek_forward_and_back_and_speed() {
        let (mut app, mut source) = paused_replay();
        let now = Duration::ZERO;
        perform(&mut app, &mut source, Action::Step, now).unwrap();
        perform(&mut app, &mut source, Action::Step, now).unwrap();
        assert_eq!(app.log.len(), 2);
        let target = app.start_ns + 9_000_000_000;
        perform(&mut app, &mut source, Action::Seek(target), now).unwrap();
        let forward = app.log.len();
        assert!(forward > 2);
        assert!(app.log.iter().all(|e| e.event.ts_ns <= target));
        assert_eq!(app.panes.log.selected(), app.log.back().map(|e| e.seq));
        let back = app.start_ns + 7_000_000_000;
        perform(&mut app, &mut source, Action::Seek(back), now).unwrap();
        assert!(app.log.len() < forward);
        assert_eq!(app.log.front().map(|e| e.seq), Some(0));
        perform(&mut app, &mut source, Action::Speed(2.0), now).unwrap();
        assert_eq!(source.status().speed, 2.0);
    }

    #[test]
    fn save_action_reports_in_the_status_line() {
        let (mut app, mut source) = paused_replay();
        perform(&mut app, &mut source, Action::Step, Duration::ZERO).unwrap();
        let path = std::env::temp_dir().join(format!("phytrace-tui-{}.ptrace", std::process::id()));
        perform(
            &mut app,
            &mut source,
            Action::Save(path.clone()),
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(
            app.message.as_deref(),
            Some(format!("saved 1 events to {}", path.display()).as_str())
        );
        std::fs::remove_file(&path).unwrap();
        let bad = Path::new("/nonexistent/dir/x.ptrace").to_owned();
        perform(&mut app, &mut source, Action::Save(bad), Duration::ZERO).unwrap();
        assert!(
            app.message
                .as_deref()
                .is_some_and(|m| m.starts_with("save failed"))
        );
    }
}
