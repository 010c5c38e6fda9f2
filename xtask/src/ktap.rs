//! The KTAP check: `phytrace check --format ktap` on the recorded captures, read by the kernel's
//! own parser (KUnit's `kunit.py parse --json`, from the test kernel's source tree, unpacked if
//! needed). The parser must see each rule as a test, the PHYs it checked as its subtests with
//! their pass, fail or skip, and each capture as a test of its own when several are checked at
//! once; it fails the run exactly when phytrace does.

use std::{fs, path::Path, process::Command};

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::Value;

use crate::{kernel, paths, run};

/// Rules that pass, fail and do not apply on the captures below, per PHY and per driver.
const SPEC: &str = r#"rule "every PHY is reset": count exit soft_reset at least 1
rule "no callback returns an error": never exit any error
rule "the link goes down": count link down at least 1
rule "the AX88796B resets" for phy_id 0x003b1841: count exit soft_reset at least 1
rule "each driver resets at probe" per driver: count exit soft_reset while state READY at least 1
rule "no RTL8211 errors" for driver "RTL8211": never error
"#;

/// The simulated PHYs, with the injected read error (`tests/vm/31-record-plug-unplug.sh`).
const PLUG_UNPLUG: &str = "phytrace/tests/data/rust-plug-unplug.ptrace";
/// The AX88772A dongle (`tests/vm/41-dongle-record.sh`).
const DONGLE: &str = "phytrace/tests/data/rust-dongle.ptrace";

const AX88772A: &str = "phy_sim-0:01 (Asix Electronics AX88772A)";
const AX88772C: &str = "phy_sim-0:02 (Asix Electronics AX88772C)";
const AX88796B: &str = "phy_sim-0:03 (Asix Electronics AX88796B)";
const DONGLE_PHY: &str = "usb-001:002:10 (Asix Electronics AX88772A)";

/// A test as the parser must report it: a case with its status (`PASS`, `FAIL`, `SKIP`, as
/// kunit's JSON spells them), or a group of subtests.
enum Test {
    Case(String, &'static str),
    Group(String, Vec<Test>),
}

use Test::{Case, Group};

fn pass(name: &str) -> Test {
    Case(name.to_owned(), "PASS")
}

fn fail(name: &str) -> Test {
    Case(name.to_owned(), "FAIL")
}

fn skip(name: &str) -> Test {
    Case(name.to_owned(), "SKIP")
}

fn group(name: &str, subtests: Vec<Test>) -> Test {
    Group(name.to_owned(), subtests)
}

/// [`SPEC`]'s rules on [`PLUG_UNPLUG`]: the read error fails one PHY, two PHYs never lose
/// their link, one rule has no PHY.
fn plug_unplug_rules() -> Vec<Test> {
    vec![
        group(
            "every PHY is reset",
            vec![pass(AX88772A), pass(AX88772C), pass(AX88796B)],
        ),
        group(
            "no callback returns an error",
            vec![fail(AX88772A), pass(AX88772C), pass(AX88796B)],
        ),
        group(
            "the link goes down",
            vec![pass(AX88772A), fail(AX88772C), fail(AX88796B)],
        ),
        group("the AX88796B resets", vec![pass(AX88796B)]),
        group(
            "each driver resets at probe",
            vec![
                pass("Asix Electronics AX88772A (phy_sim-0:01)"),
                pass("Asix Electronics AX88772C (phy_sim-0:02)"),
                pass("Asix Electronics AX88796B (phy_sim-0:03)"),
            ],
        ),
        skip("no RTL8211 errors"),
    ]
}

/// [`SPEC`]'s rules on [`DONGLE`]: all hold, two have no PHY.
fn dongle_rules() -> Vec<Test> {
    vec![
        group("every PHY is reset", vec![pass(DONGLE_PHY)]),
        group("no callback returns an error", vec![pass(DONGLE_PHY)]),
        group("the link goes down", vec![pass(DONGLE_PHY)]),
        skip("the AX88796B resets"),
        group(
            "each driver resets at probe",
            vec![pass("Asix Electronics AX88772A (usb-001:002:10)")],
        ),
        skip("no RTL8211 errors"),
    ]
}

/// One run of `phytrace check --format ktap` and what the parser must read in it.
struct Sample {
    name: &'static str,
    captures: &'static [&'static str],
    tests: Vec<Test>,
    /// Whether every rule holds (phytrace exits 0, and so does the parser).
    holds: bool,
}

