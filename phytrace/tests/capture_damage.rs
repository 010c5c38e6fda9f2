//! Property tests: a capture cut short or with flipped bits never makes the reader panic, and
//! every whole record before the damage is still read.

use phytrace::capture::{Capture, Encoding, OpenError, Reader, Writer};
use phytrace::event::Event;
use phytrace::synth::{self, Synth};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// A closed capture of `n` synthetic events, with the offset where each event line ends (the
/// header's end first).
fn capture(seed: u64, n: usize) -> (Vec<Event>, Vec<u8>, Vec<usize>) {
    let events: Vec<_> = Synth::with_phys(seed, 3).take(n).collect();
    let mut bytes = Vec::new();
    {
        let mut w = Writer::new(&mut bytes, "mem", &synth::header()).unwrap();
        for e in &events {
            w.write(e).unwrap();
        }
        let end_ns = events.iter().map(|e| e.ts_ns).max().unwrap_or_default();
        w.finish(end_ns.max(synth::header().clock.mono_ns), 0)
            .unwrap();
    }
    let mut ends = vec![];
    let mut start = 0;
    for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
        if start == 0 || bytes[start..].starts_with(br#"{"type":"event""#) {
            ends.push(i + 1);
        }
        start = i + 1;
    }
    (events, bytes, ends)
}

/// Reads `bytes`; `None` when the header itself is unreadable (allowed only if damaged).
fn read(bytes: &[u8]) -> Option<Capture> {
    match Reader::new(bytes, "mem") {
        Ok(reader) => Some(Capture::collect(reader)),
        Err(
            OpenError::BadHeader { .. } | OpenError::Empty { .. } | OpenError::Unsupported { .. },
        ) => None,
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Number of event records whole in the first `len` bytes (line 1 is the header); a record
/// without its newline is whole.
fn whole_events_in(ends: &[usize], len: usize) -> usize {
    ends.iter()
        .skip(1)
        .take_while(|&&end| end - 1 <= len)
        .count()
}

/// Index of the first event that differs, if any (the events themselves are too long to print).
fn first_difference(read: &[Event], expected: &[Event]) -> Option<usize> {
    read.iter().zip(expected).position(|(a, b)| a != b)
}

#[test]
fn a_capture_without_its_last_newline_reads_whole() {
    let (events, bytes, _) = capture(0, 3);
    assert_eq!(bytes.last(), Some(&b'\n'));
    let c = read(&bytes[..bytes.len() - 1]).expect("the header is intact");
    assert_eq!(c.events, events);
    assert!(c.trailer.is_some());
    assert!(c.issues.is_empty(), "{:?}", c.issues);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn truncation_keeps_every_whole_record(seed in 0u64..1_000, n in 0usize..300, cut in 0.0f64..1.0) {
        let (events, bytes, ends) = capture(seed, n);
        let cut = (bytes.len() as f64 * cut) as usize;
        let Some(c) = read(&bytes[..cut]) else {
            prop_assert!(cut < ends[0], "header was whole but unreadable");
            return Ok(());
        };
        let whole = whole_events_in(&ends, cut).min(events.len());
        prop_assert_eq!(c.events.len(), whole);
        prop_assert_eq!(first_difference(&c.events, &events), None);
        // Only the trailer's newline cut off loses nothing: no issue then either.
        let lost_nothing = cut == bytes.len() || (cut + 1 == bytes.len() && bytes[cut] == b'\n');
        prop_assert!(!c.issues.is_empty() || lost_nothing);
        prop_assert!(c.issues.len() <= 2, "{:?}", c.issues);
    }

    #[test]
    fn bit_flips_never_panic_and_keep_the_records_before(
        seed in 0u64..1_000,
        n in 1usize..200,
        flips in prop::collection::vec((0.0f64..1.0, 0u8..8), 1..4),
    ) {
        let (events, mut bytes, ends) = capture(seed, n);
        let mut first = bytes.len();
        for (at, bit) in flips {
            let at = ((bytes.len() - 1) as f64 * at) as usize;
            bytes[at] ^= 1 << bit;
            first = first.min(at);
        }
        let Some(c) = read(&bytes) else {
            prop_assert!(first < ends[0], "damage after the header made it unreadable");
            return Ok(());
        };
        // A flip in line k cannot hide the lines before it: they come back unchanged.
        let whole = ends.iter().skip(1).take_while(|&&end| end <= first).count();
        prop_assert!(c.events.len() >= whole, "{} events read, {} expected", c.events.len(), whole);
        prop_assert_eq!(first_difference(&c.events[..whole], &events[..whole]), None);
        for issue in &c.issues {
            prop_assert!(issue.line >= 1 && issue.offset as usize <= bytes.len());
        }
    }

    #[test]
    fn arbitrary_bytes_after_a_header_never_panic(tail in prop::collection::vec(any::<u8>(), 0..2_000)) {
        let (_, bytes, ends) = capture(1, 0);
        let mut damaged = bytes[..ends[0]].to_vec();
        damaged.extend_from_slice(&tail);
        let c = read(&damaged).expect("the header is intact");
        prop_assert!(c.events.len() <= tail.iter().filter(|&&b| b == b'\n').count() + 1);
    }

    #[test]
    fn arbitrary_bytes_after_a_binary_header_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..2_000),
        frame in any::<bool>(),
    ) {
        let mut header = synth::header();
        header.encoding = Encoding::Binary;
        let mut bytes = Vec::new();
        drop(Writer::new(&mut bytes, "mem", &header).unwrap());
        if frame {
            // A ring-buffer frame of the length of an event, with arbitrary content.
            bytes.push(b'R');
            bytes.extend_from_slice(&(tail.len() as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&tail);
        let c = read(&bytes).expect("the header is intact");
        prop_assert!(c.events.len() <= tail.len() / 5 + 1);
        prop_assert!(!c.issues.is_empty());
    }
}
