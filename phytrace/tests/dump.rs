//! `phytrace dump` on synthetic captures: text, JSON, filters, damage and exit codes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use phytrace::capture::Writer;
use phytrace::commands::dump::{DumpArgs, dump};
use phytrace::event::{Event, EventKind};
use phytrace::synth::{self, Synth};

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
        .filter(|e| e.phy.as_ref().is_some_and(|p| &*p.bus == "phy_sim-1"))
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
