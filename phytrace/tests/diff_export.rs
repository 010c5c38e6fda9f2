//! `phytrace diff` and `phytrace export` on the real captures.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::{data, phytrace};
use phytrace::capture::{Capture, Writer};
use phytrace::event::{EventKind, MdioOp};
use serde_json::Value;

#[test]
fn rust_and_c_captures_differ() {
    let out = phytrace(&[
        "diff",
        &data("rust-plug-unplug.ptrace"),
        &data("c-plug-unplug.ptrace"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("differ: 3 of 3 PHYs"), "{text}");
    assert!(
        text.contains("  - read  BMSR      failed -5 (EIO)  in read_status"),
        "{text}"
    );
    assert!(
        text.contains("in (phylib)"),
        "accesses outside callbacks are named"
    );
    assert!(text.contains("@@ A #"), "{text}");
}

#[test]
fn a_capture_equals_itself() {
    let a = data("rust-module-reload.ptrace");
    let out = phytrace(&["diff", &a, &a]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("equal: 3 PHYs"));
}

#[test]
fn ignoring_values_and_reads() {
    let (a, b) = (
        data("rust-plug-unplug.ptrace"),
        data("rust-module-reload.ptrace"),
    );
    let out = phytrace(&[
        "diff",
        "--ignore-reads",
        "--ignore-value",
        "BMCR,MMD_CTRL,MMD_DATA",
        &a,
        &b,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains("read "), "reads ignored: {text}");
    let out = phytrace(&["diff", "--ignore-value", "NOPE", &a, &b]);
    assert_eq!(out.status.code(), Some(2));
    let out = phytrace(&["diff", &a, "/nonexistent.ptrace"]);
    assert_eq!(out.status.code(), Some(2));
}

fn export(capture: &str) -> Value {
    let out_path = std::env::temp_dir().join(format!(
        "phytrace-export-{}-{capture}.json",
        std::process::id()
    ));
    let out = phytrace(&[
        "export",
        "--format",
        "perfetto",
        &data(capture),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_path).unwrap();
    let _ = std::fs::remove_file(&out_path);
    serde_json::from_str(&text).expect("valid JSON")
}

/// Checks the trace event format: required fields, balanced B/E, non-negative durations,
/// microsecond timestamps in order per track, a named process per PHY.
fn validate(trace: &Value, phys: usize) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut last_ts: HashMap<(u64, u64), f64> = HashMap::new();
    let mut open: HashMap<(u64, u64), i64> = HashMap::new();
    let mut process_names = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        let name = e["name"].as_str().expect("name");
        let track = (
            e["pid"].as_u64().expect("pid"),
            e["tid"].as_u64().expect("tid"),
        );
        if ph == "M" {
            process_names += usize::from(name == "process_name");
            assert!(e["args"]["name"].is_string() || e["args"]["sort_index"].is_u64());
            continue;
        }
        let ts = e["ts"].as_f64().expect("ts");
        assert!((0.0..1e9).contains(&ts), "ts in µs since the start: {ts}");
        let last = last_ts.entry(track).or_insert(0.0);
        assert!(ts >= *last, "time goes back on {track:?}: {e}");
        *last = ts;
        match ph {
            "X" => {
                let dur = e["dur"].as_f64().expect("dur");
                assert!(dur >= 0.0, "{e}");
                assert!(e["args"].is_object());
            }
            "B" => *open.entry(track).or_default() += 1,
            "E" => {
                let depth = open.entry(track).or_default();
                *depth -= 1;
                assert!(*depth >= 0, "E without B: {e}");
            }
            "C" => assert!(
                e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .all(Value::is_number)
            ),
            "i" => assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g"))),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open.values().all(|&d| d == 0), "every B has its E");
    assert_eq!(
        process_names,
        phys + 1,
        "one process per PHY, and phytrace's"
    );
}

#[test]
fn perfetto_export_is_a_valid_trace() {
    let trace = export("rust-plug-unplug.ptrace");
    validate(&trace, 3);
    let events = trace["traceEvents"].as_array().unwrap();
    let failed = events
        .iter()
        .find(|e| e["cat"] == "callback" && e["args"]["ret"] == "-5 (EIO)")
        .expect("the failing read_status");
    assert_eq!(failed["name"], "read_status");
    assert_eq!(failed["args"]["state_before"], "RUNNING");
    let reset_write = events
        .iter()
        .find(|e| e["cat"] == "mdio" && e["args"]["value"] == "0x8200")
        .expect("the BMCR reset write");
    assert_eq!(reset_write["name"], "write BMCR");
    assert_eq!(reset_write["args"]["bits"], "ANRESTART RESET");
    assert_eq!(reset_write["args"]["caller"], "soft_reset");
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "C" && e["name"] == "phy_state")
    );
    for capture in ["rust-module-reload.ptrace", "c-plug-unplug.ptrace"] {
        validate(&export(capture), 3);
    }
}

/// The emulated AX88772A USB dongle under asix, phylink and the Rust PHY driver, recorded by
/// `tests/vm/41-dongle-record.sh` (`dongle-rust.ptrace` in target/vm-out, copied here): plug-in
/// with the partner at all modes and symmetric pause, link up at 100/full, ping, one cable
/// flap (NOLINK re-init over USB), `ip link set down`.
const DONGLE: &str = "rust-dongle.ptrace";
const DONGLE_PHY: &str = "usb-001:002:10";

#[test]
fn the_dongle_capture_equals_itself() {
    let a = data(DONGLE);
    let out = phytrace(&["diff", &a, &a]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("equal: 1 PHYs"), "{text}");
    assert!(
        text.contains(&format!("{DONGLE_PHY} (Asix Electronics AX88772A): equal")),
        "{text}"
    );
}

/// The dongle capture as a driver that does not re-initialise the PHY on a lost link would
/// record it: the NOLINK soft_reset's MDIO writes left out.
fn dongle_without_nolink_reset() -> PathBuf {
    let capture = Capture::read(data(DONGLE)).expect("the dongle capture");
    let path = std::env::temp_dir().join(format!(
        "phytrace-dongle-no-reset-{}.ptrace",
        std::process::id()
    ));
    let file = std::fs::File::create(&path).expect("create the variant");
    let mut writer = Writer::new(file, &path, &capture.header).expect("header");
    let mut dropped = 0;
    for event in &capture.events {
        if let EventKind::Mdio {
            op: MdioOp::Write,
            caller: Some(caller),
            state: Some(state),
            ..
        } = &event.kind
            && caller.name.as_ref() == "soft_reset"
            && state.name.as_ref() == "NOLINK"
        {
            dropped += 1;
            continue;
        }
        writer.write(event).expect("write an event");
    }
    assert_eq!(dropped, 2, "BMCR = 0, then RESET");
    let end = capture.trailer.as_ref().expect("trailer").end_ns;
    writer.finish(end, 0).expect("trailer");
    path
}

#[test]
fn the_dongle_capture_differs_from_one_without_the_nolink_reset() {
    let variant = dongle_without_nolink_reset();
    let out = phytrace(&["diff", &data(DONGLE), variant.to_str().unwrap()]);
    let _ = std::fs::remove_file(&variant);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("differ: 1 of 1 PHYs"), "{text}");
    assert!(
        text.contains("  - write BMCR      0x0000") && text.contains("in soft_reset"),
        "the missing reset writes are shown: {text}"
    );
    assert!(
        text.contains("MAC mac_link_down"),
        "the MAC side is in the context: {text}"
    );
}

#[test]
fn the_dongle_export_shows_the_mac_side() {
    let trace = export(DONGLE);
    validate(&trace, 1);
    let events = trace["traceEvents"].as_array().unwrap();
    let named = |name: &str| events.iter().filter(|e| e["name"] == name).count();
    assert!(
        events.iter().any(|e| e["name"] == "process_name"
            && e["args"]["name"] == format!("{DONGLE_PHY} Asix Electronics AX88772A")),
        "the dongle's PHY has its process"
    );
    // Plug-in and the cable back: at the partner's mode, pause both ways.
    assert_eq!(named("mac_link_up 100/full pause tx+rx"), 2);
    assert_eq!(named("mac_link_up 100/full pause off"), 0);
    // The cable out and `ip link set down`.
    assert_eq!(named("mac_link_down"), 2);
    assert!(named("carrier_off eth0") >= 2 && named("carrier_on eth0") == 2);
    let carrier: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "carrier")
        .map(|e| e["args"]["up"].as_u64().unwrap())
        .collect();
    assert!(carrier.windows(2).any(|w| w == [1, 0]) && carrier.ends_with(&[0]));
    assert!(
        events
            .iter()
            .any(|e| e["cat"] == "mac" && e["name"] == "phylink_resolve" && e["ph"] == "X")
    );
    // The NOLINK re-init over USB, inside soft_reset, as slow as USB MDIO is (tens of ms).
    let reset = events
        .iter()
        .find(|e| {
            e["cat"] == "mdio"
                && e["args"]["value"] == "0x8200"
                && e["args"]["caller"] == "soft_reset"
        })
        .expect("the BMCR reset write");
    assert!(reset["dur"].as_f64().unwrap() > 1000.0, "{reset}");
}
