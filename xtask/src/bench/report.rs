//! The figures of one run, from its rows: min / median / max per tracer, what each tracer adds
//! to the untraced cost, the ratios to the goals, written as `docs/benchmarks.json` and
//! `docs/benchmarks.md`.

use std::{collections::BTreeMap, fmt::Write as _};

use anyhow::{Context as _, Result};

use super::rows::{CallSites, Figure, FirmwareLoad, RateRound, Row, Rows, Run, TracedLoad};

/// Where and when the results were measured, as the report says it.
pub struct Setting {
    /// When the results were written.
    pub date: String,
    /// The host (`uname -srm`) and its CPUs.
    pub host: String,
    pub cpus: usize,
    /// The guest kernel's release.
    pub release: String,
}

/// min / median / max of a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Spread {
    min: f64,
    pub(super) median: f64,
    pub(super) max: f64,
}

impl Spread {
    pub(super) fn of(mut values: Vec<f64>) -> Option<Self> {
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

    pub(super) fn cell(&self) -> String {
        self.cell_to(0)
    }

    /// The cell with `decimals` digits after the point.
    fn cell_to(&self, decimals: usize) -> String {
        format!(
            "{:.decimals$} ({:.decimals$}–{:.decimals$})",
            self.median, self.min, self.max
        )
    }

    /// The spread divided by `by` (µs to ms).
    fn scaled(&self, by: f64) -> Self {
        Self {
            min: self.min / by,
            median: self.median / by,
            max: self.max / by,
        }
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
    fn group(p3: &[RateRound]) -> Vec<Self> {
        let mut rates: Vec<u64> = p3.iter().map(|r| r.rate).collect();
        rates.dedup();
        rates
            .into_iter()
            .filter_map(|rate| {
                let rounds: Vec<_> = p3.iter().filter(|r| r.rate == rate).collect();
                let values = |field: fn(&RateRound) -> u64| -> Vec<f64> {
                    rounds.iter().map(|r| field(r) as f64).collect()
                };
                Some(Self {
                    rate,
                    achieved: Spread::of(values(|r| r.achieved_per_s))?,
                    generated: Spread::of(values(|r| r.generated))?,
                    lost: rounds.iter().map(|r| r.lost).collect(),
                    consumer_ns: Spread::of(values(|r| r.consumer_ns_per_event))?,
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

/// The median ns per run of `program` under the MDIO probes `probes` (NaN if not profiled).
fn program_median(rows: &Rows, probes: &str, program: &str) -> f64 {
    let values = rows
        .programs
        .iter()
        .filter(|r| r.probes == probes && r.program == program)
        .map(|r| r.ns_per_run as f64)
        .collect();
    Spread::of(values).map_or(f64::NAN, |s| s.median)
}

/// The median ns per read of the profiled bursts under the MDIO probes `probes` (NaN if none).
fn profile_burst_median(rows: &Rows, probes: &str) -> f64 {
    let values = rows
        .profile_bursts
        .iter()
        .filter(|r| r.probes == probes)
        .map(|r| r.burst_ns_per_read as f64)
        .collect();
    Spread::of(values).map_or(f64::NAN, |s| s.median)
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
    ("floor-fields", "same-fields floor"),
    ("phytrace", "phytrace"),
    ("bpftrace27", "forky's bpftrace"),
    ("bpftrace-kfunc", "bookworm's bpftrace"),
];

/// One tracer's samples: ns per access of each part (the last: the access itself), from the
/// share of the samples in it and the sampled bursts' median ns per access.
fn sample_split(rows: &Rows, tracer: &str) -> Option<Vec<f64>> {
    let ns = Spread::of(series(&rows.sampled_bursts, tracer))?.median;
    let mut counts = vec![0.0; SAMPLE_PARTS.len() + 1];
    for row in rows.symbol_samples.iter().filter(|r| r.tracer == tracer) {
        counts[sample_part(&row.symbol)] += row.samples as f64;
    }
    let total: f64 = counts.iter().sum();
    (total > 0.0).then(|| counts.iter().map(|c| c / total * ns).collect())
}

/// The tracers P1 measures, as `bench.sh` names them, and what each is.
const P1_TRACERS: &[(&str, &str)] = &[
    ("phytrace", "phytrace record"),
    ("phytrace-kprobe", "phytrace record --mdio-probes kprobe"),
    (
        "bpftrace27",
        "forky's bpftrace, fentry+fexit, same fields (scenarios/bench-bpftrace27.bt)",
    ),
    (
        "bpftrace-kfunc",
        "bookworm's bpftrace, kfunc+kretfunc, same fields (scenarios/bench-kfunc.bt)",
    ),
    (
        "bpftrace-kprobe",
        "bookworm's bpftrace, kprobe twin of phytrace's design (scenarios/bench.bt)",
    ),
    (
        "floor-fields",
        "same-fields floor: fentry+fexit, two clock reads, one 72-byte ring record",
    ),
    ("bpftrace-floor-fentry", "empty fentry+fexit pair"),
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
        "bpftrace27",
        "forky's bpftrace on the same call sites (scenarios/bench-bpftrace27.bt)",
    ),
    (
        "floor-callsite",
        "empty program on the same call sites, by `scenarios/kprobe_floor.py`",
    ),
    (
        "bpftrace-floor-symbol",
        "empty kprobe+kretprobe on the driver's resume callback",
    ),
];

/// The figures of `tracer` in `rows`.
fn series<R: Figure>(rows: &[R], tracer: &str) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.tracer() == tracer)
        .map(|r| r.figure() as f64)
        .collect()
}

/// The spread of the figures of `tracer` in `rows`; an error if there are none.
fn spread<R: Figure>(rows: &[R], tracer: &str) -> Result<Spread> {
    Spread::of(series(rows, tracer))
        .with_context(|| format!("no {} results for {tracer}", R::BENCH))
}

/// A tracer's figures in a table of costs: its name, what it is, its spread and what it adds
/// to the untraced median.
struct Added {
    tracer: &'static str,
    what: &'static str,
    spread: Spread,
    added: f64,
}

impl Added {
    /// The spreads of `tracers` in `rows`, against the untraced `none`.
    fn each<R: Figure>(
        rows: &[R],
        tracers: &[(&'static str, &'static str)],
        none: Spread,
    ) -> Result<Vec<Self>> {
        tracers
            .iter()
            .map(|&(tracer, what)| {
                let spread = spread(rows, tracer)?;
                Ok(Self {
                    tracer,
                    what,
                    spread,
                    added: spread.median - none.median,
                })
            })
            .collect()
    }

    /// A table of `all` below the untraced `none`: `unit` (`ns per access`) and what each adds.
    fn write_table(md: &mut String, unit: &str, none: &Spread, all: &[Self]) -> Result<()> {
        writeln!(md, "| tracing | {unit} | added ns |\n|---|---|---|")?;
        writeln!(md, "| none | {} | – |", none.cell())?;
        for a in all {
            writeln!(
                md,
                "| {} (`{}`) | {} | {:.0} |",
                a.what,
                a.tracer,
                a.spread.cell(),
                a.added
            )?;
        }
        Ok(())
    }

    /// The spreads of `all` and of the untraced `none`, by tracer, for the JSON.
    fn json_spreads(all: &[Self], none: &Spread) -> BTreeMap<String, serde_json::Value> {
        all.iter()
            .map(|a| (a.tracer.to_owned(), a.spread.json()))
            .chain([("none".to_owned(), none.json())])
            .collect()
    }

    /// What each of `all` adds, by tracer, for the JSON.
    fn json_added(all: &[Self]) -> BTreeMap<&'static str, f64> {
        all.iter().map(|a| (a.tracer, a.added)).collect()
    }

    /// What `tracer` of `all` adds (NaN if it was not measured).
    fn of(all: &[Self], tracer: &str) -> f64 {
        all.iter()
            .find(|a| a.tracer == tracer)
            .map_or(f64::NAN, |a| a.added)
    }
}

/// Everything one run measured, from its rows: what the report's JSON and text say.
pub struct Figures<'r> {
    setting: Setting,
    /// Rounds, and MDIO reads per P1 burst.
    repeats: u64,
    reads: u64,
    p1: P1,
    profile: Profile,
    samples: Samples,
    c1: C1,
    p2: P2,
    stock: StockStart,
    p3: P3<'r>,
    /// `phytrace tui`'s CPU % by events per second.
    tui: BTreeMap<u64, u64>,
    c45: C45<'r>,
}

/// P1: the cost per MDIO access, untraced and with each of [`P1_TRACERS`].
struct P1 {
    none: Spread,
    tracers: Vec<Added>,
    /// The versions of bookworm's bpftrace and forky's.
    bpftrace: String,
    bpftrace27: String,
    /// phytrace's added cost over forky's bpftrace script's, and bookworm's.
    peer27_ratio: f64,
    peer_ratio: f64,
    /// phytrace's added cost over the same-fields floor's, and the empty fentry+fexit pair's.
    fields_ratio: f64,
    floor_ratio: f64,
    /// phytrace's with kprobes over the bpftrace twin of that design.
    kprobe_ratio: f64,
}

/// Time inside phytrace's MDIO programs per run, from the kernel's BPF statistics.
struct Profile {
    /// Per kind of MDIO probe: entry and return program ns per run, burst ns per read.
    probes: Vec<(&'static str, f64, f64, f64)>,
    /// The fentry pair's ns per run together.
    inside: f64,
}

/// Where the reading thread's time goes with each of [`SAMPLE_TRACERS`], from CPU samples.
struct Samples {
    /// Reads per sampled burst.
    reads: f64,
    /// phytrace's samples in all.
    phytrace_samples: f64,
    /// Per tracer, ns per access of each part of [`SAMPLE_PARTS`], then of the access itself.
    splits: Vec<Vec<f64>>,
    /// The trampolines' ns per access above untraced: with phytrace, with the same-fields
    /// floor, with the empty pair.
    trampolines: f64,
    fields_trampolines: f64,
    floor_trampolines: f64,
    /// What phytrace adds above the trampolines: its programs and the helpers they call; the
    /// same for the same-fields floor.
    programs: f64,
    fields_programs: f64,
    /// What the same-fields floor adds per access in P1, and what the 1.3× goal leaves
    /// phytrace above it.
    fields: f64,
    goal_room: f64,
    /// phytrace's two clock reads, its ring buffer, and both.
    clock: f64,
    ring: f64,
    clock_and_ring: f64,
    /// What would remain without any output: the clock reads, the per-thread state and the
    /// programs' own code.
    without_output: f64,
}

/// C1: the cost per driver callback.
struct C1 {
    /// Calls per burst and call sites probed, as the results write them.
    calls: u64,
    call_sites: u64,
    none: Spread,
    tracers: Vec<Added>,
    /// Call sites against symbols: phytrace's added cost, and the empty programs'.
    pair: f64,
    floors: f64,
    /// The floors' difference as a share of phytrace's, %.
    floors_percent: f64,
}

/// P2: start to attached.
struct P2 {
    /// Rounds.
    starts: u64,
    /// phytrace on the callbacks' symbols (bookworm's bpftrace's probes), on the call sites
    /// from the boot's cache, and the boot's first call-site start (searching the kernel text).
    symbol: Spread,
    callsite: Spread,
    cold: Spread,
    /// Bookworm's bpftrace on the symbols, forky's on the call sites.
    bpftrace: Spread,
    bpftrace27: Spread,
    /// Bookworm's bpftrace's median over phytrace's, on the symbols and on the call sites.
    symbol_ratio: f64,
    callsite_ratio: f64,
    /// Forky's bpftrace's median over phytrace's cached start and first start.
    cached27_ratio: f64,
    first27_ratio: f64,
    /// The driver's callbacks, the probes both attach, the call sites phytrace arms, and
    /// forky's bpftrace's probes at them.
    callbacks: u64,
    kprobes: u64,
    call_sites: u64,
    site_probes: u64,
    /// The versions of bookworm's bpftrace and forky's.
    versions: (String, String),
}

/// P2 on Debian's stock kernel (`scenarios/bench-start.sh`, a boot of its own).
struct StockStart {
    /// Its release, rounds, forky's bpftrace's version and its probes at the call sites.
    kernel: String,
    starts: u64,
    bpftrace27: String,
    site_probes: u64,
    /// phytrace's default start from this boot's cache, its first start, forky's bpftrace's.
    cached: Spread,
    first: Spread,
    peer: Spread,
    /// Forky's bpftrace's median over phytrace's cached start and first start.
    cached_ratio: f64,
    first_ratio: f64,
}

/// P3: events per second without loss, binary and JSON Lines captures, and with `--metrics`
/// scraped.
struct P3<'r> {
    rows: &'r [RateRound],
    jsonl_rows: &'r [RateRound],
    metrics_rows: &'r [RateRound],
    rates: Vec<RateRuns>,
    jsonl: Vec<RateRuns>,
    metrics: Vec<RateRuns>,
    /// The highest median rate without loss in any round.
    drop_free: f64,
    /// Recorded + lost = generated in every round.
    exact: bool,
    /// At the top rate: its median, the rounds that lost events and all rounds.
    top_rate: f64,
    top_lossy: usize,
    top_rounds: usize,
    /// How busy the consumer was at the top rate, % of one CPU.
    consumer_busy_percent: f64,
    /// The JSON Lines consumer at the top rate: ns per event, rounds with loss, all rounds.
    jsonl_consumer_ns: f64,
    jsonl_lossy: usize,
    jsonl_rounds: usize,
    /// At the top rate: the consumer's ns per event recording alone (median, and the slowest
    /// round), and with `--metrics` scraped every second; the rounds of the latter that lost
    /// events, and all of them.
    top_consumer_ns: f64,
    top_consumer_max: f64,
    metrics_consumer_ns: f64,
    metrics_lossy: usize,
    metrics_rounds: usize,
}

/// Rounds of `runs` that lost events.
fn lossy(runs: &RateRuns) -> usize {
    runs.lost.iter().filter(|&&l| l > 0).count()
}

impl<'r> Figures<'r> {
    /// The figures of `rows`, measured in `setting`, and of `stock`, measured on Debian's
    /// kernel.
    pub fn of(rows: &'r Rows, stock: &Rows, setting: Setting) -> Result<Self> {
        let run: &Run = rows
            .runs
            .first()
            .context("the results have no `probes` row")?;
        let p1 = P1::of(rows, run)?;
        let p2 = P2::of(rows, run)?;
        Ok(Self {
            setting,
            repeats: run.repeats,
            reads: run.reads,
            profile: Profile::of(rows),
            samples: Samples::of(rows, Added::of(&p1.tracers, "floor-fields"))?,
            c1: C1::of(rows)?,
            p1,
            p2,
            stock: StockStart::of(stock)?,
            p3: P3::of(rows)?,
            tui: rows.tui.iter().map(|r| (r.rate, r.cpu_percent)).collect(),
            c45: C45::of(rows)?,
        })
    }

    /// `docs/benchmarks.json`.
    pub fn json(&self) -> serde_json::Value {
        let (p1, p2, p3, c1, c45) = (&self.p1, &self.p2, &self.p3, &self.c1, &self.c45);
        let tagged = |rows: &[RateRound], row: fn(RateRound) -> Row| -> Vec<Row> {
            rows.iter().cloned().map(row).collect()
        };
        let setting = &self.setting;
        serde_json::json!({
            "date": setting.date, "host": setting.host, "host_cpus": setting.cpus, "guest_kernel": setting.release,
            "accel": "see `xtask vm` output (TCG when KVM does not work)",
            "repeats": self.repeats, "reads_per_burst": self.reads,
            "p1_ns_per_access": Added::json_spreads(&p1.tracers, &p1.none),
            "p1_added_ns": Added::json_added(&p1.tracers),
            "bpftrace_versions": { "bookworm": p1.bpftrace, "forky": p1.bpftrace27 },
            "p1_ratios": { "phytrace_over_bpftrace27": p1.peer27_ratio, "phytrace_over_bpftrace_kfunc": p1.peer_ratio,
                           "phytrace_over_same_fields_floor": p1.fields_ratio, "phytrace_over_empty_fentry": p1.floor_ratio,
                           "phytrace_kprobe_over_bpftrace_kprobe": p1.kprobe_ratio },
            "p2_rounds": p2.starts,
            "p2_kprobes": p2.kprobes,
            "p2_attach_ms": { "phytrace": p2.symbol.json(), "bpftrace": p2.bpftrace.json(), "bpftrace_over_phytrace": p2.symbol_ratio },
            "p3": tagged(p3.rows, Row::P3), "p3_jsonl": tagged(p3.jsonl_rows, Row::P3Jsonl),
            "p3_metrics": tagged(p3.metrics_rows, Row::P3Metrics),
            "p3_drop_free_per_s": p3.drop_free.round(), "p3_loss_counted_exactly": p3.exact,
            "tui_cpu_percent": self.tui,
            "c1_ns_per_call": Added::json_spreads(&c1.tracers, &c1.none),
            "c1_added_ns": Added::json_added(&c1.tracers),
            "c1_callsite_minus_symbol_ns": c1.pair,
            "p2_attach_ms_callsite": p2.callsite.json(),
            "p2_attach_ms_callsite_first": p2.cold.json(),
            "p2_bpftrace_over_phytrace_callsite": p2.callsite_ratio,
            "p2_attach_ms_bpftrace27": p2.bpftrace27.json(),
            "p2_bpftrace27_over_phytrace_callsite": p2.cached27_ratio,
            "p2_bpftrace27_over_phytrace_callsite_first": p2.first27_ratio,
            "p2_stock": self.stock.json(),
            "c45": c45.rows(),
            "c45_probe_ms": { "none": c45.untraced.json(), "phytrace": c45.traced.json() },
            "c45_phytrace_over_untraced": c45.ratio,
            "c45_added_ns_per_firmware_write": c45.added_ns_per_write,
            "c45_firmware_writes_all_recorded": c45.whole,
        })
    }

    /// `docs/benchmarks.md`.
    pub fn markdown(&self) -> Result<String> {
        let mut md = String::new();
        self.write_header(&mut md)?;
        self.p1.write(&mut md)?;
        self.profile.write(&mut md, &self.p1)?;
        self.samples.write(&mut md)?;
        self.c1.write(&mut md)?;
        self.p2.write(&mut md)?;
        self.stock.write(&mut md)?;
        self.p3.write(&mut md, self.repeats)?;
        write_tui(&mut md, &self.tui)?;
        self.c45.write(&mut md)?;
        Ok(md)
    }

    /// The title, and when, where and how the run measured.
    fn write_header(&self, md: &mut String) -> Result<()> {
        let setting = &self.setting;
        writeln!(md, "# Benchmarks\n")?;
        writeln!(
            md,
            "Measured by `cargo xtask bench` ({} rounds, {} MDIO reads per burst) on {}:",
            self.repeats, self.reads, setting.date
        )?;
        writeln!(
            md,
            "host `{}` with {} CPUs, guest kernel {} under QEMU (TCG when KVM does not work).",
            setting.host, setting.cpus, setting.release
        )?;
        writeln!(
            md,
            "Absolute times under software emulation mean little; the ratios, measured side by side in one"
        )?;
        writeln!(
            md,
            "boot, are what to read. Values are median (min–max). Rerun: `cargo xtask bench`.\n"
        )?;
        Ok(())
    }
}

/// `met` or `missed`, for a goal.
fn goal(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}
impl P1 {
    /// P1's figures; `run` is the results' `probes` row.
    fn of(rows: &Rows, run: &Run) -> Result<Self> {
        let none = spread(&rows.p1, "none")?;
        let tracers = Added::each(&rows.p1, P1_TRACERS, none)?;
        let added = |tracer| Added::of(&tracers, tracer);
        Ok(Self {
            none,
            bpftrace: run.bpftrace.clone(),
            bpftrace27: run.bpftrace27.clone(),
            peer27_ratio: added("phytrace") / added("bpftrace27"),
            peer_ratio: added("phytrace") / added("bpftrace-kfunc"),
            fields_ratio: added("phytrace") / added("floor-fields"),
            floor_ratio: added("phytrace") / added("bpftrace-floor-fentry"),
            kprobe_ratio: added("phytrace-kprobe") / added("bpftrace-kprobe"),
            tracers,
        })
    }

    /// The P1 section: the cost table and the ratios to the goals.
    fn write(&self, md: &mut String) -> Result<()> {
        let Self {
            bpftrace,
            bpftrace27,
            peer27_ratio,
            peer_ratio,
            fields_ratio,
            floor_ratio,
            kprobe_ratio,
            ..
        } = self;
        writeln!(md, "## P1: cost per MDIO access\n")?;
        writeln!(
            md,
            "Synchronous `mdiobus_read()` bursts in the simulator (`load` control), untraced and with each"
        )?;
        writeln!(
            md,
            "tracer running, one after the other in each round. Each tracer's first burst after it starts\nis a warm-up, not counted. The reads are made on the guest's last CPU and every tracer runs on\nthe others (`taskset`), here and in C1 and the samples: a tracer reading its records does not\ntake the reader's CPU."
        )?;
        writeln!(md)?;
        writeln!(
            md,
            "bpftrace: Debian forky's {bpftrace27} (run from a forky root in the guest), Debian bookworm's {bpftrace}.\n"
        )?;
        Added::write_table(md, "ns per access", &self.none, &self.tracers)?;
        writeln!(
            md,
            "\nphytrace's added cost is **{peer27_ratio:.2} ×** forky's bpftrace script's, the strongest peer (goal ≤ 0.35: {}),\n{peer_ratio:.2} × bookworm's, **{fields_ratio:.2} ×** the same-fields floor's (goal ≤ 1.3: {}) and\n{floor_ratio:.2} × the empty fentry+fexit pair's. With `--mdio-probes kprobe` it costs {kprobe_ratio:.2} × the\nbpftrace twin of its kprobe design.\n",
            goal(*peer27_ratio <= 0.35),
            goal(*fields_ratio <= 1.3),
        )?;
        Ok(())
    }
}

impl Profile {
    fn of(rows: &Rows) -> Self {
        let probes = [
            ("fentry", "mdio_read_enter", "mdio_read_exit"),
            ("kprobe", "mdio_read_enter_kprobe", "mdio_read_exit_kprobe"),
        ]
        .into_iter()
        .map(|(probes, entry, exit)| {
            (
                probes,
                program_median(rows, probes, entry),
                program_median(rows, probes, exit),
                profile_burst_median(rows, probes),
            )
        })
        .collect();
        Self {
            probes,
            inside: program_median(rows, "fentry", "mdio_read_enter")
                + program_median(rows, "fentry", "mdio_read_exit"),
        }
    }

    /// Where phytrace's cost per access goes: time inside each of its MDIO programs
    /// (`scenarios/profile-bpf.sh`, the kernel's own BPF statistics), against P1's `p1`.
    fn write(&self, md: &mut String, p1: &P1) -> Result<()> {
        let added = Added::of(&p1.tracers, "phytrace");
        let floor = Added::of(&p1.tracers, "bpftrace-floor-fentry");
        let inside = self.inside;
        writeln!(md, "### Where the cost goes\n")?;
        writeln!(
            md,
            "Time inside each program per run, from the kernel's BPF statistics (`kernel.bpf_stats_enabled`,\nwhich adds two clock reads per run), in the same boot (`scenarios/profile-bpf.sh`):\n"
        )?;
        writeln!(
            md,
            "| MDIO probes | entry program ns | return program ns | burst ns per read (statistics on) |\n|---|---|---|---|"
        )?;
        for (probes, entry, exit, burst) in &self.probes {
            writeln!(md, "| {probes} | {entry:.0} | {exit:.0} | {burst:.0} |")?;
        }
        writeln!(
            md,
            "\nOf the {added:.0} ns phytrace adds per access, the trampolines themselves take {floor:.0} (the empty\npair); its two programs run about {inside:.0} ns with statistics on. What they do per access: on entry,\nthe thread's state (task-local storage) and a timestamp; on return, the thread's state again (entry\ntime, calling callback), a per-CPU cache of the devices at each bus address (a PHY already looked up\nand named is neither looked up nor named again: only its status is read, with direct loads), a\ntimestamp, and the 72-byte record reserved in the ring buffer, filled there and committed.\n"
        )?;
        Ok(())
    }
}

impl Samples {
    /// The samples of `rows`; `fields` is what the same-fields floor adds per access in P1.
    fn of(rows: &Rows, fields: f64) -> Result<Self> {
        let splits: Vec<Vec<f64>> = SAMPLE_TRACERS
            .iter()
            .map(|(tracer, _)| sample_split(rows, tracer))
            .collect::<Option<_>>()
            .context(
                "the results have no CPU samples for every tracer: rerun `cargo xtask bench`",
            )?;
        let reads = rows
            .sampled_bursts
            .iter()
            .find(|r| r.tracer == "phytrace")
            .map(|r| r.reads as f64)
            .context("the samples do not say their reads")?;
        let split = |tracer: &str| {
            let at = SAMPLE_TRACERS.iter().position(|(t, _)| *t == tracer);
            &splits[at.expect("a tracer the samples are taken with")]
        };
        let (none, floor_split, fields_split, phytrace) = (
            split("none"),
            split("bpftrace-floor-fentry"),
            split("floor-fields"),
            split("phytrace"),
        );
        let added = |part: usize| phytrace[part] - none[part];
        // Every part but the trampolines and the access itself.
        let above_trampolines = |split: &[f64]| {
            (PROGRAM_CODE..SAMPLE_PARTS.len())
                .map(|part| split[part] - none[part])
                .sum::<f64>()
        };
        let (clock, ring) = (added(CLOCK), added(OUTPUT));
        Ok(Self {
            reads,
            phytrace_samples: rows
                .symbol_samples
                .iter()
                .filter(|r| r.tracer == "phytrace")
                .map(|r| r.samples as f64)
                .sum(),
            trampolines: phytrace[TRAMPOLINES] - none[TRAMPOLINES],
            fields_trampolines: fields_split[TRAMPOLINES] - none[TRAMPOLINES],
            floor_trampolines: floor_split[TRAMPOLINES] - none[TRAMPOLINES],
            programs: above_trampolines(phytrace),
            fields_programs: above_trampolines(fields_split),
            fields,
            goal_room: 0.3 * fields,
            clock,
            ring,
            clock_and_ring: clock + ring,
            without_output: clock + added(THREAD_STATE) + added(PROGRAM_CODE),
            splits,
        })
    }

    /// The CPU samples' table and what it says of phytrace's cost.
    fn write(&self, md: &mut String) -> Result<()> {
        let Self {
            reads,
            phytrace_samples,
            trampolines,
            fields_trampolines,
            floor_trampolines,
            programs,
            fields_programs,
            fields,
            goal_room,
            clock,
            ring,
            clock_and_ring,
            without_output,
            ..
        } = self;
        writeln!(
            md,
            "Where the time of the thread making the reads goes, from CPU samples of one burst of {reads:.0}\nreads per tracer and round (`perf record -e cpu-clock`, at most one sample per timer tick:\n{phytrace_samples:.0} samples in all for phytrace), grouped by the kernel function they landed in; ns per\naccess are each group's share of the samples times the burst's median ns per read:\n"
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
            for split in &self.splits {
                write!(md, " {:.0} |", split[part])?;
            }
            writeln!(md)?;
        }
        write!(md, "| **all** |")?;
        for split in &self.splits {
            write!(md, " **{:.0}** |", split.iter().sum::<f64>())?;
        }
        writeln!(md)?;
        writeln!(
            md,
            "\nThe trampolines take {trampolines:.0} ns per access with phytrace, {fields_trampolines:.0} with the same-fields floor and\n{floor_trampolines:.0} with the empty pair. Above them, phytrace's programs and the helpers they call take\n{programs:.0} ns per access, the same-fields floor's {fields_programs:.0}. The 1.3× goal leaves phytrace {goal_room:.0} ns above\nthe floor's {fields:.0} added in P1. phytrace's two clock reads ({clock:.0}) and its ring buffer ({ring:.0}) take\n{clock_and_ring:.0}, as the floor's do; without any output at all, the clock reads, the per-thread state and\nthe programs' own code would still take {without_output:.0}. The bpftrace scripts read the clock twice as\nwell, and pay for a per-thread start time in a hash map (insert, look up, delete).\n"
        )?;
        Ok(())
    }
}

impl C1 {
    /// C1's figures.
    fn of(rows: &Rows) -> Result<Self> {
        let probes = c1_probes(rows)?;
        let none = spread(&rows.c1, "none")?;
        let tracers = Added::each(&rows.c1, C1_TRACERS, none)?;
        let added = |tracer| Added::of(&tracers, tracer);
        let pair = added("phytrace-callsite") - added("phytrace-symbol");
        let floors = added("floor-callsite") - added("bpftrace-floor-symbol");
        Ok(Self {
            calls: probes.calls,
            call_sites: probes.call_sites,
            none,
            pair,
            floors,
            floors_percent: if pair > 0.0 {
                100.0 * floors / pair
            } else {
                0.0
            },
            tracers,
        })
    }

    /// The C1 section: the cost table and call sites against symbols.
    fn write(&self, md: &mut String) -> Result<()> {
        writeln!(md, "## C1: cost per driver callback\n")?;
        let Self {
            calls,
            call_sites,
            none,
            pair,
            floors,
            floors_percent,
            ..
        } = self;
        writeln!(
            md,
            "Synchronous bursts of {calls} `phy_resume()` calls in the simulator (`load` control, `resume N`):\neach runs the Rust driver's `resume` through phylib (`__phy_resume` calls `drv->resume`), which\nreads BMCR once. phytrace traces the MDIO access too, the same in both of its rows: the\ndifference between them is the callback probes'. The floors are an empty program on every call\nsite phytrace probes ({call_sites} of them: its call and return kprobes, loaded by `scenarios/kprobe_floor.py` through\nbpf(2) and the kprobe PMU: bookworm's bpftrace has no kprobe offsets) and an empty\nkprobe+kretprobe on the driver's resume callback (bpftrace). Forky's bpftrace probes the same\ncall sites as phytrace, with the same fields.\n",
        )?;
        Added::write_table(md, "ns per call", none, &self.tracers)?;
        writeln!(
            md,
            "\nProbing callbacks at the call sites instead of the Rust symbols changes phytrace's cost per\ncallback by **{pair:+.0} ns** (goal: no more than the symbol pair: {}); the empty programs'\nfloors differ by {floors:+.0} ns, so the probes themselves (kprobes on an instruction trap; a\nfunction's entry and return go through ftrace) account for {floors_percent:.0} % of the difference.\n",
            goal(*pair <= 0.0),
        )?;
        Ok(())
    }
}

impl P2 {
    /// P2's figures; `run` is the results' `probes` row.
    fn of(rows: &Rows, run: &Run) -> Result<Self> {
        let symbol = spread(&rows.p2, "phytrace")?;
        let callsite = spread(&rows.p2, "phytrace-callsite")?;
        let bpftrace = spread(&rows.p2, "bpftrace-kfunc")?;
        let bpftrace27 = spread(&rows.p2, "bpftrace27")?;
        let cold = spread(&rows.p2_cold, "phytrace-callsite")?;
        Ok(Self {
            starts: run.starts,
            symbol_ratio: bpftrace.median / symbol.median,
            callsite_ratio: bpftrace.median / callsite.median,
            cached27_ratio: bpftrace27.median / callsite.median,
            first27_ratio: bpftrace27.median / cold.median,
            cold,
            symbol,
            callsite,
            bpftrace,
            bpftrace27,
            callbacks: run.callbacks,
            kprobes: 2 * (2 + run.callbacks),
            call_sites: c1_probes(rows)?.call_sites,
            site_probes: run.site_probes,
            versions: (run.bpftrace.clone(), run.bpftrace27.clone()),
        })
    }

    /// The P2 section: how the start is timed, the table and the ratios to the goal.
    fn write(&self, md: &mut String) -> Result<()> {
        writeln!(md, "## P2: start to attached\n")?;
        let Self {
            starts,
            kprobes,
            callbacks,
            call_sites,
            symbol_ratio,
            callsite_ratio,
            cached27_ratio,
            first27_ratio,
            site_probes,
            versions: (bpftrace, bpftrace27),
            ..
        } = self;
        writeln!(
            md,
            "Process start until the first event can be recorded (phytrace: its `--status` line says `recording`,\nwritten after every probe is attached; bpftrace: its `BEGIN` output), wall clock, ms, in {starts}\nrounds of their own: each starts and stops every tracer once, in turn, after one warm-up start\nof each (their binaries and libraries read once). `bench.sh` waits for that line blocked on a\nFIFO the tracer writes (no poll: a look that forks a process takes CPU from the tracer being\ntimed) and reads the time from bash's own clock (`$EPOCHREALTIME`: running `date` would fork\nwithin the time measured).\n"
        )?;
        writeln!(
            md,
            "Bookworm's bpftrace ({bpftrace}) and phytrace on the symbols attach the same {kprobes} probes: fentry and fexit of\n`__mdiobus_read`, `__mdiobus_write`, kprobe and kretprobe of the driver's {callbacks} callbacks (found in\n`/proc/kallsyms`: by phytrace as it starts, for bpftrace by `bench.sh` beforehand); bpftrace runs\n`scenarios/bench-kfunc.bt`. Forky's bpftrace ({bpftrace27}), which refuses the callbacks' symbols, runs\n`scenarios/bench-bpftrace27.bt`: the same trampolines, and {site_probes} kprobes at phylib's call sites and their\nreturns, written from `phytrace probes --format json`. phytrace's default puts the callbacks' probes on phylib's {call_sites} call\nsites instead (a kprobe at each call and at its return), read from this boot's cache of them;\nthe boot's first start finds them by decoding the kernel text. phytrace also attaches what a\nsession needs besides: the Clause-45 accessors' trampolines, the module load/unload\ntracepoints, kprobes on PHY removal and carrier changes, and the MAC side's pending events\n(`phylink_resolve`, `ax88772_mac_link_up/down`).\n"
        )?;
        writeln!(md, "| tool | ms |\n|---|---|")?;
        writeln!(
            md,
            "| phytrace, call sites (the default) | {} |",
            self.callsite.cell()
        )?;
        writeln!(
            md,
            "| phytrace, call sites, the boot's first start | {} |",
            self.cold.cell()
        )?;
        writeln!(md, "| phytrace, Rust symbols | {} |", self.symbol.cell())?;
        writeln!(
            md,
            "| forky's bpftrace, call sites | {} |",
            self.bpftrace27.cell()
        )?;
        writeln!(
            md,
            "| bookworm's bpftrace, Rust symbols | {} |\n",
            self.bpftrace.cell()
        )?;
        writeln!(
            md,
            "On the call sites, phytrace's start is **{cached27_ratio:.1} ×** faster than forky's bpftrace's (goal ≥ 10: {}),\nits boot's first start **{first27_ratio:.1} ×** (goal ≥ 3: {}). Against bookworm's bpftrace on the symbols it is\n{callsite_ratio:.1} × faster with the call sites, {symbol_ratio:.1} × on the same probes.\n",
            goal(*cached27_ratio >= 10.0),
            goal(*first27_ratio >= 3.0),
        )?;
        Ok(())
    }
}

impl StockStart {
    /// The figures of `rows`, `scenarios/bench-start.sh`'s results.
    fn of(rows: &Rows) -> Result<Self> {
        let run = rows.start_runs.first().context(
            "the results have no `start-probes` row (Debian's kernel): rerun `cargo xtask bench`",
        )?;
        let cached = spread(&rows.p2, "phytrace-default")?;
        let first = spread(&rows.p2_cold, "phytrace-default")?;
        let peer = spread(&rows.p2, "bpftrace27")?;
        Ok(Self {
            kernel: run.kernel.clone(),
            starts: run.starts,
            bpftrace27: run.bpftrace27.clone(),
            site_probes: run.site_probes,
            cached_ratio: peer.median / cached.median,
            first_ratio: peer.median / first.median,
            cached,
            first,
            peer,
        })
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "kernel": self.kernel, "rounds": self.starts,
            "attach_ms": { "phytrace": self.cached.json(), "phytrace_first": self.first.json(), "bpftrace27": self.peer.json() },
            "bpftrace27_over_phytrace": self.cached_ratio, "bpftrace27_over_phytrace_first": self.first_ratio,
        })
    }

    /// The start on Debian's kernel: the table and the ratios to the goals.
    fn write(&self, md: &mut String) -> Result<()> {
        let Self {
            kernel,
            starts,
            bpftrace27,
            site_probes,
            cached_ratio,
            first_ratio,
            ..
        } = self;
        writeln!(md, "### On Debian's kernel\n")?;
        writeln!(
            md,
            "The same, on Debian's unmodified {kernel} as packaged, in a boot of its own with no simulated\nhardware (`scenarios/bench-start.sh`, {starts} rounds): `phytrace record` with its defaults, forky's bpftrace\n({bpftrace27}) on the same work: the MDIO accessors' trampolines and {site_probes} kprobes at phylib's call sites and their\nreturns, from `phytrace probes --format json` on that kernel.\n"
        )?;
        writeln!(md, "| tool | ms |\n|---|---|")?;
        writeln!(
            md,
            "| phytrace, call sites from this boot's cache (the default) | {} |",
            self.cached.cell()
        )?;
        writeln!(
            md,
            "| phytrace, the boot's first start | {} |",
            self.first.cell()
        )?;
        writeln!(
            md,
            "| forky's bpftrace, call sites | {} |\n",
            self.peer.cell()
        )?;
        writeln!(
            md,
            "phytrace's start is **{cached_ratio:.1} ×** faster than forky's bpftrace's (goal ≥ 10: {}), its boot's first\nstart **{first_ratio:.1} ×** (goal ≥ 3: {}).\n",
            goal(*cached_ratio >= 10.0),
            goal(*first_ratio >= 3.0),
        )?;
        Ok(())
    }
}

/// The results' `c1-probes` row: the calls per C1 burst and the call sites phytrace armed.
fn c1_probes(rows: &Rows) -> Result<&CallSites> {
    rows.c1_probes
        .first()
        .context("the results have no `c1-probes` row: rerun `cargo xtask bench`")
}

impl<'r> P3<'r> {
    fn of(rows: &'r Rows) -> Result<Self> {
        let (p3, jsonl_rows, metrics_rows) = (&rows.p3, &rows.p3_jsonl, &rows.p3_metrics);
        let rates = RateRuns::group(p3);
        let jsonl = RateRuns::group(jsonl_rows);
        let metrics = RateRuns::group(metrics_rows);
        let top = rates.last().context("no p3 results")?;
        let jsonl_top = jsonl.last().context("no JSON Lines p3 results")?;
        let metrics_top = metrics.last().context("no p3 results with --metrics")?;
        Ok(Self {
            drop_free: rates
                .iter()
                .filter(|r| r.lost.iter().all(|&l| l == 0))
                .map(|r| r.achieved.median)
                .fold(0.0, f64::max),
            exact: p3
                .iter()
                .chain(jsonl_rows)
                .chain(metrics_rows)
                .all(|r| r.generated == r.recorded + r.lost),
            top_rate: top.achieved.median,
            top_lossy: lossy(top),
            top_rounds: top.lost.len(),
            consumer_busy_percent: top.consumer_ns.median * top.achieved.median / 1e7,
            jsonl_consumer_ns: jsonl_top.consumer_ns.median,
            jsonl_lossy: lossy(jsonl_top),
            jsonl_rounds: jsonl_top.lost.len(),
            top_consumer_ns: top.consumer_ns.median,
            top_consumer_max: top.consumer_ns.max,
            metrics_consumer_ns: metrics_top.consumer_ns.median,
            metrics_lossy: lossy(metrics_top),
            metrics_rounds: metrics_top.lost.len(),
            rows: p3,
            jsonl_rows,
            metrics_rows,
            rates,
            jsonl,
            metrics,
        })
    }

