//! The command line: one binary, one subcommand per job.

use clap::{Parser, Subcommand};

use crate::commands::{
    check::CheckArgs, diff::DiffArgs, doctor::DoctorArgs, dump::DumpArgs, export::ExportArgs,
    generate::GenerateArgs, probes::ProbesArgs, record::RecordArgs, stats::StatsArgs, tui::TuiArgs,
};
use crate::exit::{self, Status};

/// `phytrace --help`'s examples and conventions.
const EXAMPLES: &str = "Examples:
  sudo phytrace doctor
  sudo phytrace            (the TUI, live)
  phytrace tui link.ptrace (the TUI, replaying a capture)

A capture is given as an argument to every command that reads one. Where a command writes a
file (-o, --junit, --status), `-` is standard output. Machine-readable output is --format json.
Sizes take K, M or G suffixes, powers of 1024 (--ring-size 16M).";

/// Live eBPF tracing of Linux network-PHY drivers, C or Rust: callbacks, MDIO accesses and
/// phy_state.
#[derive(Parser, Debug)]
#[command(name = "phytrace", version, about, long_about = None)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::ALL))]
pub struct Cli {
    /// What to do; without one, `tui` on a terminal, else this help.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// phytrace's subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Watch PHYs live, or replay a capture, in a terminal UI.
    Tui(TuiArgs),
    /// Record events to a capture file, headless (for target boards and CI).
    Record(RecordArgs),
    /// Print a capture file, decoded, one event per line.
    Dump(DumpArgs),
    /// Check ordering rules (a spec, see docs/check.md) on captures, for CI.
    Check(CheckArgs),
    /// Latency, error, MDIO-rate, link and phy_state statistics of captures.
    Stats(StatsArgs),
    /// Compare the MDIO register sequences of two captures, PHY by PHY.
    Diff(DiffArgs),
    /// Convert a capture for another tool (Perfetto's trace viewer).
    Export(ExportArgs),
    /// Show the driver callbacks, PHYs, MDIO probes and struct offsets phytrace would use.
    Probes(ProbesArgs),
    /// Check that this machine can trace its PHY drivers, C or Rust, and say how to fix what is
    /// missing.
    Doctor(DoctorArgs),
    /// Write shell completions or the man page to standard output.
    Generate(GenerateArgs),
}
