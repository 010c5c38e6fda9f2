//! `phytrace tui`: live or replayed events in a terminal UI.
//!
//! The [`source`] yields events (kernel or capture file), [`app::App::ingest`] applies them to
//! the model, [`update`] turns keys into state changes and [`ui`] draws the state. The event loop
//! below is the only place with I/O; it redraws at most every [`FRAME`] and only when something
//! changed, and sleeps while nothing happens.

pub mod app;
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
use tokio::time::Instant;

use app::App;
use source::Source;
use update::Action;

/// Shortest time between two frames (at most 20 frames per second).
pub const FRAME: Duration = Duration::from_millis(50);

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
pub fn perform(app: &mut App, source: &mut Source, action: Action, now: Duration) -> Result<()> {
    match action {
        Action::Pause(paused) => source.set_paused(paused),
        Action::Step => {
            let mut one = Vec::with_capacity(1);
            source.step(&mut one);
            if one.is_empty() {
                app.message = Some("no event to step to".to_owned());
            }
            app.ingest(one, now);
        }
        Action::Speed(factor) => match source.scale_speed(factor) {
            Some(speed) => app.message = Some(format!("speed ×{speed}")),
            None => app.message = Some("live: the speed is the kernel's".to_owned()),
        },
        Action::Seek(target) => {
            if let Source::Replay(replay) = source {
                let mut pending = Vec::new();
                let rewound = replay.seek(target, |event| pending.push(event))?;
                if rewound {
                    app.reset();
                }
                app.ingest(pending, now);
            }
            update::show_time(app, target);
        }
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
