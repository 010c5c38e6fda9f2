//! Where the TUI's events come from: the live tracer or a capture file, behind one enum, so
//! everything after [`Source::next_events`] is the same code for both.

mod live;
mod replay;

use anyhow::Result;

pub use live::LiveSource;
pub use replay::ReplaySource;

use crate::capture::Header;
use crate::event::Event;

/// Slowest and fastest replay speeds `+`/`-` reach.
pub const SPEED_RANGE: (f64, f64) = (1.0 / 64.0, 4096.0);

/// What the status line shows about the source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceStatus {
    /// Live tracing (else a replay).
    pub live: bool,
    /// Paused: replay clock stopped, or live events held back.
    pub paused: bool,
    /// Modules asked for and not loaded yet.
    pub waiting_for: Vec<String>,
    /// Followed modules whose callbacks are attached only once they are seen loaded (their
    /// file was not found in advance): their first callbacks are missed.
    pub late_attach: Vec<String>,
    /// Live events held while paused.
    pub held: usize,
    /// Replay speed factor.
    pub speed: f64,
    /// Replay: timestamp of the last event delivered.
    pub position_ns: Option<u64>,
    /// Events delivered so far.
    pub delivered: u64,
    /// Replay: the capture has no more events.
    pub done: bool,
    /// Replay: damaged records skipped.
    pub issues: u64,
}

/// Live tracer or capture file.
pub enum Source {
    /// Kernel events as they happen.
    Live(Box<LiveSource>),
    /// Events of a capture file, paced by their timestamps.
    Replay(Box<ReplaySource>),
}

impl Source {
    /// Appends the next events; waits (cancel-safely) until there are some or, live, until the
    /// tracer's poll interval passes. Pending forever while a replay is paused or finished.
    pub async fn next_events(&mut self, out: &mut Vec<Event>) -> Result<()> {
        match self {
            Self::Live(live) => live.next_events(out).await,
            Self::Replay(replay) => {
                replay.next_events(out).await;
                Ok(())
            }
        }
    }

    /// Pauses or resumes.
    pub fn set_paused(&mut self, paused: bool) {
        match self {
            Self::Live(live) => live.set_paused(paused),
            Self::Replay(replay) => replay.set_paused(paused),
        }
    }

    /// Appends one event (held live event, or the next of the capture).
    pub fn step(&mut self, out: &mut Vec<Event>) {
        match self {
            Self::Live(live) => live.step(out),
            Self::Replay(replay) => replay.step(out),
        }
    }

    /// Multiplies the replay speed by `factor`; `None` when live.
    pub fn scale_speed(&mut self, factor: f64) -> Option<f64> {
        match self {
            Self::Live(_) => None,
            Self::Replay(replay) => Some(replay.scale_speed(factor)),
        }
    }

    /// Header describing the events (for saving them).
    pub fn header(&self) -> &Header {
        match self {
            Self::Live(live) => live.header(),
            Self::Replay(replay) => replay.header(),
        }
    }

    /// State for the status line.
    pub fn status(&self) -> SourceStatus {
        match self {
            Self::Live(live) => live.status(),
            Self::Replay(replay) => replay.status(),
        }
    }
}
