//! `phytrace check`: assert the ordering rules of a spec on captures, for CI.

use std::fs::File;
use std::io::{self, Write};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::FollowArgs;
use super::record::{command_outcome, print_progress, print_summary};
use crate::capture::{Capture, Problem};
use crate::check::{self, junit, ktap, report, report::Checked, spec::Spec};
use crate::exit::{self, EXIT_VIOLATION, Failure, FailureKind, Status};
use crate::output::{self, Target};
use crate::probe::loader::DEFAULT_RING_SIZE;
use crate::recording::{self, DEFAULT_ENCODING, Recording};

/// Most read issues printed per capture; the rest are counted.
const MAX_WARNINGS: usize = 10;

/// `check --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  phytrace check --spec specs/ax88796b.spec capture.ptrace
  phytrace check --spec specs/ax88796b.spec --junit report.xml a.ptrace b.ptrace
  phytrace check --spec specs/ax88796b.spec --junit - a.ptrace > report.xml
  phytrace check --spec specs/ax88796b.spec --format ktap capture.ptrace > results.ktap
  sudo phytrace check --spec specs/ax88796b.spec -o run.ptrace -- ./plug-unplug.sh

The rule language is described in docs/check.md. A bad spec's error shows its line and column.
The report goes to standard output, or to standard error when `--junit -` or `-o -` takes
standard output. With COMMAND, a violated rule exits 1 whatever COMMAND did.

`--format ktap` writes KTAP version 1, as the kernel's tests do: a test per rule, a subtest per
PHY it checked, each PHY's violations on `#` diagnostic lines, `# SKIP` for a rule whose scope
matched no PHY. With several captures, each capture is a test and its rules are its subtests.";

/// What `check` reports in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReportFormat {
    /// A status line per rule, then each violation with the events around it.
    #[default]
    Text,
    /// KTAP version 1, the kernel's test output, for kernel CI (docs/check.md).
    Ktap,
}

/// Check ordering rules on captures (or on a recording of COMMAND).
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &[
    Status::Success,
    Status::Violation,
    Status::BadInput,
    Status::TracingUnavailable,
    Status::Output,
    Status::Other,
    Status::CommandFailed,
]))]
pub struct CheckArgs {
    /// The rules to check (see docs/check.md).
    #[arg(long, value_name = "SPEC")]
    pub spec: PathBuf,
    /// Capture files to check, each on its own.
    #[arg(value_name = "CAPTURE", required_unless_present = "command")]
    pub captures: Vec<PathBuf>,
    /// The report's format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write the results as JUnit XML to OUT (`-`: standard output).
    #[arg(long, value_name = "OUT")]
    pub junit: Option<Target>,
    /// With COMMAND: keep the recording in FILE (`-`: write it to standard output once
    /// checked); default: a temporary file, removed.
    #[arg(short, long, value_name = "FILE", requires = "command")]
    pub output: Option<Target>,
    /// With COMMAND: PHY driver module to follow (repeatable), as `record --module`.
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

/// Whether `target` is standard output.
fn is_stdout(target: &Option<Target>) -> bool {
    target.as_ref().is_some_and(Target::is_stdout)
}

/// Runs `phytrace check` on stdout and stderr.
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    if is_stdout(&args.output) && is_stdout(&args.junit) {
        return Err(bad_input(
            "the capture (`-o -`) and the JUnit report (`--junit -`) cannot both go to standard \
             output"
                .to_owned(),
        ));
    }
    let spec = load_spec(&args.spec)?;
    let stdout_taken = is_stdout(&args.output) || is_stdout(&args.junit);
    // Not locked: the tracer's threads may say something on stderr while COMMAND runs.
    let mut report: Box<dyn Write> = if stdout_taken {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    };
    if args.command.is_empty() {
        return check(args, &spec, &args.captures, &mut report);
    }
    let temp;
    let path = match &args.output {
        Some(Target::File(path)) => path.clone(),
        Some(Target::Stdout) | None => {
            temp = tempfile::Builder::new()
                .prefix("phytrace-check-")
                .suffix(".ptrace")
                .tempfile()
                .context("creating a temporary capture file")?;
            temp.path().to_owned()
        }
    };
    let output = Target::File(path.clone());
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
            stdout_taken,
            metrics: None,
        },
        |p| print_progress(&output, p),
    )?;
    print_summary(&output, &recorded);
    let code = check(args, &spec, std::slice::from_ref(&path), &mut report)?;
    if is_stdout(&args.output) {
        output::to_target(&Target::Stdout, |out| {
            io::copy(&mut File::open(&path)?, out).map(drop)
        })?;
    }
    let command = command_outcome(recorded.command_status());
    Ok(match (command, recorded.command_status()) {
        (Status::CommandFailed, Some(status)) if code == ExitCode::SUCCESS => {
            eprintln!(
                "phytrace: error: `{}` failed ({status}) although every rule holds",
                args.command.join(" "),
            );
            command.exit_code()
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
    let text = match args.format {
        ReportFormat::Text => runs
            .iter()
            .map(|run| report::text(&spec_name, spec, run))
            .collect::<Vec<_>>()
            .join("\n"),
        ReportFormat::Ktap => ktap::document(&spec_name, spec, &runs),
    };
    output::print_to(out, text.as_bytes())?;
    if let Some(target) = &args.junit {
        let document = junit::document(&spec_name, spec, &runs);
        output::to_target(target, |out| out.write_all(document.as_bytes()))?;
    }
    Ok(if runs.iter().any(|r| r.failures() > 0) {
        ExitCode::from(EXIT_VIOLATION)
    } else {
        ExitCode::SUCCESS
    })
}
