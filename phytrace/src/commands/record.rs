//! `phytrace record`: headless capture to a file, for target boards and CI.

use std::{
    path::PathBuf,
    process::ExitCode,
    time::{Duration, Instant},
};

use anyhow::Result;
use tokio::signal::unix::{SignalKind, signal};

use super::FollowArgs;
use crate::{
    capture::writer::{WriteError, Writer},
    event::{Event, Guarantee, PhyFilter},
    exit::{Failure, FailureKind},
    probe::{
        loader::DEFAULT_RING_SIZE,
        session::{clock_now, session_header},
        tracer::{Tracer, monotonic_ns},
    },
};

/// Arguments of `phytrace record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  sudo phytrace record -o link.ptrace --duration 30s
  sudo phytrace record -o boot.ptrace --module ax88796b_rust -- ip link set dev eth0 up
  phytrace dump link.ptrace")]
pub struct RecordArgs {
    /// Capture file to write (JSON Lines; see docs/capture-format.md).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
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
    /// Command to run while recording; recording stops when it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Why recording stopped.
enum Stop {
    Signal(&'static str),
    Duration,
    Command(std::process::ExitStatus),
}

/// Runs `phytrace record`: exits as COMMAND did when it failed, 0 otherwise.
pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    Ok(match record_to_file(args)? {
        Some(status) if !status.success() => {
            ExitCode::from(status.code().map_or(1, |code| code.clamp(1, 255) as u8))
        }
        _ => ExitCode::SUCCESS,
    })
}

/// Records to `args.output` until COMMAND exits, the duration is reached or a signal comes;
/// the file is complete (trailer written) when this returns. Returns COMMAND's exit status.
pub fn record_to_file(args: &RecordArgs) -> Result<Option<std::process::ExitStatus>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(record(args))
}

/// Writes `event` if `filter` keeps it, unless a write failed before: the first failure is
/// kept in `failed`.
fn write_matching(
    writer: &mut Writer,
    filter: Option<&PhyFilter>,
    failed: &mut Option<WriteError>,
    event: Event,
) {
    if failed.is_none() && filter.is_none_or(|f| f.keeps(&event)) {
        *failed = writer.write(&event).err();
    }
}

/// The write failure kept by [`write_matching`], as the error `record` ends with.
fn written(failed: Option<WriteError>) -> Result<()> {
    failed.map_or(Ok(()), |err| Err(output_failure(err).into()))
}

fn output_failure(err: impl std::fmt::Display) -> Failure {
    Failure::new(FailureKind::Output, format!("{err}"))
}

async fn record(args: &RecordArgs) -> Result<Option<std::process::ExitStatus>> {
    let started = Instant::now();
    let clock = clock_now();
    let (mut tracer, first) = Tracer::start(args.follow.tracer_options(args.ring_size))?;
    let attached_in = started.elapsed();
    let startup = tracer.startup();
    let header = session_header(&tracer, clock);
    let mut writer = Writer::create(&args.output, &header).map_err(output_failure)?;
    let filter = args.phy.as_ref();
    let mut failed = None;
    for event in first {
        write_matching(&mut writer, filter, &mut failed, event);
    }
    written(failed)?;
    writer.flush_if_due().map_err(output_failure)?;
    let report_notes = |tracer: &mut Tracer| {
        for note in tracer.take_notes() {
            eprintln!("phytrace: warning: {note}");
        }
    };
    report_notes(&mut tracer);
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
    eprintln!(
        "phytrace: recording to {} (attached in {} ms: BTF {} ms, load {} ms, MDIO probes {} ms, modules {} ms{})",
        args.output.display(),
        attached_in.as_millis(),
        startup.btf.as_millis(),
        startup.load.as_millis(),
        startup.mdio.as_millis(),
        startup.modules.as_millis(),
        if waiting.is_empty() {
            String::new()
        } else {
            format!("; waiting for {} to load", waiting.join(", "))
        }
    );

    let mut child = match args.command.split_first() {
        Some((program, rest)) => Some(
            tokio::process::Command::new(program)
                .args(rest)
                .spawn()
                .map_err(|err| {
                    Failure::new(
                        FailureKind::BadInput,
                        format!("cannot run `{program}`: {err}"),
                    )
                })?,
        ),
        None => None,
    };
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let deadline = args.duration.map(|d| tokio::time::Instant::now() + d);
    let stop = loop {
        // Events go to the file as they are read; the first write error ends the recording.
        let mut failed = None;
        let mut write = |event| write_matching(&mut writer, filter, &mut failed, event);
        let stop = tokio::select! {
            result = tracer.next_events(&mut write) => {
                result?;
                None
            }
            _ = sigint.recv() => Some(Stop::Signal("SIGINT")),
            _ = sigterm.recv() => Some(Stop::Signal("SIGTERM")),
            _ = async { tokio::time::sleep_until(deadline.unwrap()).await }, if deadline.is_some() => {
                Some(Stop::Duration)
            }
            status = async { child.as_mut().unwrap().wait().await }, if child.is_some() => {
                Some(Stop::Command(status?))
            }
        };
        written(failed)?;
        report_notes(&mut tracer);
        if let Some(stop) = stop {
            break stop;
        }
        writer.flush_if_due().map_err(output_failure)?;
    };
    // Events of the last moments may still be on their way: one more poll, then the rest.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut failed = None;
    tracer.flush(&mut |event| write_matching(&mut writer, filter, &mut failed, event))?;
    written(failed)?;
    let trailer = writer.finish(monotonic_ns(), 0).map_err(output_failure)?;

    let why = match &stop {
        Stop::Signal(name) => format!("{name} received"),
        Stop::Duration => "duration reached".to_owned(),
        Stop::Command(status) => format!("command exited ({status})"),
    };
    eprintln!(
        "phytrace: {why}; {} events in {:.1} s to {}",
        trailer.events,
        started.elapsed().as_secs_f64(),
        args.output.display()
    );
    let counts = &trailer.counts;
    eprintln!(
        "phytrace: {} callbacks entered, {} returned, {} MDIO accesses, {} attach / {} detach; lost in the kernel: {}",
        counts.callback_enter,
        counts.callback_exit,
        counts.mdio,
        counts.attached,
        counts.detached,
        trailer.lost
    );
    Ok(match stop {
        Stop::Command(status) => Some(status),
        _ => None,
    })
}
