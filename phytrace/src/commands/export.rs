//! `phytrace export`: convert a capture for another tool.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::capture::Capture;
use crate::exit::{self, Failure, FailureKind, Status};
use crate::export::perfetto;
use crate::output::{self, Target};

/// `export --help`'s examples.
const EXAMPLES: &str = "Examples:
  phytrace export --format perfetto capture.ptrace -o trace.json
  # then open trace.json in https://ui.perfetto.dev
  phytrace export capture.ptrace -o - | gzip > trace.json.gz";

/// Convert a capture for another tool (Perfetto).
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::READS))]
pub struct ExportArgs {
    /// Capture file to convert.
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Perfetto)]
    pub format: Format,
    /// File to write, or `-` for standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Target,
}

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Chrome JSON trace events, for ui.perfetto.dev and chrome://tracing.
    Perfetto,
}

/// Runs `phytrace export`.
pub fn run(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let capture = Capture::read(&args.capture)
        .map_err(|e| Failure::new(FailureKind::BadInput, e.to_string()))?;
    for issue in capture.issues.iter().take(5) {
        eprintln!("phytrace: warning: {}: {issue}", args.capture.display());
    }
    let trace = match args.format {
        Format::Perfetto => perfetto::trace(&capture),
    };
    output::to_target(&args.output, |out| Ok(serde_json::to_writer(out, &trace)?))?;
    Ok(ExitCode::SUCCESS)
}
