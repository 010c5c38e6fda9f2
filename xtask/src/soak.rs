//! `cargo xtask soak`: the long versions of the reliability tests. Fuzzes the capture reader
//! and the spec parser on the host, then boots the VM once and runs the reliability tests
//! (`tests/vm/3?-*.sh`, and `15-record-before-load.sh`) with soak sizes: module churn (and as
//! many reloads counted against the kernel's own kprobe events), SIGKILLs, overload, full disk,
//! privileges, and an hour of link flapping with `record` and the TUI. The figures replace the
//! generated block of `docs/reliability.md` and are kept whole in `docs/reliability.json`.

use std::{fmt::Write as _, fs, process::Command};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::{fuzz, paths, run, vm};

#[derive(clap::Args)]
pub struct SoakArgs {
    /// Minutes of link flapping with `record` and the TUI.
    #[arg(long, default_value_t = 60)]
    pub minutes: u64,
    /// Driver module reloads while recording (churn, and the record-before-load test).
    #[arg(long, default_value_t = 100)]
    pub churn_rounds: u32,
    /// SIGKILLs of `record`.
    #[arg(long, default_value_t = 20)]
    pub kills: u32,
    /// Seconds of MDIO overload.
    #[arg(long, default_value_t = 30)]
    pub overload_secs: u32,
    /// Inputs per fuzz target (0: no fuzzing).
    #[arg(long, default_value_t = 1_000_000)]
    pub fuzz_runs: u64,
    /// Only write the report again from the last soak's results (target/vm-out, target/fuzz).
    #[arg(long)]
    pub report_only: bool,
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

/// Start and end of the block of `docs/reliability.md` this command rewrites.
const BEGIN: &str = "<!-- soak results: written by `cargo xtask soak` -->";
const END: &str = "<!-- end of soak results -->";

pub fn run(args: &SoakArgs) -> Result<std::process::ExitCode> {
    if args.report_only {
        report()?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.fuzz_runs > 0 {
        fuzz::run(&fuzz::FuzzArgs {
            runs: args.fuzz_runs,
            targets: Vec::new(),
            max_len: 4096,
        })?;
    }
    let mut options = args.vm.clone();
    let flap_secs = args.minutes * 60;
    // The flapping test, the rest of the suite and the boot, with room to spare.
    options.timeout = options.timeout.max(flap_secs + 3600);
    let (kernel, options) = vm::prepare_release(&options)?;
    let command: Vec<String> = [
        "env".to_owned(),
        format!("SOAK_SECS={flap_secs}"),
        "SAMPLE_SECS=60".to_owned(),
        format!("CHURN_ROUNDS={}", args.churn_rounds),
        format!("RELOADS={}", args.churn_rounds),
        format!("KILL_ROUNDS={}", args.kills),
        format!("OVERLOAD_SECS={}", args.overload_secs),
        format!("TEST_TIMEOUT={}", flap_secs + 1800),
        "/bin/bash".to_owned(),
        paths::workspace()
            .join("tests/vm/run.sh")
            .display()
            .to_string(),
        // The reliability tests, and the plug-in test with as many reloads as the churn.
        "^(3[0-9]|15)-".to_owned(),
    ]
    .into();
    let started = run::step("soak: booting the test kernel");
    let code = vm::boot(&kernel, &options, &command)?;
    run::done("soak", started);
    // The report says which tests failed, so it is written either way.
    report()?;
    if code != 0 {
        bail!("the soak failed in the guest (exit status {code}); logs in target/vm-out/vm-tests");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes `docs/reliability.json` and the results block of `docs/reliability.md` from the
/// last soak's files.
fn report() -> Result<()> {
    let results = paths::vm_out().join("results.jsonl");
    let text =
        fs::read_to_string(&results).with_context(|| format!("reading {}", results.display()))?;
    let rows: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("parsing the guest's results")?;
    let samples_path = paths::vm_out().join("soak-samples.jsonl");
    let samples: Vec<Value> = fs::read_to_string(&samples_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let failed = failed_tests()?;
    let fuzzed = fuzz::logged();
    let date = run::output(Command::new("date").arg("-u").arg("+%Y-%m-%d %H:%M UTC"))?;
    let json = serde_json::json!({
        "date": date,
        "fuzz": fuzzed
            .iter()
            .map(|r| serde_json::json!({ "target": r.target, "inputs": r.runs, "seconds": r.seconds, "failure": r.failure }))
            .collect::<Vec<_>>(),
        "vm": rows,
        "failed": failed,
        "soak_samples": samples,
    });
    let docs = paths::workspace().join("docs");
    fs::write(
        docs.join("reliability.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let page = docs.join("reliability.md");
    let old = fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
    let block = table(&date, &fuzzed, &rows, &failed, &samples)?;
    fs::write(&page, replace_block(&old, &block)?)?;
    eprintln!("==> soak: results in docs/reliability.md and docs/reliability.json");
    Ok(())
}

/// Tests of the last run whose log has a failed check, with that check.
fn failed_tests() -> Result<Vec<(String, String)>> {
    let logs = paths::vm_out().join("vm-tests");
    let mut failed = Vec::new();
    for entry in fs::read_dir(&logs).with_context(|| format!("reading {}", logs.display()))? {
        let path = entry?.path();
        let text = fs::read_to_string(&path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("FAIL: ")) {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            failed.push((name.into_owned(), line.trim().to_owned()));
        }
    }
    failed.sort();
    Ok(failed)
}

/// `page` with the text between [`BEGIN`] and [`END`] replaced by `block`.
fn replace_block(page: &str, block: &str) -> Result<String> {
    let (Some(start), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        bail!("docs/reliability.md lacks the soak results markers");
    };
    Ok(format!(
        "{}{BEGIN}\n{block}{}",
        &page[..start],
        &page[end..]
    ))
}

/// One row per test: its figures if it passed, else the check that failed.
struct Rows<'a> {
    results: &'a [Value],
    failed: &'a [(String, String)],
    md: String,
}

impl Rows<'_> {
    fn row(&mut self, what: &str, test: &str, rerun: &str, text: impl Fn(&Value) -> String) {
        let outcome = match (
            self.failed.iter().find(|(name, _)| name.contains(test)),
            self.results
                .iter()
                .find(|r| r["test"].as_str().is_some_and(|t| t.contains(test))),
        ) {
            (Some((_, why)), _) => format!("**FAILED**: {}", why.replace('|', "/")),
            (None, Some(result)) => text(result),
            (None, None) => "not run".to_owned(),
        };
        let _ = writeln!(self.md, "| {what} | {outcome} | `{rerun}` |");
    }
}

/// `RSS KiB at minute 0, 10, 20, …` of `who` in the flapping soak's samples.
fn rss_series(samples: &[Value], who: &str) -> String {
    samples
        .iter()
        .filter(|s| s["t"].as_u64().is_some_and(|t| t % 600 < 60))
        .map(|s| format!("{}", s[format!("{who}_rss_kib")]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The results table, in Markdown.
fn table(
    date: &str,
    fuzzed: &[fuzz::FuzzReport],
    results: &[Value],
    failed: &[(String, String)],
    samples: &[Value],
) -> Result<String> {
    let mut md = String::new();
    writeln!(
        md,
        "\nLast soak: {date}, `cargo xtask soak` (release build, TCG).\n"
    )?;
    writeln!(md, "| test | result | rerun |")?;
    writeln!(md, "|---|---|---|")?;
    for report in fuzzed {
        let outcome = report.failure.as_deref().unwrap_or("no crash");
        writeln!(
            md,
            "| fuzz `{}` | {} inputs in {} s, {outcome} | `cargo xtask fuzz --target {}` |",
            report.target, report.runs, report.seconds, report.target
        )?;
    }
    let mut rows = Rows {
        results,
        failed,
        md,
    };
    rows.row("module churn", "module-churn", "cargo xtask test --vm-only --filter churn", |r| {
        format!(
            "{} reloads in {} s while flapping, every one re-attached, {} events, no loss, dmesg clean",
            r["rounds"], r["secs"], r["events"]
        )
    });
    rows.row("plug-in", "record-before-load", "cargo xtask test --vm-only --filter before-load", |r| {
        format!(
            "recording from before the first load: {} reloads, {} callbacks the kernel ran (tracefs kprobe events), every one recorded, {} missed",
            r["reloads"], r["callbacks"], r["missed"]
        )
    });
    rows.row("overload", "overload", "cargo xtask test --vm-only --filter overload", |r| {
        format!(
            "{} s: {} generated = {} recorded + {} lost (exact); RSS ≤ {} KiB; {} reads after it, none lost",
            r["secs"], r["generated"], r["recorded"], r["lost"], r["rss_max_kib"], r["recovery_reads"]
        )
    });
    rows.row("kill -9", "kill9", "cargo xtask test --vm-only --filter kill9", |r| {
        format!(
            "{} kills at random moments: every capture read back ({} events), truncation reported, nothing left in the kernel",
            r["rounds"], r["events"]
        )
    });
    rows.row("full disk", "full-disk", "cargo xtask test --vm-only --filter full-disk", |r| {
        format!(
            "record exits 4 naming the file; {} events read back from the cut capture; export, check, dump exit 4",
            r["events"]
        )
    });
    rows.row("privileges", "unprivileged", "cargo xtask test --vm-only --filter unprivileged", |_| {
        "record, doctor and the live TUI exit 3 naming the capabilities; probes works and names CAP_SYSLOG for addresses; dump, check, diff, export, the TUI's replay work".to_owned()
    });
    rows.row("flapping soak", "flap-soak", "cargo xtask soak", |r| {
        format!(
            "{} min, {} events, none lost; record and TUI RSS and fds flat over the second half",
            r["secs"].as_u64().unwrap_or(0) / 60,
            r["events"]
        )
    });
    let mut md = rows.md;
    if !samples.is_empty() {
        writeln!(
            md,
            "\nFlapping soak, RSS in KiB every 10 minutes: record {}; TUI (`--keep 20000`) {}.",
            rss_series(samples, "record"),
            rss_series(samples, "tui")
        )?;
    }
    writeln!(
        md,
        "\nPer-minute samples: `target/vm-out/soak-samples.jsonl`; all figures: `docs/reliability.json`."
    )?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_the_generated_block() {
        let page = format!("intro\n{BEGIN}\nold table\n{END}\noutro\n");
        let new = replace_block(&page, "\nnew table\n").unwrap();
        assert_eq!(new, format!("intro\n{BEGIN}\n\nnew table\n{END}\noutro\n"));
        assert!(replace_block("no markers", "x").is_err());
    }
}
