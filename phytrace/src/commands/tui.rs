//! `phytrace tui`: the terminal UI, live or on a capture file.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;

use crate::capture::Header;
use crate::commands::FollowArgs;
use crate::event::PhyFilter;
use crate::exit::{self, Failure, FailureKind, Status};
use crate::metrics::{Feed, LiveHealth, Metrics, serve};
use crate::probe::loader::DEFAULT_RING_SIZE;
use crate::records::clock::clock_now;
use crate::session::Tracer;
use crate::tui::{
    self,
    app::{App, DEFAULT_KEEP},
    source::{LiveSource, ReplaySource, SPEED_RANGE, Source},
    ui::theme::Theme,
};

/// Most events `--keep` may hold (each takes about 300 bytes).
const MAX_KEEP: usize = 10_000_000;

/// `--keep`'s value: from 1 to [`MAX_KEEP`].
fn keep_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_KEEP).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from 1 to {MAX_KEEP}")),
    }
}

/// `tui --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  sudo phytrace tui --module ax88796b_rust
  phytrace tui link.ptrace --speed 10
  phytrace tui link.ptrace --paused      (then `n` steps event by event)
  sudo phytrace tui --metrics 127.0.0.1:9479   (Prometheus scrapes /metrics meanwhile)

Press ? in the TUI for the keys. NO_COLOR=1 draws without colours.";

/// Arguments of `phytrace tui`.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::after_help(EXAMPLES, &[
    Status::Success,
    Status::BadInput,
    Status::TracingUnavailable,
    Status::Other,
]))]
pub struct TuiArgs {
    /// Capture file to replay instead of tracing live.
    #[arg(value_name = "CAPTURE")]
    pub capture: Option<PathBuf>,
    /// The same as CAPTURE, as a flag.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "capture")]
    pub replay: Option<PathBuf>,
    /// Replay speed factor (`+`/`-` double or halve it while running).
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed, value_name = "FACTOR")]
    pub speed: f64,
    /// Start paused.
    #[arg(long)]
    pub paused: bool,
    /// Events held for the log and the timeline; older ones leave the view (the model keeps
    /// its state).
    #[arg(long, default_value_t = DEFAULT_KEEP, value_name = "N", value_parser = keep_count)]
    pub keep: usize,
    /// Keep only events of PHYs whose `bus:addr`, bus id or driver name contains FILTER.
    #[arg(long, value_name = "FILTER")]
    pub phy: Option<PhyFilter>,
    #[command(flatten)]
    pub follow: FollowArgs,
    /// Live: size of the kernel ring buffer: bytes, or with a K, M or G suffix (powers of
    /// 1024); a power of two, at least 4K.
    #[arg(
        long,
        default_value = "4M",
        value_parser = super::ring_size,
        value_name = "SIZE",
        conflicts_with_all = ["capture", "replay"]
    )]
    pub ring_size: u32,
    /// Live: also serve the session's metrics over HTTP on ADDR:PORT, for Prometheus to
    /// scrape at `/metrics` (OpenMetrics text, docs/lab.md): of the events the TUI takes in.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        conflicts_with_all = ["capture", "replay"]
    )]
    pub metrics: Option<SocketAddr>,
}

impl TuiArgs {
    /// The capture to replay, if any (positional or `--replay`).
    pub fn replay(&self) -> Option<&Path> {
        self.capture.as_deref().or(self.replay.as_deref())
    }
}

impl Default for TuiArgs {
    /// Live, as `phytrace` alone on a terminal runs it.
    fn default() -> Self {
        Self {
            capture: None,
            replay: None,
            speed: 1.0,
            paused: false,
            keep: DEFAULT_KEEP,
            phy: None,
            follow: FollowArgs::default(),
            ring_size: DEFAULT_RING_SIZE,
            metrics: None,
        }
    }
}

fn parse_speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (SPEED_RANGE.0..=SPEED_RANGE.1).contains(&speed) {
        Ok(speed)
    } else {
        Err(format!("between {} and {}", SPEED_RANGE.0, SPEED_RANGE.1))
    }
}

/// Runs `phytrace tui`.
pub fn run(args: &TuiArgs) -> Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        return Err(
            Failure::new(FailureKind::BadInput, "the TUI needs a terminal on stdout").into(),
        );
    }
    // Bound before the probes are attached: a port in use fails at once.
    let listener = args.metrics.map(serve::bind).transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // The source starts before the terminal changes mode, so its errors print plainly.
        let (mut source, start_ns, health) = open_source(args)?;
        let mut app = App::new(
            source.header().clone(),
            start_ns,
            args.keep,
            Theme::from_env(),
        );
        if let (Some(listener), Some(health)) = (listener, health) {
            let metrics = Arc::new(Metrics::new(source.header(), Some(health)));
            serve::spawn(listener, Arc::clone(&metrics))?;
            app.metrics = Some(Feed::new(metrics));
        }
        app.phy_filter = args.phy.clone();
        app.paused = args.paused;
        app.console_shared = args.replay().is_none() && tui::console::is_shared();
        tui::run(&mut app, &mut source).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The live tracer or the capture file, the time the display counts from, and what the
/// metrics say of a live session's probes.
fn open_source(args: &TuiArgs) -> Result<(Source, u64, Option<LiveHealth>)> {
    match args.replay() {
        Some(path) => {
            let replay = ReplaySource::open(path, args.speed, args.paused)
                .map_err(|e| Failure::new(FailureKind::BadInput, format!("{e:#}")))?;
            let start = replay.header().clock.mono_ns;
            Ok((Source::Replay(Box::new(replay)), start, None))
        }
        None => {
            let clock = clock_now();
            let tracer = Tracer::start(args.follow.tracer_options(args.ring_size))?;
            let health = LiveHealth {
                ring_size: args.ring_size,
                call_sites_refused: tracer.call_sites().map_or(0, |sites| sites.refused()),
            };
            let header = Header::for_this_host(tracer.session(clock));
            let mut live = LiveSource::new(tracer, header, args.keep);
            live.set_paused(args.paused);
            Ok((Source::Live(Box::new(live)), clock.mono_ns, Some(health)))
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<TuiArgs, clap::Error> {
        let argv = ["phytrace", "tui"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Some(Command::Tui(args)) => Ok(args),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_capture_is_replayed_positional_or_by_the_old_flag() {
        let positional = parse(&["link.ptrace", "--speed", "10"]).unwrap();
        assert_eq!(positional.replay(), Some(Path::new("link.ptrace")));
        let flag = parse(&["--replay", "link.ptrace"]).unwrap();
        assert_eq!(flag.replay(), Some(Path::new("link.ptrace")));
        let live = parse(&["--ring-size", "16M"]).unwrap();
        assert_eq!((live.replay(), live.ring_size), (None, 16 << 20));
        assert_eq!(parse(&[]).unwrap().ring_size, DEFAULT_RING_SIZE);
    }

    #[test]
    fn one_capture_and_no_ring_size_with_it() {
        for args in [
            &["a.ptrace", "--replay", "b.ptrace"][..],
            &["a.ptrace", "--ring-size", "8M"],
            &["--replay", "a.ptrace", "--ring-size", "8M"],
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}"
            );
        }
    }
}
