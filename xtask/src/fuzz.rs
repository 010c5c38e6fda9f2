//! `cargo xtask fuzz`: runs each fuzz target of `fuzz/` (cargo-fuzz, libFuzzer) for a number of
//! inputs and reports, per target, the inputs executed, the time taken and any crash.
//!
//! The corpus grows in `$XDG_CACHE_HOME/phytrace/fuzz/TARGET` (out of git, kept across runs),
//! starting from the seeds in `fuzz/seeds/TARGET`; libFuzzer's output goes to
//! `target/fuzz/TARGET.log`, and a crashing input to `fuzz/artifacts/TARGET/`.

use std::{
    fs::{self, File},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context as _, Result, bail};

use crate::{paths, run, setup};

mod outcome;

use outcome::Outcome;

/// cargo-fuzz, installed with `cargo install` if missing: (binary, crate, version).
const CARGO_FUZZ: (&str, &str, &str) = ("cargo-fuzz", "cargo-fuzz", "0.13.2");

/// A fuzz target of `fuzz/Cargo.toml`.
struct Target {
    /// Its `[[bin]]` name, also the name of its seed directory.
    name: &'static str,
    /// libFuzzer dictionary, relative to `fuzz/`.
    dict: &'static str,
    /// Seconds one input may run before libFuzzer reports it as a hang.
    timeout_secs: u32,
    /// Memory (MiB) past which libFuzzer reports an input as exhausting it.
    rss_limit_mb: u32,
}

/// Every fuzz target.
const TARGETS: &[Target] = &[
    Target {
        name: "capture_reader",
        dict: "capture.dict",
        timeout_secs: 30,
        rss_limit_mb: 2048,
    },
    // Every command's processing of a capture: its time and memory must not follow the values
    // inside it, so the limits are tight.
    Target {
        name: "capture_commands",
        dict: "capture.dict",
        timeout_secs: 10,
        rss_limit_mb: 512,
    },
    Target {
        name: "spec_parser",
        dict: "spec.dict",
        timeout_secs: 30,
        rss_limit_mb: 2048,
    },
    Target {
        name: "call_site_cache",
        dict: "cache.dict",
        timeout_secs: 10,
        rss_limit_mb: 512,
    },
];

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Inputs to run per target.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub runs: u64,
    /// Only this target (repeatable; default: all).
    #[arg(long = "target", value_name = "TARGET", value_parser = target_names())]
    pub targets: Vec<String>,
    /// Longest input, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub max_len: usize,
}

fn target_names() -> clap::builder::PossibleValuesParser {
    TARGETS.iter().map(|t| t.name).collect::<Vec<_>>().into()
}

/// What one target's run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzReport {
    /// The target.
    pub target: &'static str,
    /// Inputs executed (libFuzzer's `Done N runs` line, else its last progress line).
    pub runs: u64,
    /// Seconds libFuzzer ran (from the same line), else the wall time including the build.
    pub seconds: u64,
    /// Why it failed (a crash, a hang, too few runs).
    pub failure: Option<String>,
    /// The input that made it fail, as libFuzzer saved it.
    pub input: Option<PathBuf>,
}

/// Installs cargo-fuzz if needed, runs the selected targets in turn, prints one line per
/// target; fails if any crashed or ran fewer than `args.runs` inputs.
pub fn run(args: &FuzzArgs) -> Result<Vec<FuzzReport>> {
    setup::toolchains()?;
    let (binary, krate, version) = CARGO_FUZZ;
    setup::cargo_tool(binary, krate, version)?;
    let nightly = setup::ebpf_toolchain()?;
    let started = run::step(&format!("fuzz: {} inputs per target", args.runs));
    let mut reports = Vec::new();
    for target in TARGETS
        .iter()
        .filter(|t| args.targets.is_empty() || args.targets.iter().any(|n| n == t.name))
    {
        reports.push(fuzz_target(target, args, &nightly)?);
    }
    run::done("fuzz", started);
    eprintln!(
        "\n{:<16} {:>12} {:>9}  result",
        "target", "inputs", "seconds"
    );
    for r in &reports {
        eprintln!(
            "{:<16} {:>12} {:>9}  {}",
            r.target,
            r.runs,
            r.seconds,
            r.failure.as_deref().unwrap_or("ok")
        );
    }
    let failed: Vec<_> = reports
        .iter()
        .filter(|r| r.failure.is_some())
        .map(|r| match &r.input {
            Some(input) => format!(
                "{} (reproduce: AYA_BUILD_SKIP=1 cargo +{nightly} fuzz run {} {})",
                r.target,
                r.target,
                input.display()
            ),
            None => r.target.to_owned(),
        })
        .collect();
    if !failed.is_empty() {
        bail!(
            "fuzzing failed for {}; see docs/fuzzing.md",
            failed.join(", ")
        );
    }
    Ok(reports)
}

