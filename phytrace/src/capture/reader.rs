//! Streaming reader of capture files, in constant memory, that never panics on bad input.
//!
//! Only an unreadable header is fatal ([`OpenError`]). Damage further on (a record cut by a
//! crash, a corrupt line, a missing trailer) comes out of the iterator as a [`ReadIssue`] with
//! its line number and byte offset, and reading goes on with the next line.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::format::{
    EVENT_TYPE, FORMAT_NAME, FORMAT_VERSION, Header, MetaRecord, Trailer, WireEvent,
};
use crate::event::Event;

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
    /// Reading the file failed midway.
    #[error("read error: {0}")]
    Io(String),
}

/// How a line read from the file ended.
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
    /// The line last read, without its newline.
    buf: Vec<u8>,
    /// Its number (1-based).
    line: u64,
    /// Offset of the byte after it.
    offset: u64,
}

impl<R: BufRead> Lines<R> {
    /// Reads the next line into `buf` (without its newline), keeping at most
    /// [`MAX_RECORD_BYTES`]; `None` at the end of the file. Advances `line` and `offset` past it.
    fn read_line(&mut self) -> io::Result<Option<LineEnd>> {
        self.buf.clear();
        let mut too_long = false;
        let mut consumed = 0u64;
        loop {
            let available = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
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
            let (chunk, used, newline) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if too_long || self.buf.len() + chunk.len() > MAX_RECORD_BYTES {
                too_long = true;
                self.buf.clear();
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

/// What one line held.
enum Parsed {
    Event(Event),
    Trailer(Trailer),
    Issue(Problem),
}

/// Reads a capture: [`Reader::header`], then an iterator of events and issues, then
/// [`Reader::trailer`].
#[derive(Debug)]
pub struct Reader<R> {
    lines: Lines<R>,
    path: PathBuf,
    header: Header,
    trailer: Option<Trailer>,
    events: u64,
    issues: u64,
    done: bool,
}

impl Reader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| OpenError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(64 * 1024, file), path)
    }
}

impl<R: BufRead> Reader<R> {
    /// Reads the header from `src`; `path` names the source in messages.
    pub fn new(src: R, path: impl Into<PathBuf>) -> Result<Self, OpenError> {
        let path = path.into();
        let mut lines = Lines {
            src,
            buf: Vec::with_capacity(512),
            line: 0,
            offset: 0,
        };
        let bad = |reason: String| OpenError::BadHeader {
            path: path.clone(),
            reason,
        };
        match lines.read_line() {
            Ok(Some(LineEnd::TooLong)) => {
                return Err(bad(format!("longer than {MAX_RECORD_BYTES} bytes")));
            }
            Ok(Some(_)) => {}
            Ok(None) => return Err(OpenError::Empty { path }),
            Err(source) => return Err(OpenError::Io { path, source }),
        }
        let header = match serde_json::from_slice::<MetaRecord>(&lines.buf) {
            Ok(MetaRecord::Header(header)) => header,
            Ok(MetaRecord::Trailer(_)) => return Err(bad("it is a trailer".to_owned())),
            Err(e) => return Err(bad(e.to_string())),
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
        Ok(Self {
            lines,
            path,
            header,
            trailer: None,
            events: 0,
            issues: 0,
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
        self.events
    }

    /// Issues found so far.
    pub fn issues_found(&self) -> u64 {
        self.issues
    }

    /// Parses the line just read.
    fn parse(&self) -> Parsed {
        let buf = &self.lines.buf;
        let first = match serde_json::from_slice::<WireEvent>(buf) {
            Ok(w) if w.record == EVENT_TYPE => {
                return match w.into_event() {
                    Ok(event) => Parsed::Event(event),
                    Err(e) => Parsed::Issue(Problem::Corrupt(e)),
                };
            }
            Ok(_) => None,
            Err(e) => Some(e),
        };
        let meta = match serde_json::from_slice::<MetaRecord>(buf) {
            Ok(MetaRecord::Trailer(trailer)) => return Parsed::Trailer(trailer),
            Ok(MetaRecord::Header(_)) => {
                return Parsed::Issue(Problem::Unexpected("a second header".to_owned()));
            }
            Err(e) => e,
        };
        #[derive(Deserialize)]
        struct RecordType {
            #[serde(rename = "type")]
            record: String,
        }
        let problem = match serde_json::from_slice::<RecordType>(buf) {
            Ok(t) if t.record == EVENT_TYPE => {
                first.map_or_else(|| meta.to_string(), |e| e.to_string())
            }
            Ok(t) if t.record == "header" || t.record == "trailer" => meta.to_string(),
            Ok(t) => {
                return Parsed::Issue(Problem::Unexpected(format!(
                    "unknown record type {:?}",
                    t.record
                )));
            }
            Err(_) => first.map_or_else(|| meta.to_string(), |e| e.to_string()),
        };
        Parsed::Issue(Problem::Corrupt(problem))
    }

    fn issue(
        &mut self,
        line: u64,
        offset: u64,
        problem: Problem,
    ) -> Option<Result<Event, ReadIssue>> {
        self.issues += 1;
        Some(Err(ReadIssue {
            line,
            offset,
            problem,
        }))
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Event, ReadIssue>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let start = self.lines.offset;
            let end = match self.lines.read_line() {
                Ok(Some(end)) => end,
                Ok(None) => {
                    self.done = true;
                    return match &self.trailer {
                        None => self.issue(self.lines.line + 1, start, Problem::NotClosed),
                        Some(t) if t.events != self.events => {
                            let problem = Problem::CountMismatch {
                                expected: t.events,
                                read: self.events,
                            };
                            self.issue(self.lines.line, start, problem)
                        }
                        Some(_) => None,
                    };
                }
                Err(e) => {
                    self.done = true;
                    return self.issue(self.lines.line + 1, start, Problem::Io(e.to_string()));
                }
            };
            let line = self.lines.line;
            if let LineEnd::TooLong = end {
                return self.issue(line, start, Problem::TooLong);
            }
            if self.lines.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match self.parse() {
                Parsed::Event(event) => {
                    self.events += 1;
                    return Some(Ok(event));
                }
                Parsed::Trailer(_) if self.trailer.is_some() => {
                    let problem = Problem::Unexpected("a second trailer".to_owned());
                    return self.issue(line, start, problem);
                }
                Parsed::Trailer(trailer) => self.trailer = Some(trailer),
                Parsed::Issue(problem) => {
                    let problem = match end {
                        LineEnd::Eof => Problem::Truncated,
                        _ => problem,
                    };
                    return self.issue(line, start, problem);
                }
            }
        }
        None
    }
}
