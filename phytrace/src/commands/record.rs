//! `phytrace record`: headless capture to a file, for target boards and CI.

use std::{
    net::SocketAddr,
    os::unix::process::ExitStatusExt as _,
    process::{ExitCode, ExitStatus},
    sync::Arc,
    time::Duration,
};

use anyhow::Result;

use super::FollowArgs;
use crate::{
    capture::{Encoding, Trailer},
    event::{Guarantee, PhyFilter},
    exit::{self, Failure, FailureKind, Status},
    metrics::serve,
    output::Target,
    probe::{mac_site_probes::MacSiteCalls, phy_site_probes::CallbackProbes},
    recording::{self, DEFAULT_ENCODING, Progress, Recorded, Recording, Stop},
    records::session::{ArmingEntry, MdioProbes},
    session::Tracer,
};

/// `record --help`'s examples.
const EXAMPLES: &str = "Examples:
  sudo phytrace record -o link.ptrace --duration 30s
  sudo phytrace record -o boot.ptrace --module ax88796b_rust -- ip link set dev eth0 up
  sudo phytrace record -o - --duration 30s --ring-size 16M | ssh dev 'cat > board.ptrace'
  sudo phytrace record -o lab.ptrace --metrics 0.0.0.0:9479   (Prometheus scrapes /metrics)
  phytrace dump link.ptrace";

/// Arguments of `phytrace record`.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::after_help(EXAMPLES, &[
    Status::Success,
    Status::BadInput,
    Status::TracingUnavailable,
    Status::Output,
    Status::Other,
    Status::CommandFailed,
]))]
pub struct RecordArgs {
    /// Capture file to write, or `-` for standard output (then COMMAND's standard output goes
    /// to standard error). See docs/capture-format.md.
    #[arg(short, long, value_name = "FILE")]
    pub output: Target,
    /// How the capture stores its records: `binary` (driver events as the kernel wrote them,
    /// decoded when read: several times cheaper, for high rates) or `jsonl` (one JSON object
    /// per line, for `jq`). `phytrace dump --format json` reads either.
    #[arg(long, value_enum, default_value_t = DEFAULT_ENCODING, value_name = "ENCODING")]
    pub encoding: Encoding,
    /// Stop after this long (`500ms`, `30s`, `5m`); default: until Ctrl-C or COMMAND exits.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "D")]
    pub duration: Option<Duration>,
    /// Keep only events of PHYs whose `bus:addr`, bus id or driver name contains FILTER.
    #[arg(long, value_name = "FILTER")]
    pub phy: Option<PhyFilter>,
    #[command(flatten)]
    pub follow: FollowArgs,
    /// Size of the kernel ring buffer: bytes, or with a K, M or G suffix (powers of 1024); a
    /// power of two, at least 4K.
    #[arg(long, default_value = "4M", value_parser = super::ring_size, value_name = "SIZE")]
    pub ring_size: u32,
    /// Also write the recording's status to FILE (`-`: standard output) as JSON lines, for
    /// scripts: `{"status": "recording", …}` once every probe is attached,
    /// `{"status":"mac_sites_armed", "sites"}` each time a search of phylink's code for MAC
    /// call sites ends (the sites armed, maybe none), `{"status":"finished", …}` (with the
    /// capture's trailer, the calls each MAC call site reported, `mac_site_calls`, and, when
    /// COMMAND ended the recording, how it ended, `command`: `{"exit_code": N}` or `{"signal":
    /// N}`) when the capture is complete (docs/capture-format.md).
    #[arg(long, value_name = "FILE")]
    pub status: Option<Target>,
    /// Also serve the session's metrics over HTTP on ADDR:PORT while recording, for
    /// Prometheus to scrape at `/metrics` (OpenMetrics text: per PHY callbacks, latencies,
    /// errors, MDIO, link, phy_state, MAC side, kernel messages, and phytrace's own health;
    /// docs/lab.md). `127.0.0.1:9479` serves this machine only, `0.0.0.0:9479` the network.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Command to run while recording; recording stops when it exits. If it fails, record
    /// exits 6 once the capture is complete.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl RecordArgs {
    /// The recording these arguments ask for.
    fn recording(&self) -> Recording {
        Recording {
            output: self.output.clone(),
            encoding: self.encoding,
            duration: self.duration,
            phy: self.phy.clone(),
            tracer: self.follow.tracer_options(self.ring_size),
            command: self.command.clone(),
            stdout_taken: self.output.is_stdout()
                || self.status.as_ref().is_some_and(Target::is_stdout),
            metrics: None,
        }
    }
}

