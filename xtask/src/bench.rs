//! `cargo xtask bench`: phytrace against bpftrace and against no tracing, side by side in one
//! VM boot (`scenarios/bench.sh`), and a QT2025's Clause 45 firmware load untraced and recorded;
//! then start to attached on Debian's stock kernel, in a boot of its own
//! (`scenarios/bench-start.sh`); written to `docs/benchmarks.json` and `docs/benchmarks.md`.
//! This runs the guest; [`rows`] reads what it wrote, [`report`] makes the figures of it.

mod against;
mod report;
mod rows;

use std::{fs, process::Command};

use anyhow::{Context as _, bail};

use crate::{paths, run, vm};
use report::{Figures, Setting};
use rows::Rows;

/// The least time a bench guest is given (`--timeout` may give more).
const GUEST_SECS: u64 = 3600;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Rounds of P1, C1 and C45 (each runs untraced and with every tracer once) and of each P3
    /// rate.
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Rounds of P2 (each starts and stops every tracer once).
    #[arg(long, default_value_t = 9)]
    pub starts: u32,
    /// MDIO reads per P1 burst.
    #[arg(long, default_value_t = 20_000)]
    pub reads: u32,
    /// Write docs/benchmarks.md and .json again from the last run's results
    /// (target/vm-out/bench.jsonl), without booting the guest.
    #[arg(long)]
    pub report_only: bool,
    /// Instead: this tree's release build and REV's (a commit, `HEAD~1`), alternated in one
    /// boot, on P1, C1 and start to attached; the table goes to standard output and
    /// target/vm-out/compare.md.
    #[arg(long, value_name = "REV", conflicts_with = "report_only")]
    pub against: Option<String>,
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    if let Some(rev) = &args.against {
        against::run(rev, args.repeats, args.reads, &args.vm)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let results = paths::vm_out().join("bench.jsonl");
    let start_results = paths::vm_out().join("bench-start.jsonl");
    let kernel = if args.report_only {
        crate::kernel::locate(crate::arch::Arch::X86_64)?
    } else {
        let (kernel, mut options) = vm::prepare_release(&args.vm)?;
        // Every section with every tracer takes about 35 minutes of a TCG guest.
        options.timeout = options.timeout.max(GUEST_SECS);
        let floor = floor_runner()?;
        let bpftrace_root = crate::debian_root::BPFTRACE.prepare()?;
        let _ = fs::remove_file(&results);
        let _ = fs::remove_file(&start_results);
        let command = vec![
            "/bin/bash".to_owned(),
            paths::workspace()
                .join("scenarios/bench.sh")
                .display()
                .to_string(),
            format!("REPEATS={}", args.repeats),
            format!("STARTS={}", args.starts),
            format!("READS={}", args.reads),
            format!("FLOOR_BIN={}", floor.display()),
            format!("BPFTRACE_ROOT={}", bpftrace_root.display()),
        ];
        let code = vm::boot(&kernel, &options, &command)?;
        if code != 0 {
            bail!("the benchmark failed in the guest (exit status {code})");
        }
        let command = vec![
            "/bin/bash".to_owned(),
            paths::workspace()
                .join("scenarios/bench-start.sh")
                .display()
                .to_string(),
            format!("STARTS={}", args.starts),
            format!("BPFTRACE_ROOT={}", bpftrace_root.display()),
        ];
        let code = vm::boot(
            &crate::kernel::Kernel::stock(crate::stock::DEBIAN_73)?,
            &options,
            &command,
        )?;
        if code != 0 {
            bail!("the start benchmark failed on Debian's kernel (exit status {code})");
        }
        kernel
    };
    let text =
        fs::read_to_string(&results).with_context(|| format!("reading {}", results.display()))?;
    let rows = Rows::parse(&text).context("parsing the guest's results")?;
    let text = fs::read_to_string(&start_results)
        .with_context(|| format!("reading {}", start_results.display()))?;
    let stock = Rows::parse(&text).context("parsing the results on Debian's kernel")?;
    let release =
        fs::read_to_string(kernel.tree.join("include/config/kernel.release")).unwrap_or_default();
    let setting = Setting {
        // The results' own time: a report rewritten later still says when they were measured.
        date: run::output(
            Command::new("date")
                .arg("-u")
                .arg("-r")
                .arg(&results)
                .arg("+%Y-%m-%d %H:%M UTC"),
        )?,
        host: run::output(Command::new("uname").arg("-srm"))?,
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        release: release.trim().to_owned(),
    };
    let figures = Figures::of(&rows, &stock, setting)?;
    let (json, markdown) = (figures.json(), figures.markdown()?);
    let docs = paths::workspace().join("docs");
    fs::write(
        docs.join("benchmarks.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    fs::write(docs.join("benchmarks.md"), markdown)?;
    eprintln!("==> bench: results in docs/benchmarks.md and docs/benchmarks.json");
    Ok(std::process::ExitCode::SUCCESS)
}

/// The same-fields floor's runner (`phytrace/examples/mdio_floor.rs`), built with `--release`.
fn floor_runner() -> anyhow::Result<std::path::PathBuf> {
    let started = run::step("building the same-fields floor (release)");
    run::status(
        Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "--package",
                "phytrace",
                "--example",
                "mdio_floor",
            ])
            .current_dir(paths::workspace()),
    )?;
    run::done("build", started);
    Ok(paths::target().join("release/examples/mdio_floor"))
}
