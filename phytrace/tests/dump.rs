//! `phytrace dump` on synthetic captures: text, JSON, filters, damage and exit codes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use phytrace::capture::Writer;
use phytrace::commands::dump::{DumpArgs, dump};
use phytrace::event::{Event, EventKind};
use phytrace::synth::{self, Synth};
use phytrace::test_events;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    dump: DumpArgs,
}

fn args(argv: &[&str]) -> DumpArgs {
    Cli::try_parse_from(std::iter::once("dump").chain(argv.iter().copied()))
        .unwrap()
        .dump
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("phytrace-dump-{}-{name}", std::process::id()))
}

fn capture(path: &Path, events: &[Event], close: bool) {
    let mut w = Writer::create(path, &synth::header()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    if close {
        w.finish(events.last().map_or(0, |e| e.ts_ns), 0).unwrap();
    }
}

fn run(argv: &[&str]) -> (ExitCode, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = dump(&args(argv), &mut out, &mut err).unwrap();
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn text_shows_callbacks_accesses_and_changes() {
    let path = temp("text.jsonl");
    let events: Vec<_> = Synth::new(1).take(400).collect();
    capture(&path, &events, true);
    let (code, out, err) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(err, "");
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 401);
    assert!(
        lines[0].ends_with("attached to ax88796b_rust (4 callbacks, from its first callback)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("phy_sim-0:10  → soft_reset  READY"),
        "{}",
        lines[1]
    );
    assert!(
        out.contains(
            "read_status → read  BMSR      0x786d  [ERCAP LSTATUS ANEGCAPABLE ANEGCOMPLETE"
        ),
        "{out}"
    );
    assert!(out.contains("(+LSTATUS)"), "{out}");
    assert!(out.contains("(-LSTATUS -ANEGCOMPLETE)"), "{out}");
    assert!(out.contains("← read_status"), "{out}");
    assert!(out.contains("link up 100/full"), "{out}");
    assert!(
        out.contains("    → soft_reset"),
        "nested calls are indented: {out}"
    );
    assert!(out.contains("failed -110 (ETIMEDOUT)"), "{out}");
    assert!(lines[400].starts_with("# end "), "{}", lines[400]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn json_and_filters() {
    let path = temp("json.jsonl");
    let events: Vec<_> = Synth::with_phys(2, 3).take(2_000).collect();
    capture(&path, &events, true);
    let p = path.to_str().unwrap();
    let (code, out, _) = run(&[
        p,
        "--format",
        "json",
        "--phy",
        "phy_sim-1",
        "--kind",
        "mdio",
        "exit",
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let parsed: Vec<Event> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<_> = events
        .iter()
        .filter(|e| e.phy.as_ref().is_none_or(|p| &*p.bus == "phy_sim-1"))
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Mdio { .. } | EventKind::CallbackExit { .. }
            )
        })
        .cloned()
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(parsed, expected);
    let (_, out, _) = run(&[p, "--kind=lost,attached"]);
    assert!(
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .all(|l| l.contains("LOST") || l.contains("attached"))
    );
    let (_, out, _) = run(&[p, "--phy", "AX88796B", "--kind", "enter"]);
    assert!(
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .all(|l| l.contains("phy_sim-2:00")),
        "{out}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn damaged_capture_warns_and_succeeds() {
    let path = temp("damaged.jsonl");
    let events: Vec<_> = Synth::new(3).take(50).collect();
    capture(&path, &events, false);
    let mut bytes = std::fs::read(&path).unwrap();
    let fourth = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(3)
        .unwrap()
        .0;
    bytes[fourth + 3] = b'#'; // line 5, an event
    bytes.truncate(bytes.len() - 5);
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, err) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(out.lines().count(), 48);
    let warnings: Vec<_> = err.lines().collect();
    assert_eq!(warnings.len(), 3, "{err}");
    assert!(warnings[0].contains(": line 5 (byte "), "{err}");
    assert!(warnings[0].contains("corrupt record"), "{err}");
    assert!(warnings[1].contains("truncated record"), "{err}");
    assert!(
        warnings[2].ends_with("capture not closed cleanly (no trailer)"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn unreadable_files_exit_2() {
    let (code, out, err) = run(&["/nonexistent/x.jsonl"]);
    assert_eq!(code, ExitCode::from(2));
    assert_eq!(out, "");
    assert!(
        err.contains("/nonexistent/x.jsonl") && err.contains("No such file"),
        "{err}"
    );

    let path = temp("bad.jsonl");
    std::fs::write(&path, "hello\n").unwrap();
    let (code, _, err) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, ExitCode::from(2));
    assert!(
        err.contains("line 1 (byte 0): not a phytrace capture header"),
        "{err}"
    );

    capture(&path, &[], false);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"event\"}\nnot json\n");
    std::fs::write(&path, &bytes).unwrap();
    let (code, _, err) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, ExitCode::from(2), "{err}");
    assert!(
        err.contains("no event could be read (2 damaged records)"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn help_has_an_example() {
    use clap::CommandFactory;
    let help = Cli::command().render_long_help().to_string();
    assert!(
        help.contains("phytrace dump capture.ptrace --phy"),
        "{help}"
    );
}

#[test]
fn kernel_messages_in_every_view() {
    let path = temp("kmsg.jsonl");
    let mut events: Vec<_> = Synth::new(3).take(50).collect();
    let last = events.last().unwrap().clone();
    let mii = "asix 1-1:1.0 eth0: Failed to enable software MII access";
    for (i, (level, text)) in [(Some(3), mii), (None, "multi\nline")]
        .into_iter()
        .enumerate()
    {
        let kmsg = EventKind::Kmsg {
            level,
            text: text.into(),
        };
        events.push(Event {
            cpu: last.cpu,
            tid: 41,
            phy: (i == 0).then(|| last.phy.clone()).flatten(),
            ..test_events::event(last.ts_ns + 1 + i as u64, kmsg)
        });
    }
    let mut header = synth::header();
    header.kmsg = Some(phytrace::records::session::KmsgHeader {
        scope: "related".to_owned(),
        unavailable: None,
        restricted: true,
    });
    let mut w = Writer::create(&path, &header).unwrap();
    for e in &events {
        w.write(e).unwrap();
    }
    let trailer = w.finish(last.ts_ns + 10, 0).unwrap();
    assert_eq!(trailer.counts.kmsg, 2);

    let (code, out, _) = run(&[path.to_str().unwrap(), "--kind", "kmsg"]);
    assert_eq!(code, ExitCode::SUCCESS);
    let lines: Vec<_> = out.lines().collect();
    assert!(
        lines[0].ends_with(&format!("KERN err    {mii}")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("KERN unknown multi\\nline"),
        "{}",
        lines[1]
    );
    assert!(
        out.contains("# kernel messages: restricted on the traced machine"),
        "{out}"
    );
    let (_, json, _) = run(&[path.to_str().unwrap(), "--kind", "kmsg", "--format", "json"]);
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "kmsg");
    assert_eq!(first["level"], 3);
    assert_eq!(first["text"], mii);
    assert_eq!(first["tid"], 41);

    let capture = phytrace::capture::Capture::read(&path).unwrap();
    let stats = phytrace::stats::of_capture(&capture);
    let counts: Vec<_> = stats.kmsg.iter().map(|k| (k.level, k.count)).collect();
    assert_eq!(counts, [("err", 1), ("unknown", 1)]);
    let trace = phytrace::export::perfetto::trace(&capture);
    let logged: Vec<_> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kmsg")
        .collect();
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[0]["name"], mii);
    assert_eq!(logged[0]["args"]["level"], "err");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn clause_45_accesses_are_named_and_the_summary_folds_the_firmware_load() {
    use phytrace::test_events::qt2025;
    let path = temp("qt2025.jsonl");
    let firmware = qt2025::firmware(24 * 1024);
    let events = qt2025::probe(
        qt2025::phy(2),
        1_000_000_000,
        qt2025::REVISION_OK,
        &firmware,
    );
    capture(&path, &events, true);
    let (code, out, err) = run(&[path.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (ExitCode::SUCCESS, ""));
    assert_eq!(out.lines().count(), events.len() + 1);
    assert!(
        out.contains("probe → read  pma.0xd001 0xb3ff  [vendor specific]"),
        "{}",
        &out[..2000]
    );
    assert!(out.contains("probe → write pcs.0x8000 0x0000  [vendor specific]"));
    let (code, summary, err) = run(&[path.to_str().unwrap(), "--summary"]);
    assert_eq!((code, err.as_str()), (ExitCode::SUCCESS, ""));
    insta::assert_snapshot!(summary);
    std::fs::remove_file(&path).unwrap();
}
