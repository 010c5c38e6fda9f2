use std::io::Write as _;

use super::*;
use crate::event::{Event, EventKind, MdioOp};
use crate::synth::{self, Synth};

fn write_capture(events: &[Event], close: bool) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = Writer::new(&mut out, "mem", &synth::header()).unwrap();
        for e in events {
            w.write(e).unwrap();
        }
        if close {
            w.finish(end_ns(events), 2).unwrap();
        } else {
            w.flush().unwrap();
        }
    }
    out
}

/// When a capture of `events` closes: at its last event (the header's clock if none).
fn end_ns(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| e.ts_ns)
        .fold(synth::header().clock.mono_ns, u64::max)
}

fn read(bytes: &[u8]) -> Capture {
    Capture::collect(Reader::new(bytes, "mem").unwrap())
}

#[test]
fn round_trip_every_kind() {
    let events: Vec<_> = Synth::with_phys(1, 3).take(3_000).collect();
    let bytes = write_capture(&events, true);
    let c = read(&bytes);
    assert_eq!(c.issues, []);
    assert_eq!(c.header, synth::header());
    assert_eq!(c.events, events);
    let t = c.trailer.unwrap();
    assert_eq!(
        (t.events, t.end_ns, t.discarded),
        (3_000, end_ns(&events), 2)
    );
    let lost: u64 = events
        .iter()
        .map(|e| {
            if let EventKind::Lost { count, .. } = e.kind {
                count
            } else {
                0
            }
        })
        .sum();
    assert_eq!(t.lost, lost);
    assert_eq!(
        t.counts.mdio,
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Mdio { .. }))
            .count() as u64
    );
}

