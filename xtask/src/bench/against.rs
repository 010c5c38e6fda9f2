//! `cargo xtask bench --against REV`: this working tree's release build and REV's, alternated
//! in one VM boot (`scenarios/compare.sh`): per MDIO access, per driver callback and start to
//! attached, each build's median (min–max) and B over A. Boot-to-boot noise is larger than most
//! differences between builds; only rounds of one boot compare them.

use std::{fmt::Write as _, fs, path::PathBuf, process::Command};

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

use super::report::Spread;
use crate::{paths, run, vm};

/// One line of `compare.jsonl`, told by its `bench` field.
#[derive(Deserialize)]
#[serde(tag = "bench")]
enum Line {
    #[serde(rename = "compare")]
    Compare(Round),
}

/// A round's figure of one build.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Round {
    build: String,
    figure: String,
    round: u64,
    value: f64,
}

/// The figures compared, as compare.sh names them, and what they are.
const FIGURES: &[(&str, &str)] = &[
    ("p1", "P1: ns per MDIO access"),
    ("c1", "C1: ns per driver callback"),
    ("p2", "P2: start to attached, ms (cached call sites)"),
];

/// Builds REV's release binary and this tree's, runs both in one boot, prints and writes
/// (`target/vm-out/compare.md`) the comparison.
pub fn run(rev: &str, repeats: u32, reads: u32, options: &vm::VmOptions) -> Result<()> {
    let before = release_of(rev)?;
    let (kernel, options) = vm::prepare_release(options)?;
    let after = options
        .bin
        .clone()
        .context("the release binary of this tree")?;
    let results = paths::vm_out().join("compare.jsonl");
    let _ = fs::remove_file(&results);
    let command = vec![
        "/bin/bash".to_owned(),
        paths::workspace()
            .join("scenarios/compare.sh")
            .display()
            .to_string(),
        format!("REPEATS={repeats}"),
        format!("READS={reads}"),
        format!("BIN_A={}", before.display()),
        format!("BIN_B={}", after.display()),
    ];
    let code = vm::boot(&kernel, &options, &command)?;
    if code != 0 {
        bail!("the comparison failed in the guest (exit status {code})");
    }
    let text =
        fs::read_to_string(&results).with_context(|| format!("reading {}", results.display()))?;
    let table = report(rev, &text)?;
    print!("{table}");
    fs::write(paths::vm_out().join("compare.md"), table)?;
    Ok(())
}

/// The table of the results `text`: for each figure, A (`rev`) and B (this tree), and B / A.
fn report(rev: &str, text: &str) -> Result<String> {
    let rounds = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line)
                .map(|Line::Compare(round)| round)
                .with_context(|| format!("line {}: not a row compare.sh writes: {line}", n + 1))
        })
        .collect::<Result<Vec<_>>>()?;
    let spread = |figure: &str, build: &str| {
        Spread::of(
            rounds
                .iter()
                .filter(|r| r.figure == figure && r.build == build)
                .map(|r| r.value)
                .collect(),
        )
        .with_context(|| format!("no {figure} results for build {build}"))
    };
    let count = rounds.iter().map(|r| r.round).max().unwrap_or(0);
    let mut table = format!(
        "{count} rounds, A and B in turn; median (min–max)\n\n| figure | A: {rev} | B: this tree | B / A |\n|---|---|---|---|\n"
    );
    for (figure, title) in FIGURES {
        let (a, b) = (spread(figure, "a")?, spread(figure, "b")?);
        writeln!(
            table,
            "| {title} | {} | {} | {:.2} |",
            a.cell(),
            b.cell(),
            b.median / a.median
        )?;
    }
    Ok(table)
}

/// The release binary of `rev`, built from its files in this tree's target directory (the
/// dependencies built once for both), kept as `target/against/phytrace-COMMIT`.
fn release_of(rev: &str) -> Result<PathBuf> {
    let commit = run::output(Command::new("git").args(["rev-parse", "--short=12", rev]))
        .with_context(|| format!("`{rev}` is not a revision of this repository"))?;
    let dir = paths::target().join("against");
    let binary = dir.join(format!("phytrace-{commit}"));
    if binary.exists() {
        return Ok(binary);
    }
    let started = run::step(&format!("building phytrace {commit} (release)"));
    let tree = dir.join(format!("tree-{commit}"));
    let _ = fs::remove_dir_all(&tree);
    fs::create_dir_all(&tree)?;
    run::status(Command::new("sh").arg("-c").arg(format!(
        "git -C '{}' archive {commit} | tar -x -C '{}'",
        paths::workspace().display(),
        tree.display()
    )))?;
    run::status(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--package", "phytrace"])
            .env("CARGO_TARGET_DIR", paths::target())
            .current_dir(&tree),
    )?;
    fs::copy(paths::target().join("release/phytrace"), &binary)?;
    fs::remove_dir_all(&tree)?;
    run::done("build", started);
    Ok(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_figure_compares_the_medians_of_its_rounds() {
        let mut text = String::new();
        for (figure, a, b) in [("p1", 1000, 1100), ("c1", 5000, 4500), ("p2", 400, 400)] {
            for round in 1..=3 {
                for (build, value) in [("a", a + round), ("b", b + round)] {
                    writeln!(
                        text,
                        r#"{{"bench":"compare","build":"{build}","figure":"{figure}","round":{round},"value":{value}}}"#
                    )
                    .unwrap();
                }
            }
        }
        let table = report("abc123", &text).unwrap();
        assert!(
            table.contains(
                "| P1: ns per MDIO access | 1002 (1001–1003) | 1102 (1101–1103) | 1.10 |"
            ),
            "{table}"
        );
        assert!(table.contains("| 0.90 |"), "{table}");
        let err = report(
            "abc123",
            &text.replace(
                r#""build":"b","figure":"p2""#,
                r#""build":"a","figure":"p2""#,
            ),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no p2 results for build b");
    }
}
