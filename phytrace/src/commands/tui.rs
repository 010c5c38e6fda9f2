//! `phytrace tui`: the terminal UI, live or on a capture file.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::capture::Header;
use crate::commands::FollowArgs;
use crate::event::PhyFilter;
use crate::exit::{Failure, FailureKind};
use crate::probe::loader::DEFAULT_RING_SIZE;
use crate::probe::tracer::Tracer;
use crate::records::clock::clock_now;
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

/// Arguments of `phytrace tui`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  sudo phytrace tui --module ax88796b_rust
  phytrace tui --replay link.ptrace --speed 10
  phytrace tui --replay link.ptrace --paused      (then `n` steps event by event)

Press ? in the TUI for the keys. NO_COLOR=1 draws without colours.")]
pub struct TuiArgs {
    /// Replay this capture file instead of tracing live.
    #[arg(long, value_name = "FILE")]
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
    /// Live: size of the kernel ring buffer in bytes (a power of two).
    #[arg(long, default_value_t = DEFAULT_RING_SIZE, value_name = "BYTES", conflicts_with = "replay")]
    pub ring_size: u32,
}

impl Default for TuiArgs {
    /// Live, as `phytrace` alone on a terminal runs it.
    fn default() -> Self {
        Self {
            replay: None,
            speed: 1.0,
            paused: false,
            keep: DEFAULT_KEEP,
            phy: None,
            follow: FollowArgs::default(),
            ring_size: DEFAULT_RING_SIZE,
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // The source starts before the terminal changes mode, so its errors print plainly.
        let (mut source, start_ns) = open_source(args)?;
        let mut app = App::new(
            source.header().clone(),
            start_ns,
            args.keep,
            Theme::from_env(),
        );
        app.phy_filter = args.phy.clone();
        app.paused = args.paused;
        app.console_shared = args.replay.is_none() && tui::console::is_shared();
        tui::run(&mut app, &mut source).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The live tracer or the capture file, and the time the display counts from.
fn open_source(args: &TuiArgs) -> Result<(Source, u64)> {
    match &args.replay {
        Some(path) => {
            let replay = ReplaySource::open(path, args.speed, args.paused)
                .map_err(|e| Failure::new(FailureKind::BadInput, format!("{e:#}")))?;
            let start = replay.header().clock.mono_ns;
            Ok((Source::Replay(Box::new(replay)), start))
        }
        None => {
            let clock = clock_now();
            let tracer = Tracer::start(args.follow.tracer_options(args.ring_size))?;
            let header = Header::for_this_host(tracer.session(clock));
            let mut live = LiveSource::new(tracer, header, args.keep);
            live.set_paused(args.paused);
            Ok((Source::Live(Box::new(live)), clock.mono_ns))
        }
    }
}
