//! A capture against the kernel's own view of the same run: its callbacks against the
//! kernel's kprobe and kretprobe events on the driver's callbacks, its MAC side against the
//! kernel's kprobes on asix's `mac_link_up`/`mac_link_down`, and where `record --status` says
//! the MAC calls were reported.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, ensure};
use serde_json::Value;

use super::captures::{dump_json, field};
use crate::paths;

/// A call-site capture (`label` says whose) against the kernel's own kprobe and kretprobe
/// events on the driver's callbacks in the same run (`tests/vm/callsite_truth.py`): the same
/// calls, in each thread's order, with the same return values. Returns the capture's events
/// as `dump --format json` writes them.
pub fn compare_call_sites(phytrace: &Path, capture: &Path, label: &str) -> Result<String> {
    let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", capture.display()));
    let json = dump_json(phytrace, capture)?;
    std::fs::write(with(".json"), &json)
        .with_context(|| format!("writing {}", with(".json").display()))?;
    let out = Command::new("python3")
        .arg(paths::workspace().join("tests/vm/callsite_truth.py"))
        .args([with(".truth-names"), with(".truth"), with(".json")])
        .args(["ax88796b_rust::", "op"])
        .output()
        .context("running tests/vm/callsite_truth.py")?;
    let report = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "{label}: the call-site capture differs from the kernel's kprobes:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "    {label} call sites: {} comparisons with the kernel's kprobes, all equal",
        report.lines().count()
    );
    for line in report.lines().filter(|line| !line.contains("thread ")) {
        eprintln!("      {line}");
    }
    Ok(json)
}

/// The MAC side of `capture` (its events in `json`) against the kernel's own kprobes on asix's
/// `mac_link_up` (`speed=`, `duplex=`) and `mac_link_down` in its `.truth`: the same link-ups
/// with the same speeds and duplex, in order, and as many link-downs.
pub fn compare_mac(json: &str, capture: &Path) -> Result<()> {
    let truth_path = PathBuf::from(format!("{}.truth", capture.display()));
    let truth = std::fs::read_to_string(&truth_path)
        .with_context(|| format!("reading {}", truth_path.display()))?;
    let (kernel_ups, kernel_downs) = kernel_mac(&truth);
    let (ups, downs) = captured_mac(json)?;
    ensure!(
        !kernel_ups.is_empty() && kernel_downs > 0,
        "{}: the kernel's kprobes saw no link up and down",
        capture.display()
    );
    ensure!(
        (&ups, downs) == (&kernel_ups, kernel_downs),
        "{}: the MAC side differs from the kernel's kprobes: link-ups {ups:?}, {downs} link-downs \
         recorded; the kernel's {kernel_ups:?}, {kernel_downs}",
        capture.display()
    );
    eprintln!(
        "    MAC side: {} mac_link_up ({}) and {downs} mac_link_down, equal to the kernel's kprobes",
        ups.len(),
        ups.join(", ")
    );
    Ok(())
}