/// Builds and runs one target with libFuzzer, its output in a log file.
fn fuzz_target(target: &Target, args: &FuzzArgs, nightly: &str) -> Result<FuzzReport> {
    let fuzz_dir = paths::workspace().join("fuzz");
    let corpus = paths::cache().join("fuzz").join(target.name);
    let logs = paths::target().join("fuzz");
    for dir in [&corpus, &logs] {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log_path = log_path(target);
    let log = File::create(&log_path)
        .with_context(|| format!("creating the log {}", log_path.display()))?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(paths::workspace())
        // phytrace's build.rs: no eBPF object needed to read captures and specs.
        .env("AYA_BUILD_SKIP", "1")
        .arg(format!("+{nightly}"))
        .args(["fuzz", "run", target.name])
        .arg(&corpus)
        .arg(fuzz_dir.join("seeds").join(target.name))
        .arg("--")
        .arg(format!("-runs={}", args.runs))
        .arg(format!("-max_len={}", args.max_len))
        .arg(format!("-timeout={}", target.timeout_secs))
        .arg(format!("-rss_limit_mb={}", target.rss_limit_mb))
        .arg(format!("-dict={}", fuzz_dir.join(target.dict).display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("duplicating the log file")?)
        .stderr(log);
    eprintln!(
        "    {}: building, then {} inputs (log: {})",
        target.name,
        args.runs,
        log_path.display()
    );
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{}`", run::show(&cmd)))?;
    let text = fs::read_to_string(&log_path)
        .with_context(|| format!("reading the log {}", log_path.display()))?;
    let outcome = Outcome::parse(&text);
    let failure = if let Some(why) = &outcome.error {
        Some(why.clone())
    } else if !status.success() {
        Some(format!("`cargo fuzz run` failed ({status})"))
    } else {
        match outcome.done {
            None => Some("libFuzzer did not report its runs".to_owned()),
            Some((runs, _)) if runs < args.runs => {
                Some(format!("only {runs} of {} inputs ran", args.runs))
            }
            Some(_) => None,
        }
    };
    if failure.is_some() {
        print_tail(&text, &log_path);
    }
    let (runs, seconds) = outcome
        .done
        .unwrap_or((outcome.progress, started.elapsed().as_secs()));
    Ok(FuzzReport {
        target: target.name,
        runs,
        seconds,
        failure,
        input: outcome.input,
    })
}

/// What the last run of each target did, read back from its log (for reports written later).
pub fn logged() -> Vec<FuzzReport> {
    TARGETS
        .iter()
        .filter_map(|target| {
            let text = fs::read_to_string(log_path(target)).ok()?;
            let outcome = Outcome::parse(&text);
            let (runs, seconds) = outcome.done?;
            Some(FuzzReport {
                target: target.name,
                runs,
                seconds,
                failure: outcome.error,
                input: outcome.input,
            })
        })
        .collect()
}

fn log_path(target: &Target) -> PathBuf {
    paths::target()
        .join("fuzz")
        .join(format!("{}.log", target.name))
}

/// Shows the end of a failed run's log.
fn print_tail(text: &str, log: &Path) {
    const LINES: usize = 30;
    let lines: Vec<_> = text.lines().collect();
    eprintln!("    last lines of {}:", log.display());
    for line in &lines[lines.len().saturating_sub(LINES)..] {
        eprintln!("    | {line}");
    }
}
