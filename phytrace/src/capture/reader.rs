//! Streaming reader of capture files, in bounded memory, that never panics on bad input.
//!
//! Only an unreadable header is fatal ([`OpenError`]). Damage further on (a record cut by a
//! crash, a corrupt line, a missing trailer) comes out of the iterator as a [`ReadIssue`] with
//! its line number and byte offset, and reading goes on with the next line. In a binary
//! capture the records are numbered as lines are, and reading stops at a frame whose tag or
//! length is damaged: nothing after it can be framed. An event that cannot have happened (a
//! field out of the kernel's range, [`limits`](super::limits), or a time out of the capture's
//! span or of its CPU's order, [`Timeline`]) is an issue too, in its place.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::dictionary::{MAX_IDS, Tables};
use super::format::{
    EVENT_TYPE, Encoding, FORMAT_NAME, FORMAT_VERSION, Header, MetaRecord, Trailer, WireEvent,
};
use super::frame::{self, Frames, Tag};
use super::limits;
use super::timeline::Timeline;
use crate::event::Event;
use crate::records::{decode::Decoder, raw, states::PhyStates};

/// Longest record accepted; longer lines are skipped (and reported) without being buffered.
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// The file cannot be read as a capture at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Opening or reading the file failed.
    #[error("cannot read capture file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is empty.
    #[error("{}: empty file, not a phytrace capture", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Line 1 is not a capture header.
    #[error("{}: line 1 (byte 0): not a phytrace capture header: {reason}", path.display())]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file was written by a newer phytrace.
    #[error(
        "{}: capture format version {found} is newer than this phytrace reads ({FORMAT_VERSION})",
        path.display()
    )]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// Its format version.
        found: u32,
    },
}

/// Damage found while reading; the reader skips it and goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadIssue {
    /// Line number (1-based) where it was found.
    pub line: u64,
    /// Byte offset of the start of that line.
    pub offset: u64,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for ReadIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.offset, self.problem
        )
    }
}

impl std::error::Error for ReadIssue {}

/// The kinds of damage a [`ReadIssue`] reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The last line has no end: the writer was stopped in the middle of a record.
    #[error("truncated record (file ends inside it)")]
    Truncated,
    /// The line is not a valid record.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The line is longer than [`MAX_RECORD_BYTES`].
    #[error("record longer than {MAX_RECORD_BYTES} bytes")]
    TooLong,
    /// A valid record where it does not belong (a second header, an unknown type, …).
    #[error("unexpected record: {0}")]
    Unexpected(String),
    /// The file ends without a trailer.
    #[error("capture not closed cleanly (no trailer)")]
    NotClosed,
    /// The trailer's event count differs from the events read.
    #[error("trailer counts {expected} events but {read} were read")]
    CountMismatch {
        /// Events the trailer says were written.
        expected: u64,
        /// Events read.
        read: u64,
    },
    /// A well-formed event that cannot have happened: a field out of its range, a time out
    /// of the capture's span or of its CPU's order.
    #[error("impossible event: {0}")]
    Impossible(String),
    /// Reading the file failed midway.
    #[error("read error: {0}")]
    Io(String),
}

/// How a line read from the file ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineEnd {
    /// With a newline.
    Newline,
    /// At the end of the file, without a newline.
    Eof,
    /// Beyond [`MAX_RECORD_BYTES`]; its content was discarded.
    TooLong,
}

/// Lines of the source, with their number and offset.
#[derive(Debug)]
struct Lines<R> {
    src: R,
    /// Holds a line that spans the source's buffer.
    buf: Vec<u8>,
    /// Number (1-based) of the line last read.
    line: u64,
    /// Offset of the byte after it.
    offset: u64,
    /// Whether an overlong line is read to its end, so that reading can go on after it
    /// (records), or given up at once (the header, fatal then: `/dev/zero` has no end).
    skip_long: bool,
}

impl<R: BufRead> Lines<R> {
    /// Calls `f` on the next line (without its newline); `None` at the end of the file. A line
    /// inside the source's buffer is not copied.
    fn next<T>(&mut self, f: impl FnOnce(&[u8], LineEnd) -> T) -> io::Result<Option<T>> {
        let available = fill(&mut self.src)?;
        if let Some(i) = memchr::memchr(b'\n', available)
            && i <= MAX_RECORD_BYTES
        {
            let out = f(&available[..i], LineEnd::Newline);
            self.src.consume(i + 1);
            self.line += 1;
            self.offset += i as u64 + 1;
            return Ok(Some(out));
        }
        Ok(self.read_spanning()?.map(|end| f(&self.buf, end)))
    }