/// Where `capture`'s MAC calls were reported, from `record --status` (`.status`): on arm64
/// (every MAC call a `blr`, which kprobes take) both ops must have phylink call sites armed
/// (`mac_sites_armed`: in vmlinux, where phylink is built in), and each must have had calls
/// reported there (`finished`'s `mac_site_calls`; the dongle's link went up and down, which
/// the kernel's kprobes confirm in [`compare_mac`]).
pub fn mac_calls_at_sites(capture: &Path) -> Result<()> {
    let path = PathBuf::from(format!("{}.status", capture.display()));
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let lines: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    let armed: BTreeSet<String> = lines
        .iter()
        .filter(|line| line["status"] == "mac_sites_armed")
        .flat_map(|line| line["sites"].as_array().cloned().unwrap_or_default())
        .filter_map(|site| {
            Some(
                site.as_str()?
                    .rsplit_once(" (")?
                    .1
                    .trim_end_matches(')')
                    .to_owned(),
            )
        })
        .collect();
    let finished = lines
        .iter()
        .find(|line| line["status"] == "finished")
        .with_context(|| format!("{}: no finished line", path.display()))?;
    let mut at_sites: BTreeMap<String, u64> = BTreeMap::new();
    for calls in finished["mac_site_calls"].as_array().into_iter().flatten() {
        let op = calls["op"].as_str().unwrap_or_default().to_owned();
        *at_sites.entry(op).or_default() += calls["calls"].as_u64().unwrap_or(0);
    }
    for op in ["mac_link_up", "mac_link_down"] {
        ensure!(
            armed.contains(op),
            "{}: no call site of phylink's mac_ops->{op} was armed (mac_sites_armed: {armed:?})",
            capture.display()
        );
    }
    for op in &armed {
        ensure!(
            at_sites.get(op).copied().unwrap_or(0) > 0,
            "{}: phylink's call sites of {op} were armed, yet no call of it was reported there",
            capture.display()
        );
    }
    eprintln!(
        "    MAC calls at phylink's call sites: {}",
        if at_sites.is_empty() {
            "none armed (asix's by name)".to_owned()
        } else {
            at_sites
                .iter()
                .map(|(op, calls)| format!("{op} {calls}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    Ok(())
}

/// The kernel's `truth/up` events as `SPEED/DUPLEX` (`DUPLEX_FULL` is 1) and its `truth/down`
/// count, from an ftrace buffer.
fn kernel_mac(trace: &str) -> (Vec<String>, usize) {
    let value = |line: &str, key: &str| {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix(key))
            .map(str::to_owned)
    };
    let ups = trace
        .lines()
        .filter(|line| line.contains(" up: ("))
        .filter_map(|line| {
            let duplex = match value(line, "duplex=")?.as_str() {
                "1" => "full",
                "0" => "half",
                _ => "unknown",
            };
            Some(format!("{}/{duplex}", value(line, "speed=")?))
        })
        .collect();
    let downs = trace
        .lines()
        .filter(|line| line.contains(" down: ("))
        .count();
    (ups, downs)
}

/// A capture's `mac_link_up` events as `SPEED/DUPLEX` and its `mac_link_down` count, from its
/// events as `dump --format json` writes them.
fn captured_mac(json: &str) -> Result<(Vec<String>, usize)> {
    let mut ups = Vec::new();
    let mut downs = 0;
    for line in json.lines() {
        let event: Value = serde_json::from_str(line).context("reading dump's JSON")?;
        if event["kind"] != "mac" {
            continue;
        }
        let change = &event["change"];
        match change["op"].as_str() {
            Some("link_up") => ups.push(format!("{}/{}", change["speed"], field(change, "duplex"))),
            Some("link_down") => downs += 1,
            _ => {}
        }
    }
    Ok((ups, downs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_side_is_read_alike_from_the_kernel_and_the_capture() {
        let trace = "# tracer: nop\n\
            kworker/0:2-41 [000] d.... 12.5: up: (ax88772_mac_link_up+0x0/0x1a0 [asix]) speed=100 duplex=1\n\
            kworker/0:2-41 [000] d.... 13.5: down: (ax88772_mac_link_down+0x0/0x80 [asix])\n\
            kworker/1:0-52 [001] d.... 14.5: up: (ax88772_mac_link_up+0x0/0x1a0 [asix]) speed=10 duplex=0\n\
            kworker/1:0-52 [001] d.... 14.6: cb3: (_RNv...read_status_callback+0x0/0x40 [ax88796b_rust])\n";
        assert_eq!(
            kernel_mac(trace),
            (vec!["100/full".to_owned(), "10/half".to_owned()], 1)
        );
        let json = [
            r#"{"kind":"mac","change":{"op":"link_up","speed":100,"duplex":"full"}}"#,
            r#"{"kind":"mac","change":{"op":"link_down"}}"#,
            r#"{"kind":"mac","change":{"op":"carrier_on"}}"#,
            r#"{"kind":"mdio","op":"read"}"#,
            r#"{"kind":"mac","change":{"op":"link_up","speed":10,"duplex":"half"}}"#,
        ]
        .join("\n");
        assert_eq!(captured_mac(&json).unwrap(), kernel_mac(trace));
    }
}
