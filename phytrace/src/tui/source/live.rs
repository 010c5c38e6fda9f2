//! Live events from the kernel, held back while the view is paused.

use std::collections::VecDeque;

use anyhow::Result;

use super::SourceStatus;
use crate::capture::Header;
use crate::event::Event;
use crate::event::Guarantee;
use crate::session::Tracer;

/// The running tracer and the events held while paused.
pub struct LiveSource {
    tracer: Tracer,
    header: Header,
    paused: bool,
    held: VecDeque<Event>,
    hold_cap: usize,
    delivered: u64,
}

impl LiveSource {
    /// Wraps a started tracer; at most `hold_cap` events are held while paused (older ones are
    /// delivered anyway, so memory stays bounded).
    pub fn new(tracer: Tracer, header: Header, hold_cap: usize) -> Self {
        Self {
            tracer,
            header,
            paused: false,
            held: VecDeque::new(),
            hold_cap: hold_cap.max(1),
            delivered: 0,
        }
    }

    /// Header describing the session (for saving events).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Appends held events at once when running, else waits for the tracer (≤ 200 ms).
    pub async fn next_events(&mut self, out: &mut Vec<Event>) -> Result<()> {
        if self.paused || self.held.is_empty() {
            let held = &mut self.held;
            self.tracer
                .next_events(&mut |event| held.push_back(event))
                .await?;
        }
        let keep = if self.paused { self.hold_cap } else { 0 };
        let release = self.held.len().saturating_sub(keep);
        self.delivered += release as u64;
        out.extend(self.held.drain(..release));
        Ok(())
    }

    /// Pauses or resumes.
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// Appends the oldest held event.
    pub fn step(&mut self, out: &mut Vec<Event>) {
        if let Some(event) = self.held.pop_front() {
            self.delivered += 1;
            out.push(event);
        }
    }

    /// State for the status line.
    pub fn status(&self) -> SourceStatus {
        SourceStatus {
            live: true,
            paused: self.paused,
            waiting_for: self.tracer.waiting_for(),
            late_attach: self
                .tracer
                .arming()
                .into_iter()
                .filter(|a| a.guarantee == Guarantee::AfterLoad)
                .map(|a| a.module)
                .collect(),
            held: self.held.len(),
            speed: 1.0,
            delivered: self.delivered,
            ..SourceStatus::default()
        }
    }
}
