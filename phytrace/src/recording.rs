//! Recording a live session to a capture file, until a command exits, a duration passes or a
//! signal comes. What happens on the way is handed to the caller as [`Progress`] to show.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::signal::unix::{SignalKind, signal};

use crate::capture::{Trailer, WriteError, Writer};
use crate::event::{Event, PhyFilter};
use crate::exit::{Failure, FailureKind};
use crate::probe::session::{clock_now, session_header};
use crate::probe::tracer::{Tracer, TracerOptions, monotonic_ns};

/// What to record, where, and for how long.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Capture file to write.
    pub output: PathBuf,
    /// Stop after this long; default: at a signal or when the command exits.
    pub duration: Option<Duration>,
    /// Keep only the events this keeps.
    pub phy: Option<PhyFilter>,
    /// What the tracer follows.
    pub tracer: TracerOptions,
    /// Command to run while recording (program and arguments); none if empty.
    pub command: Vec<String>,
}

/// Why a recording stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// This signal came.
    Signal(&'static str),
    /// The duration was reached.
    Duration,
    /// The command exited so.
    Command(ExitStatus),
}

/// A finished recording: its file is complete (trailer written).
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Why it stopped.
    pub stop: Stop,
    /// The capture's trailer: what was written, and lost.
    pub trailer: Trailer,
    /// How long it took, from before the probes were attached.
    pub took: Duration,
}

impl Recorded {
    /// The command's exit status, if it ran and ended the recording.
    pub fn command_status(&self) -> Option<ExitStatus> {
        match self.stop {
            Stop::Command(status) => Some(status),
            _ => None,
        }
    }
}

/// What a recording tells as it goes.
pub enum Progress<'a> {
    /// Something the tracer noticed (a module it cannot follow, …).
    Note(String),
    /// The probes are attached (after `attached_in`) and the file is open: recording starts.
    Started {
        /// The tracer, for what it armed and waits for.
        tracer: &'a Tracer,
        /// Time taken to attach.
        attached_in: Duration,
    },
}

/// Records as `recording` says, telling `progress` how it goes; returns once the file is
/// complete.
pub fn record_to_file(
    recording: &Recording,
    progress: impl FnMut(Progress<'_>),
) -> Result<Recorded> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(record(recording, progress))
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

/// Hands the tracer's new notes to `progress`.
fn tell_notes(tracer: &mut Tracer, progress: &mut impl FnMut(Progress<'_>)) {
    for note in tracer.take_notes() {
        progress(Progress::Note(note));
    }
}

fn output_failure(err: impl std::fmt::Display) -> Failure {
    Failure::new(FailureKind::Output, format!("{err}"))
}

async fn record(recording: &Recording, mut progress: impl FnMut(Progress<'_>)) -> Result<Recorded> {
    let started = Instant::now();
    let clock = clock_now();
    let mut tracer = Tracer::start(recording.tracer.clone())?;
    let attached_in = started.elapsed();
    let header = session_header(&tracer, clock);
    let mut writer = Writer::create(&recording.output, &header).map_err(output_failure)?;
    let filter = recording.phy.as_ref();
    tell_notes(&mut tracer, &mut progress);
    progress(Progress::Started {
        tracer: &tracer,
        attached_in,
    });

    let mut child = match recording.command.split_first() {
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
    let deadline = recording.duration.map(|d| tokio::time::Instant::now() + d);
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
        tell_notes(&mut tracer, &mut progress);
        if let Some(stop) = stop {
            break stop;
        }
        writer.flush_if_due().map_err(output_failure)?;
    };
    // No program runs once the session is disarmed: then the ring holds the last records.
    let mut failed = None;
    tracer.finish(&mut |event| write_matching(&mut writer, filter, &mut failed, event))?;
    written(failed)?;
    let trailer = writer
        .finish(monotonic_ns(), tracer.discarded())
        .map_err(output_failure)?;
    Ok(Recorded {
        stop,
        trailer,
        took: started.elapsed(),
    })
}
