//! `phytrace check` on the real captures recorded in the VM and on the shipped specs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{DATA, data, phytrace, spec};
use phytrace::capture::{Capture, Writer};
use phytrace::event::EventKind;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("phytrace-check-{}-{name}", std::process::id()))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names of the rules reported `FAIL` in a status table.
fn failed_rules(report: &str) -> Vec<String> {
    report
        .lines()
        .filter_map(|l| l.strip_prefix("  FAIL  "))
        .map(|l| l.split("  ").next().unwrap_or_default().trim().to_owned())
        .collect()
}

/// `rust-plug-unplug.ptrace` cut before the injected MDIO error, written as a clean capture.
fn without_the_error(path: &Path) {
    let capture = Capture::read(data("rust-plug-unplug.ptrace")).unwrap();
    let error_at = capture
        .events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Mdio { error: Some(_), .. }))
        .expect("the capture has an MDIO error");
    let mut w = Writer::create(path, &capture.header).unwrap();
    for e in &capture.events[..error_at] {
        w.write(e).unwrap();
    }
    w.finish(capture.events[error_at].ts_ns, 0).unwrap();
}

#[test]
fn driver_spec_on_the_error_capture_fails_the_error_rule_only() {
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        &data("rust-plug-unplug.ptrace"),
    ]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(
        failed_rules(&report),
        ["no callback returns an error"],
        "{report}"
    );
    assert!(
        report.contains("ret=-5 (EIO)"),
        "the offending return is shown decoded"
    );
    assert!(
        report.contains("read  BMSR      failed -5 (EIO)"),
        "with its context"
    );
    let redacted = report
        .replace(DATA, "DATA")
        .replace(&spec("ax88796b.spec"), "specs/ax88796b.spec");
    insta::assert_snapshot!("ax88796b_on_rust_plug_unplug", redacted);
}

#[test]
fn driver_spec_passes_without_the_error() {
    let clean = temp("clean.ptrace");
    without_the_error(&clean);
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        clean.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&clean);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(failed_rules(&report).is_empty());
    assert!(!report.contains("n/a"), "every rule applies: {report}");
}

