//! Replay of a capture file, paced by the events' timestamps at an adjustable speed.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use tokio::time::Instant;

use super::{SPEED_RANGE, SourceStatus};
use crate::capture::{Header, Reader};
use crate::event::{Event, Guarantee};

/// Most events delivered at once, so that input stays responsive at high speed.
const MAX_BATCH: usize = 4096;
/// Longest wait between two events; longer idle gaps of the capture are shortened to this.
const MAX_GAP: Duration = Duration::from_secs(2);

/// A capture file being replayed.
pub struct ReplaySource {
    path: PathBuf,
    reader: Reader<BufReader<File>>,
    next: Option<Event>,
    speed: f64,
    paused: bool,
    /// Wall time at which the replay clock read `anchor.1`.
    anchor: (Instant, u64),
    position_ns: Option<u64>,
    delivered: u64,
    issues: u64,
}

impl ReplaySource {
    /// Opens `path` for replay at `speed` (clamped to [`SPEED_RANGE`]).
    pub fn open(path: &Path, speed: f64, paused: bool) -> Result<Self> {
        let reader = Reader::open(path)?;
        let mut source = Self {
            path: path.to_owned(),
            reader,
            next: None,
            speed: speed.clamp(SPEED_RANGE.0, SPEED_RANGE.1),
            paused,
            anchor: (Instant::now(), 0),
            position_ns: None,
            delivered: 0,
            issues: 0,
        };
        source.next = source.read_next();
        source.anchor.1 = source.next.as_ref().map_or(0, |e| e.ts_ns);
        Ok(source)
    }

    /// The capture's header.
    pub fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The next readable event; damaged records are counted and skipped.
    fn read_next(&mut self) -> Option<Event> {
        for item in self.reader.by_ref() {
            match item {
                Ok(event) => return Some(event),
                Err(_) => self.issues += 1,
            }
        }
        None
    }

    fn advance(&mut self, out: &mut Vec<Event>) {
        if let Some(event) = self.next.take() {
            self.position_ns = Some(event.ts_ns);
            self.delivered += 1;
            out.push(event);
            self.next = self.read_next();
        }
    }

    /// When the event stamped `ts_ns` is due, with idle gaps capped at [`MAX_GAP`]; `true`
    /// when capped.
    fn due(&self, ts_ns: u64) -> (Instant, bool) {
        let gap = ts_ns.saturating_sub(self.anchor.1) as f64 / self.speed;
        let gap = Duration::from_nanos(gap as u64);
        (self.anchor.0 + gap.min(MAX_GAP), gap > MAX_GAP)
    }

    /// Waits until the next event is due, then appends every due event (at most
    /// [`MAX_BATCH`]). Cancel-safe: nothing changes before the wait ends.
    pub async fn next_events(&mut self, out: &mut Vec<Event>) {
        let (due, capped) = match &self.next {
            Some(next) if !self.paused => self.due(next.ts_ns),
            _ => return std::future::pending().await,
        };
        tokio::time::sleep_until(due).await;
        if capped {
            // A shortened gap: restart the clock at the event that ends it.
            self.anchor = (Instant::now(), self.next.as_ref().map_or(0, |e| e.ts_ns));
        }
        let now = Instant::now();
        let mut batch = 0;
        while batch < MAX_BATCH
            && let Some(next) = &self.next
            && self.due(next.ts_ns).0 <= now
        {
            self.advance(out);
            batch += 1;
        }
    }

    /// Pauses or resumes; resuming continues from the last event delivered.
    pub fn set_paused(&mut self, paused: bool) {
        if self.paused && !paused {
            self.reanchor();
        }
        self.paused = paused;
    }

    fn reanchor(&mut self) {
        let at = self
            .position_ns
            .or(self.next.as_ref().map(|e| e.ts_ns))
            .unwrap_or(0);
        self.anchor = (Instant::now(), at);
    }

    /// Appends the next event, whatever its time.
    pub fn step(&mut self, out: &mut Vec<Event>) {
        self.advance(out);
        self.reanchor();
    }

    /// Multiplies the speed by `factor` (clamped); returns the new speed.
    pub fn scale_speed(&mut self, factor: f64) -> f64 {
        self.speed = (self.speed * factor).clamp(SPEED_RANGE.0, SPEED_RANGE.1);
        self.reanchor();
        self.speed
    }

    /// True when reaching `target_ns` needs a [`rewind`](Self::rewind) first.
    pub fn is_past(&self, target_ns: u64) -> bool {
        self.position_ns.is_some_and(|p| target_ns < p)
    }

    /// Starts again from the first event (the file is reopened).
    pub fn rewind(&mut self) -> Result<()> {
        *self = Self::open(&self.path.clone(), self.speed, self.paused)?;
        Ok(())
    }

    /// Moves the replay forward to `target_ns`: every event up to it goes to `deliver`, one
    /// at a time (memory stays bounded however far the target is).
    pub fn seek(&mut self, target_ns: u64, mut deliver: impl FnMut(Event)) {
        let mut one = Vec::with_capacity(1);
        while self.next.as_ref().is_some_and(|e| e.ts_ns <= target_ns) {
            self.advance(&mut one);
            one.drain(..).for_each(&mut deliver);
        }
        self.position_ns = Some(target_ns.max(self.position_ns.unwrap_or(0)));
        self.reanchor();
    }

    /// State for the status line.
    pub fn status(&self) -> SourceStatus {
        SourceStatus {
            live: false,
            paused: self.paused,
            speed: self.speed,
            position_ns: self.position_ns,
            delivered: self.delivered,
            done: self.next.is_none(),
            issues: self.issues,
            late_attach: self
                .header()
                .arming
                .iter()
                .filter(|a| a.guarantee != Guarantee::FirstCallback)
                .map(|a| a.module.clone())
                .collect(),
            ..SourceStatus::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/rust-plug-unplug.ptrace"
    );

    #[test]
    fn step_and_seek_back_and_forth() {
        let mut replay = ReplaySource::open(Path::new(CAPTURE), 1.0, true).unwrap();
        let mut out = Vec::new();
        replay.step(&mut out);
        replay.step(&mut out);
        assert_eq!(out.len(), 2);
        let second = out[1].ts_ns;
        let mut n = 0;
        assert!(!replay.is_past(second + 2_000_000_000));
        replay.seek(second + 2_000_000_000, |_| n += 1);
        assert!(n > 0);
        let mut again = Vec::new();
        assert!(replay.is_past(second));
        replay.rewind().unwrap();
        replay.seek(second, |e| again.push(e));
        assert_eq!(again, out);
        assert_eq!(replay.status().position_ns, Some(second));
    }

    #[tokio::test]
    async fn fast_replay_reaches_the_end() {
        let mut replay = ReplaySource::open(Path::new(CAPTURE), 4096.0, false).unwrap();
        let mut out = Vec::new();
        while !replay.status().done {
            replay.next_events(&mut out).await;
        }
        assert_eq!(out.len() as u64, replay.status().delivered);
        assert!(out.len() > 100);
        assert_eq!(replay.status().issues, 0);
    }
}
