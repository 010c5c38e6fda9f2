//! The arm64 test: the static `dist` binaries record the same scenario (`tests/arm64/scenario.sh`)
//! with the Rust driver and one simulated AX88772A in an x86_64 guest and in an arm64 guest;
//! then the host build's `check`, `dump` and `diff` must tell the same story of both captures.
//!
//! "The same story": the check verdicts are equal rule by rule; the decoded events are equal
//! once timing is taken out (timestamps, latencies, CPUs and thread ids) and so are the reads
//! and `read_status` polls, whose number depends on how fast the guest runs, and the kernel's
//! messages, whose place among the callbacks depends on it too; `diff
//! --ignore-reads` finds the MDIO sequences equal. In each guest a second `record` probes the
//! callbacks at phylib's call sites: its callbacks must equal, in each thread's order and with
//! their return values, the kernel's own kprobe events on the driver's callbacks of that run.
//!
//! The arm64 guest then plugs in the emulated AX88772A dongle (`tests/arm64/dongle.sh`, the
//! emulator's static aarch64 build on raw-gadget): `record` with its defaults from before the
//! plug-in through link up, a cable flap and link down; its callbacks must equal the kernel's
//! own events on the driver's callbacks in the same way, and its MAC side asix's
//! `mac_link_up`/`mac_link_down` as the kernel's kprobes saw them (count, speed, duplex). The
//! x86_64 guest's VM suite covers the dongle there (tests/vm/18, 19, 41, 42).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::Value;

use crate::{arch::Arch, dist, kernel, modules, paths, run, vm};

/// The scenario both guests run.
const SCENARIO: &str = "tests/arm64/scenario.sh";
/// The dongle scenario the arm64 guest runs next.
const DONGLE: &str = "tests/arm64/dongle.sh";
/// The emulator the arm64 guest runs.
const EMULATOR: &str = "ax88772a-emulator";
/// The spec the captures are checked against.
const SPEC: &str = "specs/ax88796b.spec";
/// MDIO accesses the scenario makes inside driver callbacks, as (op, register, callback):
/// BMSR read by `read_status`, BMCR written by `soft_reset`. Each capture must attribute them,
/// so that two captures whose attribution is broken alike do not agree.
const ATTRIBUTED: [(&str, &str, &str); 2] =
    [("read", "1", "read_status"), ("write", "0", "soft_reset")];

/// The capture the scenario leaves for `arch`.
pub fn capture(arch: Arch) -> PathBuf {
    paths::vm_out().join(format!("twin-{arch}.ptrace"))
}

/// Builds what the test needs, records the scenario in both guests (one after the other) and
/// compares the captures with `host_phytrace`.
pub fn run(options: &vm::VmOptions, host_phytrace: &Path) -> Result<()> {
    dist::build_all(&Arch::ALL)?;
    build_emulator(Arch::Aarch64)?;
    let mut kernels = Vec::new();
    for arch in Arch::ALL {
        let kernel = kernel::run(&kernel::KernelArgs {
            force: false,
            arch,
            source: Default::default(),
        })?;
        modules::build(&kernel)?;
        kernels.push(kernel);
    }
    let script = |path: &str| paths::workspace().join(path).display().to_string();
    for kernel in &kernels {
        let arch = kernel.arch;
        let command = match arch {
            Arch::Aarch64 => vec![
                "sh".to_owned(),
                "-c".to_owned(),
                format!("sh {} && sh {}", script(SCENARIO), script(DONGLE)),
            ],
            _ => vec!["sh".to_owned(), script(SCENARIO)],
        };
        let started = run::step(&format!("arm64 test: the scenario in the {arch} guest"));
        let mut options = options.clone();
        options.bin = Some(dist::binary(arch));
        let _ = std::fs::remove_file(capture(arch));
        let code = vm::boot(kernel, &options, &command)?;
        ensure!(
            code == 0,
            "the scenario failed in the {arch} guest (exit status {code})"
        );
        run::done(&format!("{arch} guest"), started);
    }
    compare(
        host_phytrace,
        &capture(Arch::X86_64),
        &capture(Arch::Aarch64),
    )?;
    for arch in Arch::ALL {
        let capture = paths::vm_out().join(format!("twin-{arch}-callsite.ptrace"));
        compare_call_sites(host_phytrace, &capture, &arch.to_string())?;
    }
    let dongle = paths::vm_out().join(format!("dongle-{}.ptrace", Arch::Aarch64));
    let json = compare_call_sites(host_phytrace, &dongle, "aarch64 dongle")?;
    compare_mac(&json, &dongle)?;
    mac_calls_at_sites(&dongle)
}

