//! `cargo xtask bench`: phytrace against bpftrace and against no tracing, side by side in one
//! VM boot (`scenarios/bench.sh`), written to `docs/benchmarks.json` and `docs/benchmarks.md`.

use std::{collections::BTreeMap, fmt::Write as _, fs, process::Command};

use anyhow::{Context as _, Result, bail};

use crate::{paths, run, vm};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Rounds of P1/P2 (each runs untraced, phytrace and bpftrace once) and of each P3 rate.
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// MDIO reads per P1 burst.
    #[arg(long, default_value_t = 20_000)]
    pub reads: u32,
    /// Write docs/benchmarks.md and .json again from the last run's results
    /// (target/vm-out/bench.jsonl), without booting the guest.
    #[arg(long)]
    pub report_only: bool,
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

/// min / median / max of a series.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spread {
    min: f64,
    median: f64,
    max: f64,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let mid = values.len() / 2;
        let median = if values.len() % 2 == 1 {
            values[mid]
        } else {
            (values[mid - 1] + values[mid]) / 2.0
        };
        Some(Self {
            min: values[0],
            median,
            max: values[values.len() - 1],
        })
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({ "min": self.min, "median": self.median, "max": self.max })
    }

    fn cell(&self) -> String {
        format!("{:.0} ({:.0}–{:.0})", self.median, self.min, self.max)
    }
}

/// The P3 rounds at one asked rate.
struct RateRuns {
    rate: u64,
    achieved: Spread,
    generated: Spread,
    lost: Vec<u64>,
    consumer_ns: Spread,
}

impl RateRuns {
    /// Rounds grouped by asked rate, in the order the rates were run.
    fn group(p3: &[&serde_json::Value]) -> Vec<Self> {
        let mut rates: Vec<u64> = p3.iter().filter_map(|r| r["rate"].as_u64()).collect();
        rates.dedup();
        rates
            .into_iter()
            .filter_map(|rate| {
                let rounds: Vec<_> = p3.iter().filter(|r| r["rate"] == rate).collect();
                let values = |field: &str| -> Vec<f64> {
                    rounds.iter().filter_map(|r| r[field].as_f64()).collect()
                };
                Some(Self {
                    rate,
                    achieved: Spread::of(values("achieved_per_s"))?,
                    generated: Spread::of(values("generated"))?,
                    lost: rounds.iter().filter_map(|r| r["lost"].as_u64()).collect(),
                    consumer_ns: Spread::of(values("consumer_ns_per_event"))?,
                })
            })
            .collect()
    }
}

