//! Recording a live session to a capture file, until a command exits, a duration passes or a
//! signal comes. What happens on the way is handed to the caller as [`Progress`] to show.

use std::fs::File;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::signal::unix::{SignalKind, signal};

use phytrace_common::RawKind;

use crate::capture::{Encoding, Header, Trailer, WriteError, Writer};
use crate::event::{Event, PhyFilter};
use crate::exit::{Failure, FailureKind};
use crate::metrics::{LiveHealth, MetricsSink, Tee};
use crate::output::Target;
use crate::probe::mac_site_probes::MacSiteCalls;
use crate::records::clock::{clock_now, monotonic_ns};
use crate::session::{Received, Sink, Tracer, TracerOptions};

/// How `record` (and `check --record`) store captures unless told otherwise: binary, which
/// keeps up with MDIO accesses back to back.
pub const DEFAULT_ENCODING: Encoding = Encoding::Binary;

/// What to record, where, and for how long.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Capture file to write, or standard output.
    pub output: Target,
    /// How the capture stores its records.
    pub encoding: Encoding,
    /// Stop after this long; default: at a signal or when the command exits.
    pub duration: Option<Duration>,
    /// Keep only the events this keeps.
    pub phy: Option<PhyFilter>,
    /// What the tracer follows.
    pub tracer: TracerOptions,
    /// Command to run while recording (program and arguments); none if empty.
    pub command: Vec<String>,
    /// Whether phytrace's standard output carries results (the capture, a status, a report):
    /// then the command's standard output goes to standard error instead.
    pub stdout_taken: bool,
    /// Where to serve the session's metrics while it records (bound already), if anywhere.
    pub metrics: Option<Arc<std::net::TcpListener>>,
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
    /// The calls each of phylink's MAC call sites reported.
    pub mac_site_calls: Vec<MacSiteCalls>,
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
    /// phylink's text was searched on the side for MAC call sites: those armed
    /// (`function+0xOFFSET (op)`; none if none could be, a note says why).
    MacSitesArmed(Vec<String>),
    /// The MDIO accessors, on kprobes until phylib loaded, moved to fentry/fexit.
    MdioMoved,
    /// The probes are attached (after `attached_in`) and the file is open: recording starts.
    Started {
        /// The tracer, for what it armed and waits for.
        tracer: &'a Tracer,
        /// Time taken to attach.
        attached_in: Duration,
        /// Where the metrics are served, if they are.
        metrics: Option<SocketAddr>,
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

/// The capture a recording writes to, keeping only what `filter` keeps. The first write that
/// fails is kept and nothing is written after it.
pub struct CaptureSink<'a, W: Write = File> {
    writer: &'a mut Writer<W>,
    filter: Option<&'a PhyFilter>,
    failed: Option<WriteError>,
    /// Probe keys of the tracer's decoder already defined in the file.
    keys_defined: usize,
}

impl<'a, W: Write> CaptureSink<'a, W> {
    /// A sink writing to `writer` what `filter` keeps.
    pub fn new(writer: &'a mut Writer<W>, filter: Option<&'a PhyFilter>) -> Self {
        Self {
            writer,
            filter,
            failed: None,
            keys_defined: 0,
        }
    }

    /// Runs `write` unless a write failed before.
    fn attempt(&mut self, write: impl FnOnce(&mut Writer<W>) -> Result<(), WriteError>) {
        if self.failed.is_none() {
            self.failed = write(self.writer).err();
        }
    }

    /// The write failure kept, as the error `record` ends with.
    pub fn check(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(err) => Err(output_failure(err).into()),
            None => Ok(()),
        }
    }

    /// Defines the keys the session named since the last call.
    fn define_keys(&mut self, record: &Received<'_>) {
        for (key, callback) in record.keys_after(self.keys_defined) {
            self.keys_defined += 1;
            self.attempt(|writer| writer.define_probe(key, callback));
        }
    }

    /// Writes `event` if the filter keeps it.
    fn keep(&mut self, event: &Event) {
        if self.filter.is_none_or(|f| f.keeps(event)) {
            self.attempt(|writer| writer.write(event));
        }
    }
}

