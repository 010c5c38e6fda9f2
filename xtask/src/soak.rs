//! `cargo xtask soak`: the long versions of the reliability tests. Fuzzes the capture reader
//! and the spec parser on the host, then boots the VM once and runs the reliability tests
//! (`tests/vm/3?-*.sh`) with soak sizes: module churn, SIGKILLs, overload, full disk,
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
    /// Driver module reloads while recording.
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
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

/// Start and end of the block of `docs/reliability.md` this command rewrites.
const BEGIN: &str = "<!-- soak results: written by `cargo xtask soak` -->";
const END: &str = "<!-- end of soak results -->";

pub fn run(args: &SoakArgs) -> Result<std::process::ExitCode> {
    let fuzzed = if args.fuzz_runs > 0 {
        fuzz::run(&fuzz::FuzzArgs {
            runs: args.fuzz_runs,
            targets: Vec::new(),
            max_len: 4096,
        })?
    } else {
        Vec::new()
    };
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
        format!("KILL_ROUNDS={}", args.kills),
        format!("OVERLOAD_SECS={}", args.overload_secs),
        format!("TEST_TIMEOUT={}", flap_secs + 1800),
        "/bin/bash".to_owned(),
        paths::workspace()
            .join("tests/vm/run.sh")
            .display()
            .to_string(),
        "^3[0-9]-".to_owned(),
    ]
    .into();
    let started = run::step("soak: booting the test kernel");
    let code = vm::boot(&kernel, &options, &command)?;
    run::done("soak", started);
    if code != 0 {
        bail!("the soak failed in the guest (exit status {code}); logs in target/vm-out/vm-tests");
    }
    let results = paths::vm_out().join("results.jsonl");
    let text =
        fs::read_to_string(&results).with_context(|| format!("reading {}", results.display()))?;
    let rows: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("parsing the guest's results")?;
    let date = run::output(Command::new("date").arg("-u").arg("+%Y-%m-%d %H:%M UTC"))?;
    let json = serde_json::json!({
        "date": date,
        "fuzz": fuzzed
            .iter()
            .map(|r| serde_json::json!({ "target": r.target, "inputs": r.runs, "seconds": r.seconds }))
            .collect::<Vec<_>>(),
        "vm": rows,
    });
    let docs = paths::workspace().join("docs");
    fs::write(
        docs.join("reliability.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let page = docs.join("reliability.md");
    let old = fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
    fs::write(&page, replace_block(&old, &table(&date, &fuzzed, &rows)?)?)?;
    eprintln!("==> soak: results in docs/reliability.md and docs/reliability.json");
    Ok(std::process::ExitCode::SUCCESS)
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

fn result<'a>(rows: &'a [Value], test: &str) -> Result<&'a Value> {
    rows.iter()
        .find(|r| r["test"].as_str().is_some_and(|t| t.contains(test)))
        .with_context(|| format!("no result from the {test} test"))
}

/// The results table, in Markdown.
fn table(date: &str, fuzzed: &[fuzz::FuzzReport], rows: &[Value]) -> Result<String> {
    let mut md = String::new();
    writeln!(
        md,
        "\nLast soak: {date}, `cargo xtask soak` (release build, TCG).\n"
    )?;
    writeln!(md, "| test | result | rerun |")?;
    writeln!(md, "|---|---|---|")?;
    for report in fuzzed {
        writeln!(
            md,
            "| fuzz `{}` | {} inputs in {} s, no crash | `cargo xtask fuzz --target {}` |",
            report.target, report.runs, report.seconds, report.target
        )?;
    }
    let churn = result(rows, "module-churn")?;
    writeln!(
        md,
        "| module churn | {} reloads in {} s while flapping, every one re-attached, {} events, no loss, dmesg clean | `cargo xtask soak` (short: `cargo xtask test --vm-only --filter churn`) |",
        churn["rounds"], churn["secs"], churn["events"]
    )?;
    let overload = result(rows, "overload")?;
    writeln!(
        md,
        "| overload | {} s: {} generated = {} recorded + {} lost (exact); RSS ≤ {} KiB; {} reads after it, none lost | `cargo xtask soak` (short: `--filter overload`) |",
        overload["secs"],
        overload["generated"],
        overload["recorded"],
        overload["lost"],
        overload["rss_max_kib"],
        overload["recovery_reads"]
    )?;
    let kills = result(rows, "kill9")?;
    writeln!(
        md,
        "| kill -9 | {} kills at random moments: every capture read back ({} events), truncation reported, nothing left in the kernel | `cargo xtask test --vm-only --filter kill9` |",
        kills["rounds"], kills["events"]
    )?;
    let disk = result(rows, "full-disk")?;
    writeln!(
        md,
        "| full disk | record exits 4 naming the file; {} events read back from the cut capture; export, check, dump exit 4 | `cargo xtask test --vm-only --filter full-disk` |",
        disk["events"]
    )?;
    result(rows, "unprivileged")?;
    writeln!(
        md,
        "| privileges | record, doctor and the live TUI exit 3 naming the capabilities; probes works and names CAP_SYSLOG for addresses; dump, check, diff, export, tui --replay work | `cargo xtask test --vm-only --filter unprivileged` |"
    )?;
    let soak = result(rows, "flap-soak")?;
    let rss = |who: &str| {
        format!(
            "RSS {}→{} KiB (second half {}–{}), fds {}",
            soak[who]["rss_first_kib"],
            soak[who]["rss_end_kib"],
            soak[who]["rss_late_min_kib"],
            soak[who]["rss_late_max_kib"],
            soak[who]["fds"]
        )
    };
    writeln!(
        md,
        "| flapping soak | {} min, {} events, none lost; record: {}; TUI: {} | `cargo xtask soak --minutes {}` |",
        soak["secs"].as_u64().unwrap_or(0) / 60,
        soak["events"],
        rss("record"),
        rss("tui"),
        soak["secs"].as_u64().unwrap_or(0) / 60,
    )?;
    writeln!(
        md,
        "\nPer-minute samples of the flapping soak: `target/vm-out/soak-samples.jsonl`; all figures: `docs/reliability.json`."
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