fn samples() -> Vec<Sample> {
    vec![
        Sample {
            name: "plug-unplug",
            captures: &[PLUG_UNPLUG],
            tests: plug_unplug_rules(),
            holds: false,
        },
        Sample {
            name: "dongle",
            captures: &[DONGLE],
            tests: dongle_rules(),
            holds: true,
        },
        Sample {
            name: "both",
            captures: &[PLUG_UNPLUG, DONGLE],
            tests: vec![
                group(PLUG_UNPLUG, plug_unplug_rules()),
                group(DONGLE, dongle_rules()),
            ],
            holds: false,
        },
    ]
}

/// Runs every sample through the kernel's parser; ends with an `N passed, N failed` line.
pub fn run() -> Result<()> {
    let started = run::step("KTAP: phytrace check --format ktap, read by kunit.py parse");
    run::status(
        Command::new(env!("CARGO"))
            .args(["build", "--package", "phytrace"])
            .current_dir(paths::workspace()),
    )?;
    let kunit = kernel::source_tree()?.join("tools/testing/kunit/kunit.py");
    let dir = paths::target().join("ktap");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let spec = dir.join("samples.spec");
    fs::write(&spec, SPEC).with_context(|| format!("writing {}", spec.display()))?;
    let samples = samples();
    let mut failed = 0;
    for sample in &samples {
        match check_sample(sample, &kunit, &spec, &dir) {
            Ok(counts) => eprintln!("    {}: the parser read {counts}", sample.name),
            Err(err) => {
                failed += 1;
                eprintln!("    {}: FAILED: {err:#}", sample.name);
            }
        }
    }
    eprintln!("ktap: {} passed, {failed} failed", samples.len() - failed);
    ensure!(failed == 0, "{failed} KTAP samples read wrong by kunit.py");
    run::done("KTAP", started);
    Ok(())
}

/// Checks `sample`'s KTAP with kunit.py (`kunit`); returns the parser's counts of its cases.
fn check_sample(sample: &Sample, kunit: &Path, spec: &Path, dir: &Path) -> Result<Counts> {
    let ktap = dir.join(format!("{}.ktap", sample.name));
    let json = dir.join(format!("{}.json", sample.name));
    let phytrace = paths::target().join("debug/phytrace");
    let out = Command::new(&phytrace)
        .args(["check", "--format", "ktap", "--spec"])
        .arg(spec)
        .args(sample.captures)
        .current_dir(paths::workspace())
        .output()
        .with_context(|| format!("running {}", phytrace.display()))?;
    let expected_code = if sample.holds { 0 } else { 1 };
    ensure!(
        out.status.code() == Some(expected_code),
        "phytrace check exited {} (expected {expected_code}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    fs::write(&ktap, &out.stdout).with_context(|| format!("writing {}", ktap.display()))?;
    // The parser's own report is for people: shown only when the JSON disagrees.
    let parsed = Command::new("python3")
        .arg(kunit)
        .arg("parse")
        .arg(format!("--json={}", json.display()))
        .arg(&ktap)
        .output()
        .with_context(|| format!("running {}", kunit.display()))?;
    let shown = String::from_utf8_lossy(&parsed.stdout).into_owned();
    let read = || -> Result<Counts> {
        let text =
            fs::read_to_string(&json).with_context(|| format!("reading {}", json.display()))?;
        let root: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", json.display()))?;
        let mut counts = Counts::default();
        compare(&sample.tests, &root, "", &mut counts)?;
        // kunit.py fails (1) when a case failed or none passed.
        let parser_holds = parsed.status.success();
        ensure!(
            parser_holds == sample.holds,
            "kunit.py parse exited {} where phytrace says the rules {}",
            parsed.status,
            if sample.holds { "hold" } else { "do not hold" }
        );
        Ok(counts)
    };
    read().with_context(|| format!("{} (kunit.py said:\n{shown})", ktap.display()))
}

/// Cases the parser read, by status.
#[derive(Default)]
struct Counts {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cases as phytrace wrote them: {} passed, {} failed, {} skipped",
            self.passed + self.failed + self.skipped,
            self.passed,
            self.failed,
            self.skipped
        )
    }
}