impl<W: Write> Sink for CaptureSink<'_, W> {
    fn event(&mut self, event: Event) {
        self.keep(&event);
    }

    fn receive(&mut self, record: &Received<'_>) {
        if self.writer.encoding() == Encoding::Jsonl {
            if let Some(event) = record.event() {
                self.keep(event);
            }
            return;
        }
        // Binary: the record as it is, once the keys it may use are defined; decoded only to
        // be filtered.
        let bytes = record.bytes();
        let Some(kind) = bytes.first().copied().and_then(RawKind::from_u8) else {
            return;
        };
        if matches!(kind, RawKind::SelfTestEnter | RawKind::SelfTestExit) {
            return;
        }
        if let Some(filter) = self.filter
            && record.event().is_some_and(|event| !filter.keeps(event))
        {
            return;
        }
        self.define_keys(record);
        self.attempt(|writer| writer.write_ring(kind, bytes));
    }
}

/// Hands the tracer's new notes to `progress`.
fn tell_notes(tracer: &mut Tracer, progress: &mut impl FnMut(Progress<'_>)) {
    for note in tracer.take_notes() {
        progress(Progress::Note(note));
    }
    if let Some(sites) = tracer.mac_mut().take_newly_armed() {
        progress(Progress::MacSitesArmed(sites));
    }
    if tracer.take_mdio_moved() {
        progress(Progress::MdioMoved);
    }
}

/// The writer's name of standard output (as the command line spells it).
const STDOUT: &str = "-";

/// The failure a recording ends with when its capture cannot be written.
fn output_failure(err: WriteError) -> Failure {
    let message = if err.path == Path::new(STDOUT) {
        format!(
            "cannot write the capture to standard output: {}",
            err.source
        )
    } else {
        err.to_string()
    };
    Failure::new(FailureKind::Output, message)
}

/// The capture `output` names, its header written.
fn create_writer(output: &Target, header: &Header) -> Result<Writer, WriteError> {
    let path = match output {
        Target::Stdout => Path::new(STDOUT),
        Target::File(path) => path,
    };
    let file = output.create().map_err(|source| WriteError {
        path: path.to_owned(),
        source,
    })?;
    Writer::new(file, path, header)
}

/// A process running `program` with `args`, its standard output on phytrace's standard error
/// if `stdout_taken`.
fn spawn(program: &str, args: &[String], stdout_taken: bool) -> Result<tokio::process::Child> {
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    if stdout_taken {
        command.stdout(io::stderr().as_fd().try_clone_to_owned()?);
    }
    Ok(command.spawn().map_err(|err| {
        Failure::new(
            FailureKind::BadInput,
            format!("cannot run `{program}`: {err}"),
        )
    })?)
}

async fn record(recording: &Recording, mut progress: impl FnMut(Progress<'_>)) -> Result<Recorded> {
    let started = Instant::now();
    let clock = clock_now();
    let mut tracer = Tracer::start(recording.tracer.clone())?;
    let attached_in = started.elapsed();
    let mut header = Header::for_this_host(tracer.session(clock));
    header.encoding = recording.encoding;
    let mut writer = create_writer(&recording.output, &header).map_err(output_failure)?;
    let filter = recording.phy.as_ref();
    let mut metrics = match &recording.metrics {
        Some(listener) => Some(MetricsSink::serve(
            listener.try_clone()?,
            &header,
            LiveHealth {
                ring_size: recording.tracer.ring_size,
                call_sites_refused: tracer.call_sites().map_or(0, |sites| sites.refused()),
            },
            recording.phy.clone(),
        )?),
        None => None,
    };
    tell_notes(&mut tracer, &mut progress);
    progress(Progress::Started {
        tracer: &tracer,
        attached_in,
        metrics: metrics.as_ref().map(MetricsSink::address),
    });

    let mut child = match recording.command.split_first() {
        Some((program, rest)) => Some(spawn(program, rest, recording.stdout_taken)?),
        None => None,
    };
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let deadline = recording.duration.map(|d| tokio::time::Instant::now() + d);
    // Records go to the file as they are read; the first write error ends the recording.
    let mut capture = CaptureSink::new(&mut writer, filter);
    let mut sink = Tee(&mut capture, metrics.as_mut());
    let stop = loop {
        let stop = tokio::select! {
            result = tracer.next_events(&mut sink) => {
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
        sink.0.check()?;
        tell_notes(&mut tracer, &mut progress);
        if let Some(stop) = stop {
            break stop;
        }
        sink.0.writer.flush_if_due().map_err(output_failure)?;
    };
    // No program runs once the session is disarmed: then the ring holds the last records.
    tracer.finish(&mut sink)?;
    sink.0.check()?;
    let trailer = writer
        .finish(monotonic_ns(), tracer.discarded())
        .map_err(output_failure)?;
    Ok(Recorded {
        stop,
        trailer,
        took: started.elapsed(),
        mac_site_calls: tracer.mac().calls().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use phytrace_common::{RawEvent, RawNamed};

    use super::*;
    use crate::capture::{Capture, Problem, Reader};
    use crate::event::{EventKind, Guarantee, LossCause};
    use crate::records::decode::Decoder;
    use crate::records::raw;
    use crate::records::states::PhyStates;
    use crate::{synth, test_events};

    const PHY: u64 = 0xffff_8880_0000_1000;
    const OTHER_PHY: u64 = 0xffff_8880_0000_2000;
    const BUS: u64 = 0xffff_8880_0001_0000;
    const EMPTY_BUS: u64 = 0xffff_8880_0002_0000;
    const READ_STATUS: u64 = 7;
    const TAUGHT_LATER: u64 = 9;

    /// What a session hands its sink, in order.
    enum Step {
        Teach(u64, &'static str),
        Ring(Vec<u8>),
        Own(Event),
    }

    fn identity(phydev: u64, bus: u64, bus_id: &str, driver: &str) -> Step {
        let phy = test_events::phy(bus_id, 16, 0x003b_1861, driver);
        Step::Ring(test_events::identity_record(phydev, bus, &phy))
    }

    fn ring(kind: RawKind, ts_ns: u64, fill: impl FnOnce(&mut RawEvent)) -> Step {
        let mut event = RawEvent::ZERO;
        (event.kind, event.ts_ns, event.tid, event.cpu) = (kind as u8, ts_ns, 42, 1);
        (event.phydev, event.state_before, event.state_after) = (PHY, 5, 5);
        fill(&mut event);
        Step::Ring(raw::Record::Event(Cow::Owned(event)).to_bytes())
    }

    /// A session: PHYs and a bus named, callbacks with MDIO accesses inside, Clause 45, the
    /// MAC side, a key taught midway and one never taught, phytrace's own events: every kind
    /// of record a session writes, so that a binary capture's trailer counts (taken from the
    /// records' kinds) are checked against those of the decoded events.
    fn session() -> Vec<Step> {
        let mut carrier = RawNamed {
            event: RawEvent::ZERO,
            name: [0; phytrace_common::NAME_LEN],
        };
        (carrier.event.kind, carrier.event.ts_ns) = (RawKind::CarrierOn as u8, 900);
        carrier.name[..4].copy_from_slice(b"eth0");
        let mut carrier_off = carrier;
        (carrier_off.event.kind, carrier_off.event.ts_ns) = (RawKind::CarrierOff as u8, 920);
        let own = |ts_ns, kind: EventKind| Step::Own(test_events::event(ts_ns, kind));
        vec![
            own(
                50,
                EventKind::Attached {
                    module: "ax88796b_rust".into(),
                    callbacks: 5,
                    reattached: false,
                    guarantee: Some(Guarantee::FirstCallback),
                },
            ),
            identity(PHY, BUS, "phy_sim-0", "Asix Electronics AX88772A"),
            identity(0, EMPTY_BUS, "usb-001:002", ""),
            ring(RawKind::CallbackEnter, 100, |e| {
                (e.key, e.depth) = (READ_STATUS, 1);
            }),
            ring(RawKind::MdioRead, 200, |e| {
                (e.key, e.regnum, e.value, e.ret, e.latency_ns) =
                    (READ_STATUS, 1, 0x786d, 0x786d, 300);
                (e.link, e.speed, e.duplex, e.depth) = (1, 100, 1, 1);
            }),
            ring(RawKind::MdioC45Write, 300, |e| {
                (e.phydev, e.bus, e.addr, e.devad, e.regnum, e.value) =
                    (0, EMPTY_BUS, 3, 1, 0x10, 0xbeef);
                e.ret = -110;
            }),
            ring(RawKind::CallbackExit, 400, |e| {
                (e.key, e.depth, e.latency_ns, e.state_after) = (READ_STATUS, 1, 250, 6);
            }),
            ring(RawKind::SelfTestEnter, 450, |_| {}),
            Step::Teach(TAUGHT_LATER, "config_aneg"),
            ring(RawKind::CallbackEnter, 500, |e| e.key = TAUGHT_LATER),
            ring(RawKind::CallbackEnter, 550, |e| e.key = 1234),
            identity(OTHER_PHY, BUS, "phy_sim-0", "Other PHY"),
            ring(RawKind::MdioWrite, 600, |e| {
                (e.phydev, e.addr, e.regnum, e.value) = (OTHER_PHY, 17, 0, 0x1200);
            }),
            ring(RawKind::MdioC45Read, 650, |e| {
                (e.devad, e.regnum, e.value, e.ret) = (7, 0x20, 0x1234, 0x1234);
            }),
            ring(RawKind::PhylinkResolve, 680, |e| e.latency_ns = 900),
            ring(RawKind::MacLinkUp, 700, |e| {
                (e.speed, e.duplex, e.value) = (100, 1, 3)
            }),
            ring(RawKind::MacLinkDown, 750, |_| {}),
            Step::Ring(raw::Record::Named(Cow::Owned(carrier)).to_bytes()),
            Step::Ring(raw::Record::Named(Cow::Owned(carrier_off)).to_bytes()),
            own(
                950,
                EventKind::Lost {
                    count: 3,
                    cause: Some(LossCause::RingFull),
                },
            ),
        ]
    }

    /// `session()` recorded in `encoding`, keeping what `filter` keeps; its bytes.
    fn recorded(encoding: Encoding, filter: Option<&PhyFilter>) -> Vec<u8> {
        let mut header = synth::header();
        header.encoding = encoding;
        // The session's times (50 to 950 ns) follow the clock reading.
        header.clock.mono_ns = 0;
        let mut file = Vec::new();
        let mut writer = Writer::new(&mut file, "test", &header).unwrap();
        let mut decoder = Decoder::new(PhyStates::from_list(&header.phy_states));
        let callback = |name: &str| test_events::callback(name, "ax88796b_rust::PhyAX88772A");
        decoder.add_callback(READ_STATUS, callback("read_status"));
        let mut sink = CaptureSink::new(&mut writer, filter);
        for step in session() {
            match step {
                Step::Teach(key, name) => decoder.add_callback(key, callback(name)),
                Step::Ring(bytes) => {
                    let parsed = raw::parse(&bytes).unwrap();
                    sink.receive(&Received::new(&mut decoder, &bytes, &parsed));
                }
                Step::Own(event) => sink.event(event),
            }
        }
        sink.check().unwrap();
        writer.finish(1000, 0).unwrap();
        file
    }

    fn read(bytes: &[u8]) -> Capture {
        Capture::collect(Reader::new(bytes, "test").unwrap())
    }

    #[test]
    fn a_binary_capture_reads_back_as_the_same_events_as_json_lines() {
        for filter in [None, Some(PhyFilter::from("AX88772A".to_owned()))] {
            let json = read(&recorded(Encoding::Jsonl, filter.as_ref()));
            let binary_bytes = recorded(Encoding::Binary, filter.as_ref());
            let binary = read(&binary_bytes);
            assert_eq!(binary.header.encoding, Encoding::Binary);
            assert!(json.issues.is_empty() && binary.issues.is_empty());
            assert_eq!(binary.events, json.events);
            assert_eq!(binary.trailer, json.trailer);
            let expected = match filter {
                None => 15,
                Some(_) => 13,
            };
            assert_eq!(json.events.len(), expected, "{:#?}", json.events);
        }
        let json = read(&recorded(Encoding::Jsonl, None));
        let callbacks: Vec<_> = json
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::CallbackEnter { callback, .. } => Some(&*callback.name),
                _ => None,
            })
            .collect();
        assert_eq!(callbacks, ["read_status", "config_aneg", "unknown#1234"]);
    }

    #[test]
    fn a_damaged_binary_capture_gives_what_precedes_the_damage() {
        let bytes = recorded(Encoding::Binary, None);
        let whole = read(&bytes);
        let header_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        for cut in header_end..bytes.len() {
            let cut_short = read(&bytes[..cut]);
            assert!(whole.events.starts_with(&cut_short.events), "cut at {cut}");
            let last = &cut_short.issues.last().unwrap().problem;
            assert_eq!(last, &Problem::NotClosed, "cut at {cut}");
        }
        let mut corrupt = bytes.clone();
        corrupt[header_end] = b'X';
        let read_corrupt = read(&corrupt);
        assert!(read_corrupt.events.is_empty());
        let problems: Vec<_> = read_corrupt.issues.iter().map(|i| &i.problem).collect();
        assert!(
            matches!(problems[..], [Problem::Corrupt(_), Problem::NotClosed]),
            "{problems:?}"
        );
    }
}
