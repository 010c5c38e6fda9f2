use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use super::*;
use crate::event::{Duplex, Event, EventKind, LinkState, LossCause, MacChange, MdioOp, PhyState};
use crate::exit::FailureKind;
use crate::stats;
use crate::test_events::{Mdio, callback, event, phy};

const DRIVER: &str = "Asix Electronics AX88772A";

fn header() -> Header {
    capture("rust-plug-unplug").header
}

fn capture(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.ptrace"));
    Capture::read(&path).expect("capture")
}

/// The state `name`, numbered by its length (distinct for the names used here).
fn state(name: &str) -> PhyState {
    PhyState {
        value: name.len() as u32,
        name: name.into(),
    }
}

fn link(up: bool) -> LinkState {
    LinkState {
        up,
        speed: if up { 100 } else { -1 },
        duplex: if up { Duplex::Full } else { Duplex::Unknown },
    }
}

/// `kind` at `ts_ns` of the simulated PHY, on thread 7.
fn of_phy(ts_ns: u64, kind: impl Into<EventKind>) -> Event {
    Event {
        tid: 7,
        phy: Some(phy("phy_sim-0", 1, 0x003b_1861, DRIVER)),
        ..event(ts_ns, kind)
    }
}

/// A `read_status` run from `at` taking `latency_ns`, returning `ret`, the link `up` after.
fn read_status(
    at: u64,
    latency_ns: u64,
    ret: i64,
    (before, after): (&str, &str),
    up: bool,
) -> [Event; 2] {
    let cb = callback("read_status", "ax88796b_rust::PhyAX88772A");
    [
        of_phy(
            at,
            EventKind::CallbackEnter {
                callback: cb.clone(),
                depth: 1,
                state: state(before),
            },
        ),
        of_phy(
            at + latency_ns,
            EventKind::CallbackExit {
                callback: cb,
                depth: 1,
                latency_ns,
                ret,
                state_before: state(before),
                state_after: state(after),
                link: link(up),
            },
        ),
    ]
}

/// A plug-in, a link up, a read error with the link down, MDIO traffic with one failed
/// write, the MAC side, a kernel message and a loss.
fn session() -> Vec<Event> {
    let mut events = Vec::new();
    events.extend(read_status(1_000, 3_000, 0, ("NOLINK", "NOLINK"), false));
    events.extend(read_status(
        10_000,
        30_000_000,
        0,
        ("NOLINK", "RUNNING"),
        true,
    ));
    events.extend(read_status(
        50_000_000,
        2_000,
        -5,
        ("RUNNING", "ERROR"),
        false,
    ));
    events.push(of_phy(60_000_000, Mdio::read(1, 0x786d)));
    events.push(of_phy(
        60_000_100,
        Mdio {
            op: MdioOp::Write,
            error: Some(-110),
            ..Mdio::read(0, 0x1200)
        },
    ));
    events.push(of_phy(
        60_000_200,
        EventKind::Mac {
            change: MacChange::Carrier {
                netdev: "eth0".into(),
                up: true,
            },
        },
    ));
    events.push(of_phy(
        60_000_300,
        EventKind::Kmsg {
            level: Some(3),
            text: "phy_sim-0:01: read_status failed".into(),
        },
    ));
    events.push(event(
        60_000_400,
        EventKind::Lost {
            count: 3,
            cause: Some(LossCause::RingFull),
        },
    ));
    events
}

/// The exposition of `events` applied through a model.
fn exposition(events: &[Event]) -> String {
    let metrics = Arc::new(Metrics::new(&header(), None));
    let mut feed = Feed::new(Arc::clone(&metrics));
    let mut model = Model::new();
    for e in events {
        let applied = model.apply(e);
        feed.observe(e, &applied, &model);
    }
    metrics.encode()
}

/// The value of the sample `series` (name and labels as the exposition spells them).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

const PHY: &str = r#"phy="phy_sim-0:01",driver="Asix Electronics AX88772A""#;

