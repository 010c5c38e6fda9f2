//! Frames of a binary capture: after the header line, each record is a tag byte, its length
//! (`u32`, little-endian) and its bytes.

use std::io::{self, BufRead};

use super::reader::fill;

/// What a frame holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    /// A JSON record, as a line of a JSON Lines capture without its newline.
    Json = b'J' as isize,
    /// A ring-buffer record as the kernel wrote it.
    Ring = b'R' as isize,
}

impl Tag {
    fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            b'J' => Some(Self::Json),
            b'R' => Some(Self::Ring),
            _ => None,
        }
    }
}

/// Bytes before a frame's payload.
const HEADER: usize = 5;

/// Longest payload accepted, as for a line of JSON Lines: a ring-buffer record is under 200
/// bytes, a JSON record (an `attached` event, the trailer) a few hundred.
pub(crate) const MAX_PAYLOAD: usize = super::reader::MAX_RECORD_BYTES;

/// Appends a frame holding `payload`.
pub(crate) fn put(out: &mut Vec<u8>, tag: Tag, payload: &[u8]) {
    out.push(tag as u8);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Appends the header of a frame whose payload is encoded next; [`close`] sets its length.
pub(crate) fn open(out: &mut Vec<u8>, tag: Tag) {
    out.push(tag as u8);
    out.extend_from_slice(&[0; 4]);
}

/// Sets the length of the frame [`open`]ed at `start`, which ends here.
pub(crate) fn close(out: &mut [u8], start: usize) {
    let len = (out.len() - start - HEADER) as u32;
    out[start + 1..start + HEADER].copy_from_slice(&len.to_le_bytes());
}

/// What the source held where a frame was expected.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read<'a> {
    /// A whole frame.
    Frame(Tag, &'a [u8]),
    /// The file ends inside a frame.
    Truncated,
    /// Not a frame: an unknown tag or an impossible length. What follows cannot be framed.
    Corrupt(String),
}

/// Frames of a source, with their number and offset.
#[derive(Debug)]
pub(crate) struct Frames<R> {
    src: R,
    /// Holds a frame that spans the source's buffer.
    buf: Vec<u8>,
    /// Number (1-based, the header line being 1) of the frame last read.
    pub number: u64,
    /// Offset of the byte after it.
    pub offset: u64,
}

impl<R: BufRead> Frames<R> {
    /// Frames of `src`, whose next byte (at `offset`, after record `number`) starts one.
    pub fn new(src: R, number: u64, offset: u64) -> Self {
        Self {
            src,
            buf: Vec::new(),
            number,
            offset,
        }
    }

    /// Calls `f` on the next frame; `None` at the end of the file. A frame inside the
    /// source's buffer is not copied.
    pub fn next<T>(&mut self, f: impl FnOnce(Read<'_>) -> T) -> io::Result<Option<T>> {
        let available = fill(&mut self.src)?;
        if available.is_empty() {
            return Ok(None);
        }
        let Some(tag) = Tag::from_u8(available[0]) else {
            let byte = available[0];
            return Ok(Some(
                self.corrupt(f, format!("unknown frame tag 0x{byte:02x}")),
            ));
        };
        if available.len() >= HEADER {
            let len = payload_len(&available[..HEADER]);
            if len > MAX_PAYLOAD {
                return Ok(Some(
                    self.corrupt(f, format!("frame length {len} too large")),
                ));
            }
            if available.len() >= HEADER + len {
                let out = f(Read::Frame(tag, &available[HEADER..HEADER + len]));
                self.advance(HEADER + len);
                return Ok(Some(out));
            }
        }
        self.read_spanning(tag, f).map(Some)
    }

    /// Reads a frame that does not fit the source's buffer into `buf`.
    fn read_spanning<T>(&mut self, tag: Tag, f: impl FnOnce(Read<'_>) -> T) -> io::Result<T> {
        self.buf.clear();
        let mut want = HEADER;
        loop {
            let available = fill(&mut self.src)?;
            if available.is_empty() {
                let consumed = self.buf.len();
                self.advance_by(consumed);
                return Ok(f(Read::Truncated));
            }
            let take = available.len().min(want - self.buf.len());
            self.buf.extend_from_slice(&available[..take]);
            self.src.consume(take);
            if self.buf.len() == HEADER && want == HEADER {
                let len = payload_len(&self.buf);
                if len > MAX_PAYLOAD {
                    return Ok(self.corrupt(f, format!("frame length {len} too large")));
                }
                want = HEADER + len;
            }
            if self.buf.len() == want {
                self.advance_by(want);
                return Ok(f(Read::Frame(tag, &self.buf[HEADER..])));
            }
        }
    }

    /// Reports `problem` at the frame starting at `offset`; nothing beyond it can be framed.
    fn corrupt<T>(&mut self, f: impl FnOnce(Read<'_>) -> T, problem: String) -> T {
        self.number += 1;
        f(Read::Corrupt(problem))
    }

    fn advance(&mut self, len: usize) {
        self.src.consume(len);
        self.advance_by(len);
    }

    /// Counts a frame of `len` bytes already consumed.
    fn advance_by(&mut self, len: usize) {
        self.number += 1;
        self.offset += len as u64;
    }
}

fn payload_len(header: &[u8]) -> usize {
    u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each frame read from `bytes` with the frame number and offset after it, up to the
    /// first that is not whole.
    fn frames(bytes: &[u8], capacity: usize) -> Vec<String> {
        let mut frames = Frames::new(io::BufReader::with_capacity(capacity, bytes), 1, 0);
        let mut out = Vec::new();
        while let Some(read) = frames.next(|read| format!("{read:?}")).unwrap() {
            let whole = read.starts_with("Frame");
            out.push(format!("{read} #{} +{}", frames.number, frames.offset));
            if !whole {
                break;
            }
        }
        out
    }

    fn sample() -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, Tag::Ring, &[1, 2, 3]);
        let start = out.len();
        open(&mut out, Tag::Json);
        out.extend_from_slice(b"{}");
        close(&mut out, start);
        out
    }

    #[test]
    fn frames_round_trip_inside_and_across_the_buffer() {
        let bytes = sample();
        for capacity in [1, 2, 3, 5, 7, 64] {
            assert_eq!(
                frames(&bytes, capacity),
                [
                    "Frame(Ring, [1, 2, 3]) #2 +8",
                    "Frame(Json, [123, 125]) #3 +15"
                ],
                "buffer of {capacity}"
            );
        }
    }

    #[test]
    fn a_cut_frame_is_truncated_and_a_bad_tag_or_length_corrupt() {
        let bytes = sample();
        for cut in 1..bytes.len() {
            if cut == 8 {
                continue;
            }
            let read = frames(&bytes[..cut], 4);
            assert!(
                read.last().unwrap().starts_with("Truncated"),
                "{cut}: {read:?}"
            );
        }
        assert_eq!(
            frames(b"X1234", 64),
            [r#"Corrupt("unknown frame tag 0x58") #2 +0"#]
        );
        let mut long = vec![b'R'];
        long.extend_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
        for capacity in [2, 64] {
            assert_eq!(
                frames(&long, capacity),
                [r#"Corrupt("frame length 1048577 too large") #2 +0"#]
            );
        }
    }
}