#[test]
fn records_are_tagged_lines() {
    let events: Vec<_> = Synth::new(1).take(10).collect();
    let text = String::from_utf8(write_capture(&events, true)).unwrap();
    let lines: Vec<_> = text.lines().collect();
    let types: Vec<_> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "header", "event", "phy", "callback", "event", "event", "event", "event", "event",
            "event", "event", "callback", "event", "event", "trailer"
        ]
    );
    assert!(lines[0].starts_with(&format!(
        r#"{{"type":"header","format":"phytrace-capture","format_version":{FORMAT_VERSION}"#
    )));
    assert!(lines[0].contains(r#""address":"0xffffffffc0800000""#));
    assert_eq!(
        lines[2],
        r#"{"type":"phy","id":0,"bus":"phy_sim-0","addr":16,"phy_id":3872865,"driver":"Asix Electronics AX88772A"}"#
    );
    assert_eq!(
        lines[3],
        r#"{"type":"callback","id":0,"name":"soft_reset","driver_type":"ax88796b_rust::PhyAX88772A"}"#
    );
    assert!(lines[5].starts_with(r#"{"type":"event","ts":"#));
    assert_eq!(
        lines[5],
        r#"{"type":"event","ts":1000042956,"cpu":1,"tid":120,"phy":0,"kind":"mdio","cb":0,"state":1,"lat":37197,"op":"write","reg":0,"val":0}"#
    );
}

#[test]
fn unknown_states_are_declared() {
    let mut events: Vec<_> = Synth::new(1).take(3).collect();
    if let EventKind::CallbackEnter { state, .. } = &mut events[1].kind {
        *state = crate::event::PhyState {
            value: 42,
            name: "NEW".into(),
        };
    }
    let text = String::from_utf8(write_capture(&events, true)).unwrap();
    assert!(
        text.contains("{\"type\":\"state\",\"value\":42,\"name\":\"NEW\"}\n"),
        "{text}"
    );
    assert_eq!(read(text.as_bytes()).events, events);
}

#[test]
fn undefined_ids_are_reported() {
    let events: Vec<_> = Synth::new(1).take(5).collect();
    let text = String::from_utf8(write_capture(&events, true)).unwrap();
    let damaged: String = text
        .lines()
        .filter(|l| !l.contains(r#""type":"phy""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let c = read(damaged.as_bytes());
    assert_eq!(c.events, events[..1]);
    assert!(
        c.issues[0].to_string().contains("phy 0 is not defined"),
        "{}",
        c.issues[0]
    );
}

#[test]
fn missing_trailer_is_reported_but_events_kept() {
    let events: Vec<_> = Synth::new(2).take(100).collect();
    let c = read(&write_capture(&events, false));
    assert_eq!(c.events, events);
    assert_eq!(c.issues.len(), 1);
    assert_eq!(c.issues[0].problem, Problem::NotClosed);
    assert!(
        c.issues[0]
            .to_string()
            .ends_with("capture not closed cleanly (no trailer)")
    );
}

#[test]
fn truncated_and_corrupt_lines_are_skipped_with_position() {
    let events: Vec<_> = Synth::new(3).take(20).collect();
    let text = String::from_utf8(write_capture(&events, false)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let event_lines: Vec<_> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(r#"{"type":"event""#))
        .collect();
    let corrupt = event_lines[5];
    lines[corrupt] = "{\"type\":\"event\",\"ts\":12,garbage".to_owned();
    let offset: usize = lines[..corrupt].iter().map(|l| l.len() + 1).sum();
    let mut damaged = lines.join("\n");
    damaged.truncate(damaged.len() - 10); // the last record loses its end
    let c = read(damaged.as_bytes());
    assert_eq!(c.events.len(), 20 - 2);
    assert_eq!(c.events[..5], events[..5]);
    assert_eq!(c.events[5..], events[6..19]);
    assert_eq!(c.issues[0].line, corrupt as u64 + 1);
    assert_eq!(c.issues[0].offset, offset as u64);
    assert!(
        matches!(c.issues[0].problem, Problem::Corrupt(_)),
        "{}",
        c.issues[0]
    );
    assert_eq!(c.issues[1].problem, Problem::Truncated);
    assert_eq!(c.issues[1].line, lines.len() as u64);
    assert_eq!(c.issues[2].problem, Problem::NotClosed);
}

#[test]
fn bad_headers_are_fatal() {
    assert!(matches!(
        Reader::new(&b""[..], "x"),
        Err(OpenError::Empty { .. })
    ));
    let e = Reader::new(&b"{\"type\":\"header\"\n"[..], "x").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("x: line 1 (byte 0): not a phytrace capture header"),
        "{e}"
    );
    let mut newer = String::from_utf8(write_capture(&[], true)).unwrap();
    newer = newer.replace(
        &format!("\"format_version\":{FORMAT_VERSION}"),
        "\"format_version\":99",
    );
    assert!(matches!(
        Reader::new(newer.as_bytes(), "x"),
        Err(OpenError::Unsupported { found: 99, .. })
    ));
    let other = String::from_utf8(write_capture(&[], true))
        .unwrap()
        .replace("phytrace-capture", "pcap");
    assert!(matches!(
        Reader::new(other.as_bytes(), "x"),
        Err(OpenError::BadHeader { .. })
    ));
    // A source without a newline, as `phytrace dump /dev/zero`, is refused without reading on.
    let e = Reader::new(std::io::BufReader::new(std::io::repeat(0)), "/dev/zero").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "/dev/zero: line 1 (byte 0): not a phytrace capture header: longer than {MAX_RECORD_BYTES} bytes"
        )
    );
    let e = Reader::open("/nonexistent/capture.jsonl").unwrap_err();
    assert!(e.to_string().contains("/nonexistent/capture.jsonl"), "{e}");
}

#[test]
fn unexpected_records_and_count_mismatch() {
    let events: Vec<_> = Synth::new(4).take(5).collect();
    let mut bytes = write_capture(&events, true);
    let header_line = bytes.split(|&b| b == b'\n').next().unwrap().to_vec();
    let mut after = events[4].clone();
    after.ts_ns += 1;
    let extra = write_capture(&[after], false);
    bytes.extend_from_slice(&extra[header_line.len() + 1..]); // an event after the trailer
    bytes.extend_from_slice(b"{\"type\":\"bogus\"}\n\n   \n");
    bytes.extend_from_slice(&header_line);
    bytes.push(b'\n');
    let c = read(&bytes);
    assert_eq!(c.events.len(), 6);
    let problems: Vec<_> = c.issues.iter().map(|i| i.problem.clone()).collect();
    assert_eq!(
        problems,
        [
            Problem::Unexpected("unknown record type \"bogus\"".into()),
            Problem::Unexpected("a second header".into()),
            Problem::CountMismatch {
                expected: 5,
                read: 6
            },
        ]
    );
}

#[test]
fn overlong_lines_are_skipped_in_bounded_memory() {
    let events: Vec<_> = Synth::new(5).take(3).collect();
    let mut bytes = write_capture(&events[..1], false);
    bytes.extend(std::iter::repeat_n(b'x', MAX_RECORD_BYTES + 10));
    bytes.push(b'\n');
    let rest = write_capture(&events[1..], true);
    bytes.extend_from_slice(rest.splitn(2, |&b| b == b'\n').nth(1).unwrap());
    let c = read(&bytes);
    assert_eq!(c.events, events);
    assert_eq!(c.issues[0].problem, Problem::TooLong);
    assert_eq!(c.issues[0].line, 3);
}

#[test]
fn write_errors_name_the_file_and_keep_what_was_written() {
    let mut w = match Writer::create("/dev/full", &synth::header()) {
        Ok(w) => w,
        Err(e) => {
            assert!(e.to_string().contains("/dev/full"), "{e}");
            return;
        }
    };
    let events: Vec<_> = Synth::new(6).take(5_000).collect();
    let err = events
        .iter()
        .try_for_each(|e| w.write(e))
        .and_then(|()| w.flush())
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot write capture file /dev/full:"),
        "{err}"
    );
    assert_eq!(err.source.raw_os_error(), Some(libc::ENOSPC));
    assert!(w.write(&events[0]).is_err(), "a failed writer stays failed");
}

#[test]
fn failing_sink_leaves_a_readable_prefix() {
    /// Accepts `room` bytes, then fails like a full disk.
    struct Full<'a> {
        out: &'a mut Vec<u8>,
        room: usize,
    }
    impl std::io::Write for Full<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = buf.len().min(self.room);
            self.out.extend_from_slice(&buf[..n]);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let events: Vec<_> = Synth::new(7).take(2_000).collect();
    let mut out = Vec::new();
    {
        let sink = Full {
            out: &mut out,
            room: 150_000,
        };
        let mut w = Writer::new(sink, "full.jsonl", &synth::header()).unwrap();
        let err = events
            .iter()
            .try_for_each(|e| w.write(e))
            .and_then(|()| w.flush());
        assert!(err.unwrap_err().to_string().contains("full.jsonl"));
    }
    let c = read(&out);
    assert!(c.events.len() > 100);
    assert_eq!(c.events[..], events[..c.events.len()]);
    assert!(
        c.issues
            .iter()
            .all(|i| matches!(i.problem, Problem::Truncated | Problem::NotClosed))
    );
}

#[test]
fn flush_policy_pushes_records_out() {
    let path = std::env::temp_dir().join(format!("phytrace-flush-{}.jsonl", std::process::id()));
    let mut w = Writer::create(&path, &synth::header())
        .unwrap()
        .with_policy(FlushPolicy {
            max_events: 10,
            max_delay: std::time::Duration::from_secs(3600),
        });
    let events: Vec<_> = Synth::new(8).take(25).collect();
    for e in &events {
        w.write(e).unwrap();
    }
    // 20 events flushed by count, 5 still buffered; a kill -9 now keeps the 20.
    let c = Capture::read(&path).unwrap();
    assert_eq!(c.events, events[..20]);
    assert_eq!(c.issues[0].problem, Problem::NotClosed);
    assert!(!w.flush_if_due().unwrap());
    w.flush().unwrap();
    assert_eq!(Capture::read(&path).unwrap().events.len(), 25);
    w.finish(end_ns(&events), 0).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"type\":\"ev").unwrap();
    let c = Capture::read(&path).unwrap();
    assert_eq!(c.events, events);
    assert_eq!(c.issues.len(), 1);
    assert_eq!(c.issues[0].problem, Problem::Truncated);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_trailer_counts_mdio_writes_and_clause_45_accesses() {
    use crate::test_events::qt2025;
    let firmware = qt2025::firmware(24 * 1024);
    let events = qt2025::probe(qt2025::phy(4), 1_000, qt2025::REVISION_OK, &firmware);
    let t = read(&write_capture(&events, true)).trailer.unwrap();
    let count = |keep: fn(MdioOp, Option<u8>) -> bool| {
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Mdio { op, devad, .. } if keep(op, devad)))
            .count() as u64
    };
    let writes = count(|op, _| op == MdioOp::Write);
    assert!(writes > 24 * 1024);
    assert_eq!(
        (t.counts.mdio, t.counts.mdio_write, t.counts.mdio_c45),
        (
            count(|_, _| true),
            writes,
            count(|_, devad| devad.is_some())
        )
    );
}

#[test]
fn ring_records_count_as_the_events_they_decode_into() {
    use phytrace_common::RawKind;
    let mut counts = KindCounts::default();
    for kind in [
        RawKind::MdioRead,
        RawKind::MdioWrite,
        RawKind::MdioC45Read,
        RawKind::MdioC45Write,
        RawKind::MdioC45Write,
    ] {
        assert!(counts.count_raw(kind));
    }
    assert!(!counts.count_raw(RawKind::Identity));
    assert_eq!((counts.mdio, counts.mdio_write, counts.mdio_c45), (5, 3, 3));
}