/// Runs `phytrace record`: exits 6 ([`Status::CommandFailed`]) when COMMAND failed, 0
/// otherwise.
pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    if args.output.is_stdout() && args.status.as_ref().is_some_and(Target::is_stdout) {
        return Err(Failure::new(
            FailureKind::BadInput,
            "the capture (`-o -`) and the status (`--status -`) cannot both go to standard output",
        )
        .into());
    }
    let mut status = args.status.as_ref().map(StatusFile::create).transpose()?;
    let mut recording = args.recording();
    // Bound before the probes are attached: a port in use fails at once.
    recording.metrics = args.metrics.map(serve::bind).transpose()?.map(Arc::new);
    let recorded = recording::record_to_file(&recording, |p| {
        // The status line comes after the words: a script that waits on it finds both.
        let line = match &p {
            Progress::Started {
                tracer,
                attached_in,
                metrics,
            } => Some(serde_json::json!(Started::of(
                tracer,
                (*attached_in, *metrics),
                &args.output,
                args.follow.btf.source().describe(),
            ))),
            Progress::MacSitesArmed(sites) => Some(serde_json::json!({
                "status": "mac_sites_armed",
                "sites": sites,
            })),
            Progress::MdioMoved => Some(serde_json::json!({
                "status": "mdio_probes",
                "mdio_probes": MdioProbes::Fentry,
            })),
            Progress::Note(_) => None,
        };
        print_progress(&args.output, p);
        if let (Some(status), Some(line)) = (&mut status, line) {
            status.write(&line);
        }
    })?;
    if let Some(status) = &mut status {
        status.write(&Finished::of(&recorded));
    }
    print_summary(&args.output, &recorded);
    let outcome = command_outcome(recorded.command_status());
    if let (Status::CommandFailed, Some(status)) = (outcome, recorded.command_status()) {
        eprintln!(
            "phytrace: error: `{}` failed ({status}); the capture is complete",
            args.command.join(" "),
        );
    }
    Ok(outcome.exit_code())
}

/// How a recording that ran COMMAND ends: [`Status::CommandFailed`] if COMMAND exited with
/// another status than 0 or was killed (its own status never passes for one of phytrace's).
pub fn command_outcome(command: Option<ExitStatus>) -> Status {
    match command {
        Some(status) if !status.success() => Status::CommandFailed,
        _ => Status::Success,
    }
}

/// How COMMAND ended, as `--status` says it: `{"exit_code": N}` or `{"signal": N}`.
#[derive(Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandEnd {
    /// It exited with this code.
    ExitCode(i32),
    /// This signal killed it.
    Signal(i32),
}

impl CommandEnd {
    /// How `status` ended.
    pub fn of(status: ExitStatus) -> Option<Self> {
        status
            .code()
            .map(Self::ExitCode)
            .or_else(|| status.signal().map(Self::Signal))
    }
}

/// `--status`'s line once the capture is complete (its keys in alphabetical order).
#[derive(serde::Serialize)]
struct Finished<'a> {
    /// How COMMAND ended, when it ended the recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<CommandEnd>,
    mac_site_calls: &'a [MacSiteCalls],
    status: &'static str,
    stop: &'static str,
    trailer: &'a Trailer,
}

impl<'a> Finished<'a> {
    fn of(recorded: &'a Recorded) -> Self {
        Self {
            command: recorded.command_status().and_then(CommandEnd::of),
            mac_site_calls: &recorded.mac_site_calls,
            status: "finished",
            stop: match recorded.stop {
                Stop::Signal(name) => name,
                Stop::Duration => "duration",
                Stop::Command(_) => "command",
            },
            trailer: &recorded.trailer,
        }
    }
}

/// `--status`'s line once the probes are attached (its keys in alphabetical order).
#[derive(serde::Serialize)]
struct Started<'a> {
    arming: Vec<ArmingEntry>,
    attached_ms: u64,
    btf: String,
    call_sites: usize,
    call_sites_cached: bool,
    /// The module the call sites are in, when it was not loaded as the session started: they
    /// are armed as the kernel loads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    call_sites_pending: Option<&'a str>,
    callback_probes: Option<&'static str>,
    kernel_code_reader: Option<&'static str>,
    mdio_probes: MdioProbes,
    /// Where the metrics are served (`--metrics`), if they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<SocketAddr>,
    output: &'a Target,
    status: &'static str,
    waiting_for: Vec<String>,
}