#[test]
fn scenario_spec_passes_on_the_plug_unplug_capture() {
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("plug-unplug.spec"),
        &data("rust-plug-unplug.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn what_the_shipped_specs_say_about_the_other_captures() {
    // Recorded from before the driver loaded, across two reloads: every load's probe-time
    // callbacks are in it, so every rule holds.
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        &data("rust-module-reload.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(failed_rules(&stdout(&out)).is_empty());
    // The C driver has no Rust callbacks to trace: the AX88772A re-init cannot be seen.
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        &data("c-plug-unplug.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(failed_rules(&stdout(&out)), ["AX88772A re-inits on NOLINK"]);
}

#[test]
fn the_dongle_spec_passes_on_the_recorded_dongle_captures() {
    // Recorded under QEMU TCG by tests/vm/41-dongle-record.sh, with either PHY driver.
    for name in ["rust-dongle.ptrace", "c-dongle.ptrace"] {
        let out = phytrace(&["check", "--spec", &spec("dongle.spec"), &data(name)]);
        let report = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{name}: {report}");
        assert!(report.contains("ok    USB MDIO polls finish"), "{report}");
    }
}

#[test]
fn junit_has_a_suite_per_capture_and_a_case_per_rule() {
    let xml = temp("junit.xml");
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        "--junit",
        xml.to_str().unwrap(),
        &data("rust-plug-unplug.ptrace"),
        &data("rust-module-reload.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(&xml).unwrap();
    let _ = std::fs::remove_file(&xml);
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"));
    assert_eq!(text.matches("<testsuite ").count(), 2);
    assert_eq!(text.matches("<testcase ").count(), 18);
    // The plug-unplug capture has a read_status error; the reload capture passes.
    assert_eq!(text.matches("<failure ").count(), 1);
    assert!(text.contains("name=\"no callback returns an error\">"));
    assert!(text.contains("&gt; "), "report text escaped: {text}");
    assert!(text.contains("failures=\"1\""));
    assert!(text.trim_end().ends_with("</testsuites>"));
}

#[test]
fn junit_names_the_slowest_calls_of_a_failed_latency_rule() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("latency.spec");
    std::fs::write(
        &spec,
        "rule \"polls under 1ms\": never exit read_status latency > 1ms\n\
         rule \"p99 poll\": p99 exit read_status latency < 1ms\n\
         rule \"polls under 10ms\": never exit read_status latency > 10ms\n",
    )
    .unwrap();
    let xml = dir.path().join("junit.xml");
    let out = phytrace(&[
        "check",
        "--spec",
        spec.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
        &data("rust-plug-unplug.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = std::fs::read_to_string(&xml).unwrap();
    assert_eq!(text.matches("<failure ").count(), 2, "{text}");
    // Two polls took over 1 ms: the message names both, slowest first.
    let never = text
        .lines()
        .find(|l| l.contains("<failure ") && l.contains("2 violations"))
        .expect("the never rule's failure");
    let slowest = never
        .split("; slowest: ")
        .nth(1)
        .expect("slowest calls named");
    assert!(
        slowest.starts_with("read_status 2.6ms at 7.779639 on phy_sim-0:01, read_status "),
        "{never}"
    );
    let p99 = text
        .lines()
        .find(|l| l.contains("message=\"p99 of the 7"))
        .expect("the percentile rule's failure");
    assert!(
        p99.contains("; slowest: read_status 2.6ms at 7.779639"),
        "{p99}"
    );
    assert!(text.contains("name=\"polls under 10ms\"/>"), "{text}");
}

/// The result lines of a KTAP document nested `depth` levels deep: `(ok, number, description)`.
fn ktap_results(ktap: &str, depth: usize) -> Vec<(bool, usize, String)> {
    let indent = "  ".repeat(depth);
    ktap.lines()
        .filter_map(|line| line.strip_prefix(&indent))
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| {
            let (ok, rest) = match line.strip_prefix("not ok ") {
                Some(rest) => (false, rest),
                None => (true, line.strip_prefix("ok ")?),
            };
            let (number, description) = rest.split_once(' ')?;
            Some((ok, number.parse().ok()?, description.to_owned()))
        })
        .collect()
}

#[test]
fn ktap_has_a_test_per_rule_and_a_subtest_per_phy() {
    let out = phytrace(&[
        "check",
        "--format",
        "ktap",
        "--spec",
        &spec("ax88796b.spec"),
        &data("rust-plug-unplug.ptrace"),
    ]);
    let ktap = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{ktap}");
    assert!(ktap.starts_with("KTAP version 1\n1..9\n"), "{ktap}");
    let rules = ktap_results(&ktap, 0);
    assert_eq!(
        rules.iter().map(|r| r.1).collect::<Vec<_>>(),
        (1..=9).collect::<Vec<_>>()
    );
    let failed: Vec<&str> = rules
        .iter()
        .filter(|r| !r.0)
        .map(|r| r.2.as_str())
        .collect();
    assert_eq!(failed, ["no callback returns an error"]);
    // Each rule's subtests: a version line, a plan, a result per PHY (three, or the AX88772A).
    let phys = ktap_results(&ktap, 1);
    assert_eq!(phys.len(), 7 * 3 + 2, "{ktap}");
    assert_eq!(ktap.matches("\n  KTAP version 1\n  1..3\n").count(), 7);
    assert_eq!(ktap.matches("\n  KTAP version 1\n  1..1\n").count(), 2);
    let failed_phy = ktap
        .lines()
        .position(|l| l.starts_with("  not ok 1 phy_sim-0:01 "))
        .expect("the AX88772A fails");
    // The violation's diagnostic lines come right before its result, the offending event
    // marked.
    let lines: Vec<&str> = ktap.lines().collect();
    let diagnostics: Vec<&str> = lines[..failed_phy]
        .iter()
        .rev()
        .take_while(|l| l.starts_with("  # "))
        .copied()
        .collect();
    assert!(diagnostics.iter().any(|l| l.starts_with("  # >")), "{ktap}");
}

#[test]
fn ktap_skips_rules_without_phys_and_nests_several_captures() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("skip.spec");
    std::fs::write(
        &spec,
        "rule \"no callback returns an error\": never exit any error\n\
         rule \"no RTL8211 errors\" for driver \"RTL8211\": never error\n",
    )
    .unwrap();
    let (plug_unplug, dongle) = (data("rust-plug-unplug.ptrace"), data("rust-dongle.ptrace"));
    let out = phytrace(&[
        "check",
        "--format",
        "ktap",
        "--spec",
        spec.to_str().unwrap(),
        &plug_unplug,
        &dongle,
    ]);
    let ktap = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{ktap}");
    assert!(ktap.starts_with("KTAP version 1\n1..2\n  KTAP version 1\n  1..2\n"));
    assert_eq!(
        ktap_results(&ktap, 0),
        [(false, 1, plug_unplug), (true, 2, dongle)]
    );
    let rules = ktap_results(&ktap, 1);
    assert_eq!(rules.len(), 4);
    assert_eq!(
        rules[1],
        (
            true,
            2,
            "no RTL8211 errors # SKIP no PHY in scope".to_owned()
        )
    );
    assert!(!rules[0].0, "the error capture fails its rule");
    assert_eq!(ktap_results(&ktap, 2).len(), 3 + 1, "a subtest per PHY");
}

#[test]
fn ktap_goes_to_standard_error_when_junit_takes_standard_output() {
    let out = phytrace(&[
        "check",
        "--format",
        "ktap",
        "--junit",
        "-",
        "--spec",
        &spec("dongle.spec"),
        &data("rust-dongle.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("<?xml "));
    let ktap = String::from_utf8_lossy(&out.stderr);
    assert!(ktap.starts_with("KTAP version 1\n1..5\n"), "{ktap}");
    assert!(ktap_results(&ktap, 0).iter().all(|r| r.0));
}

#[test]
fn bad_spec_exits_2_with_line_and_column() {
    let bad = temp("bad.spec");
    std::fs::write(&bad, "# ok\nrule \"x\": never write BMCR has RESTE\n").unwrap();
    let out = phytrace(&[
        "check",
        "--spec",
        bad.to_str().unwrap(),
        &data("rust-plug-unplug.ptrace"),
    ]);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.spec:2:32: BMCR has no bit `RESTE`"),
        "{err}"
    );
}

#[test]
fn bad_captures_exit_2() {
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        "/nonexistent.ptrace",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let garbage = temp("garbage.ptrace");
    std::fs::write(&garbage, "not a capture\n").unwrap();
    let out = phytrace(&[
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        garbage.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&garbage);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a phytrace capture header"));
    let out = phytrace(&[
        "check",
        "--spec",
        "/nonexistent.spec",
        &data("c-plug-unplug.ptrace"),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn captures_and_command_exclude_each_other() {
    let out = phytrace(&["check", "--spec", "x", "a.ptrace", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let out = phytrace(&["check", "--spec", "x"]);
    assert_eq!(out.status.code(), Some(2));
}