    /// Reads a line that does not fit the source's buffer into `buf`, keeping at most
    /// [`MAX_RECORD_BYTES`].
    fn read_spanning(&mut self) -> io::Result<Option<LineEnd>> {
        self.buf.clear();
        let mut too_long = false;
        let mut consumed = 0u64;
        loop {
            let available = fill(&mut self.src)?;
            if available.is_empty() {
                if consumed == 0 {
                    return Ok(None);
                }
                self.line += 1;
                self.offset += consumed;
                return Ok(Some(if too_long {
                    LineEnd::TooLong
                } else {
                    LineEnd::Eof
                }));
            }
            let (chunk, used, newline) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if too_long || self.buf.len() + chunk.len() > MAX_RECORD_BYTES {
                if !self.skip_long {
                    return Ok(Some(LineEnd::TooLong));
                }
                too_long = true;
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.src.consume(used);
            consumed += used as u64;
            if newline {
                self.line += 1;
                self.offset += consumed;
                return Ok(Some(if too_long {
                    LineEnd::TooLong
                } else {
                    LineEnd::Newline
                }));
            }
        }
    }
}

/// The source's buffered bytes, refilled if empty (retried when a signal interrupts the read);
/// empty at the end of the file.
pub(super) fn fill<R: BufRead>(src: &mut R) -> io::Result<&[u8]> {
    loop {
        match src.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // Filled now: this returns the buffer without reading (returning it from the loop is
    // refused by the borrow checker).
    src.fill_buf()
}

/// What one line held.
enum Parsed {
    Event(Event),
    Header,
    Definition,
    Trailer(Trailer),
    Blank,
    Issue(Problem),
    /// Damage after which nothing can be read.
    Stop(Problem),
}

/// What records are read into: the JSON records' definitions, and the decoder of ring-buffer
/// records.
#[derive(Debug)]
struct Known {
    tables: Tables,
    decoder: Decoder,
}

/// Parses one line.
fn parse(line: &[u8], end: LineEnd, known: &mut Known) -> Parsed {
    if end == LineEnd::TooLong {
        return Parsed::Issue(Problem::TooLong);
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Blank;
    }
    let parsed = parse_record(line, known);
    match (parsed, end) {
        (Parsed::Issue(_), LineEnd::Eof) => Parsed::Issue(Problem::Truncated),
        (parsed, _) => parsed,
    }
}

/// Parses one frame of a binary capture.
fn parse_frame(read: frame::Read<'_>, known: &mut Known) -> Parsed {
    let record = match read {
        frame::Read::Frame(Tag::Json, json) => return parse_record(json, known),
        frame::Read::Frame(Tag::Ring, record) => record,
        frame::Read::Truncated => return Parsed::Issue(Problem::Truncated),
        frame::Read::Corrupt(problem) => return Parsed::Stop(Problem::Corrupt(problem)),
    };
    let Some(parsed) = raw::parse(record) else {
        let kind = record.first().copied().unwrap_or_default();
        return Parsed::Issue(Problem::Corrupt(format!(
            "ring-buffer record of kind {kind} and {} bytes",
            record.len()
        )));
    };
    match known.decoder.decode(&parsed) {
        Some(event) => Parsed::Event(event),
        None if matches!(parsed, raw::Record::Identity(_)) => Parsed::Definition,
        None => Parsed::Issue(Problem::Unexpected(format!(
            "ring-buffer record of kind {}",
            record[0]
        ))),
    }
}

fn parse_record(line: &[u8], known: &mut Known) -> Parsed {
    let tables = &mut known.tables;
    // Validating the line once lets serde_json skip the check for every key and string.
    let line = match std::str::from_utf8(line) {
        Ok(line) => line,
        Err(e) => return Parsed::Issue(Problem::Corrupt(format!("not UTF-8: {e}"))),
    };
    let as_event = match serde_json::from_str::<WireEvent>(line) {
        Ok(w) if w.record == EVENT_TYPE => {
            return match w.decode(tables) {
                Ok(event) => Parsed::Event(event),
                Err(e) => Parsed::Issue(Problem::Corrupt(e)),
            };
        }
        Ok(_) => None,
        Err(e) => Some(e),
    };
    let defined = match serde_json::from_str::<MetaRecord>(line) {
        Ok(MetaRecord::Trailer(trailer)) => return Parsed::Trailer(trailer),
        Ok(MetaRecord::Header(_)) => return Parsed::Header,
        Ok(MetaRecord::Phy(def)) => tables.define_phy(def),
        Ok(MetaRecord::Callback(def)) => tables.define_callback(def),
        Ok(MetaRecord::State(state)) => tables.define_state(state),
        Ok(MetaRecord::Probe(probe)) if known.decoder.key_count() < MAX_IDS as usize => {
            known.decoder.add_callback(probe.key, probe.callback);
            Ok(())
        }
        Ok(MetaRecord::Probe(_)) => Err(format!("more than {MAX_IDS} probe keys")),
        Err(meta) => return Parsed::Issue(explain(line, as_event, meta)),
    };
    match defined {
        Ok(()) => Parsed::Definition,
        Err(e) => Parsed::Issue(Problem::Corrupt(e)),
    }
}

/// Says why a line is no valid record, from the errors of both ways of reading it.
fn explain(line: &str, as_event: Option<serde_json::Error>, meta: serde_json::Error) -> Problem {
    #[derive(Deserialize)]
    struct RecordType<'a> {
        #[serde(rename = "type", borrow)]
        record: std::borrow::Cow<'a, str>,
    }
    match serde_json::from_str::<RecordType>(line) {
        Ok(t) if t.record == EVENT_TYPE => {
            Problem::Corrupt(as_event.map_or_else(|| meta.to_string(), |e| e.to_string()))
        }
        Ok(t)
            if ["header", "phy", "callback", "state", "probe", "trailer"].contains(&&*t.record) =>
        {
            Problem::Corrupt(meta.to_string())
        }
        Ok(t) => Problem::Unexpected(format!("unknown record type {:?}", t.record)),
        Err(_) => Problem::Corrupt(as_event.map_or_else(|| meta.to_string(), |e| e.to_string())),
    }
}

/// Reads a capture: [`Reader::header`], then an iterator of events and issues, then
/// [`Reader::trailer`].
#[derive(Debug)]
pub struct Reader<R> {
    source: Source<R>,
    path: PathBuf,
    header: Header,
    known: Known,
    trailer: Option<Trailer>,
    /// The trailer's end, when it can bound the events' times.
    end_ns: Option<u64>,
    /// Events decoded, refused ones included (what the trailer counts).
    events: u64,
    /// Events passed on.
    passed: u64,
    timeline: Timeline,
    /// Where damage that ends the reading began.
    stopped_at: Option<u64>,
    done: bool,
}

/// Where the records after the header come from.
#[derive(Debug)]
enum Source<R> {
    Lines(Lines<R>),
    Frames(Frames<R>),
}

impl<R: BufRead> Source<R> {
    /// Parses the next record into `known`; `None` at the end of the file.
    fn next(&mut self, known: &mut Known) -> io::Result<Option<Parsed>> {
        match self {
            Self::Lines(lines) => lines.next(|line, end| parse(line, end, known)),
            Self::Frames(frames) => frames.next(|read| parse_frame(read, known)),
        }
    }