impl<'a> Started<'a> {
    /// The line of a session started after `attached_in`, serving its metrics on `metrics`.
    fn of(
        tracer: &'a Tracer,
        (attached_in, metrics): (Duration, Option<SocketAddr>),
        output: &'a Target,
        btf: String,
    ) -> Self {
        Self {
            arming: tracer.arming(),
            attached_ms: attached_in.as_millis() as u64,
            btf,
            call_sites: tracer.call_sites().map_or(0, |sites| sites.sites().count()),
            call_sites_cached: tracer.startup().call_sites.cached,
            call_sites_pending: tracer.call_sites().and_then(|sites| sites.pending()),
            callback_probes: tracer.callback_probes().map(|probes| probes.name()),
            kernel_code_reader: tracer
                .startup()
                .call_sites
                .reader
                .map(|reader| reader.name()),
            mdio_probes: tracer.mdio_probes(),
            metrics,
            output,
            status: "recording",
            waiting_for: tracer.waiting_for(),
        }
    }
}

/// `--status FILE`: one JSON object per line, flushed as written. A write that fails is
/// reported once and not retried: the status is for scripts, the capture is what counts.
struct StatusFile {
    file: Option<std::fs::File>,
    target: Target,
}

impl StatusFile {
    fn create(target: &Target) -> Result<Self> {
        let file = target
            .create()
            .map_err(|err| Failure::new(FailureKind::Output, format!("{target}: {err}")))?;
        Ok(Self {
            file: Some(file),
            target: target.clone(),
        })
    }

    fn write(&mut self, value: &impl serde::Serialize) {
        use std::io::Write as _;
        let Some(file) = &mut self.file else {
            return;
        };
        let written = serde_json::to_string(value)
            .map_err(std::io::Error::from)
            .and_then(|line| writeln!(file, "{line}"));
        if let Err(err) = written {
            eprintln!("phytrace: warning: {}: {err}: no more status", self.target);
            self.file = None;
        }
    }
}

/// Prints on stderr how a recording to `output` goes.
pub fn print_progress(output: &Target, progress: Progress<'_>) {
    let (tracer, attached_in) = match progress {
        Progress::Note(note) => {
            eprintln!("phytrace: warning: {note}");
            return;
        }
        Progress::MacSitesArmed(sites) => {
            if !sites.is_empty() {
                eprintln!("phytrace: MAC call sites armed: {}", sites.join(", "));
            }
            return;
        }
        Progress::MdioMoved => {
            eprintln!("phytrace: MDIO accessors on fentry/fexit from here on (phylib loaded)");
            return;
        }
        Progress::Started {
            tracer,
            attached_in,
            metrics,
        } => {
            if let Some(address) = metrics {
                eprintln!(
                    "phytrace: serving metrics at http://{address}{}",
                    serve::PATH
                );
            }
            (tracer, attached_in)
        }
    };
    let startup = tracer.startup();
    for arming in tracer.arming() {
        eprintln!(
            "phytrace: {}: {} ({})",
            arming.module,
            match arming.guarantee {
                Guarantee::FirstCallback =>
                    "armed before it loads: every callback from the first one",
                Guarantee::AfterLoad =>
                    "attached when seen loaded: its first callbacks may be missed",
            },
            arming.source
        );
    }
    let waiting = tracer.waiting_for();
    let callbacks = match (tracer.callback_probes(), tracer.call_sites()) {
        (Some(CallbackProbes::Callsite), Some(sites)) => format!(
            "callback probes (callsite) at {} call sites {} in {} ms",
            sites.sites().count(),
            if startup.call_sites.cached {
                "from this boot's cache"
            } else {
                "found"
            },
            startup.call_sites.took.as_millis()
        ),
        (Some(probes), _) => format!("callback probes ({})", probes.name()),
        (None, _) => "no callback probes".to_owned(),
    };
    eprintln!(
        "phytrace: recording to {output} with {callbacks} (attached in {} ms: BTF {} ms, load {} ms with MDIO probes ({}) attached meanwhile in {} ms{}, modules {} ms{})",
        attached_in.as_millis(),
        startup.btf.as_millis(),
        startup.load.as_millis(),
        tracer.mdio_probes().name(),
        startup.mdio.as_millis(),
        if tracer.call_sites().is_some() {
            format!(
                " and the call sites in {} ms",
                startup.call_sites_armed.as_millis()
            )
        } else {
            String::new()
        },
        startup.modules.as_millis(),
        if waiting.is_empty() {
            String::new()
        } else {
            format!("; waiting for {} to load", waiting.join(", "))
        }
    );
}