    /// The P3 section, with `repeats` rounds per rate: the table, loss and the consumer.
    fn write(&self, md: &mut String, repeats: u64) -> Result<()> {
        writeln!(md, "## P3: drop-free rate (default 4 MiB ring)\n")?;
        let Self {
            drop_free,
            exact,
            top_rate,
            top_lossy,
            top_rounds,
            consumer_busy_percent,
            jsonl_consumer_ns,
            jsonl_lossy,
            jsonl_rounds,
            top_consumer_ns,
            top_consumer_max,
            metrics_consumer_ns,
            metrics_lossy,
            metrics_rounds,
            ..
        } = self;
        writeln!(
            md,
            "MDIO reads at a set rate from a simulator kernel thread while `phytrace record` runs;"
        )?;
        writeln!(
            md,
            "`generated` is the simulator's own count; `consumer` is `record`'s CPU time per event recorded.\nThe capture is binary (`record`'s default); the last rows are the top rate again with\n`--encoding jsonl`, and with `--metrics` served and scraped every second (docs/lab.md)."
        )?;
        writeln!(md, "{repeats} rounds per rate.\n")?;
        writeln!(
            md,
            "| asked /s | achieved /s | generated per round | lost per round | consumer ns/event |\n|---|---|---|---|---|"
        )?;
        let jsonl_rows = self.jsonl.iter().map(|r| (r, " (JSON Lines)"));
        let metrics_rows = self.metrics.iter().map(|r| (r, " (`--metrics`)"));
        for (r, label) in self
            .rates
            .iter()
            .map(|r| (r, ""))
            .chain(jsonl_rows)
            .chain(metrics_rows)
        {
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
            if *exact { "yes" } else { "NO" }
        )?;
        writeln!(
            md,
            "At the highest rate one CPU generates (reads back to back, {top_rate:.0} /s), events were lost in {top_lossy} of {top_rounds} rounds (goal: none: {}).",
            goal(*top_lossy == 0)
        )?;
        writeln!(
            md,
            "The consumer (`record` reading each ring-buffer record and writing it to the capture as it is)\nruns on one CPU under software emulation, the producer on the other: at that rate the consumer\nis busy {consumer_busy_percent:.0}% of the time (its ns per event × events per second). Writing JSON Lines instead, it\ntakes {jsonl_consumer_ns:.0} ns per event and loses events in {jsonl_lossy} of {jsonl_rounds} rounds. At low rates the time per event is\nhigher: each wake-up reads a small batch.",
        )?;
        writeln!(
            md,
            "Serving `--metrics` too, scraped every second, the consumer takes {metrics_consumer_ns:.0} ns per event at the top rate\n(recording alone: {top_consumer_ns:.0}) and loses events in {metrics_lossy} of {metrics_rounds} rounds (goal: no more than\nrecording alone, within its rounds' spread, and no more rounds with loss: {}).\n",
            goal(metrics_consumer_ns <= top_consumer_max && metrics_lossy <= top_lossy)
        )?;
        Ok(())
    }
}

/// The firmware file `bench.sh` writes for the QT2025, one MDIO write per byte.
const FIRMWARE_WRITES: u64 = 24 * 1024;

/// C45: the QT2025's probe, its firmware load, untraced and with `phytrace record`.
struct C45<'r> {
    untraced_rows: &'r [super::rows::Load],
    traced_rows: &'r [TracedLoad],
    /// The probe's ms.
    untraced: Spread,
    traced: Spread,
    /// The traced median over the untraced.
    ratio: f64,
    /// What recording adds to the probe per firmware write.
    added_ns_per_write: f64,
    /// The simulator counted every byte of the file written in every round, and every traced
    /// round's capture holds them all, with no event lost.
    whole: bool,
}