#[test]
fn each_family_counts_what_the_model_made_of_the_events() {
    let text = exposition(&session());
    let at = |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series}:\n{text}"));
    let with = |name: &str, extra: &str| format!("phytrace_{name}{{{PHY}{extra}}}");
    assert_eq!(at(&with("callbacks_total", r#",op="read_status""#)), 3.0);
    assert_eq!(
        at(&with(
            "callback_errors_total",
            r#",op="read_status",errno="EIO""#
        )),
        1.0
    );
    // 3 µs, 30 ms and 2 µs: two calls within 5 µs, all three within 50 ms.
    let bucket = |le: &str| {
        format!(r#"phytrace_callback_duration_seconds_bucket{{le="{le}",{PHY},op="read_status"}}"#)
    };
    assert_eq!(at(&bucket("0.0000025")), 1.0);
    assert_eq!(at(&bucket("0.000005")), 2.0);
    assert_eq!(at(&bucket("0.025")), 2.0);
    assert_eq!(at(&bucket("0.05")), 3.0);
    assert_eq!(at(&with("mdio_accesses_total", r#",op="read""#)), 1.0);
    assert_eq!(at(&with("mdio_accesses_total", r#",op="write""#)), 1.0);
    assert_eq!(at(&with("mdio_errors_total", r#",op="read""#)), 0.0);
    assert_eq!(at(&with("mdio_errors_total", r#",op="write""#)), 1.0);
    // Down as first seen, up, down again.
    assert_eq!(at(&with("link_changes_total", r#",to="up""#)), 1.0);
    assert_eq!(at(&with("link_changes_total", r#",to="down""#)), 2.0);
    assert_eq!(at(&with("link_up", "")), 0.0);
    assert_eq!(at(&with("link_speed_bytes_per_second", "")), 0.0);
    assert_eq!(
        at(&with("phy_state_transitions_total", r#",to="RUNNING""#)),
        1.0
    );
    assert_eq!(at(&with("phy_state", r#",state="ERROR""#)), 1.0);
    assert_eq!(at(&with("phy_state", r#",state="RUNNING""#)), 0.0);
    assert_eq!(at(&with("mac_events_total", r#",event="carrier_on""#)), 1.0);
    assert_eq!(at(&with("carrier_up", "")), 1.0);
    assert_eq!(at(&with("kernel_messages_total", r#",level="err""#)), 1.0);
    assert_eq!(at(r#"phytrace_events_lost_total{cause="ring_full"}"#), 3.0);
    assert_eq!(at("phytrace_events_total"), session().len() as f64);
    assert!(text.contains(r#"phytrace_build_info{version=""#), "{text}");
}

#[test]
fn a_link_up_sets_speed_and_duplex_in_base_units() {
    let text = exposition(&read_status(0, 1_000, 0, ("NOLINK", "RUNNING"), true));
    let at = |name: &str| sample(&text, &format!("phytrace_{name}{{{PHY}}}"));
    assert_eq!(at("link_up"), Some(1.0));
    assert_eq!(at("link_speed_bytes_per_second"), Some(12.5e6));
    assert_eq!(at("link_full_duplex"), Some(1.0));
}

#[test]
fn no_label_holds_a_time_a_thread_or_a_value() {
    let text = exposition(&session());
    let labels: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('{')?.1.split_once('}'))
        .flat_map(|(labels, _)| labels.split(','))
        .filter_map(|label| label.split_once('=').map(|(name, _)| name))
        .collect();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        [
            "cause", "driver", "errno", "event", "kernel", "kind", "le", "level", "op", "phy",
            "state", "to", "version"
        ]
    );
}

#[test]
fn a_capture_counts_what_its_statistics_count() {
    for name in [
        "rust-plug-unplug",
        "rust-dongle",
        "c-dongle",
        "rust-module-reload",
    ] {
        let c = capture(name);
        let text = of_captures(&c.header, [&c]);
        let report = stats::of_capture(&c);
        for p in &report.phys {
            // Summed over the drivers the PHY was seen bound to (none, at first).
            let at = |name: &str, extra: &str| -> f64 {
                let series = format!("phytrace_{name}{{phy=\"{}\",driver=\"", p.key);
                text.lines()
                    .filter_map(|line| line.strip_prefix(&series)?.split_once('"'))
                    .filter_map(|(_, rest)| rest.strip_prefix(extra)?.strip_prefix("} "))
                    .map(|value| value.parse::<f64>().unwrap())
                    .sum()
            };
            for cb in &p.callbacks {
                let op = format!(r#",op="{}""#, cb.name);
                assert_eq!(
                    at("callbacks_total", &op),
                    cb.calls as f64,
                    "{name} {}",
                    cb.name
                );
                for e in &cb.errors {
                    let errno = e.errno.map_or_else(|| e.ret.to_string(), str::to_owned);
                    let labels = format!(r#"{op},errno="{errno}""#);
                    assert_eq!(at("callback_errors_total", &labels), e.count as f64);
                }
            }
            let mdio = at("mdio_accesses_total", r#",op="read""#)
                + at("mdio_accesses_total", r#",op="write""#);
            assert_eq!(mdio, p.mdio.accesses as f64, "{name} {}", p.key);
            let errors: u64 = p.mdio.registers.iter().map(|r| r.count.errors).sum();
            let mdio_errors = at("mdio_errors_total", r#",op="read""#)
                + at("mdio_errors_total", r#",op="write""#);
            assert_eq!(mdio_errors, errors as f64, "{name} {}", p.key);
            assert_eq!(
                at("link_changes_total", r#",to="up""#),
                p.link.ups.len() as f64
            );
            let downs = p.link.intervals.iter().filter(|i| !i.up).count();
            assert_eq!(at("link_changes_total", r#",to="down""#), downs as f64);
            for s in &p.states {
                let to = format!(r#",to="{}""#, s.state);
                assert_eq!(
                    at("phy_state_transitions_total", &to),
                    s.periods as f64,
                    "{name} {}",
                    s.state
                );
            }
        }
        let kmsg: f64 = text
            .lines()
            .filter(|l| l.starts_with("phytrace_kernel_messages_total{"))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
            .sum();
        let expected: u64 = report.kmsg.iter().map(|k| k.count).sum();
        assert_eq!(kmsg, expected as f64, "{name}");
        assert_eq!(
            sample(&text, "phytrace_events_total"),
            Some(report.events as f64)
        );
    }
}

#[test]
fn probes_armed_counts_each_kind_the_header_names() {
    let c = capture("rust-dongle");
    let text = of_captures(&c.header, [&c]);
    let armed = |kind: &str| sample(&text, &format!("phytrace_probes_armed{{kind=\"{kind}\"}}"));
    assert_eq!(armed("callback"), Some(c.header.probes.len() as f64));
    assert_eq!(armed("call_site"), Some(c.header.call_sites.len() as f64));
    assert_eq!(armed("mdio_site"), Some(c.header.mdio_sites.len() as f64));
    assert!(!c.header.probes.is_empty());
}

#[test]
fn the_exposition_is_openmetrics_as_promtool_reads_it() {
    let c = capture("rust-dongle");
    let text = of_captures(&c.header, [&c]);
    assert!(text.ends_with("# EOF\n"), "{text}");
    for line in text.lines().filter(|l| l.starts_with("phytrace_")) {
        let family = line.split(['{', ' ']).next().unwrap();
        let typed = text.lines().any(|l| {
            l.strip_prefix("# TYPE ")
                .and_then(|t| t.split_once(' '))
                .is_some_and(|(name, _)| family.starts_with(name))
        });
        assert!(typed, "{line}: no # TYPE line");
    }
    // Prometheus's own linter, where it is installed (`cargo xtask setup` installs it).
    let Ok(mut promtool) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("promtool not found: the exposition was checked by this test alone");
        return;
    };
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => {}
        // Lint problems, one per line, each naming its metric: promtool reads Prometheus's
        // text format, where a counter's HELP names its sample (`X_total`), not its family
        // (`X`) as OpenMetrics does. Those are the only problems allowed.
        Some(3) => {
            for problem in report.lines() {
                let name = problem.split(' ').next().unwrap_or_default();
                let counter = name
                    .strip_suffix("_total")
                    .is_some_and(|family| text.contains(&format!("# TYPE {family} counter\n")));
                assert!(counter, "promtool: {problem}");
            }
        }
        _ => panic!("promtool: {report}{}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// What a GET of `path` from `address` answers, status line and body.
fn get(address: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[test]
fn the_server_answers_the_exposition_at_its_path() {
    let listener = serve::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let metrics = Arc::new(Metrics::new(&header(), None));
    metrics.families().events.inc();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let address = runtime
        .block_on(async { serve::spawn(listener, Arc::clone(&metrics)) })
        .unwrap();
    let (head, body) = get(address, serve::PATH);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_lowercase()
            .contains(&format!("content-type: {CONTENT_TYPE}")),
        "{head}"
    );
    assert_eq!(sample(&body, "phytrace_events_total"), Some(1.0));
    assert_eq!(body, metrics.encode());
    let (head, _) = get(address, "/");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[test]
fn a_port_in_use_is_bad_input_that_names_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let err = serve::bind(address).unwrap_err();
    assert_eq!(err.kind, FailureKind::BadInput);
    assert!(
        err.message.contains(&format!("--metrics {address}")),
        "{}",
        err.message
    );
}

#[test]
fn symbol_probes_armed_follow_their_module_loaded_and_unloaded() {
    let c = capture("rust-module-reload");
    let armed = |events: usize| {
        let partial = Capture {
            events: c.events[..events].to_vec(),
            ..c.clone()
        };
        let text = of_captures(&c.header, [&partial]);
        sample(&text, r#"phytrace_probes_armed{kind="callback"}"#)
    };
    let first = |kind: fn(&EventKind) -> bool| {
        c.events.iter().position(|e| kind(&e.kind)).expect("event") + 1
    };
    let attached = first(|k| matches!(k, EventKind::Attached { .. }));
    let detached = first(|k| matches!(k, EventKind::Detached { .. }));
    // Armed in advance, on the module not loaded yet.
    assert_eq!(armed(attached - 1), Some(c.header.probes.len() as f64));
    assert_eq!(armed(attached), Some(5.0));
    assert_eq!(armed(detached), Some(0.0));
    assert_eq!(armed(c.events.len()), Some(5.0));
}