/// `0, 0, 12` for a table cell.
fn join(values: &[u64]) -> String {
    values
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn run(args: &BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    let results = paths::vm_out().join("bench.jsonl");
    let kernel = if args.report_only {
        crate::kernel::locate(crate::arch::Arch::X86_64)?
    } else {
        let (kernel, options) = vm::prepare_release(&args.vm)?;
        let _ = fs::remove_file(&results);
        let command = vec![
            "/bin/bash".to_owned(),
            paths::workspace()
                .join("scenarios/bench.sh")
                .display()
                .to_string(),
            format!("REPEATS={}", args.repeats),
            format!("READS={}", args.reads),
        ];
        let code = vm::boot(&kernel, &options, &command)?;
        if code != 0 {
            bail!("the benchmark failed in the guest (exit status {code})");
        }
        kernel
    };
    let text =
        fs::read_to_string(&results).with_context(|| format!("reading {}", results.display()))?;
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("parsing the guest's results")?;
    // The results' own time: a report rewritten later still says when they were measured.
    let date = run::output(
        Command::new("date")
            .arg("-u")
            .arg("-r")
            .arg(&results)
            .arg("+%Y-%m-%d %H:%M UTC"),
    )?;
    let (json, markdown) = report(&rows, &kernel.tree, &date)?;
    let docs = paths::workspace().join("docs");
    fs::write(
        docs.join("benchmarks.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    fs::write(docs.join("benchmarks.md"), markdown)?;
    eprintln!("==> bench: results in docs/benchmarks.md and docs/benchmarks.json");
    Ok(std::process::ExitCode::SUCCESS)
}

/// The medians of `field` over the `profile` rows of `probes` and `program`.
fn profile_median(
    rows: &[serde_json::Value],
    probes: &str,
    field: &str,
    program: Option<&str>,
) -> f64 {
    let values = rows
        .iter()
        .filter(|r| r["bench"] == "profile" && r["probes"] == probes)
        .filter(|r| program.is_none_or(|p| r["program"] == p))
        .filter_map(|r| r[field].as_f64())
        .collect();
    Spread::of(values).map_or(f64::NAN, |s| s.median)
}

/// Where phytrace's cost per access goes: time inside each of its MDIO programs
/// (`scenarios/profile-bpf.sh`, the kernel's own BPF statistics).
fn profile_section(
    md: &mut String,
    rows: &[serde_json::Value],
    added: f64,
    floor: f64,
) -> Result<()> {
    writeln!(md, "### Where the cost goes\n")?;
    writeln!(
        md,
        "Time inside each program per run, from the kernel's BPF statistics (`kernel.bpf_stats_enabled`,\nwhich adds two clock reads per run), in the same boot (`scenarios/profile-bpf.sh`):\n"
    )?;
    writeln!(
        md,
        "| MDIO probes | entry program ns | return program ns | burst ns per read (statistics on) |\n|---|---|---|---|"
    )?;
    for (probes, entry, exit) in [
        ("fentry", "mdio_read_enter", "mdio_read_exit"),
        ("kprobe", "mdio_read_enter_kprobe", "mdio_read_exit_kprobe"),
    ] {
        writeln!(
            md,
            "| {probes} | {:.0} | {:.0} | {:.0} |",
            profile_median(rows, probes, "ns_per_run", Some(entry)),
            profile_median(rows, probes, "ns_per_run", Some(exit)),
            profile_median(rows, probes, "burst_ns_per_read", None),
        )?;
    }
    let inside = profile_median(rows, "fentry", "ns_per_run", Some("mdio_read_enter"))
        + profile_median(rows, "fentry", "ns_per_run", Some("mdio_read_exit"));
    writeln!(
        md,
        "\nOf the {added:.0} ns phytrace adds per access, the trampolines themselves take {floor:.0} (the empty\npair); its two programs run about {inside:.0} ns with statistics on. What they do per access: on entry,\nthe thread's state (task-local storage) and a timestamp; on return, the thread's state again (entry\ntime, calling callback), a per-CPU cache of the devices at each bus address (a PHY already looked up\nand named is neither looked up nor named again: only its status is read, with direct loads), a\ntimestamp, and the 72-byte record reserved in the ring buffer, filled there and committed.\n"
    )?;
    Ok(())
}

/// Where a CPU sample of the thread making the reads landed, by the kernel symbol's prefix
/// (first match wins); a symbol no prefix matches is the access's own code.
const SAMPLE_PARTS: &[(&str, &[&str])] = &[
    (
        "trampolines: entering and leaving programs",
        &[
            "bpf_trampoline_",
            "__bpf_prog_enter",
            "__bpf_prog_exit",
            "__bpf_tramp_",
            "migrate_disable",
            "migrate_enable",
        ],
    ),
    ("the programs' own code", &["bpf_prog_"]),
    (
        "clock reads (the simulator's own included)",
        &["ktime_get", "read_tsc", "bpf_ktime_get"],
    ),
    (
        "per-thread state: task storage, hash maps",
        &[
            "bpf_task_storage_",
            "bpf_local_storage_",
            "bpf_get_current_task",
            "htab_",
            "__htab_",
            "free_htab_elem",
            "alloc_htab_elem",
            "pcpu_freelist_",
            "bpf_obj_free_fields",
        ],
    ),
    (
        "output: ring buffer (bpftrace: perf buffer), wake-ups",
        &[
            "__bpf_ringbuf_",
            "bpf_ringbuf_",
            "bpf_perf_event_output",
            "perf_",
            "__perf_",
            "irq_work_",
            "default_send_IPI_self",
            "_raw_spin_lock_irqsave",
            "_raw_spin_unlock_irqrestore",
        ],
    ),
    (
        "other helpers",
        &["bpf_get_", "bpf_probe_read", "copy_from_kernel_nofault"],
    ),
];

/// The parts of [`SAMPLE_PARTS`] the conclusion reads, by index.
const TRAMPOLINES: usize = 0;
const PROGRAM_CODE: usize = 1;
const CLOCK: usize = 2;
const THREAD_STATE: usize = 3;
const OUTPUT: usize = 4;

/// The part of [`SAMPLE_PARTS`] a sample in `symbol` counts for (`SAMPLE_PARTS.len()`: the
/// access itself).
fn sample_part(symbol: &str) -> usize {
    SAMPLE_PARTS
        .iter()
        .position(|(_, prefixes)| prefixes.iter().any(|p| symbol.starts_with(p)))
        .unwrap_or(SAMPLE_PARTS.len())
}

/// The tracers the samples are taken with, as `bench.sh` names them, and their column titles.
const SAMPLE_TRACERS: &[(&str, &str)] = &[
    ("none", "untraced"),
    ("bpftrace-floor-fentry", "empty fentry+fexit"),
    ("phytrace", "phytrace"),
    ("bpftrace-kfunc", "bpftrace kfunc"),
];

/// One tracer's samples: ns per access of each part (the last: the access itself), from the
/// share of the samples in it and the sampled bursts' median ns per access.
fn sample_split(rows: &[serde_json::Value], tracer: &str) -> Option<Vec<f64>> {
    let ns = Spread::of(series(rows, "samples", tracer, "ns_per_access"))?.median;
    let mut counts = vec![0.0; SAMPLE_PARTS.len() + 1];
    for row in rows
        .iter()
        .filter(|r| r["bench"] == "samples" && r["tracer"] == tracer)
    {
        if let (Some(symbol), Some(n)) = (row["symbol"].as_str(), row["samples"].as_f64()) {
            counts[sample_part(symbol)] += n;
        }
    }
    let total: f64 = counts.iter().sum();
    (total > 0.0).then(|| counts.iter().map(|c| c / total * ns).collect())
}

/// Where the reading thread's time goes with each tracer, from CPU samples.
fn samples_section(md: &mut String, rows: &[serde_json::Value], floor: f64) -> Result<()> {
    let splits: Vec<Vec<f64>> = SAMPLE_TRACERS
        .iter()
        .map(|(tracer, _)| sample_split(rows, tracer))
        .collect::<Option<_>>()
        .context("the results have no CPU samples for every tracer: rerun `cargo xtask bench`")?;
    let total_samples: f64 = series(rows, "samples", "phytrace", "samples").iter().sum();
    let reads = series(rows, "samples", "phytrace", "reads")
        .first()
        .copied()
        .context("the samples do not say their reads")?;
    writeln!(
        md,
        "Where the time of the thread making the reads goes, from CPU samples of one burst of {reads:.0}\nreads per tracer and round (`perf record -e cpu-clock`, at most one sample per timer tick:\n{total_samples:.0} samples in all for phytrace), grouped by the kernel function they landed in; ns per\naccess are each group's share of the samples times the burst's median ns per read:\n"
    )?;
    write!(md, "| ns per access |")?;
    for (_, title) in SAMPLE_TRACERS {
        write!(md, " {title} |")?;
    }
    writeln!(md, "\n|---|{}", "---|".repeat(SAMPLE_TRACERS.len()))?;
    let names = SAMPLE_PARTS
        .iter()
        .map(|(name, _)| *name)
        .chain(["the access itself"]);
    for (part, name) in names.enumerate() {
        write!(md, "| {name} |")?;
        for split in &splits {
            write!(md, " {:.0} |", split[part])?;
        }
        writeln!(md)?;
    }
    write!(md, "| **all** |")?;
    for split in &splits {
        write!(md, " **{:.0}** |", split.iter().sum::<f64>())?;
    }
    writeln!(md)?;
    let split = |tracer: &str| {
        let at = SAMPLE_TRACERS.iter().position(|(t, _)| *t == tracer);
        &splits[at.expect("a tracer the samples are taken with")]
    };
    let (none, floor_split, phytrace) = (
        split("none"),
        split("bpftrace-floor-fentry"),
        split("phytrace"),
    );
    let added = |part: usize| phytrace[part] - none[part];
    // Every part but the trampolines and the access itself.
    let programs: f64 = (PROGRAM_CODE..SAMPLE_PARTS.len()).map(added).sum();
    let (clock, ring) = (added(CLOCK), added(OUTPUT));
    writeln!(
        md,
        "\nThe trampolines take {:.0} ns per access with phytrace and {:.0} with the empty pair. Above them,\nphytrace's programs and the helpers they call take {programs:.0} ns per access. The 3× goal leaves\nthem about {:.0} (three times the empty pair's {floor:.0} added, less the trampolines'\nshare): the two clock reads ({clock:.0}) and the ring buffer ({ring:.0}) alone take {:.0}.\nWithout any output at all, the clock reads, the per-thread state and the programs' own code\nwould still take {:.0}. The latency needs both clock reads and the record needs an output. The\nbpftrace script reads the clock twice as well, and pays more for its output (the perf buffer)\nand far more for its per-thread start time (a hash map: insert, look up, delete).\n",
        phytrace[TRAMPOLINES] - none[TRAMPOLINES],
        floor_split[TRAMPOLINES] - none[TRAMPOLINES],
        2.0 * floor,
        clock + ring,
        clock + added(THREAD_STATE) + added(PROGRAM_CODE),
    )?;
    writeln!(
        md,
        "A per-CPU batched ring does not save the ring's cost: a build that staged MDIO records per CPU\nand wrote them 32 at a time with one `bpf_ringbuf_output` (measured once, 2026-12-05, not by this\ncommand: 15 bursts each, alternating with this build in one boot) took 1565 ns per access against\n1600, within the noise: copying a batch into the ring costs about what the reserves and commits it\nsaves. Batching would also lose the ring's order (a thread's staged records must reach the ring\nbefore it runs on another CPU, and two threads taking turns on one PHY would need the consumer to\nmerge the CPUs by timestamp), so it was not kept.\n\nThe consumer costs the producer too, though it runs on the other CPU: bursts with `record`\nstopped (SIGSTOP, the ring holding the records) were ~300 ns per access faster than with it\nrunning, in one boot (2026-12-05, not by this command, a JSON Lines capture then). A binary\ncapture takes its consumer a quarter of the time per event (P3 below), and P1 dropped by about\n150 ns with it.\n"
    )?;
    Ok(())
}

/// The tracers P1 measures, as `bench.sh` names them, and what each is.
const P1_TRACERS: &[(&str, &str)] = &[
    ("phytrace", "phytrace record"),
    ("phytrace-kprobe", "phytrace record --mdio-probes kprobe"),
    (
        "bpftrace-kfunc",
        "bpftrace, kfunc+kretfunc, same fields (scenarios/bench-kfunc.bt)",
    ),
    (
        "bpftrace-kprobe",
        "bpftrace, kprobe twin of phytrace's design (scenarios/bench.bt)",
    ),
    ("bpftrace-floor-fentry", "empty fentry+fexit pair (floor)"),
    ("bpftrace-floor-kprobe", "empty kprobe+kretprobe pair"),
];

/// The tracers of the callback benchmark (C1), as `bench.sh` names them, and what they are.
const C1_TRACERS: &[(&str, &str)] = &[
    (
        "phytrace-callsite",
        "phytrace record --callback-probes callsite",
    ),
    (
        "phytrace-symbol",
        "phytrace record --callback-probes symbol",
    ),
    (
        "floor-callsite",
        "empty program on the same call sites (`scenarios/kprobe_floor.py`)",
    ),
    (
        "bpftrace-floor-symbol",
        "empty kprobe+kretprobe on the driver's resume callback",
    ),
];

/// C1, the cost per driver callback, and the start with call-site probes against bpftrace's
/// (`bpftrace_attach_ms`, P2's median): the report's section and its JSON.
fn callback_section(
    md: &mut String,
    rows: &[serde_json::Value],
    bpftrace_attach_ms: f64,
) -> Result<serde_json::Value> {
    let probes = rows
        .iter()
        .find(|r| r["bench"] == "c1-probes")
        .context("the results have no `c1-probes` row: rerun `cargo xtask bench`")?;
    let spread = |bench, tracer, field| {
        Spread::of(series(rows, bench, tracer, field))
            .with_context(|| format!("no {bench} results for {tracer}"))
    };
    let none = spread("c1", "none", "ns_per_call")?;
    let mut added = BTreeMap::new();
    writeln!(md, "## C1: cost per driver callback\n")?;
    writeln!(
        md,
        "Synchronous bursts of {} `phy_resume()` calls in the simulator (`load` control, `resume N`):\neach runs the Rust driver's `resume` through phylib (`__phy_resume` calls `drv->resume`), which\nreads BMCR once. phytrace traces the MDIO access too, the same in both of its rows: the\ndifference between them is the callback probes'. The floors are an empty program on every call\nsite phytrace probes (its call and return kprobes, loaded by `scenarios/kprobe_floor.py` through\nbpf(2) and the kprobe PMU: Debian's bpftrace 0.17 has no kprobe offsets) and an empty\nkprobe+kretprobe on the driver's resume callback (bpftrace).\n",
        probes["calls"]
    )?;
    writeln!(md, "| tracing | ns per call | added ns |\n|---|---|---|")?;
    writeln!(md, "| none | {} | – |", none.cell())?;
    for (tracer, what) in C1_TRACERS {
        let s = spread("c1", tracer, "ns_per_call")?;
        let extra = s.median - none.median;
        writeln!(md, "| {what} (`{tracer}`) | {} | {extra:.0} |", s.cell())?;
        added.insert(*tracer, extra);
    }
    let pair = added["phytrace-callsite"] - added["phytrace-symbol"];
    let floors = added["floor-callsite"] - added["bpftrace-floor-symbol"];
    writeln!(
        md,
        "\nProbing callbacks at the call sites instead of the Rust symbols changes phytrace's cost per\ncallback by **{pair:+.0} ns** (goal: no more than the symbol pair: {}); the empty programs'\nfloors differ by {floors:+.0} ns, so the probes themselves (kprobes on an instruction trap; a\nfunction's entry and return go through ftrace) account for {:.0} % of the difference.\n",
        if pair <= 0.0 { "met" } else { "missed" },
        if pair > 0.0 {
            100.0 * floors / pair
        } else {
            0.0
        }
    )?;
    let attach = spread("p2", "phytrace-callsite", "attach_ms")?;
    let cold = spread("p2-cold", "phytrace-callsite", "attach_ms")?;
    let ratio = bpftrace_attach_ms / attach.median;
    writeln!(
        md,
        "Start to attached with the call sites ({} of them): {} ms from this boot's cache, **{ratio:.1} ×**\nfaster than bpftrace's P2 start (goal ≥ 5: {}); the boot's first start, which finds them by\ndecoding the kernel text, {} ms.\n",
        probes["call_sites"],
        attach.cell(),
        if ratio >= 5.0 { "met" } else { "missed" },
        cold.cell()
    )?;
    Ok(serde_json::json!({
        "c1_ns_per_call": C1_TRACERS.iter().map(|(t, _)| (t.to_string(), spread("c1", t, "ns_per_call").map(|s| s.json()).unwrap_or_default()))
            .chain([("none".to_owned(), none.json())]).collect::<BTreeMap<_, _>>(),
        "c1_added_ns": added,
        "c1_callsite_minus_symbol_ns": pair,
        "p2_attach_ms_callsite": attach.json(),
        "p2_attach_ms_callsite_first": cold.json(),
        "p2_bpftrace_over_phytrace_callsite": ratio,
    }))
}

fn series(rows: &[serde_json::Value], bench: &str, tracer: &str, field: &str) -> Vec<f64> {
    rows.iter()
        .filter(|r| r["bench"] == bench && r["tracer"] == tracer)
        .filter_map(|r| r[field].as_f64())
        .collect()
}

fn report(
    rows: &[serde_json::Value],
    tree: &std::path::Path,
    date: &str,
) -> Result<(serde_json::Value, String)> {
    let run = rows
        .iter()
        .find(|r| r["bench"] == "probes")
        .context("the results have no `probes` row")?;
    let (Some(repeats), Some(reads)) = (run["repeats"].as_u64(), run["reads"].as_u64()) else {
        bail!(
            "the results do not say their rounds and reads (older than this xtask): rerun `cargo xtask bench`"
        );
    };
    let spread = |bench, tracer, field| {
        Spread::of(series(rows, bench, tracer, field))
            .with_context(|| format!("no {bench} results for {tracer}"))
    };
    let none = spread("p1", "none", "ns_per_access")?;
    let mut p1 = Vec::new();
    for (tracer, _) in P1_TRACERS {
        let s = spread("p1", tracer, "ns_per_access")?;
        let added = s.median - none.median;
        p1.push((*tracer, s, added));
    }
    let added = |name: &str| {
        p1.iter()
            .find(|(t, ..)| *t == name)
            .map_or(f64::NAN, |t| t.2)
    };
    let peer_ratio = added("phytrace") / added("bpftrace-kfunc");
    let floor_ratio = added("phytrace") / added("bpftrace-floor-fentry");
    let kprobe_ratio = added("phytrace-kprobe") / added("bpftrace-kprobe");
    let attach_phytrace = spread("p2", "phytrace", "attach_ms")?;
    let attach_bpftrace = spread("p2", "bpftrace-kfunc", "attach_ms")?;
    let attach_ratio = attach_bpftrace.median / attach_phytrace.median;
    let p3: Vec<&serde_json::Value> = rows.iter().filter(|r| r["bench"] == "p3").collect();
    let rates = RateRuns::group(&p3);
    let p3_jsonl: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["bench"] == "p3-jsonl").collect();
    let jsonl = RateRuns::group(&p3_jsonl);
    let drop_free = rates
        .iter()
        .filter(|r| r.lost.iter().all(|&l| l == 0))
        .map(|r| r.achieved.median)
        .fold(0.0, f64::max);
    let exact = p3.iter().chain(&p3_jsonl).all(|r| {
        r["generated"].as_u64()
            == Some(r["recorded"].as_u64().unwrap_or(0) + r["lost"].as_u64().unwrap_or(0))
    });
    let callbacks = rows
        .iter()
        .find(|r| r["bench"] == "probes")
        .and_then(|r| r["callbacks"].as_u64())
        .context("no probe count in the results")?;
    let kprobes = 2 * (2 + callbacks);
    let tui: BTreeMap<u64, u64> = rows
        .iter()
        .filter(|r| r["bench"] == "tui")
        .filter_map(|r| Some((r["rate"].as_u64()?, r["cpu_percent"].as_u64()?)))
        .collect();

    let release =
        fs::read_to_string(tree.join("include/config/kernel.release")).unwrap_or_default();
    let release = release.trim();
    let host = run::output(Command::new("uname").arg("-srm"))?;
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut json = serde_json::json!({
        "date": date, "host": host, "host_cpus": cpus, "guest_kernel": release,
        "accel": "see `xtask vm` output (TCG when KVM does not work)",
        "repeats": repeats, "reads_per_burst": reads,
        "p1_ns_per_access": p1.iter().map(|(t, s, _)| (t.to_string(), s.json()))
            .chain([("none".to_owned(), none.json())]).collect::<BTreeMap<_, _>>(),
        "p1_added_ns": p1.iter().map(|(t, _, a)| (t.to_string(), *a)).collect::<BTreeMap<_, _>>(),
        "p1_ratios": { "phytrace_over_bpftrace_kfunc": peer_ratio, "phytrace_over_empty_fentry": floor_ratio,
                       "phytrace_kprobe_over_bpftrace_kprobe": kprobe_ratio },
        "p2_kprobes": kprobes,
        "p2_attach_ms": { "phytrace": attach_phytrace.json(), "bpftrace": attach_bpftrace.json(), "bpftrace_over_phytrace": attach_ratio },
        "p3": p3, "p3_jsonl": p3_jsonl, "p3_drop_free_per_s": drop_free.round(), "p3_loss_counted_exactly": exact,
        "tui_cpu_percent": tui,
    });

    let goal = |ok: bool| if ok { "met" } else { "missed" };
    let mut md = String::new();
    writeln!(md, "# Benchmarks\n")?;
    writeln!(
        md,
        "Measured by `cargo xtask bench` ({repeats} rounds, {reads} MDIO reads per burst) on {date}:",
    )?;
    writeln!(
        md,
        "host `{host}` with {cpus} CPUs, guest kernel {release} under QEMU (TCG when KVM does not work)."
    )?;
    writeln!(
        md,
        "Absolute times under software emulation mean little; the ratios, measured side by side in one"
    )?;
    writeln!(
        md,
        "boot, are what to read. Values are median (min–max). Rerun: `cargo xtask bench`.\n"
    )?;
    writeln!(md, "## P1: cost per MDIO access\n")?;
    writeln!(
        md,
        "Synchronous `mdiobus_read()` bursts in the simulator (`load` control), untraced and with each"
    )?;
    writeln!(
        md,
        "tracer running, one after the other in each round. Each tracer's first burst after it starts\nis a warm-up, not counted: for phytrace it cost ~100 ns more per access than the next ones, whether\nor not the session had sat idle 2 s first (measured once, 2026-12-05)."
    )?;
    writeln!(md)?;
    writeln!(md, "| tracing | ns per access | added ns |\n|---|---|---|")?;
    writeln!(md, "| none | {} | – |", none.cell())?;
    for ((tracer, spread, added), (_, what)) in p1.iter().zip(P1_TRACERS) {
        writeln!(
            md,
            "| {what} (`{tracer}`) | {} | {added:.0} |",
            spread.cell()
        )?;
    }
    writeln!(
        md,
        "\nphytrace's added cost is **{peer_ratio:.2} ×** the strongest bpftrace script's (goal ≤ 0.5: {})",
        goal(peer_ratio <= 0.5)
    )?;
    writeln!(
        md,
        "and **{floor_ratio:.2} ×** the empty fentry+fexit pair's (goal ≤ 3: {}). With `--mdio-probes kprobe`",
        goal(floor_ratio <= 3.0)
    )?;
    writeln!(
        md,
        "it costs {kprobe_ratio:.2} × the bpftrace twin of its kprobe design.\n"
    )?;
    profile_section(
        &mut md,
        rows,
        added("phytrace"),
        added("bpftrace-floor-fentry"),
    )?;
    samples_section(&mut md, rows, added("bpftrace-floor-fentry"))?;
    let callbacks_json = callback_section(&mut md, rows, attach_bpftrace.median)?;
    writeln!(md, "## P2: start to attached\n")?;
    writeln!(
        md,
        "Process start until the first event can be recorded (phytrace: its `--status` line says `recording`,"
    )?;
    writeln!(
        md,
        "written after every probe is attached; bpftrace: its `BEGIN` output), wall clock, ms. `bench.sh`\nwaits for that line blocked on a FIFO the tracer writes (no poll: a look that forks a process\ntakes CPU from the tracer being timed) and reads the time from bash's own clock\n(`$EPOCHREALTIME`: running `date` would fork within the time measured)."
    )?;
    writeln!(
        md,
        "Both attach the same {kprobes} probes: fentry and fexit of `__mdiobus_read`, `__mdiobus_write`,\nkprobe and kretprobe of the driver's {callbacks} callbacks (found in `/proc/kallsyms`: by phytrace as it\nstarts, for bpftrace by `bench.sh` beforehand); bpftrace runs `scenarios/bench-kfunc.bt`. phytrace\nalso attaches what a session needs besides: the Clause-45 accessors' trampolines, the module\nload/unload tracepoints, kprobes on PHY removal and carrier changes, and the MAC side's pending\nevents (`phylink_resolve`, `ax88772_mac_link_up/down`).\n"
    )?;
    writeln!(md, "| tool | ms |\n|---|---|")?;
    writeln!(md, "| phytrace | {} |", attach_phytrace.cell())?;
    writeln!(md, "| bpftrace | {} |\n", attach_bpftrace.cell())?;
    writeln!(
        md,
        "phytrace is **{attach_ratio:.1} ×** faster to attach (goal ≥ 5: {}).\n",
        goal(attach_ratio >= 5.0)
    )?;
    writeln!(
        md,
        "Where phytrace's start-up goes (`record`'s own line, `attached in … ms: BTF, load … with MDIO probes\nattached meanwhile, modules`; release build, quiet guest, 2026-12-04): about 170 ms in all, of which\nthe process's own start (exec, the capture's header) ~16 ms, the kernel's BTF ~16 ms (copied out of\nits BTF object in one call; read from sysfs 4 KiB at a time it took ~10 ms more), the load\n~125 ms and arming the driver's callbacks ~9 ms. The load is the kernel's verifier: the programs of one\nsession are 9 996 instructions as verified (each MDIO return program ~1 050, `callback_enter`\n1 937, `callback_exit` 1 138, the MAC-side ones ~500 each; 14 458 before the slow paths became\nglobal functions), verified in parallel on one thread per CPU, and the start attaches each of\nits own probes as soon as its program is loaded (trampolines ~5 ms each, vmlinux kprobes\n3–4 ms), while the others are still being verified. The slow paths (a device's lookup, a PHY's\nnaming) are BPF global functions, checked once per program whatever paths reach them; the rest\nis inlined. With the two CPUs of the guest busy verifying, what limits P2 is the code to verify:\neach program carries its own copy of the slow paths (a trampoline program is loaded for one\nfunction, and this kernel refuses tail calls between programs of different attach points).\n"
    )?;
    writeln!(md, "## P3: drop-free rate (default 4 MiB ring)\n")?;
    writeln!(
        md,
        "MDIO reads at a set rate from a simulator kernel thread while `phytrace record` runs;"
    )?;
    writeln!(
        md,
        "`generated` is the simulator's own count; `consumer` is `record`'s CPU time per event recorded.\nThe capture is binary (`record`'s default); the last row is the top rate again with\n`--encoding jsonl`."
    )?;
    writeln!(md, "{repeats} rounds per rate.\n")?;
    writeln!(
        md,
        "| asked /s | achieved /s | generated per round | lost per round | consumer ns/event |\n|---|---|---|---|---|"
    )?;
    let jsonl_rows = jsonl.iter().map(|r| (r, " (JSON Lines)"));
    for (r, label) in rates.iter().map(|r| (r, "")).chain(jsonl_rows) {
        writeln!(
            md,
            "| {}{label} | {} | {} | {} | {} |",
            r.rate,
            r.achieved.cell(),
            r.generated.cell(),
            join(&r.lost),
            r.consumer_ns.cell()
        )?;
    }
    writeln!(
        md,
        "\nHighest rate without loss in any round: **{drop_free:.0} events/s**. Loss counted exactly (recorded + lost = generated) in every round: {}.",
        if exact { "yes" } else { "NO" }
    )?;
    let top = rates.last().context("no p3 results")?;
    let lossy = top.lost.iter().filter(|&&l| l > 0).count();
    writeln!(
        md,
        "At the highest rate one CPU generates (reads back to back, {:.0} /s), events were lost in {lossy} of {} rounds (goal: none: {}).",
        top.achieved.median,
        top.lost.len(),
        goal(lossy == 0)
    )?;
    let jsonl_top = jsonl.last().context("no JSON Lines p3 results")?;
    writeln!(
        md,
        "The consumer (`record` reading each ring-buffer record and writing it to the capture as it is)\nruns on one CPU under software emulation, the producer on the other: at that rate the consumer\nis busy {:.0}% of the time (its ns per event × events per second). Writing JSON Lines instead, it\ntakes {:.0} ns per event and loses events in {} of {} rounds. At low rates the time per event is\nhigher: each wake-up reads a small batch.\n",
        top.consumer_ns.median * top.achieved.median / 1e7,
        jsonl_top.consumer_ns.median,
        jsonl_top.lost.iter().filter(|&&l| l > 0).count(),
        jsonl_top.lost.len()
    )?;
    writeln!(
        md,
        "What the JSON Lines consumer spends its time on at that rate (`perf record -e cpu-clock` of `record`\nin the guest, 2026-12-04, not by this command): the kernel copying the capture's lines into the\npage cache (`write`) 25%, encoding events as JSON 21%, decoding records into events 12%, the\nwriter's bookkeeping (ids, counts, the filter) ~15%, copies 6%, reading the ring 5%. No single\nstep gave the 2× it needed, so since format version 4 `record` writes binary captures: each\nring-buffer record is written as the kernel wrote it (77 bytes with its frame, against 150–200\nfor a JSON line) and decoded when the capture is read, by the decoder a live session uses\n([capture-format.md](capture-format.md#binary-encoding)). Natively the two paths take ~23 and\n~170 ns per event (`cargo bench -p phytrace --bench record`, `record_binary` and `record_jsonl`).\n"
    )?;
    writeln!(md, "## TUI CPU share\n")?;
    writeln!(
        md,
        "`phytrace tui` in tmux, user + system time over the measuring window, % of one CPU.\n"
    )?;
    writeln!(md, "| events/s | CPU % |\n|---|---|")?;
    for (rate, cpu) in &tui {
        writeln!(md, "| {rate} | {cpu} |")?;
    }
    if let (Some(json), serde_json::Value::Object(callbacks)) =
        (json.as_object_mut(), callbacks_json)
    {
        json.extend(callbacks);
    }
    Ok((json, md))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_takes_min_median_max() {
        let s = Spread::of(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            s,
            Spread {
                min: 1.0,
                median: 2.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(vec![4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Spread::of(vec![]).is_none());
    }

    #[test]
    fn samples_fall_in_the_part_of_their_symbol() {
        assert_eq!(sample_part("bpf_trampoline_6442474627"), TRAMPOLINES);
        assert_eq!(
            sample_part("bpf_prog_42e5b9502f6a0143_mdio_read_exit"),
            PROGRAM_CODE
        );
        assert_eq!(sample_part("ktime_get_mono_fast_ns"), CLOCK);
        // Before the catch-all of other helpers.
        assert_eq!(sample_part("bpf_get_current_task_btf"), THREAD_STATE);
        assert_eq!(sample_part("__bpf_ringbuf_reserve"), OUTPUT);
        // The last part: other helpers.
        assert_eq!(
            sample_part("bpf_get_current_pid_tgid"),
            SAMPLE_PARTS.len() - 1
        );
        assert_eq!(sample_part("sim_reg_read"), SAMPLE_PARTS.len());
    }

    #[test]
    fn p3_rounds_group_by_rate_in_run_order() {
        let round = |rate: u64, achieved: u64, lost: u64| {
            serde_json::json!({ "bench": "p3", "rate": rate, "achieved_per_s": achieved,
                "generated": 100, "recorded": 100 - lost, "lost": lost, "consumer_ns_per_event": 900 })
        };
        let rows = [
            round(1000, 990, 0),
            round(1000, 994, 0),
            round(500, 498, 0),
            round(500, 499, 3),
        ];
        let refs: Vec<&serde_json::Value> = rows.iter().collect();
        let rates = RateRuns::group(&refs);
        assert_eq!(
            rates.iter().map(|r| r.rate).collect::<Vec<_>>(),
            [1000, 500]
        );
        assert_eq!(rates[0].achieved.median, 992.0);
        assert_eq!(join(&rates[1].lost), "0, 3");
    }
}