/// Builds the dongle emulator for `arch`'s musl target (static, as `dist` builds phytrace).
fn build_emulator(arch: Arch) -> Result<()> {
    let started = run::step(&format!("arm64 test: building the emulator for {arch}"));
    dist::build_static(EMULATOR, arch)?;
    run::done(&format!("{arch} emulator"), started);
    Ok(())
}

/// A call-site capture (`label` says whose) against the kernel's own kprobe and kretprobe
/// events on the driver's callbacks in the same run (`tests/vm/callsite_truth.py`): the same
/// calls, in each thread's order, with the same return values. Returns the capture's events
/// as `dump --format json` writes them.
fn compare_call_sites(phytrace: &Path, capture: &Path, label: &str) -> Result<String> {
    let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", capture.display()));
    let json = run::output(
        Command::new(phytrace)
            .args(["dump", "--format", "json"])
            .arg(capture),
    )?;
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
fn compare_mac(json: &str, capture: &Path) -> Result<()> {
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
fn mac_calls_at_sites(capture: &Path) -> Result<()> {
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

/// `check`, `dump` and `diff` of the two captures agree.
pub fn compare(phytrace: &Path, a: &Path, b: &Path) -> Result<()> {
    let spec = paths::workspace().join(SPEC);
    same_verdicts(phytrace, (a, &spec), (b, &spec))?;

    let story = |capture: &Path| -> Result<Story> {
        let json = run::output(
            Command::new(phytrace)
                .args(["dump", "--format", "json"])
                .arg(capture),
        )?;
        let story = story(&json, Twins::Arches)?;
        if let Some((op, reg, callback)) = story.unattributed().next() {
            bail!(
                "phytrace dump: {}: no MDIO {op} of reg={reg} attributed to {callback} (MDIO attribution is empty)",
                capture.display()
            );
        }
        Ok(story)
    };
    let (Story { lines: story_a, .. }, Story { lines: story_b, .. }) = (story(a)?, story(b)?);
    if let Some(at) =
        (0..story_a.len().max(story_b.len())).find(|&i| story_a.get(i) != story_b.get(i))
    {
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

/// The dongle scenario every kernel records (`dongle_scenario` in `tests/vm/dongle_lib.sh`):
/// the capture a guest of `kernel` (`ours`, `stock`) leaves, beside the specs it scoped to the
/// dongle's PHY (`CAPTURE.SPEC.spec`).
pub fn dongle_capture(kernel: &str) -> PathBuf {
    paths::vm_out().join(format!("twin-dongle-{kernel}.ptrace"))
}

/// The specs the dongle twin is checked against (each guest scopes them to its dongle's PHY).
const DONGLE_SPECS: [&str; 2] = ["ax88796b", "dongle"];

/// The cross-kernel twin: the dongle scenario recorded on two kernels (`(name, capture)`),
/// compared as the arm64 test compares its guests. Equal, or an error: the verdicts of the
/// shipped specs rule by rule; the first callback; each PHY's callbacks with their return
/// values and the MDIO accesses (op, register) made inside each; the links `read_status`
/// reported from the first link up; the MAC side's changes as the kernel counts them
/// ([`carrier_changes`]). Said, not compared: the MAC side's calls where they differ (7.3's
/// asix and phylink both call `netif_carrier_on/off`: two calls per change), the callbacks and
/// MDIO writes in order where they differ (phylib's own accesses, how often the driver
/// re-initialises the PHY on NOLINK, which depends on what each poll saw), and the counts that
/// depend on the guest's speed (MDIO reads per register, polls).
pub fn compare_kernels(phytrace: &Path, a: (&str, &Path), b: (&str, &Path)) -> Result<()> {
    let with =
        |capture: &Path, suffix: &str| PathBuf::from(format!("{}{suffix}", capture.display()));
    for spec in DONGLE_SPECS {
        let suffix = format!(".{spec}.spec");
        same_verdicts(
            phytrace,
            (a.1, &with(a.1, &suffix)),
            (b.1, &with(b.1, &suffix)),
        )?;
    }
    let story = |(name, capture): (&str, &Path)| -> Result<Story> {
        let json = run::output(
            Command::new(phytrace)
                .args(["dump", "--format", "json"])
                .arg(capture),
        )?;
        let story = story(&json, Twins::Kernels)?;
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
    let first = |story: &Story| {
        let first = story.lines.iter().find(|line| line.contains(" enter "));
        first.cloned().into_iter().collect::<Vec<_>>()
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
        if let Some(at) = (0..la.len().max(lb.len())).find(|&i| la.get(i) != lb.get(i)) {
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
fn same_verdicts(phytrace: &Path, a: (&Path, &Path), b: (&Path, &Path)) -> Result<Vec<String>> {
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
fn field(event: &Value, path: &str) -> String {
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
}
