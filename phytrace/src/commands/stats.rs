//! `phytrace stats`: latency, error, MDIO-rate, link and state statistics of captures.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use crate::capture::Capture;
use crate::exit::{self, Failure, FailureKind, Status};
use crate::stats::{self, SCHEMA};
use crate::{metrics, output};

/// `stats --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  phytrace stats capture.ptrace
  phytrace stats a.ptrace b.ptrace
  phytrace stats --format json capture.ptrace |
    jq '.captures[0].stats.phys[].callbacks[] | {name, p99: .latency.p99_ns}'
  phytrace stats --format openmetrics board.ptrace > /var/lib/node_exporter/phytrace.prom

Latency percentiles are nearest rank over every completed call, from an HDR histogram with 3
significant digits (within 0.1%); calls whose return was lost (capture ended, module unloaded,
events lost) are counted and listed apart. The JSON schema is in docs/stats.md.

`--format openmetrics` prints the metric families `record --metrics` serves (docs/lab.md) for
the captures replayed: counters summed over them, gauges as the last one left them.";

/// Statistics of captures: latencies, errors, MDIO rate, link history, phy_state times.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::READS))]
pub struct StatsArgs {
    /// Capture files, each reported on its own.
    #[arg(value_name = "CAPTURE", required = true)]
    pub captures: Vec<PathBuf>,
    /// Output format: tables, one JSON document (docs/stats.md), or OpenMetrics text for
    /// Prometheus (docs/lab.md).
    #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
}

/// How `stats` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Tables, for people.
    #[default]
    Text,
    /// One JSON document, for scripts and CI.
    Json,
    /// OpenMetrics text: the metric families of `record --metrics`, e.g. for the
    /// node_exporter's textfile collector.
    Openmetrics,
}

/// Runs `phytrace stats`.
pub fn run(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let mut captures = Vec::with_capacity(args.captures.len());
    for path in &args.captures {
        let capture =
            Capture::read(path).map_err(|e| Failure::new(FailureKind::BadInput, e.to_string()))?;
        for issue in capture.issues.iter().take(5) {
            eprintln!("phytrace: warning: {}: {issue}", path.display());
        }
        captures.push((path.display().to_string(), capture));
    }
    let reports = || {
        captures
            .iter()
            .map(|(name, capture)| (name, stats::of_capture(capture)))
    };
    let bytes = match args.format {
        StatsFormat::Text => reports()
            .map(|(name, report)| stats::text::report(name, &report))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        StatsFormat::Openmetrics => match captures.last() {
            Some((_, last)) => {
                metrics::of_captures(&last.header, captures.iter().map(|(_, c)| c)).into_bytes()
            }
            None => Vec::new(),
        },
        StatsFormat::Json => {
            let captures: Vec<_> = reports()
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
