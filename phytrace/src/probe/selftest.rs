//! The pipeline self-test: a kprobe and a kretprobe on a kernel function that phytrace
//! triggers itself, read back through the ring buffer and aya-log.
//!
//! It proves, on the running kernel, that the whole path works: load, attach, fire, ring
//! buffer, userspace. `phytrace doctor` runs it.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};
use aya::maps::RingBuf;
use phytrace_common::{KernelOffsets, RawKind};

use super::{attach::attach, loader};
use crate::records::raw;

/// Kernel functions that every `open()` reaches, tried in order.
const TARGETS: &[&str] = &["do_sys_openat2", "do_filp_open"];

/// What the self-test saw.
#[derive(Debug)]
pub struct SelfTestReport {
    /// The kernel function probed.
    pub target: &'static str,
    /// Latency the kretprobe measured for the probed call, in nanoseconds.
    pub latency_ns: u64,
    /// The value the probed call returned (a file descriptor).
    pub returned: i64,
    /// Log lines emitted by the eBPF program through aya-log.
    pub log_lines: Vec<String>,
    /// Time from start of loading to the last event received.
    pub elapsed: Duration,
}

/// A `log::Log` that keeps the messages of the eBPF programs.
#[derive(Clone, Default)]
struct CollectingLogger(Arc<Mutex<Vec<String>>>);

impl log::Log for CollectingLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        if let Ok(mut lines) = self.0.lock() {
            lines.push(format!("{}", record.args()));
        }
    }

    fn flush(&self) {}
}

/// Runs the self-test; fails with what did not arrive.
pub fn run() -> Result<SelfTestReport> {
    let started = Instant::now();
    let options = loader::LoadOptions {
        selftest_tgid: std::process::id(),
        ..loader::LoadOptions::new(1 << 16, KernelOffsets::default())
    };
    let mut ebpf = loader::load(&options)?;
    let logs = CollectingLogger::default();
    let mut logger = aya_log::EbpfLogger::init_with_logger(&mut ebpf, logs.clone())
        .context("setting up aya-log")?;

    let mut last_err = None;
    let mut attached = None;
    for target in TARGETS {
        let enter = attach(&mut ebpf, "selftest_enter", target);
        let exit = attach(&mut ebpf, "selftest_exit", target);
        match (enter, exit) {
            (Ok(_), Ok(_)) => {
                attached = Some(*target);
                break;
            }
            (Err(err), _) | (_, Err(err)) => last_err = Some(err),
        }
    }
    let Some(target) = attached else {
        return Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no self-test target")));
    };

    let mut ring = RingBuf::try_from(ebpf.map_mut("EVENTS").context("EVENTS map")?)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut entered, mut exit) = (false, None);
    while Instant::now() < deadline && !(entered && exit.is_some()) {
        // Each open goes through the probed function in this process.
        drop(std::fs::File::open("/proc/self/stat"));
        while let Some(record) = ring.next() {
            let Some(raw::Record::Event(event)) = raw::parse(&record) else {
                continue;
            };
            match RawKind::from_u8(event.kind) {
                Some(RawKind::SelfTestEnter) => entered = true,
                Some(RawKind::SelfTestExit) if entered => exit = Some(event.into_owned()),
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    logger.flush();
    let log_lines = logs.0.lock().map(|lines| lines.clone()).unwrap_or_default();
    let Some(exit) = exit else {
        bail!(
            "the self-test probes on {target} attached but {} arrived within 5 s",
            if entered {
                "no kretprobe event"
            } else {
                "no event"
            }
        );
    };
    let expected = format!("self-test kprobe fired in tgid {}", std::process::id());
    if !log_lines.iter().any(|line| line.contains(&expected)) {
        bail!("events arrived but the aya-log line did not (got {log_lines:?})");
    }
    Ok(SelfTestReport {
        target,
        latency_ns: exit.latency_ns,
        returned: i64::from(exit.ret),
        log_lines,
        elapsed: started.elapsed(),
    })
}
