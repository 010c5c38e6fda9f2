//! Calls whose return was lost because a later call on the same thread showed the exit was
//! missed (`superseded`) or because the module was unloaded while they ran (`unloaded`): a
//! latency rule of `phytrace check` fails for them, and `phytrace stats` counts them by cause.
//! The captures are synthetic (`testkit`), written as files and read back by the binary.

mod common;

use std::path::{Path, PathBuf};

use common::phytrace;
use phytrace::capture::Writer;
use phytrace::event::{Event, EventKind};
use phytrace::synth::{self, Synth};
use serde_json::Value;

const SPEC: &str = "rule \"read_status is fast\": never exit read_status latency > 1s
rule \"p99 poll\": p99 exit read_status latency < 1s
rule \"no error\": never exit read_status error
";

fn is_read_status_enter(e: &Event) -> bool {
    matches!(&e.kind, EventKind::CallbackEnter { callback, .. } if &*callback.name == "read_status")
}

/// Synthetic events of one PHY, up to a while after its first `read_status`.
fn events() -> Vec<Event> {
    let events: Vec<Event> = Synth::new(3).take(400).collect();
    let first = events.iter().position(is_read_status_enter).unwrap();
    assert!(events.len() > first + 20);
    events
}

/// The first `read_status` exit removed: the PHY's next callback entry on the same thread
/// supersedes it.
fn superseded() -> Vec<Event> {
    let mut events = events();
    let exit = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::CallbackExit { callback, .. } if &*callback.name == "read_status"))
        .unwrap();
    events.remove(exit);
    events
}

/// Cut after the first `read_status` entry, then its module goes away.
fn unloaded() -> Vec<Event> {
    let mut events = events();
    let enter = events.iter().position(is_read_status_enter).unwrap();
    events.truncate(enter + 1);
    let mut detached = events[enter].clone();
    detached.ts_ns += 5_000_000;
    detached.phy = None;
    detached.kind = EventKind::Detached {
        module: synth::MODULE.to_owned(),
    };
    events.push(detached);
    events
}

fn write(dir: &Path, name: &str, events: &[Event]) -> PathBuf {
    let path = dir.join(format!("{name}.ptrace"));
    let mut w = Writer::create(&path, &synth::header()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish(events.last().unwrap().ts_ns + 1_000_000, 0)
        .unwrap();
    path
}

fn check_and_stats(name: &str, events: &[Event], why: &str, lost_field: &str) {
    let dir = tempfile::tempdir().unwrap();
    let capture = write(dir.path(), name, events);
    let spec = dir.path().join("lost.spec");
    std::fs::write(&spec, SPEC).unwrap();
    let junit = dir.path().join("junit.xml");
    let capture = capture.to_str().unwrap();
    let out = phytrace(&[
        "check",
        "--spec",
        spec.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        capture,
    ]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    // Both latency rules fail for the call that never returned; the error rule ignores it.
    let failed: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("  FAIL  "))
        .collect();
    assert_eq!(failed.len(), 2, "{report}");
    assert!(
        failed.iter().all(|l| !l.starts_with("no error")),
        "{report}"
    );
    assert!(report.contains(why), "{report}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("slowest: read_status entered at"), "{xml}");
    assert!(xml.contains("(no return, at least"), "{xml}");

    let out = phytrace(&["stats", "--format", "json", capture]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phy = &doc["captures"][0]["stats"]["phys"][0];
    let read_status = phy["callbacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "read_status")
        .unwrap();
    let lost = &read_status["lost_returns"];
    assert_eq!(lost["total"], 1, "{lost}");
    assert_eq!(lost[lost_field], 1, "{lost}");
    assert_eq!(lost["calls"][0]["why"], lost_field, "{lost}");
    let text = String::from_utf8_lossy(&phytrace(&["stats", capture]).stdout).into_owned();
    assert!(
        text.contains(&format!("1 (1 {})", lost_field.replace('_', " "))),
        "{text}"
    );
}

#[test]
fn a_superseded_call_fails_latency_rules_and_is_counted() {
    check_and_stats(
        "superseded",
        &superseded(),
        "never returned: its return was lost (events lost)",
        "superseded",
    );
}

#[test]
fn a_call_cut_by_an_unload_fails_latency_rules_and_is_counted() {
    check_and_stats(
        "unloaded",
        &unloaded(),
        "never returned: its module was unloaded while it ran",
        "unloaded",
    );
}