    /// Number of the record last read (the header is 1).
    fn number(&self) -> u64 {
        match self {
            Self::Lines(lines) => lines.line,
            Self::Frames(frames) => frames.number,
        }
    }

    /// Offset of the byte after it.
    fn offset(&self) -> u64 {
        match self {
            Self::Lines(lines) => lines.offset,
            Self::Frames(frames) => frames.offset,
        }
    }
}

impl Reader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| OpenError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(256 * 1024, file), path)
    }
}

impl<R: BufRead> Reader<R> {
    /// Reads the header from `src`; `path` names the source in messages.
    pub fn new(src: R, path: impl Into<PathBuf>) -> Result<Self, OpenError> {
        let path = path.into();
        let mut lines = Lines {
            src,
            buf: Vec::new(),
            line: 0,
            offset: 0,
            skip_long: false,
        };
        let bad = |reason: String| OpenError::BadHeader {
            path: path.clone(),
            reason,
        };
        let header = match lines.next(|line, end| match end {
            LineEnd::TooLong => Err(format!("longer than {MAX_RECORD_BYTES} bytes")),
            _ => serde_json::from_slice::<MetaRecord>(line).map_err(|e| e.to_string()),
        }) {
            Ok(Some(Ok(MetaRecord::Header(header)))) => header,
            Ok(Some(Ok(_))) => return Err(bad("another record comes first".to_owned())),
            Ok(Some(Err(reason))) => return Err(bad(reason)),
            Ok(None) => return Err(OpenError::Empty { path }),
            Err(source) => return Err(OpenError::Io { path, source }),
        };
        if header.format != FORMAT_NAME {
            return Err(bad(format!(
                "format is {:?}, not {FORMAT_NAME:?}",
                header.format
            )));
        }
        if header.format_version > FORMAT_VERSION {
            return Err(OpenError::Unsupported {
                path,
                found: header.format_version,
            });
        }
        let known = Known {
            tables: Tables::new(&header.phy_states),
            decoder: Decoder::new(PhyStates::from_list(&header.phy_states)),
        };
        lines.skip_long = true;
        let source = match header.encoding {
            Encoding::Jsonl => Source::Lines(lines),
            Encoding::Binary => Source::Frames(Frames::new(lines.src, lines.line, lines.offset)),
        };
        let timeline = Timeline::new(header.clock.mono_ns);
        Ok(Self {
            source,
            path,
            header,
            known,
            trailer: None,
            end_ns: None,
            events: 0,
            passed: 0,
            timeline,
            stopped_at: None,
            done: false,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer, once read (at the end of the iteration).
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// The file or source name given at opening.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events read so far.
    pub fn events_read(&self) -> u64 {
        self.passed
    }

    fn issue(&mut self, line: u64, offset: u64, problem: Problem) {
        self.timeline.issue(ReadIssue {
            line,
            offset,
            problem,
        });
    }

    /// Decides the events held and says what the end of the file lacks, if anything.
    fn at_end(&mut self, offset: u64) {
        self.done = true;
        self.timeline.finish(self.end_ns);
        let problem = match &self.trailer {
            None => Problem::NotClosed,
            Some(t) if t.events != self.events => Problem::CountMismatch {
                expected: t.events,
                read: self.events,
            },
            Some(_) => return,
        };
        self.issue(self.source.number() + 1, offset, problem);
    }

    /// Reads the next record into the timeline.
    fn read_record(&mut self) {
        if let Some(offset) = self.stopped_at {
            return self.at_end(offset);
        }
        let start = self.source.offset();
        let parsed = match self.source.next(&mut self.known) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return self.at_end(start),
            Err(e) => {
                self.done = true;
                self.timeline.finish(None);
                let line = self.source.number() + 1;
                return self.issue(line, start, Problem::Io(e.to_string()));
            }
        };
        let line = self.source.number();
        let problem = match parsed {
            Parsed::Event(event) => {
                self.events += 1;
                match limits::check(&event) {
                    Ok(()) => return self.timeline.event(event, line, start),
                    Err(why) => Problem::Impossible(why),
                }
            }
            Parsed::Definition | Parsed::Blank => return,
            Parsed::Trailer(trailer) if self.trailer.is_none() => {
                let (start_ns, end_ns) = (self.header.clock.mono_ns, trailer.end_ns);
                self.trailer = Some(trailer);
                if end_ns >= start_ns {
                    self.end_ns = Some(end_ns);
                    return;
                }
                Problem::Corrupt(format!(
                    "trailer ends at {end_ns} ns, before the header's clock reading \
                     ({start_ns} ns): event times are not bounded by it"
                ))
            }
            Parsed::Trailer(_) => Problem::Unexpected("a second trailer".to_owned()),
            Parsed::Header => Problem::Unexpected("a second header".to_owned()),
            Parsed::Issue(problem) => problem,
            Parsed::Stop(problem) => {
                // The end-of-file issue (no trailer, most likely) comes next.
                self.stopped_at = Some(start);
                problem
            }
        };
        self.issue(line, start, problem);
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Event, ReadIssue>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.timeline.pop() {
                self.passed += u64::from(item.is_ok());
                return Some(item);
            }
            if self.done {
                return None;
            }
            self.read_record();
        }
    }
}
