//! Streaming writer of capture files: header first, events as they arrive, trailer on close.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use phytrace_common::RawKind;

use super::dictionary::{Definition, Interner};
use super::emit::write_event;
use super::format::{Encoding, Header, KindCounts, MetaRecord, ProbeKey, Trailer, intern};
use super::frame::{self, Tag};
use crate::event::{Callback, Event, EventKind, LossCounts};

/// When buffered records are pushed to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushPolicy {
    /// Flush after this many events.
    pub max_events: u64,
    /// Flush when the oldest unflushed event is this old (checked every 64 events written and
    /// by [`Writer::flush_if_due`]).
    pub max_delay: Duration,
}

impl Default for FlushPolicy {
    /// 1024 events or 100 ms, whichever comes first.
    fn default() -> Self {
        Self {
            max_events: 1024,
            max_delay: Duration::from_millis(100),
        }
    }
}

/// A write to the capture file failed (disk full, file removed, …). What was written before
/// stays readable.
#[derive(Debug, thiserror::Error)]
#[error("cannot write capture file {}: {source}", path.display())]
pub struct WriteError {
    /// The capture file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

/// Bytes buffered before they are written out, whatever the flush policy says.
const BUFFER_SIZE: usize = 64 * 1024;

/// Writes one capture file, in the header's [`Encoding`]. Records are whole lines (or frames);
/// an event is in the file once flushed.
///
/// Dropping the writer without [`Writer::finish`] flushes what it can but writes no trailer:
/// readers then report "capture not closed cleanly".
#[derive(Debug)]
pub struct Writer<W: Write = File> {
    out: W,
    path: PathBuf,
    encoding: Encoding,
    /// Whole records not written out yet: each is encoded straight into it.
    buffer: Vec<u8>,
    ids: Interner,
    definitions: Vec<Definition>,
    counts: KindCounts,
    events: u64,
    lost: u64,
    lost_by_cause: LossCounts,
    unflushed: u64,
    oldest_unflushed: Option<Instant>,
    policy: FlushPolicy,
    failed: Option<(io::ErrorKind, String)>,
}

impl Writer<File> {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<Self, WriteError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| WriteError {
            path: path.to_owned(),
            source,
        })?;
        Self::new(file, path, header)
    }
}

impl<W: Write> Writer<W> {
    /// Writes the header to `out`; `path` names it in errors.
    pub fn new(out: W, path: impl Into<PathBuf>, header: &Header) -> Result<Self, WriteError> {
        let mut writer = Self {
            out,
            path: path.into(),
            // The header is a line whatever the encoding: `head -n 1` shows it.
            encoding: Encoding::Jsonl,
            buffer: Vec::with_capacity(2 * BUFFER_SIZE),
            ids: Interner::new(&header.phy_states),
            definitions: Vec::new(),
            counts: KindCounts::default(),
            events: 0,
            lost: 0,
            lost_by_cause: LossCounts::default(),
            unflushed: 0,
            oldest_unflushed: None,
            policy: FlushPolicy::default(),
            failed: None,
        };
        writer.write_meta(&MetaRecord::Header(header.clone()))?;
        writer.encoding = header.encoding;
        writer.flush()?;
        Ok(writer)
    }

