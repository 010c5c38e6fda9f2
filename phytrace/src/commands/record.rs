//! `phytrace record`: headless capture to a file, for target boards and CI.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::Result;

use super::FollowArgs;
use crate::{
    capture::Encoding,
    event::{Guarantee, PhyFilter},
    probe::{call_site_probes::CallbackProbes, loader::DEFAULT_RING_SIZE, tracer::Tracer},
    recording::{self, DEFAULT_ENCODING, Progress, Recorded, Recording, Stop},
    records::session::{ArmingEntry, MdioProbes},
};

/// Arguments of `phytrace record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  sudo phytrace record -o link.ptrace --duration 30s
  sudo phytrace record -o boot.ptrace --module ax88796b_rust -- ip link set dev eth0 up
  phytrace dump link.ptrace")]
pub struct RecordArgs {
    /// Capture file to write (see docs/capture-format.md).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
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
    /// Size of the kernel ring buffer in bytes (a power of two).
    #[arg(long, default_value_t = DEFAULT_RING_SIZE, value_name = "BYTES")]
    pub ring_size: u32,
    /// Also write the recording's status to FILE as JSON lines, for scripts: `{"status":
    /// "recording", …}` once every probe is attached, `{"status":"mac_sites_armed", "sites"}`
    /// each time a search of phylink's code for MAC call sites ends (the sites armed, maybe
    /// none), `{"status":"finished", …}` (with the
    /// capture's trailer and the calls each MAC call site reported, `mac_site_calls`) when the
    /// file is complete (docs/capture-format.md).
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Command to run while recording; recording stops when it exits.
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
        }
    }
}

/// Runs `phytrace record`: exits as COMMAND did when it failed, 0 otherwise.
pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    let mut status = args.status.as_deref().map(StatusFile::create).transpose()?;
    let recorded = recording::record_to_file(&args.recording(), |p| {
        // The status line comes after the words: a script that waits on it finds both.
        let line = match &p {
            Progress::Started {
                tracer,
                attached_in,
            } => Some(serde_json::json!(Started::of(
                tracer,
                *attached_in,
                &args.output
            ))),
            Progress::MacSitesArmed(sites) => Some(serde_json::json!({
                "status": "mac_sites_armed",
                "sites": sites,
            })),
            Progress::Note(_) => None,
        };
        print_progress(&args.output, p);
        if let (Some(status), Some(line)) = (&mut status, line) {
            status.write(&line);
        }
    })?;
    if let Some(status) = &mut status {
        status.write(&serde_json::json!({
            "status": "finished",
            "stop": match recorded.stop {
                Stop::Signal(name) => name.to_owned(),
                Stop::Duration => "duration".to_owned(),
                Stop::Command(_) => "command".to_owned(),
            },
            "trailer": recorded.trailer,
            "mac_site_calls": recorded.mac_site_calls,
        }));
    }
    print_summary(&args.output, &recorded);
    Ok(match recorded.command_status() {
        Some(status) if !status.success() => {
            ExitCode::from(status.code().map_or(1, |code| code.clamp(1, 255) as u8))
        }
        _ => ExitCode::SUCCESS,
    })
}

/// `--status`'s line once the probes are attached (its keys in alphabetical order).
#[derive(serde::Serialize)]
struct Started<'a> {
    arming: Vec<ArmingEntry>,
    attached_ms: u64,
    call_sites: usize,
    call_sites_cached: bool,
    callback_probes: Option<&'static str>,
    mdio_probes: MdioProbes,
    output: &'a Path,
    status: &'static str,
    waiting_for: Vec<String>,
}

impl<'a> Started<'a> {
    fn of(tracer: &Tracer, attached_in: Duration, output: &'a Path) -> Self {
        Self {
            arming: tracer.arming(),
            attached_ms: attached_in.as_millis() as u64,
            call_sites: tracer.call_sites().map_or(0, |sites| sites.sites().count()),
            call_sites_cached: tracer.startup().call_sites.cached,
            callback_probes: tracer.callback_probes().map(|probes| probes.name()),
            mdio_probes: tracer.mdio_probes(),
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
    path: PathBuf,
}

impl StatusFile {
    fn create(path: &Path) -> Result<Self> {
        let file = std::fs::File::create(path).map_err(|err| {
            crate::exit::Failure::new(
                crate::exit::FailureKind::Output,
                format!("{}: {err}", path.display()),
            )
        })?;
        Ok(Self {
            file: Some(file),
            path: path.to_owned(),
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
            eprintln!(
                "phytrace: warning: {}: {err}: no more status",
                self.path.display()
            );
            self.file = None;
        }
    }
}

/// Prints on stderr how a recording to `output` goes.
pub fn print_progress(output: &Path, progress: Progress<'_>) {
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
        Progress::Started {
            tracer,
            attached_in,
        } => (tracer, attached_in),
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
        "phytrace: recording to {} with {callbacks} (attached in {} ms: BTF {} ms, load {} ms with MDIO probes ({}) attached meanwhile in {} ms{}, modules {} ms{})",
        output.display(),
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
pub fn print_summary(output: &Path, recorded: &Recorded) {
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
        "phytrace: {why}; {} events in {:.1} s to {}",
        trailer.events,
        took.as_secs_f64(),
        output.display()
    );
    let counts = &trailer.counts;
    let causes: Vec<String> = trailer
        .lost_by_cause
        .nonzero()
        .iter()
        .map(|(cause, count)| format!("{cause} {count}"))
        .collect();
    eprintln!(
        "phytrace: {} callbacks entered, {} returned, {} MDIO accesses, {} attach / {} detach; lost in the kernel: {}{}",
        counts.callback_enter,
        counts.callback_exit,
        counts.mdio,
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
