//! `phytrace check`: assert the ordering rules of a spec on captures, for CI.

use std::io::{self, Write};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::FollowArgs;
use super::record::{print_progress, print_summary};
use crate::capture::{Capture, Problem};
use crate::check::{self, junit, report, report::Checked, spec::Spec};
use crate::exit::{EXIT_VIOLATION, Failure, FailureKind};
use crate::output;
use crate::probe::loader::DEFAULT_RING_SIZE;
use crate::recording::{self, DEFAULT_ENCODING, Recording};

/// Most read issues printed per capture; the rest are counted.
const MAX_WARNINGS: usize = 10;

/// Check ordering rules on captures (or on a recording of COMMAND).
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = "Examples:
  phytrace check --spec specs/ax88796b.spec capture.ptrace
  phytrace check --spec specs/ax88796b.spec --junit report.xml a.ptrace b.ptrace
  sudo phytrace check --spec specs/ax88796b.spec -o run.ptrace -- ./plug-unplug.sh

The rule language is described in docs/check.md. Exit status: 0 when every rule holds, 1 when
a rule is violated, 2 for a bad spec (its line and column are shown) or an unreadable capture,
4 when the report cannot be written; with COMMAND, COMMAND's own status when it fails and every
rule holds.")]
pub struct CheckArgs {
    /// The rules to check (see docs/check.md).
    #[arg(long, value_name = "SPEC")]
    pub spec: PathBuf,
    /// Capture files to check, each on its own.
    #[arg(value_name = "CAPTURE", required_unless_present = "command")]
    pub captures: Vec<PathBuf>,
    /// Also write the results as JUnit XML to OUT.
    #[arg(long, value_name = "OUT")]
    pub junit: Option<PathBuf>,
    /// With COMMAND: keep the recording in FILE (default: a temporary file, removed).
    #[arg(short, long, value_name = "FILE", requires = "command")]
    pub output: Option<PathBuf>,
    /// With COMMAND: driver module to follow (repeatable); default: every Rust PHY driver.
    #[arg(long = "module", value_name = "MODULE", requires = "command")]
    pub modules: Vec<String>,
    /// Record while COMMAND runs, then check the recording.
    #[arg(last = true, value_name = "COMMAND", conflicts_with = "captures")]
    pub command: Vec<String>,
}

fn bad_input(message: String) -> anyhow::Error {
    Failure::new(FailureKind::BadInput, message).into()
}

/// Reads and parses the spec at `path`.
fn load_spec(path: &Path) -> anyhow::Result<Spec> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read spec {}: {e}", path.display())))?;
    let spec = check::parse(&text).map_err(|e| {
        bad_input(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            e.message
        ))
    })?;
    if spec.rules.is_empty() {
        // Nothing to check would pass every capture: surely not what CI meant.
        return Err(bad_input(format!(
            "{}: no rules (a spec needs at least one `rule` line, see docs/check.md)",
            path.display()
        )));
    }
    Ok(spec)
}

/// Reads a capture, reporting damage on `err`; fails if nothing in it is usable.
fn load_capture(path: &Path, err: &mut impl Write) -> anyhow::Result<Capture> {
    let capture = Capture::read(path).map_err(|e| bad_input(e.to_string()))?;
    let name = path.display();
    for issue in capture.issues.iter().take(MAX_WARNINGS) {
        writeln!(err, "phytrace: warning: {name}: {issue}")?;
    }
    if let Some(more) = capture
        .issues
        .len()
        .checked_sub(MAX_WARNINGS)
        .filter(|&n| n > 0)
    {
        writeln!(
            err,
            "phytrace: warning: {name}: {more} more issues not shown"
        )?;
    }
    let damaged = capture
        .issues
        .iter()
        .filter(|i| i.problem != Problem::NotClosed)
        .count();
    if capture.events.is_empty() && damaged > 0 {
        return Err(bad_input(format!(
            "{name}: no event could be read ({damaged} damaged records)"
        )));
    }
    let lost = capture.trailer.as_ref().map_or(0, |t| t.lost + t.discarded);
    if lost > 0 {
        writeln!(
            err,
            "phytrace: warning: {name}: {lost} events were lost while recording; rules may fail or pass wrongly"
        )?;
    }
    Ok(capture)
}

/// Runs `phytrace check` on stdout and stderr.
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let spec = load_spec(&args.spec)?;
    if args.command.is_empty() {
        return check(args, &spec, &args.captures, &mut io::stdout().lock());
    }
    let temp;
    let output = match &args.output {
        Some(path) => path.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("phytrace-check-")
                .suffix(".ptrace")
                .tempfile()
                .context("creating a temporary capture file")?;
            temp.path().to_owned()
        }
    };
    let follow = FollowArgs {
        modules: args.modules.clone(),
        ..FollowArgs::default()
    };
    let recorded = recording::record_to_file(
        &Recording {
            output: output.clone(),
            encoding: DEFAULT_ENCODING,
            duration: None,
            phy: None,
            tracer: follow.tracer_options(DEFAULT_RING_SIZE),
            command: args.command.clone(),
        },
        |p| print_progress(&output, p),
    )?;
    print_summary(&output, &recorded);
    let code = check(args, &spec, &[output], &mut io::stdout().lock())?;
    Ok(match recorded.command_status() {
        Some(status) if code == ExitCode::SUCCESS && !status.success() => {
            eprintln!(
                "phytrace: error: `{}` failed ({status}) although every rule holds",
                args.command.join(" ")
            );
            ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8))
        }
        _ => code,
    })
}

/// Checks `spec` on each of `captures`, printing the reports to `out`.
pub fn check(
    args: &CheckArgs,
    spec: &Spec,
    captures: &[PathBuf],
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let mut err = io::stderr().lock();
    let loaded = captures
        .iter()
        .map(|path| load_capture(path, &mut err))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names: Vec<String> = captures.iter().map(|p| p.display().to_string()).collect();
    let runs: Vec<Checked<'_>> = names
        .iter()
        .zip(&loaded)
        .map(|(name, capture)| Checked::new(name, capture, spec))
        .collect();
    let spec_name = args.spec.display().to_string();
    let text = runs
        .iter()
        .map(|run| report::text(&spec_name, spec, run))
        .collect::<Vec<_>>()
        .join("\n");
    output::print_to(out, text.as_bytes())?;
    if let Some(path) = &args.junit {
        let document = junit::document(&spec_name, spec, &runs);
        output::to_file(path, |out| out.write_all(document.as_bytes()))?;
    }
    Ok(if runs.iter().any(|r| r.failures() > 0) {
        ExitCode::from(EXIT_VIOLATION)
    } else {
        ExitCode::SUCCESS
    })
}