impl<'r> C45<'r> {
    fn of(rows: &'r Rows) -> Result<Self> {
        let untraced = spread(&rows.c45, "none")?.scaled(1e3);
        let traced = spread(&rows.c45_traced, "phytrace")?.scaled(1e3);
        Ok(Self {
            ratio: traced.median / untraced.median,
            added_ns_per_write: (traced.median - untraced.median) * 1e6 / FIRMWARE_WRITES as f64,
            whole: rows.c45.iter().all(|r| r.written == FIRMWARE_WRITES)
                && rows.c45_traced.iter().all(|r| {
                    r.written == FIRMWARE_WRITES && r.recorded == r.written && r.lost == 0
                }),
            untraced_rows: &rows.c45,
            traced_rows: &rows.c45_traced,
            untraced,
            traced,
        })
    }

    /// The rows, untraced then traced, as the results wrote them.
    fn rows(&self) -> Vec<Row> {
        let untraced = self
            .untraced_rows
            .iter()
            .cloned()
            .map(FirmwareLoad::Untraced);
        let traced = self.traced_rows.iter().cloned().map(FirmwareLoad::Traced);
        untraced.chain(traced).map(Row::C45).collect()
    }

    /// The C45 section: how the load is timed, the table, the ratio and the capture's count.
    fn write(&self, md: &mut String) -> Result<()> {
        let Self {
            ratio,
            added_ns_per_write,
            whole,
            ..
        } = self;
        writeln!(md, "\n## C45: a QT2025 firmware load\n")?;
        writeln!(
            md,
            "Mainline's Rust `qt2025` driver loads the PHY's firmware in its `probe`, one byte per Clause 45\nMDIO write: {FIRMWARE_WRITES} writes of a firmware file of our own to the simulated QT2025's SRAM\n(3.0x8000… and 4.0x8000…). In each of {} rounds `phy_sim` is loaded with a QT2025 alone and\nunloaded again, untraced and then with `phytrace record` (its defaults, a binary capture)\nstarted before the load: the load is the first thing it records, with no warm-up. The boot's\nfirst load, which loads the driver's module and reads the file, is not counted. The time is the\nprobe's alone, as the kernel's driver core measures it with `initcall_debug` on (its log line\n`probe of phy_sim-0:04 returned 0 after N usecs`), ms:\n",
            self.untraced_rows.len()
        )?;
        let recorded: Vec<u64> = self.traced_rows.iter().map(|r| r.recorded).collect();
        let lost: Vec<u64> = self.traced_rows.iter().map(|r| r.lost).collect();
        writeln!(
            md,
            "| tracing | probe ms | firmware writes in the capture, per round | events lost, per round |\n|---|---|---|---|"
        )?;
        writeln!(md, "| none | {} | – | – |", self.untraced.cell_to(1))?;
        writeln!(
            md,
            "| phytrace record (`phytrace`) | {} | {} | {} |",
            self.traced.cell_to(1),
            join(&recorded),
            join(&lost)
        )?;
        writeln!(
            md,
            "\nRecording makes the load **{ratio:.2} ×** as long: {added_ns_per_write:.0} ns more per firmware write.\nEvery capture holds all {FIRMWARE_WRITES} firmware writes the simulator counted, none lost: {}.",
            if *whole { "yes" } else { "NO" }
        )?;
        Ok(())
    }
}

