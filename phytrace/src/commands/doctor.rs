//! `phytrace doctor`: can this machine trace a Rust PHY driver? Prints each check of
//! [`diagnose::checks`] with what it found and, when it fails, how to fix it.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::{
    diagnose::checks::{self, Status},
    exit::FailureKind,
    output,
};

/// Arguments of `phytrace doctor`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  sudo phytrace doctor\n  sudo phytrace doctor --module ax88796b_rust"
)]
pub struct DoctorArgs {
    /// The driver module you want to trace.
    #[arg(long, default_value = "ax88796b_rust")]
    pub module: String,
}

/// Runs every check, prints them, and exits 0 if tracing can work, 3 if not.
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let checks = checks::run_all(&args.module);
    let mut out = String::new();
    for check in &checks {
        let mark = match check.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skipped => "skip",
        };
        writeln!(out, "[{mark}] {:<26} {}", check.name, check.detail)?;
        if let Some(fix) = &check.fix {
            writeln!(out, "       {:<26} fix: {fix}", "")?;
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        writeln!(out, "phytrace can trace on this machine.")?;
    } else {
        writeln!(
            out,
            "phytrace cannot trace on this machine: {failed} check(s) failed."
        )?;
    }
    output::print(out.as_bytes())?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FailureKind::TracingUnavailable.code())
    })
}
