//! Every command that reads captures reads damaged ones, binary and JSON Lines alike, within a
//! time and memory budget: cut short, bits flipped, bytes inserted or removed, words
//! overwritten (0xffffffff, 0, 0x7fffffff), a timestamp set to all ones. An impossible event is
//! refused with its place and the events around it stay.

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use common::{binary, damage, data, phytrace, spec};
use phytrace::capture::{Capture, Problem, Reader};
use phytrace::event::EventKind;

/// Wall time one command may take on a damaged capture (a debug build on a shared machine;
/// the figures in docs/reliability.md are well under it).
const BUDGET_SECS: f64 = 10.0;
/// Peak resident memory one command may use.
const BUDGET_RSS_KIB: i64 = 256 * 1024;
/// Hard limits that end a runaway command so that the test fails instead of the machine.
const GUARD_CPU_SECS: u64 = 60;
const GUARD_ADDRESS_SPACE: u64 = 8 << 30;

/// What one command cost.
#[derive(Debug)]
struct Cost {
    code: Option<i32>,
    secs: f64,
    rss_kib: i64,
}

/// Runs phytrace with `args`, its output discarded, and measures it.
fn run(args: &[&str]) -> Cost {
    let mut command = common::command(args);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe, and the limits are plain values.
    unsafe {
        command.pre_exec(|| {
            for (resource, limit) in [
                (libc::RLIMIT_CPU, GUARD_CPU_SECS),
                (libc::RLIMIT_AS, GUARD_ADDRESS_SPACE),
            ] {
                let limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let started = Instant::now();
    // Waited for with wait4 below, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().expect("run phytrace");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let status = std::process::ExitStatus::from_raw(status);
    Cost {
        code: status.code(),
        secs: started.elapsed().as_secs_f64(),
        rss_kib: usage.ru_maxrss,
    }
}

/// The commands a user reads a capture with, on `path` (`original` to compare it with, `spec`
/// to check it against).
fn commands<'a>(
    path: &'a str,
    original: &'a str,
    spec: &'a str,
    out: &'a str,
) -> Vec<Vec<&'a str>> {
    vec![
        vec!["dump", path],
        vec!["dump", "--format", "json", path],
        vec!["check", "--spec", spec, path],
        vec!["diff", original, path],
        vec!["export", "--format", "perfetto", path, "-o", out],
        vec!["stats", path],
    ]
}

/// The dongle capture in both encodings: `(name, bytes, where the header ends)`.
fn dongle() -> Vec<(&'static str, Vec<u8>, usize)> {
    let jsonl = std::fs::read(data("rust-dongle.ptrace")).unwrap();
    let capture = Capture::read(data("rust-dongle.ptrace")).unwrap();
    let binary = binary::rewrite(&capture);
    [("jsonl", jsonl), ("binary", binary)]
        .into_iter()
        .map(|(name, bytes)| {
            let header_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
            (name, bytes, header_end)
        })
        .collect()
}

fn read(bytes: &[u8]) -> Option<Capture> {
    Reader::new(bytes, "mem").ok().map(Capture::collect)
}

/// A scratch directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phytrace-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The damaged copies of every encoding: `(label, original path, bytes)`.
fn damaged_copies(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut copies = Vec::new();
    for (name, bytes, header_end) in dongle() {
        let original = dir.join(format!("{name}.ptrace"));
        std::fs::write(&original, &bytes).unwrap();
        let original = original.to_string_lossy().into_owned();
        let mut rng = damage::Rng::new(34);
        for (kind, label) in damage::KINDS.iter().enumerate() {
            for copy in 0..3 {
                let bytes = damage::damaged(&bytes, header_end, kind, &mut rng);
                copies.push((format!("{name} {label} #{copy}"), original.clone(), bytes));
            }
        }
        for (label, bytes, _) in ts_all_ones(name, &bytes, header_end) {
            copies.push((format!("{name} {label}"), original.clone(), bytes));
        }
    }
    copies
}

/// Copies with one driver event's timestamp set to all ones, one in the middle and the last
/// one: `(label, bytes, index of that event)`.
fn ts_all_ones(name: &str, bytes: &[u8], header_end: usize) -> Vec<(String, Vec<u8>, usize)> {
    let events = read(bytes).unwrap().events;
    // Driver events: the ring-buffer records of a binary capture.
    let driver: Vec<usize> = (0..events.len())
        .filter(|&i| {
            !matches!(
                events[i].kind,
                EventKind::Attached { .. } | EventKind::Detached { .. } | EventKind::Lost { .. }
            )
        })
        .collect();
    [driver.len() / 2, driver.len() - 1]
        .into_iter()
        .map(|nth| {
            let copy = if name == "binary" {
                let at = damage::binary_timestamps(bytes, header_end)[nth];
                let mut copy = bytes.to_vec();
                copy[at..at + 8].copy_from_slice(&[0xff; 8]);
                copy
            } else {
                damage::json_timestamp_all_ones(bytes, driver[nth] + 1)
            };
            let label = format!(
                "event {} of {} stamped all ones",
                driver[nth] + 1,
                events.len()
            );
            (label, copy, driver[nth])
        })
        .collect()
}

#[test]
fn every_command_reads_damaged_captures_within_budget() {
    let dir = scratch("budget");
    let path = dir.join("damaged.ptrace");
    let path_text = path.to_string_lossy().into_owned();
    let out = dir.join("trace.json").to_string_lossy().into_owned();
    let spec = spec("ax88796b.spec");
    let (mut worst_secs, mut worst_rss) = (Vec::new(), Vec::new());
    for (label, original, bytes) in damaged_copies(&dir) {
        std::fs::write(&path, &bytes).unwrap();
        for args in commands(&path_text, &original, &spec, &out) {
            let cost = run(&args);
            let what = format!("{} on {label}", args[..args.len() - 1].join(" "));
            assert!(
                matches!(cost.code, Some(0..=2 | 4)),
                "{what}: exit {cost:?} (a crash or a guard limit)"
            );
            assert!(cost.secs <= BUDGET_SECS, "{what}: {cost:?}");
            assert!(cost.rss_kib <= BUDGET_RSS_KIB, "{what}: {cost:?}");
            worst_secs.push((cost.secs, what.clone()));
            worst_rss.push((cost.rss_kib, what));
        }
    }
    worst_secs.sort_by(|a, b| b.0.total_cmp(&a.0));
    worst_rss.sort_by_key(|w| std::cmp::Reverse(w.0));
    eprintln!(
        "{} runs; slowest {:.3} s ({}); largest {} KiB ({})",
        worst_secs.len(),
        worst_secs[0].0,
        worst_secs[0].1,
        worst_rss[0].0,
        worst_rss[0].1
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_timestamp_of_all_ones_costs_its_event_only() {
    for (name, bytes, header_end) in dongle() {
        let whole = read(&bytes).unwrap();
        assert!(whole.issues.is_empty(), "{name}: {:?}", whole.issues);
        for (label, copy, index) in ts_all_ones(name, &bytes, header_end) {
            let damaged = read(&copy).unwrap();
            let mut expected = whole.events.clone();
            expected.remove(index);
            assert_eq!(damaged.events, expected, "{name} {label}");
            let problems: Vec<_> = damaged.issues.iter().map(|i| &i.problem).collect();
            assert!(
                matches!(problems[..], [Problem::Impossible(why)] if why.contains("after")),
                "{name} {label}: {problems:?}"
            );
        }
    }
}

#[test]
fn dump_says_where_and_how_many() {
    let dir = scratch("dump");
    for (name, bytes, header_end) in dongle() {
        let (label, copy, _) = ts_all_ones(name, &bytes, header_end).remove(0);
        let path = dir.join(format!("{name}.ptrace"));
        std::fs::write(&path, copy).unwrap();
        let out = phytrace(&["dump", &path.to_string_lossy()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name} {label}: {stderr}");
        assert!(
            stderr.contains("(byte ") && stderr.contains("impossible event: timestamp"),
            "{name} {label}: {stderr}"
        );
        let refused = stderr.matches("impossible event").count();
        assert_eq!(refused, 1, "{name} {label}: {stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_binary_rewrite_reads_back_as_the_same_events() {
    let [(_, jsonl, _), (_, binary, _)] = &dongle()[..] else {
        unreachable!()
    };
    let (jsonl, binary) = (read(jsonl).unwrap(), read(binary).unwrap());
    assert!(binary.issues.is_empty(), "{:?}", binary.issues);
    assert_eq!(binary.events, jsonl.events);
}
