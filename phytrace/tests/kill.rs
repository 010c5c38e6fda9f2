//! A writer killed with SIGKILL (`kill -9`) leaves a capture that reads back up to its last
//! whole line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use phytrace::capture::{Capture, FlushPolicy, Problem, Writer};
use phytrace::synth::{self, Synth};

const CHILD_ENV: &str = "PHYTRACE_TEST_KILL_CHILD";
const SEED: u64 = 77;

/// The child: writes events until it is killed (bounded in case nobody does).
fn write_until_killed(path: &str) {
    let policy = FlushPolicy {
        max_events: 64,
        max_delay: Duration::from_millis(5),
    };
    let mut w = Writer::create(path, &synth::header())
        .unwrap()
        .with_policy(policy);
    for (i, event) in Synth::with_phys(SEED, 3).take(2_000_000).enumerate() {
        w.write(&event).unwrap();
        if i % 100 == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

#[test]
fn killed_writer_leaves_a_readable_capture() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        write_until_killed(&path);
        return;
    }
    let path = std::env::temp_dir().join(format!("phytrace-kill-{}.jsonl", std::process::id()));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_writer_leaves_a_readable_capture",
            "--nocapture",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&path).map_or(0, |m| m.len()) < 200_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let c = Capture::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(c.events.len() > 1_000, "only {} events", c.events.len());
    let expected: Vec<_> = Synth::with_phys(SEED, 3).take(c.events.len()).collect();
    assert!(c.events == expected, "events differ from what was written");
    assert_eq!(c.trailer, None);
    let problems: Vec<_> = c.issues.iter().map(|i| &i.problem).collect();
    assert!(
        problems == [&Problem::NotClosed] || problems == [&Problem::Truncated, &Problem::NotClosed],
        "{:?}",
        c.issues
    );
}