/// Prints on stderr how a recording to `output` ended and what it holds.
pub fn print_summary(output: &Target, recorded: &Recorded) {
    let Recorded {
        stop,
        trailer,
        took,
        mac_site_calls,
    } = recorded;
    let why = match &stop {
        Stop::Signal(name) => format!("{name} received"),
        Stop::Duration => "duration reached".to_owned(),
        Stop::Command(status) => format!("command exited ({status})"),
    };
    eprintln!(
        "phytrace: {why}; {} events in {:.1} s to {output}",
        trailer.events,
        took.as_secs_f64(),
    );
    let counts = &trailer.counts;
    let causes: Vec<String> = trailer
        .lost_by_cause
        .nonzero()
        .iter()
        .map(|(cause, count)| format!("{cause} {count}"))
        .collect();
    eprintln!(
        "phytrace: {} callbacks entered, {} returned, {} MDIO accesses ({} writes, {} Clause 45), {} attach / {} detach; lost in the kernel: {}{}",
        counts.callback_enter,
        counts.callback_exit,
        counts.mdio,
        counts.mdio_write,
        counts.mdio_c45,
        counts.attached,
        counts.detached,
        trailer.lost,
        if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        }
    );
    if !mac_site_calls.is_empty() {
        let at_sites: u64 = mac_site_calls.iter().map(|site| site.calls).sum();
        eprintln!(
            "phytrace: {at_sites} MAC calls reported at phylink's {} call sites",
            mac_site_calls.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::ExitStatus;

    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::probe::loader::DEFAULT_RING_SIZE;

    fn parse(args: &[&str]) -> RecordArgs {
        let argv = ["phytrace", "record"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Some(Command::Record(args)) => args,
            other => panic!("{other:?}"),
        }
    }

    /// The wait status of a process that exited with `code`.
    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn a_failed_command_never_passes_for_phytraces_own_codes() {
        assert_eq!(command_outcome(None), Status::Success);
        assert_eq!(command_outcome(Some(exited(0))), Status::Success);
        for status in [exited(1), exited(2), exited(3), exited(4), exited(255)] {
            assert_eq!(command_outcome(Some(status)), Status::CommandFailed);
        }
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        assert_eq!(command_outcome(Some(killed)), Status::CommandFailed);
        assert_eq!(Status::CommandFailed.code(), 6);
    }

    #[test]
    fn the_status_says_how_the_command_ended() {
        let json = |status| serde_json::to_string(&CommandEnd::of(status)).unwrap();
        assert_eq!(json(exited(3)), r#"{"exit_code":3}"#);
        assert_eq!(json(exited(0)), r#"{"exit_code":0}"#);
        assert_eq!(
            json(ExitStatus::from_raw(libc::SIGTERM)),
            r#"{"signal":15}"#
        );
    }

    #[test]
    fn the_default_ring_size_is_the_tracers() {
        assert_eq!(parse(&["-o", "x.ptrace"]).ring_size, DEFAULT_RING_SIZE);
        assert_eq!(
            parse(&["-o", "x", "--ring-size", "16M"]).ring_size,
            16 << 20
        );
    }

    #[test]
    fn a_dash_writes_to_standard_output() {
        let args = parse(&["-o", "-", "--status", "s.jsonl", "--", "ip", "link"]);
        assert_eq!(args.output, Target::Stdout);
        assert!(args.recording().stdout_taken);
        let args = parse(&["-o", "x.ptrace", "--status", "-"]);
        assert_eq!(args.status, Some(Target::Stdout));
        assert!(args.recording().stdout_taken);
        assert!(!parse(&["-o", "x.ptrace"]).recording().stdout_taken);
    }
}