/// Compares the `expected` subtests with a kunit JSON group (`sub_groups` for tests with
/// subtests, `test_cases` for the others, each in their order), counting the cases.
fn compare(expected: &[Test], group: &Value, path: &str, counts: &mut Counts) -> Result<()> {
    let list = |key: &str| -> Result<&Vec<Value>> {
        group[key]
            .as_array()
            .with_context(|| format!("{path}: no `{key}` list in the parser's JSON"))
    };
    let names = |values: &[Value]| -> Vec<String> {
        values
            .iter()
            .map(|v| v["name"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    let sub_groups = list("sub_groups")?;
    let cases = list("test_cases")?;
    let expected_groups: Vec<(&String, &Vec<Test>)> = expected
        .iter()
        .filter_map(|t| match t {
            Group(name, subtests) => Some((name, subtests)),
            Case(..) => None,
        })
        .collect();
    let expected_cases: Vec<(String, &str)> = expected
        .iter()
        .filter_map(|t| match t {
            Case(name, status) => Some((name.clone(), *status)),
            Group(..) => None,
        })
        .collect();
    let group_names: Vec<&String> = expected_groups.iter().map(|(name, _)| *name).collect();
    if names(sub_groups).iter().collect::<Vec<_>>() != group_names {
        bail!(
            "{path}: tests with subtests {:?}, expected {group_names:?}",
            names(sub_groups)
        );
    }
    let read_cases: Vec<(String, &str)> = names(cases)
        .into_iter()
        .zip(cases.iter().map(|c| c["status"].as_str().unwrap_or("?")))
        .collect();
    if read_cases != expected_cases {
        bail!("{path}: cases {read_cases:?}, expected {expected_cases:?}");
    }
    for (_, status) in &read_cases {
        match *status {
            "PASS" => counts.passed += 1,
            "FAIL" => counts.failed += 1,
            _ => counts.skipped += 1,
        }
    }
    for ((name, subtests), sub_group) in expected_groups.iter().zip(sub_groups) {
        compare(subtests, sub_group, &format!("{path}/{name}"), counts)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kunit's JSON of a rule with two PHYs, one failed, and a skipped rule.
    fn parsed() -> Value {
        serde_json::json!({
            "name": "KUnit Test Group",
            "sub_groups": [{
                "name": "r",
                "sub_groups": [],
                "test_cases": [{"name": "a", "status": "FAIL"}, {"name": "b", "status": "PASS"}],
            }],
            "test_cases": [{"name": "s", "status": "SKIP"}],
        })
    }

    #[test]
    fn the_parsers_tree_matches_what_was_written() {
        let mut counts = Counts::default();
        let expected = [group("r", vec![fail("a"), pass("b")]), skip("s")];
        compare(&expected, &parsed(), "", &mut counts).unwrap();
        assert_eq!((counts.passed, counts.failed, counts.skipped), (1, 1, 1));
    }

    #[test]
    fn a_wrong_status_or_nesting_is_an_error() {
        let mut counts = Counts::default();
        for expected in [
            vec![group("r", vec![pass("a"), pass("b")]), skip("s")],
            vec![group("r", vec![fail("a")]), skip("s")],
            vec![fail("r"), skip("s")],
            vec![group("r", vec![fail("a"), pass("b")])],
        ] {
            assert!(compare(&expected, &parsed(), "", &mut counts).is_err());
        }
    }
}
