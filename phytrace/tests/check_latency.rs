//! Latency rules of `phytrace check` on the recorded captures (docs/check.md, "Latency").

mod common;

use common::data;
use phytrace::capture::Capture;
use phytrace::check::{self, Outcome, Reason, spec::Cmp};
use phytrace::event::EventKind;
use phytrace::model::LostWhy;

fn capture(name: &str) -> Capture {
    Capture::read(data(&format!("{name}.ptrace"))).expect("capture")
}

fn outcomes(spec: &str, c: &Capture) -> Vec<Outcome> {
    let spec = check::parse(spec).expect("spec");
    check::evaluate(&spec, &c.events, c.header.clock.mono_ns)
}

#[test]
fn never_count_and_percentile_on_plug_unplug() {
    let c = capture("rust-plug-unplug");
    let o = outcomes(
        "rule \"a\": never exit read_status latency > 1ms
rule \"b\": never exit read_status latency > 10ms
rule \"c\": count exit soft_reset latency > 22ms at most 1
rule \"d\": count exit soft_reset latency > 22ms at most 3
rule \"e\": p99 exit read_status latency < 1ms
rule \"f\": p50 exit read_status latency < 1ms
rule \"g\": p100 exit any latency <= 30ms",
        &c,
    );
    let passed: Vec<bool> = o.iter().map(Outcome::passed).collect();
    assert_eq!(passed, [false, true, false, true, false, true, true]);
    // Slowest first, named.
    let a = &o[0].violations;
    assert_eq!(a.len(), 2);
    let slowest = a[0].slowest.as_ref().unwrap();
    assert!(
        slowest.1.starts_with("read_status 2.6ms at 7.779639"),
        "{slowest:?}"
    );
    assert!(a[0].slowest.as_ref().unwrap().0 > a[1].slowest.as_ref().unwrap().0);
    let e = &o[4].violations[0];
    assert!(
        matches!(
            &e.reason,
            Reason::Percentile {
                percentile: 99,
                pattern,
                count: 7,
                value_ns: 2_500_000..2_700_000,
                cmp: Cmp::Lt,
                limit_ns: 1_000_000,
            } if pattern.to_string() == "exit read_status"
        ),
        "{:?}",
        e.reason
    );
}

#[test]
fn a_call_that_never_returned_fails_a_latency_rule() {
    let mut c = capture("rust-plug-unplug");
    let cut = c
        .events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::CallbackEnter { callback, .. } if &*callback.name == "read_status"))
        .unwrap();
    c.events.truncate(cut + 1);
    let o = outcomes(
        "rule \"a\": never exit read_status latency > 10ms
rule \"b\": p99 exit read_status latency < 10ms
rule \"c\": never exit soft_reset latency > 10s
rule \"d\": never exit read_status error",
        &c,
    );
    for rule in &o[..2] {
        assert_eq!(rule.violations.len(), 1, "{rule:?}");
        let v = &rule.violations[0];
        assert!(
            matches!(
                &v.reason,
                Reason::NeverReturned {
                    callback,
                    why: LostWhy::CaptureEnded,
                    ..
                } if callback == "read_status"
            ),
            "{:?}",
            v.reason
        );
        assert_eq!(v.offending, [cut]);
        assert_eq!(v.slowest.as_ref().unwrap().0, u64::MAX);
    }
    // Other callbacks, and rules without a latency, are not concerned.
    assert!(o[2].passed() && o[3].passed());
}

#[test]
fn parse_errors_of_latency_rules() {
    for (spec, column, message) in [
        (
            "rule \"a\": p0 exit read_status latency < 1ms",
            11,
            "a percentile is `p1` to `p100`",
        ),
        (
            "rule \"a\": p99 enter read_status",
            32,
            "takes the latencies of returns",
        ),
        ("rule \"a\": p99 exit read_status", 31, "expected `latency`"),
        (
            "rule \"a\": never exit read_status latency > 5",
            44,
            "expected a duration",
        ),
    ] {
        let e = check::parse(spec).unwrap_err();
        assert!(e.message.contains(message), "{spec}: {e}");
        assert_eq!(e.column, column, "{spec}: {e}");
    }
}
