//! Two captures of one scenario compared: the verdicts of `phytrace check` rule by rule, and
//! the story `phytrace dump --format json` tells once what depends on the guest's speed is left
//! out. Across architectures (the arm64 twin) the stories must be equal line by line and
//! `phytrace diff --ignore-reads` must find no difference; across kernels (the kernel twin)
//! what each PHY's callbacks did, the links and the MAC side's changes must be equal, and the
//! rest is said.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    process::Command,
};

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::Value;

use crate::run;

/// MDIO accesses the scenario makes inside driver callbacks, as (op, register, callback):
/// BMSR read by `read_status`, BMCR written by `soft_reset`. Each capture must attribute them,
/// so that two captures whose attribution is broken alike do not agree.
const ATTRIBUTED: [(&str, &str, &str); 2] =
    [("read", "1", "read_status"), ("write", "0", "soft_reset")];

/// The events of `capture` as `phytrace dump --format json` writes them.
pub fn dump_json(phytrace: &Path, capture: &Path) -> Result<String> {
    run::output(
        Command::new(phytrace)
            .args(["dump", "--format", "json"])
            .arg(capture),
    )
}

/// The first line where `a` and `b` differ (one of them ended there, or both differ).
fn first_difference(a: &[String], b: &[String]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

/// The arm64 twin: `dump` and `diff` of the two captures agree.
pub fn agree_across_arches(phytrace: &Path, a: &Path, b: &Path) -> Result<()> {
    let story = |capture: &Path| -> Result<Story> {
        let story = story(&dump_json(phytrace, capture)?, Twins::Arches)?;
        if let Some((op, reg, callback)) = story.unattributed().next() {
            bail!(
                "phytrace dump: {}: no MDIO {op} of reg={reg} attributed to {callback} (MDIO attribution is empty)",
                capture.display()
            );
        }
        Ok(story)
    };
    let (Story { lines: story_a, .. }, Story { lines: story_b, .. }) = (story(a)?, story(b)?);
    if let Some(at) = first_difference(&story_a, &story_b) {
        bail!(
            "phytrace dump: the captures differ at event {at} (timing, reads and polls left out):\n  {}: {}\n  {}: {}",
            a.display(),
            story_a.get(at).map_or("(end)", String::as_str),
            b.display(),
            story_b.get(at).map_or("(end)", String::as_str)
        );
    }
    ensure!(
        story_a.iter().any(|line| line.contains("error=-5")),
        "the captures have no MDIO write failing with -5 (EIO)"
    );
    eprintln!(
        "    dump: the same {} events and read attributions on both (timing, read counts and polls left out); both attribute {}",
        story_a.len(),
        ATTRIBUTED
            .map(|(op, reg, callback)| format!("{op} reg={reg} to {callback}"))
            .join(", ")
    );

    let diff = Command::new(phytrace)
        .args(["diff", "--ignore-reads"])
        .arg(a)
        .arg(b)
        .output()
        .context("running phytrace diff")?;
    let text = String::from_utf8_lossy(&diff.stdout);
    if !diff.status.success() {
        bail!("phytrace diff --ignore-reads finds the captures different:\n{text}");
    }
    eprintln!(
        "    diff --ignore-reads: {}",
        text.lines().last().unwrap_or_default().trim()
    );
    // With the reads, for the log only: how often phylib polls depends on the guest's speed.
    if let Ok(full) = Command::new(phytrace).arg("diff").arg(a).arg(b).output() {
        eprintln!(
            "    diff (reads too, not compared: polling depends on speed): {}",
            String::from_utf8_lossy(&full.stdout)
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
        );
    }
    Ok(())
}

/// The kernel twin: the dumps of the dongle scenario recorded on two kernels (`(name,
/// capture)`) agree. Equal, or an error: the first callback; each PHY's callbacks with their
/// return values and the MDIO accesses (op, register) made inside each; the links
/// `read_status` reported from the first link up; the MAC side's changes as the kernel counts
/// them ([`carrier_changes`]). Said, not compared: the MAC side's calls where they differ
/// (7.3's asix and phylink both call `netif_carrier_on/off`: two calls per change), the
/// callbacks and MDIO writes in order where they differ (phylib's own accesses, how often the
/// driver re-initialises the PHY on NOLINK, which depends on what each poll saw), and the
/// counts that depend on the guest's speed (MDIO reads per register, polls).
pub fn agree_across_kernels(phytrace: &Path, a: (&str, &Path), b: (&str, &Path)) -> Result<()> {
    let story = |(name, capture): (&str, &Path)| -> Result<Story> {
        let story = story(&dump_json(phytrace, capture)?, Twins::Kernels)?;
        if let Some((op, reg, callback)) = story.unattributed().next() {
            bail!(
                "{name}: no MDIO {op} of reg={reg} attributed to {callback} in {}",
                capture.display()
            );
        }
        Ok(story)
    };
    let (sa, sb) = (story(a)?, story(b)?);
    let changes = |mac: &[String]| carrier_changes(mac);
    // By op: the function implementing it is each kernel's driver's (C or Rust), said among
    // the differences below.
    let first = |story: &Story| {
        let first = story.lines.iter().find(|line| line.contains(" enter "));
        first
            .map(|line| by_op(line))
            .into_iter()
            .collect::<Vec<_>>()
    };
    for (what, la, lb) in [
        ("the first callback", first(&sa), first(&sb)),
        (
            "callbacks with their return values, MDIO accesses inside them",
            sa.calls.iter().cloned().collect(),
            sb.calls.iter().cloned().collect(),
        ),
        (
            "links read_status reported",
            sa.links.clone(),
            sb.links.clone(),
        ),
        (
            "MAC side (carrier calls that change nothing left out)",
            changes(&sa.mac),
            changes(&sb.mac),
        ),
    ] {
        if let Some(at) = first_difference(&la, &lb) {
            bail!(
                "{what}: the kernels differ at line {at}:\n  {}: {}\n  {}: {}",
                a.0,
                la.get(at).map_or("(end)", String::as_str),
                b.0,
                lb.get(at).map_or("(end)", String::as_str)
            );
        }
        eprintln!(
            "    {what}: the same {} lines on {} and {}",
            la.len(),
            a.0,
            b.0
        );
        for line in &la {
            eprintln!("      {line}");
        }
    }
    ensure!(
        sa.calls
            .iter()
            .any(|line| line.contains(" soft_reset returns ")),
        "the dongle twin has no soft_reset: callbacks were not traced"
    );
    eprintln!(
        "    differences between {} and {} (said, not compared):",
        a.0, b.0
    );
    let carrier = |mac: &[String]| {
        let calls = mac.iter().filter(|op| op.contains(" carrier_")).count();
        let changes = carrier_changes(mac)
            .iter()
            .filter(|op| op.contains(" carrier_"))
            .count();
        format!("{calls} netif_carrier_on/off calls for {changes} carrier changes")
    };
    eprintln!(
        "      {}: {}; {}: {}",
        a.0,
        carrier(&sa.mac),
        b.0,
        carrier(&sb.mac)
    );
    if sa.mac != sb.mac {
        eprintln!("      MAC side, {}: {}", a.0, sa.mac.join(", "));
        eprintln!("      MAC side, {}: {}", b.0, sb.mac.join(", "));
    }
    let changed = changed_lines(&sa.lines, &sb.lines);
    if !changed.is_empty() {
        eprintln!(
            "      callbacks and MDIO writes in order (polls and reads left out), - {} + {}:",
            a.0, b.0
        );
        for line in changed {
            eprintln!("        {line}");
        }
    }
    let keys: BTreeSet<&String> = sa.counts.keys().chain(sb.counts.keys()).collect();
    let counted: Vec<String> = keys
        .into_iter()
        .filter_map(|key| {
            let (na, nb) = (
                sa.counts.get(key).copied().unwrap_or(0),
                sb.counts.get(key).copied().unwrap_or(0),
            );
            (na != nb).then(|| format!("{key} {na}/{nb}"))
        })
        .collect();
    if !counted.is_empty() {
        eprintln!(
            "      counts that depend on the guest's speed ({}/{}): {}",
            a.0,
            b.0,
            counted.join(", ")
        );
    }
    Ok(())
}

/// The MAC side's calls (`PHY op`) without the carrier calls that change nothing, as the
/// kernel counts them: a new netdev has carrier, and `netif_carrier_on/off` change it only
/// when it is not so already.
fn carrier_changes(mac: &[String]) -> Vec<String> {
    let mut carrier = "carrier_on";
    mac.iter()
        .filter(|line| match line.rsplit(' ').next() {
            Some(op @ ("carrier_on" | "carrier_off")) => {
                let flips = op != carrier;
                carrier = if op == "carrier_on" {
                    "carrier_on"
                } else {
                    "carrier_off"
                };
                flips
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// The lines only one of `a` and `b` has, in order, `- ` for `a`'s and `+ ` for `b`'s, around
/// a longest common subsequence (the captures are short: a table of lengths will do).
fn changed_lines(a: &[String], b: &[String]) -> Vec<String> {
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j == b.len() || (i < a.len() && common[i + 1][j] >= common[i][j + 1]) {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

/// `phytrace check` of each capture against its spec (`(capture, spec)`) gives the same
/// verdicts, rule by rule, and at least one rule holds.
pub fn same_verdicts(phytrace: &Path, a: (&Path, &Path), b: (&Path, &Path)) -> Result<Vec<String>> {
    let verdicts = |(capture, spec): (&Path, &Path)| -> Result<Vec<String>> {
        let out = Command::new(phytrace)
            .arg("check")
            .arg("--spec")
            .arg(spec)
            .arg(capture)
            .output()
            .context("running phytrace check")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines = verdict_lines(&text);
        ensure!(
            !lines.is_empty(),
            "phytrace check printed no verdicts for {}: {}",
            capture.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(lines)
    };
    let (check_a, check_b) = (verdicts(a)?, verdicts(b)?);
    if check_a != check_b {
        bail!(
            "phytrace check disagrees:\n  {}:\n    {}\n  {}:\n    {}",
            a.0.display(),
            check_a.join("\n    "),
            b.0.display(),
            check_b.join("\n    ")
        );
    }
    ensure!(
        check_a.iter().any(|line| line.starts_with("ok ")),
        "phytrace check: no rule holds on the captures"
    );
    eprintln!(
        "    check ({}): the same {} verdicts on both",
        a.1.file_name().unwrap_or_default().to_string_lossy(),
        check_a.len()
    );
    for line in &check_a {
        eprintln!("      {line}");
    }
    Ok(check_a)
}

/// The verdict lines of `phytrace check` (`  ok    RULE  on N PHYs`, `  FAIL  …`).
fn verdict_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            line.strip_prefix("  ").is_some_and(|rest| {
                let word = rest.split_whitespace().next().unwrap_or_default();
                !rest.starts_with(' ') && matches!(word, "ok" | "FAIL" | "n/a" | "skip" | "-")
            })
        })
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The field `path` (dotted) of `event`, as text.
pub fn field(event: &Value, path: &str) -> String {
    let mut value = event;
    for key in path.split('.') {
        value = &value[key];
    }
    match value {
        Value::Null => "-".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What `dump --format json` tells of one capture.
struct Story {
    /// The events, one line each, without what depends on the guest's speed.
    lines: Vec<String>,
    /// The MDIO accesses attributed to a callback, as (op, register, callback).
    attributed: BTreeSet<(String, String, String)>,
    /// Of [`Twins::Kernels`]: the MAC side's calls in order (`PHY op`, phylink_resolve left
    /// out; the arches' twin has them among `lines`).
    mac: Vec<String>,
    /// The link each `read_status` reported (`PHY speed/duplex` or `PHY down`), from the PHY's
    /// first link up, repeats merged.
    links: Vec<String>,
    /// MDIO reads per PHY and register, and `read_status` polls per PHY: how many depends on
    /// the guest's speed.
    counts: BTreeMap<String, usize>,
    /// What each PHY's callbacks did, without order or number: every callback that returned,
    /// with its return value, and every MDIO access made inside one, as `PHY op reg=R in CB`.
    calls: BTreeSet<String>,
}

/// What may differ between the two guests of a twin.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Twins {
    /// One kernel built for two architectures (the arm64 test): timing only.
    Arches,
    /// Two kernels (ours and Debian's 7.3) running the dongle: also the MDIO buses' names (the
    /// USB device numbers count what was plugged in before) and the MAC side's calls, which
    /// are kept apart ([`Story::mac`]: 7.3 calls `netif_carrier_on/off` twice per change).
    Kernels,
}

impl Story {
    /// The accesses of [`ATTRIBUTED`] this capture attributes to no callback or another.
    fn unattributed(&self) -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
        ATTRIBUTED.into_iter().filter(|(op, reg, callback)| {
            !self
                .attributed
                .contains(&(op.to_string(), reg.to_string(), callback.to_string()))
        })
    }
}

/// The decoded events of a `dump --format json`, one line each, without what depends on the
/// guest's speed: timestamps, latencies, CPU and thread, MDIO reads and `read_status` polls.
/// The reads are summed up at the end as which callback read which register of which PHY
/// (their attribution), without their number.
/// A story line without the function implementing its callback (`enter OP (FUNCTION) …`).
fn by_op(line: &str) -> String {
    match line.split_once(" (") {
        Some((head, rest)) => match rest.split_once(") ") {
            Some((_, tail)) => format!("{head} {tail}"),
            None => line.to_owned(),
        },
        None => line.to_owned(),
    }
}

fn story(json: &str, twins: Twins) -> Result<Story> {
    let mut lines = Vec::new();
    let mut reads = BTreeSet::new();
    let mut attributed = BTreeSet::new();
    let (mut mac, mut links) = (Vec::new(), Vec::<String>::new());
    let mut counts = BTreeMap::new();
    let mut buses = Vec::<String>::new();
    let mut calls = BTreeSet::new();
    for (n, line) in json.lines().enumerate() {
        let event: Value = serde_json::from_str(line)
            .with_context(|| format!("line {} of phytrace dump --format json", n + 1))?;
        let kind = field(&event, "kind");
        let caller = field(&event, "caller.name");
        if kind == "mdio" && caller != "-" {
            attributed.insert((field(&event, "op"), field(&event, "reg"), caller.clone()));
        }
        let mut bus = field(&event, "phy.bus");
        if twins == Twins::Kernels && bus != "-" {
            // Named by order of appearance: the first bus seen is bus1.
            let at = buses.iter().position(|b| *b == bus).unwrap_or_else(|| {
                buses.push(bus.clone());
                buses.len() - 1
            });
            bus = format!("bus{}", at + 1);
        }
        let phy = format!(
            "{bus}:{} {} {}",
            field(&event, "phy.addr"),
            field(&event, "phy.phy_id"),
            field(&event, "phy.driver")
        );
        match kind.as_str() {
            "mdio" if caller != "-" => {
                calls.insert(format!(
                    "{phy} {} reg={} in {caller}",
                    field(&event, "op"),
                    field(&event, "reg")
                ));
            }
            "callback_exit" => {
                calls.insert(format!(
                    "{phy} {} returns {}",
                    field(&event, "callback.name"),
                    field(&event, "ret")
                ));
            }
            _ => {}
        }
        let text = match kind.as_str() {
            "mdio" if field(&event, "op") == "read" => {
                *counts
                    .entry(format!(
                        "{bus}:{} reg={} reads",
                        field(&event, "phy.addr"),
                        field(&event, "reg")
                    ))
                    .or_default() += 1;
                reads.insert(format!(
                    "{phy} reads reg={} in {} ({})",
                    field(&event, "reg"),
                    field(&event, "caller.name"),
                    field(&event, "caller.driver_type")
                ));
                continue;
            }
            "callback_enter" if field(&event, "callback.name") == "read_status" => {
                *counts
                    .entry(format!(
                        "{bus}:{} read_status polls",
                        field(&event, "phy.addr")
                    ))
                    .or_default() += 1;
                continue;
            }
            "callback_exit" if field(&event, "callback.name") == "read_status" => {
                let link = if field(&event, "link.up") == "true" {
                    format!(
                        "{}/{}",
                        field(&event, "link.speed"),
                        field(&event, "link.duplex")
                    )
                } else {
                    "down".to_owned()
                };
                let at = format!("{bus}:{} ", field(&event, "phy.addr"));
                // From the first link up: how many polls see the link down before it depends on
                // the guest's speed.
                let before_up = !links.iter().any(|link| link.starts_with(&at));
                let link = format!("{at}{link}");
                if links.last() != Some(&link) && !(before_up && link.ends_with(" down")) {
                    links.push(link);
                }
                continue;
            }
            "mac" if twins == Twins::Kernels => {
                let op = match field(&event, "change.op").as_str() {
                    "resolve" => continue,
                    "carrier" if field(&event, "change.up") == "true" => "carrier_on".to_owned(),
                    "carrier" => "carrier_off".to_owned(),
                    "link_up" => format!(
                        "mac_link_up {}/{} tx_pause={} rx_pause={}",
                        field(&event, "change.speed"),
                        field(&event, "change.duplex"),
                        field(&event, "change.tx_pause"),
                        field(&event, "change.rx_pause")
                    ),
                    other => format!("mac_{other}"),
                };
                mac.push(format!("{bus}:{} {op}", field(&event, "phy.addr")));
                continue;
            }
            // The kernel's own lines are printed from other threads than the driver's calls
            // (phy_sim's link messages from its adjust_link), so where they fall among those
            // depends on the guest's speed; tests/vm/41-dongle-record.sh compares them with dmesg.
            "kmsg" => continue,
            "mdio" => format!(
                "{phy} {} write reg={} value={} error={} caller={} ({}) state={}",
                kind,
                field(&event, "reg"),
                field(&event, "value"),
                field(&event, "error"),
                field(&event, "caller.name"),
                field(&event, "caller.driver_type"),
                field(&event, "state.name")
            ),
            "callback_enter" => format!(
                "{phy} enter {} ({}) depth={} state={}",
                field(&event, "callback.name"),
                field(&event, "callback.driver_type"),
                field(&event, "depth"),
                field(&event, "state.name")
            ),
            "callback_exit" => format!(
                "{phy} exit {} depth={} ret={} state={}->{} link={}/{}/{}",
                field(&event, "callback.name"),
                field(&event, "depth"),
                field(&event, "ret"),
                field(&event, "state_before.name"),
                field(&event, "state_after.name"),
                field(&event, "link.up"),
                field(&event, "link.speed"),
                field(&event, "link.duplex")
            ),
            "attached" | "detached" => format!(
                "{kind} {} callbacks={}",
                field(&event, "module"),
                field(&event, "callbacks")
            ),
            other => format!("{other} {phy}"),
        };
        lines.push(text);
    }
    lines.extend(reads);
    Ok(Story {
        lines,
        attributed,
        mac,
        links,
        counts,
        calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_those_outside_the_common_subsequence() {
        let lines = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            changed_lines(&lines("a b c d"), &lines("a x c d e")),
            ["- b", "+ x", "+ e"]
        );
        assert!(changed_lines(&lines("a b"), &lines("a b")).is_empty());
    }

    #[test]
    fn verdicts_are_the_rule_lines_only() {
        let text = "phytrace check: a.ptrace (123 events) against s.spec\n  ok    rule one  on 3 PHYs\n  FAIL  rule two  on 1 PHY\n      at 1.234 something\n\na.ptrace: 2 rules, 1 failed\n";
        assert_eq!(
            verdict_lines(text),
            ["ok rule one on 3 PHYs", "FAIL rule two on 1 PHY"]
        );
    }

    #[test]
    fn the_story_leaves_timing_reads_and_polls_out() {
        let json = r#"{"ts_ns":1,"cpu":0,"tid":0,"kind":"attached","module":"m","callbacks":5,"reattached":false}
{"ts_ns":2,"cpu":1,"tid":9,"phy":{"bus":"b","addr":1,"phy_id":7,"driver":"D"},"kind":"mdio","op":"read","reg":1,"value":0,"latency_ns":5}
{"ts_ns":3,"cpu":1,"tid":9,"phy":{"bus":"b","addr":1,"phy_id":7,"driver":"D"},"kind":"callback_enter","callback":{"name":"read_status","driver_type":"T"},"depth":1,"state":{"value":5,"name":"RUNNING"}}
{"ts_ns":4,"cpu":0,"tid":8,"phy":{"bus":"b","addr":1,"phy_id":7,"driver":"D"},"kind":"mdio","op":"write","reg":0,"value":0,"error":-5,"latency_ns":6,"caller":{"name":"soft_reset","driver_type":"T"},"state":{"value":4,"name":"NOLINK"}}
{"ts_ns":5,"cpu":0,"tid":8,"phy":{"bus":"b","addr":1,"phy_id":7,"driver":"D"},"kind":"kmsg","level":6,"text":"sim0: Link is Down"}"#;
        let story = story(json, Twins::Arches).unwrap();
        let lines = &story.lines;
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "attached m callbacks=5");
        assert_eq!(
            lines[1],
            "b:1 7 D mdio write reg=0 value=0 error=-5 caller=soft_reset (T) state=NOLINK"
        );
        assert_eq!(lines[2], "b:1 7 D reads reg=1 in - (-)");
        // The write is attributed; the read is not.
        assert_eq!(
            story.unattributed().collect::<Vec<_>>(),
            [("read", "1", "read_status")]
        );
    }

    #[test]
    fn the_kernels_story_names_buses_by_order_and_keeps_the_mac_apart() {
        let phy =
            |bus: &str| format!(r#""phy":{{"bus":"{bus}","addr":16,"phy_id":7,"driver":"D"}}"#);
        let json = [
            format!(r#"{{"kind":"callback_enter",{},"callback":{{"name":"soft_reset","driver_type":"T"}},"depth":1,"state":{{"name":"READY"}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"callback_exit",{},"callback":{{"name":"read_status"}},"link":{{"up":true,"speed":100,"duplex":"full"}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"callback_exit",{},"callback":{{"name":"read_status"}},"link":{{"up":true,"speed":100,"duplex":"full"}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"mac",{},"change":{{"op":"carrier","netdev":"eth0","up":true}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"mac",{},"change":{{"op":"carrier","netdev":"eth0","up":true}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"mac",{},"change":{{"op":"resolve","latency_ns":5}}}}"#, phy("usb-1:5")),
            format!(r#"{{"kind":"mdio",{},"op":"read","reg":1,"value":0}}"#, phy("usb-1:7")),
        ]
        .join("\n");
        let story = story(&json, Twins::Kernels).unwrap();
        assert_eq!(
            story.lines[0],
            "bus1:16 7 D enter soft_reset (T) depth=1 state=READY"
        );
        assert_eq!(story.links, ["bus1:16 100/full"]);
        assert_eq!(story.mac, ["bus1:16 carrier_on", "bus1:16 carrier_on"]);
        assert_eq!(story.counts.get("bus2:16 reg=1 reads"), Some(&1));
        // The arches' story keeps the bus names and the MAC side among its lines.
        let arches = super::story(&json, Twins::Arches).unwrap();
        assert!(arches.lines[0].starts_with("usb-1:5:16 "));
        assert!(arches.mac.is_empty());
    }

    #[test]
    fn attribution_counts_only_the_named_callback() {
        let access = |op, reg, caller| {
            format!(
                r#"{{"kind":"mdio","op":"{op}","reg":{reg},"value":0,"caller":{{"name":"{caller}","driver_type":"T"}}}}"#
            )
        };
        let both = [
            access("read", 1, "read_status"),
            access("write", 0, "soft_reset"),
        ]
        .join("\n");
        assert_eq!(
            story(&both, Twins::Arches).unwrap().unattributed().count(),
            0
        );
        let elsewhere = [
            access("read", 1, "config_init"),
            access("write", 0, "soft_reset"),
        ]
        .join("\n");
        assert_eq!(
            story(&elsewhere, Twins::Arches)
                .unwrap()
                .unattributed()
                .collect::<Vec<_>>(),
            [("read", "1", "read_status")]
        );
        assert_eq!(story("", Twins::Arches).unwrap().unattributed().count(), 2);
    }

    #[test]
    fn the_first_callback_is_compared_by_op() {
        assert_eq!(
            by_op("bus1:16 7 D enter soft_reset (asix_soft_reset) depth=1 state=READY"),
            "bus1:16 7 D enter soft_reset depth=1 state=READY"
        );
    }

    #[test]
    fn carrier_calls_that_change_nothing_are_left_out() {
        let mac = [
            "p mac_link_up 100/full",
            "p carrier_on",
            "p carrier_off",
            "p carrier_off",
        ]
        .map(str::to_owned);
        assert_eq!(
            carrier_changes(&mac),
            ["p mac_link_up 100/full", "p carrier_off"]
        );
    }

    #[test]
    fn the_first_difference_is_where_one_ends_or_both_differ() {
        let lines = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(first_difference(&lines("a b"), &lines("a b")), None);
        assert_eq!(first_difference(&lines("a b"), &lines("a c")), Some(1));
        assert_eq!(first_difference(&lines("a b"), &lines("a b c")), Some(2));
    }

    /// A stand-in for phytrace in a directory of its own: `dump --format json CAPTURE` prints
    /// the capture's file (the dump itself), `diff` finds the captures equal.
    struct FakePhytrace(std::path::PathBuf);

    impl FakePhytrace {
        fn new(name: &str) -> Self {
            use std::os::unix::fs::PermissionsExt as _;
            let dir =
                std::env::temp_dir().join(format!("xtask-twin-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let script = dir.join("phytrace");
            std::fs::write(
                &script,
                "#!/bin/sh\ncase $1 in\ndump) cat \"$4\" ;;\ndiff) echo 'equal' ;;\n*) exit 2 ;;\nesac\n",
            )
            .unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            Self(dir)
        }

        fn binary(&self) -> std::path::PathBuf {
            self.0.join("phytrace")
        }

        /// A capture whose dump is `lines`.
        fn capture(&self, name: &str, lines: &[String]) -> std::path::PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, lines.join("\n")).unwrap();
            path
        }
    }

    impl Drop for FakePhytrace {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A dump of the dongle's PHY on `bus`: `soft_reset` writes BMCR (failing with `error`)
    /// and returns `ret`, `read_status` reads BMSR and finds the link up, the carrier goes on
    /// `carrier_calls` times.
    fn dongle_dump(bus: &str, error: i32, ret: i32, carrier_calls: usize) -> Vec<String> {
        let phy = format!(r#""phy":{{"bus":"{bus}","addr":16,"phy_id":7,"driver":"D"}}"#);
        let callback = |name| format!(r#""callback":{{"name":"{name}","driver_type":"T"}}"#);
        let caller = |name| format!(r#""caller":{{"name":"{name}","driver_type":"T"}}"#);
        let mut lines = vec![
            format!(
                r#"{{"kind":"callback_enter",{phy},{},"depth":1,"state":{{"name":"UP"}}}}"#,
                callback("soft_reset")
            ),
            format!(
                r#"{{"kind":"mdio",{phy},"op":"write","reg":0,"value":32768,"error":{error},{}}}"#,
                caller("soft_reset")
            ),
            format!(
                r#"{{"kind":"callback_exit",{phy},{},"depth":1,"ret":{ret},"link":{{"up":false}}}}"#,
                callback("soft_reset")
            ),
            format!(
                r#"{{"kind":"callback_enter",{phy},{},"depth":1,"state":{{"name":"NOLINK"}}}}"#,
                callback("read_status")
            ),
            format!(
                r#"{{"kind":"mdio",{phy},"op":"read","reg":1,"value":30829,{}}}"#,
                caller("read_status")
            ),
            format!(
                r#"{{"kind":"callback_exit",{phy},{},"depth":1,"ret":0,"link":{{"up":true,"speed":100,"duplex":"full"}}}}"#,
                callback("read_status")
            ),
        ];
        lines.extend((0..carrier_calls).map(|_| {
            format!(
                r#"{{"kind":"mac",{phy},"change":{{"op":"carrier","netdev":"eth0","up":true}}}}"#
            )
        }));
        lines
    }

    #[test]
    fn the_arches_agree_on_equal_dumps_and_name_the_first_difference() {
        let phytrace = FakePhytrace::new("arches");
        let a = phytrace.capture("a", &dongle_dump("b", -5, 0, 1));
        let b = phytrace.capture("b", &dongle_dump("b", -5, 0, 1));
        agree_across_arches(&phytrace.binary(), &a, &b).unwrap();
        let other = phytrace.capture("other", &dongle_dump("b", -5, -110, 1));
        let err = agree_across_arches(&phytrace.binary(), &a, &other).unwrap_err();
        assert!(
            err.to_string().contains("the captures differ at event 2"),
            "{err}"
        );
        let no_eio = phytrace.capture("no_eio", &dongle_dump("b", -110, 0, 1));
        let err = agree_across_arches(&phytrace.binary(), &no_eio, &no_eio).unwrap_err();
        assert!(
            err.to_string().contains("no MDIO write failing with -5"),
            "{err}"
        );
    }

    #[test]
    fn the_kernels_agree_across_bus_names_and_carrier_calls_but_not_return_values() {
        let phytrace = FakePhytrace::new("kernels");
        let ours = phytrace.capture("ours", &dongle_dump("usb-001:002", -5, 0, 1));
        // 7.3 calls netif_carrier_on twice per change, and the dongle has another USB number.
        let stock = phytrace.capture("stock", &dongle_dump("usb-001:004", -5, 0, 2));
        agree_across_kernels(&phytrace.binary(), ("ours", &ours), ("stock", &stock)).unwrap();
        let failing = phytrace.capture("failing", &dongle_dump("usb-001:004", -5, -110, 2));
        let err = agree_across_kernels(&phytrace.binary(), ("ours", &ours), ("stock", &failing))
            .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "callbacks with their return values, MDIO accesses inside them: the kernels differ"
            ),
            "{err}"
        );
    }
}
