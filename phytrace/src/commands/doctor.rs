//! `phytrace doctor`: can this machine trace its PHY drivers, C or Rust? Prints each check of
//! [`diagnose::checks`] with what it found and, when it does not pass, how to fix it.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::{
    commands::BtfArgs,
    diagnose::checks::{self, Report, Status as CheckStatus},
    exit::{self, Status},
    kernel::module_files,
    output,
};

/// How `doctor` prints its report.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One line per check, with its fix and items below it.
    Text,
    /// One JSON object: `can_trace`, `checks` (name, status, detail, fix, items) and `phys`.
    Json,
}

/// `phytrace doctor --help`'s examples.
const EXAMPLES: &str = "Examples:
  sudo phytrace doctor
  sudo phytrace doctor --module ax88796b        (the C Asix driver)
  sudo phytrace doctor --module ax88796b_rust   (the Rust one)
  phytrace doctor --format json | jq .can_trace

A default session can trace here when no check fails; a warning says what it does with less.";

/// Arguments of `phytrace doctor`.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::INSPECTS))]
pub struct DoctorArgs {
    /// Also check this PHY driver module, C or Rust, loaded or not: the drivers it defines,
    /// the ops each sets and phylib's call sites that trace them (read from its file in the
    /// module tree).
    #[arg(long, value_name = "MODULE")]
    pub module: Option<String>,
    /// Module tree to find module files in; default: /lib/modules/RELEASE of the running
    /// kernel.
    #[arg(long, value_name = "DIR")]
    pub module_tree: Option<PathBuf>,
    #[command(flatten)]
    pub btf: BtfArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs every check, prints them, and exits 0 if tracing can work, 3 if not.
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let report = checks::run_all(&checks::Options {
        module: args.module.clone(),
        module_tree: args
            .module_tree
            .clone()
            .unwrap_or_else(module_files::default_tree),
        btf: args.btf.source(),
    });
    let out = match args.format {
        Format::Text => text(&report)?,
        Format::Json => {
            let mut json = serde_json::to_string_pretty(&serde_json::json!({
                "can_trace": report.can_trace(),
                "checks": report.checks,
                "phys": report.phys,
            }))?;
            json.push('\n');
            json
        }
    };
    output::print(out.as_bytes())?;
    Ok(if report.can_trace() {
        Status::Success
    } else {
        Status::TracingUnavailable
    }
    .exit_code())
}

/// The report as text: `[mark] name detail`, then its items and fix, indented.
fn text(report: &Report) -> anyhow::Result<String> {
    let mut out = String::new();
    for check in &report.checks {
        let mark = match check.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Skipped => "skip",
        };
        writeln!(out, "[{mark}] {:<20} {}", check.name, check.detail)?;
        for item in &check.items {
            writeln!(out, "       {item}")?;
        }
        if let Some(fix) = &check.fix {
            writeln!(out, "       fix: {fix}")?;
        }
    }
    let failed = report
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .count();
    if failed == 0 {
        writeln!(out, "phytrace can trace on this machine.")?;
    } else {
        writeln!(
            out,
            "phytrace cannot trace on this machine: {failed} check(s) failed."
        )?;
    }
    Ok(out)
}