    /// Replaces the flush policy.
    pub fn with_policy(mut self, policy: FlushPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// How records are stored.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Names the callback ring-buffer records carry as `key` (binary captures): written before
    /// the first record that uses it.
    pub fn define_probe(&mut self, key: u64, callback: &Callback) -> Result<(), WriteError> {
        let callback = callback.clone();
        self.write_meta(&MetaRecord::Probe(ProbeKey { key, callback }))
    }

    /// Appends a ring-buffer record of `kind` as the kernel wrote it (binary captures): an
    /// event, or the identity of a PHY or bus that later ones refer to.
    pub fn write_ring(&mut self, kind: RawKind, record: &[u8]) -> Result<(), WriteError> {
        self.check()?;
        debug_assert_eq!(self.encoding, Encoding::Binary);
        frame::put(&mut self.buffer, Tag::Ring, record);
        if self.counts.count_raw(kind) {
            self.events += 1;
        }
        self.end_record()?;
        self.written()
    }

    /// Appends one event; flushes if the policy says so.
    pub fn write(&mut self, event: &Event) -> Result<(), WriteError> {
        self.check()?;
        let mut definitions = std::mem::take(&mut self.definitions);
        let (phy, cb) = intern(event, &mut self.ids, &mut definitions);
        for def in definitions.drain(..) {
            self.write_meta(&MetaRecord::from(def))?;
        }
        self.definitions = definitions;
        let start = self.start_record();
        if let Err(e) = write_event(event, phy, cb, &mut self.buffer) {
            self.buffer.truncate(start);
            return Err(self.fail(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        self.end_json(start)?;
        self.counts.count(&event.kind);
        self.events += 1;
        if let EventKind::Lost { count, cause } = event.kind {
            self.lost = self.lost.saturating_add(count);
            self.lost_by_cause.add(cause, count);
        }
        self.written()
    }

    /// Counts a record written; flushes if the policy says so.
    fn written(&mut self) -> Result<(), WriteError> {
        self.unflushed += 1;
        // Reading the clock costs as much as encoding an event: look at it once per flush and
        // then every 64 events.
        let oldest = *self.oldest_unflushed.get_or_insert_with(Instant::now);
        if self.unflushed >= self.policy.max_events
            || (self.unflushed.is_multiple_of(64) && oldest.elapsed() >= self.policy.max_delay)
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes if events have waited longer than the policy allows; call it from an idle loop
    /// so that a quiet trace still reaches the file. Returns whether it flushed.
    pub fn flush_if_due(&mut self) -> Result<bool, WriteError> {
        match self.oldest_unflushed {
            Some(t) if t.elapsed() >= self.policy.max_delay => self.flush().map(|()| true),
            _ => Ok(false),
        }
    }

    /// Pushes every buffered record to the file.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.check()?;
        self.write_out()?;
        self.out.flush().map_err(|e| self.fail(e))?;
        self.unflushed = 0;
        self.oldest_unflushed = None;
        Ok(())
    }

    /// Writes the trailer (`end_ns`: monotonic-clock time now, `discarded`: ring-buffer
    /// records the tracer could not read) and flushes. Returns the trailer written.
    pub fn finish(mut self, end_ns: u64, discarded: u64) -> Result<Trailer, WriteError> {
        let trailer = Trailer {
            end_ns,
            events: self.events,
            counts: self.counts.clone(),
            lost: self.lost,
            lost_by_cause: std::mem::take(&mut self.lost_by_cause),
            discarded,
        };
        self.write_meta(&MetaRecord::Trailer(trailer.clone()))?;
        self.flush()?;
        Ok(trailer)
    }

    fn write_meta(&mut self, record: &MetaRecord) -> Result<(), WriteError> {
        self.check()?;
        let start = self.start_record();
        if let Err(e) = serde_json::to_writer(&mut self.buffer, record) {
            self.buffer.truncate(start);
            return Err(self.fail(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        self.end_json(start)
    }

    /// Starts a JSON record: in a binary capture, room for its frame header. Returns where it
    /// starts.
    fn start_record(&mut self) -> usize {
        let start = self.buffer.len();
        if self.encoding == Encoding::Binary {
            frame::open(&mut self.buffer, Tag::Json);
        }
        start
    }

    /// Ends the JSON record started at `start`: its newline, or its frame's length.
    fn end_json(&mut self, start: usize) -> Result<(), WriteError> {
        match self.encoding {
            Encoding::Jsonl => self.buffer.push(b'\n'),
            Encoding::Binary => frame::close(&mut self.buffer, start),
        }
        self.end_record()
    }

    /// Ends a record; writes the buffer out once it is full.
    fn end_record(&mut self) -> Result<(), WriteError> {
        if self.buffer.len() >= BUFFER_SIZE {
            self.write_out()?;
        }
        Ok(())
    }

    /// Writes the buffered records to `out`.
    fn write_out(&mut self) -> Result<(), WriteError> {
        let result = self.out.write_all(&self.buffer);
        self.buffer.clear();
        result.map_err(|e| self.fail(e))
    }

    /// After a failure the file may end in a partial record: refuse to append more.
    fn check(&self) -> Result<(), WriteError> {
        match &self.failed {
            None => Ok(()),
            Some((kind, msg)) => Err(WriteError {
                path: self.path.clone(),
                source: io::Error::new(*kind, format!("an earlier write failed: {msg}")),
            }),
        }
    }

    fn fail(&mut self, source: io::Error) -> WriteError {
        self.failed = Some((source.kind(), source.to_string()));
        WriteError {
            path: self.path.clone(),
            source,
        }
    }
}

impl<W: Write> Drop for Writer<W> {
    /// Writes out what is buffered, as far as the file takes it (no trailer).
    fn drop(&mut self) {
        if self.failed.is_none() {
            let _ = self.out.write_all(&self.buffer);
            let _ = self.out.flush();
        }
    }
}
