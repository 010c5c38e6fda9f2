//! Capture files: a versioned stream of [`Event`]s, as JSON Lines or binary (ring-buffer
//! records decoded when read), that can be replayed through the same model as a live trace.
//! The format is described in `docs/capture-format.md`.

pub mod dictionary;
mod emit;
pub mod format;
mod frame;
pub mod limits;
pub mod reader;
mod timeline;
pub mod writer;

use std::path::Path;

pub use format::{Encoding, FORMAT_NAME, FORMAT_VERSION, Header, KindCounts, Trailer};
pub use reader::{MAX_RECORD_BYTES, OpenError, Problem, ReadIssue, Reader};
pub use timeline::{END_SLACK_NS, MAX_HELD};
pub use writer::{FlushPolicy, WriteError, Writer};

use crate::event::Event;

/// A whole capture in memory, for tests and small files ([`Reader`] streams).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// The header.
    pub header: Header,
    /// Every event read.
    pub events: Vec<Event>,
    /// The trailer, if the capture was closed cleanly.
    pub trailer: Option<Trailer>,
    /// Damage found.
    pub issues: Vec<ReadIssue>,
}

impl Capture {
    /// Where its time starts: the earliest event, or the header's clock if that is earlier.
    pub fn origin_ns(&self) -> u64 {
        let mono_ns = self.header.clock.mono_ns;
        self.events
            .iter()
            .map(|e| e.ts_ns)
            .min()
            .map_or(mono_ns, |first| first.min(mono_ns))
    }

    /// Reads `path` completely.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Ok(Self::collect(Reader::open(path)?))
    }

    /// Reads what `reader` has left.
    pub fn collect<R: std::io::BufRead>(mut reader: Reader<R>) -> Self {
        let mut events = Vec::new();
        let mut issues = Vec::new();
        for item in reader.by_ref() {
            match item {
                Ok(event) => events.push(event),
                Err(issue) => issues.push(issue),
            }
        }
        Self {
            header: reader.header().clone(),
            events,
            trailer: reader.trailer().cloned(),
            issues,
        }
    }
}

#[cfg(test)]
mod tests;
