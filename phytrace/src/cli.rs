//! The command line: one binary, one subcommand per job.

use clap::{Parser, Subcommand};

use crate::commands::doctor::DoctorArgs;

/// Live eBPF tracing of Rust network-PHY drivers: callbacks, MDIO accesses and phy_state.
#[derive(Parser, Debug)]
#[command(name = "phytrace", version, about, long_about = None)]
#[command(after_help = "Example:\n  sudo phytrace doctor")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// phytrace's subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check that this machine can trace a Rust PHY driver, and say how to fix what is missing.
    Doctor(DoctorArgs),
}
