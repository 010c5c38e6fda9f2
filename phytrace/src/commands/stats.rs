//! `phytrace stats`: latency, error, MDIO-rate, link and state statistics of captures.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use super::Format;
use crate::capture::Capture;
use crate::exit::{self, Failure, FailureKind, Status};
use crate::output;
use crate::stats::{self, SCHEMA};

/// `stats --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  phytrace stats capture.ptrace
  phytrace stats a.ptrace b.ptrace
  phytrace stats --format json capture.ptrace |
    jq '.captures[0].stats.phys[].callbacks[] | {name, p99: .latency.p99_ns}'

Latency percentiles are nearest rank over every completed call, from an HDR histogram with 3
significant digits (within 0.1%); calls whose return was lost (capture ended, module unloaded,
events lost) are counted and listed apart. The JSON schema is in docs/stats.md.";

/// Statistics of captures: latencies, errors, MDIO rate, link history, phy_state times.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::READS))]
pub struct StatsArgs {
    /// Capture files, each reported on its own.
    #[arg(value_name = "CAPTURE", required = true)]
    pub captures: Vec<PathBuf>,
    /// Output format: tables, or one JSON document (docs/stats.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `phytrace stats`.
pub fn run(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let mut reports = Vec::with_capacity(args.captures.len());
    for path in &args.captures {
        let capture =
            Capture::read(path).map_err(|e| Failure::new(FailureKind::BadInput, e.to_string()))?;
        for issue in capture.issues.iter().take(5) {
            eprintln!("phytrace: warning: {}: {issue}", path.display());
        }
        reports.push((path.display().to_string(), stats::of_capture(&capture)));
    }
    let bytes = match args.format {
        Format::Text => reports
            .iter()
            .map(|(name, report)| stats::text::report(name, report))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        Format::Json => {
            let captures: Vec<_> = reports
                .iter()
                .map(|(name, report)| json!({"capture": name, "stats": report}))
                .collect();
            let mut text =
                serde_json::to_string_pretty(&json!({"schema": SCHEMA, "captures": captures}))?;
            text.push('\n');
            text.into_bytes()
        }
    };
    output::print(&bytes)?;
    Ok(ExitCode::SUCCESS)
}