/// The TUI's CPU share, `tui`: % of one CPU by events per second.
fn write_tui(md: &mut String, tui: &BTreeMap<u64, u64>) -> Result<()> {
    writeln!(
        md,
        "## TUI CPU share\n\n`phytrace tui` in tmux, user + system time over the measuring window, % of one CPU.\n\n| events/s | CPU % |\n|---|---|"
    )?;
    for (rate, cpu) in tui {
        writeln!(md, "| {rate} | {cpu} |")?;
    }
    Ok(())
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

    /// A P3 round at `rate` as bench.sh writes it.
    fn round(rate: u64, achieved: u64, lost: u64) -> String {
        format!(
            r#"{{"bench":"p3","rate":{rate},"encoding":"binary","round":1,"achieved_per_s":{achieved},"generated":100,"recorded":{},"lost":{lost},"consumer_ns_per_event":900}}"#,
            100 - lost
        )
    }

    #[test]
    fn p3_rounds_group_by_rate_in_run_order() {
        let text = [
            round(1000, 990, 0),
            round(1000, 994, 0),
            round(500, 498, 0),
            round(500, 499, 3),
        ]
        .join("\n");
        let rows = Rows::parse(&text).unwrap();
        let rates = RateRuns::group(&rows.p3);
        assert_eq!(
            rates.iter().map(|r| r.rate).collect::<Vec<_>>(),
            [1000, 500]
        );
        assert_eq!(rates[0].achieved.median, 992.0);
        assert_eq!(join(&rates[1].lost), "0, 3");
    }

    /// Every row a report needs: each tracer in a list 100 above the one before it, one P3 rate
    /// without loss and one with.
    fn results(extra: &[String]) -> Rows {
        let mut lines = vec![
            r#"{"bench":"probes","mdio_functions":2,"callbacks":9,"site_probes":30,"bpftrace":"v0.17.0","bpftrace27":"v0.27.0","repeats":1,"starts":1,"reads":20000}"#.to_owned(),
            r#"{"bench":"c1-probes","calls":20000,"call_sites":14}"#.to_owned(),
            r#"{"bench":"p2-cold","tracer":"phytrace-callsite","attach_ms":900}"#.to_owned(),
            r#"{"bench":"p1","tracer":"none","round":1,"ns_per_access":1000}"#.to_owned(),
            r#"{"bench":"c1","tracer":"none","round":1,"ns_per_call":3000}"#.to_owned(),
        ];
        for (i, (tracer, _)) in P1_TRACERS.iter().enumerate() {
            lines.push(format!(
                r#"{{"bench":"p1","tracer":"{tracer}","round":1,"ns_per_access":{}}}"#,
                1100 + 100 * i
            ));
        }
        for (i, (tracer, _)) in C1_TRACERS.iter().enumerate() {
            lines.push(format!(
                r#"{{"bench":"c1","tracer":"{tracer}","round":1,"ns_per_call":{}}}"#,
                3100 + 100 * i
            ));
        }
        for (i, tracer) in [
            "phytrace",
            "phytrace-callsite",
            "bpftrace-kfunc",
            "bpftrace27",
        ]
        .iter()
        .enumerate()
        {
            lines.push(format!(
                r#"{{"bench":"p2","tracer":"{tracer}","round":1,"attach_ms":{}}}"#,
                [200, 100, 1000, 2000][i]
            ));
        }
        for (tracer, _) in SAMPLE_TRACERS {
            lines.push(format!(
                r#"{{"bench":"samples","tracer":"{tracer}","round":1,"reads":2000000,"ns_per_access":1000}}"#
            ));
            lines.push(format!(
                r#"{{"bench":"samples","tracer":"{tracer}","round":1,"symbol":"sim_reg_read","samples":10}}"#
            ));
        }
        lines.push(round(1000, 990, 0));
        lines.push(round(2000, 1990, 4));
        lines.push(round(1000, 990, 0).replace(r#""p3""#, r#""p3-jsonl""#));
        lines.push(round(2000, 1990, 0).replace(r#""p3""#, r#""p3-metrics""#));
        lines.push(r#"{"bench":"tui","rate":10000,"cpu_percent":12}"#.to_owned());
        lines.push(
            r#"{"bench":"c45","tracer":"none","round":1,"probe_us":100000,"written":24576}"#
                .to_owned(),
        );
        lines.push(c45_traced(150000, 24576, 0));
        lines.extend_from_slice(extra);
        Rows::parse(&lines.join("\n")).unwrap()
    }

    /// The results of bench-start.sh: phytrace starts in 100 ms from the cache, 400 the first
    /// time; forky's bpftrace in 3000.
    fn stock_results() -> Rows {
        Rows::parse(
            r#"{"bench":"start-probes","kernel":"7.3.4+deb13-amd64","site_probes":30,"bpftrace27":"v0.27.0","starts":1}
{"bench":"p2-cold","tracer":"phytrace-default","attach_ms":400}
{"bench":"p2","tracer":"phytrace-default","round":1,"attach_ms":100}
{"bench":"p2","tracer":"bpftrace27","round":1,"attach_ms":3000}"#,
        )
        .unwrap()
    }

    /// A traced C45 round as bench.sh writes it.
    fn c45_traced(probe_us: u64, recorded: u64, lost: u64) -> String {
        format!(
            r#"{{"bench":"c45","tracer":"phytrace","round":1,"probe_us":{probe_us},"written":24576,"recorded":{recorded},"lost":{lost}}}"#
        )
    }

    fn setting() -> Setting {
        Setting {
            date: "2026-01-01 00:00 UTC".to_owned(),
            host: "Linux 6.12 x86_64".to_owned(),
            cpus: 2,
            release: "6.12.0".to_owned(),
        }
    }

    #[test]
    fn the_report_says_what_each_tracer_adds_and_the_goals() {
        let rows = results(&[]);
        let figures = Figures::of(&rows, &stock_results(), setting()).unwrap();
        let json = figures.json();
        // phytrace adds 100 ns, forky's bpftrace 300, bookworm's 400, the same-fields floor
        // 600, the empty fentry pair 700.
        assert_eq!(json["p1_added_ns"]["phytrace"], 100.0);
        assert_eq!(json["p1_ratios"]["phytrace_over_bpftrace27"], 100.0 / 300.0);
        assert_eq!(
            json["p1_ratios"]["phytrace_over_bpftrace_kfunc"],
            100.0 / 400.0
        );
        assert_eq!(
            json["p1_ratios"]["phytrace_over_same_fields_floor"],
            100.0 / 600.0
        );
        assert_eq!(json["bpftrace_versions"]["forky"], "v0.27.0");
        assert_eq!(json["p2_attach_ms_callsite"]["median"], 100.0);
        assert_eq!(json["p2_bpftrace_over_phytrace_callsite"], 10.0);
        assert_eq!(json["p2_bpftrace27_over_phytrace_callsite"], 20.0);
        assert_eq!(
            json["p2_bpftrace27_over_phytrace_callsite_first"],
            2000.0 / 900.0
        );
        assert_eq!(json["p2_kprobes"], 22);
        assert_eq!(json["p3"][1]["bench"], "p3");
        assert_eq!(json["p3_jsonl"][0]["bench"], "p3-jsonl");
        assert_eq!(json["p3_metrics"][0]["bench"], "p3-metrics");
        assert_eq!(json["p3_drop_free_per_s"], 990.0);
        assert_eq!(json["p3_loss_counted_exactly"], true);
        assert_eq!(json["tui_cpu_percent"]["10000"], 12);
        let md = figures.markdown().unwrap();
        assert!(md.contains("| none | 1000 (1000–1000) | – |"), "{md}");
        assert!(
            md.contains(
                "**0.33 ×** forky's bpftrace script's, the strongest peer (goal ≤ 0.35: met)"
            ),
            "{md}"
        );
        assert!(
            md.contains("**0.17 ×** the same-fields floor's (goal ≤ 1.3: met)"),
            "{md}"
        );
        assert!(
            md.contains("**20.0 ×** faster than forky's bpftrace's (goal ≥ 10: met)"),
            "{md}"
        );
        assert!(md.contains("**2.2 ×** (goal ≥ 3: missed)"), "{md}");
        assert_eq!(json["p2_stock"]["bpftrace27_over_phytrace"], 30.0);
        assert!(md.contains("faster than forky's bpftrace's (goal ≥ 10: met), its boot's first\nstart **7.5 ×** (goal ≥ 3: met)"), "{md}");
        assert!(md.contains("events were lost in 1 of 1 rounds (goal: none: missed)"));
        assert!(md.contains("| 10000 | 12 |"));
        assert!(
            md.contains("| 2000 (`--metrics`) | 1990 (1990–1990) |"),
            "{md}"
        );
        assert!(md.contains("the consumer takes 900 ns per event at the top rate\n(recording alone: 900) and loses events in 0 of 1 rounds"), "{md}");
        assert!(md.contains("and no more rounds with loss: met)"), "{md}");
        // The probe takes 100 ms untraced, 150 with phytrace: 50 ms over 24,576 writes.
        assert_eq!(json["c45_probe_ms"]["none"]["median"], 100.0);
        assert_eq!(json["c45_probe_ms"]["phytrace"]["median"], 150.0);
        assert_eq!(json["c45_phytrace_over_untraced"], 1.5);
        assert_eq!(
            json["c45_added_ns_per_firmware_write"],
            50e6 / FIRMWARE_WRITES as f64
        );
        assert_eq!(json["c45_firmware_writes_all_recorded"], true);
        assert_eq!(json["c45"][0]["tracer"], "none");
        assert_eq!(json["c45"][1]["recorded"], 24576);
        assert!(
            md.contains("| none | 100.0 (100.0–100.0) | – | – |"),
            "{md}"
        );
        assert!(md.contains("| phytrace record (`phytrace`) | 150.0 (150.0–150.0) | 24576 | 0 |"));
        assert!(md.contains("**1.50 ×** as long: 2035 ns more per firmware write"));
        assert!(md.contains("the simulator counted, none lost: yes."));
    }

    #[test]
    fn a_c45_capture_short_of_the_firmware_or_with_loss_is_said() {
        for (recorded, lost) in [(24575, 0), (24576, 3)] {
            let rows = results(&[c45_traced(160000, recorded, lost)]);
            let figures = Figures::of(&rows, &stock_results(), setting()).unwrap();
            assert_eq!(figures.json()["c45_firmware_writes_all_recorded"], false);
            let md = figures.markdown().unwrap();
            assert!(
                md.contains(&format!("| 24576, {recorded} | 0, {lost} |")),
                "{md}"
            );
            assert!(md.contains("none lost: NO."));
        }
    }

    #[test]
    fn a_round_that_miscounts_its_loss_is_said() {
        let miscounted = round(2000, 1990, 4).replace(r#""recorded":96"#, r#""recorded":95"#);
        let rows = results(&[miscounted]);
        let figures = Figures::of(&rows, &stock_results(), setting()).unwrap();
        assert_eq!(figures.json()["p3_loss_counted_exactly"], false);
        assert!(figures.markdown().unwrap().contains("in every round: NO."));
    }

    #[test]
    fn a_tracer_without_results_is_an_error_naming_it() {
        let mut rows = results(&[]);
        rows.p2.retain(|r| r.tracer != "bpftrace-kfunc");
        let err = Figures::of(&rows, &stock_results(), setting())
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "no p2 results for bpftrace-kfunc");
        let mut rows = results(&[]);
        rows.c45_traced.clear();
        let err = Figures::of(&rows, &stock_results(), setting())
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "no c45 results for phytrace");
        rows.runs.clear();
        let err = Figures::of(&rows, &stock_results(), setting())
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "the results have no `probes` row");
    }
}
