//! The results `scenarios/bench.sh` writes to `bench.jsonl`, one JSON object a line (the
//! profile's lines by `scenarios/profile-bpf.sh`, through it), typed: a line of a kind, or with
//! fields, bench.sh does not write is an error, never skipped.

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

/// One line of the results, told by its `bench` field.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "bench")]
pub enum Row {
    #[serde(rename = "probes")]
    Run(Run),
    #[serde(rename = "start-probes")]
    StartRun(StartRun),
    #[serde(rename = "p1")]
    P1(Access),
    #[serde(rename = "p2-cold")]
    P2Cold(FirstStart),
    #[serde(rename = "c1-probes")]
    C1Probes(CallSites),
    #[serde(rename = "p2")]
    P2(Start),
    #[serde(rename = "c1")]
    C1(Call),
    #[serde(rename = "profile")]
    Profile(Profile),
    #[serde(rename = "samples")]
    Samples(Samples),
    #[serde(rename = "p3")]
    P3(RateRound),
    #[serde(rename = "p3-jsonl")]
    P3Jsonl(RateRound),
    #[serde(rename = "p3-metrics")]
    P3Metrics(RateRound),
    #[serde(rename = "tui")]
    Tui(TuiShare),
    #[serde(rename = "c45")]
    C45(FirmwareLoad),
}

/// `probes`: what the run found and was asked for.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The MDIO accessors traced.
    pub mdio_functions: u64,
    /// The driver's callbacks in `/proc/kallsyms`.
    pub callbacks: u64,
    /// The kprobes and kretprobes of forky's bpftrace script at phylib's call sites.
    pub site_probes: u64,
    /// The versions of bookworm's bpftrace and forky's, as they print them.
    pub bpftrace: String,
    pub bpftrace27: String,
    /// Rounds of P1, C1 and each P3 rate; of P2; MDIO reads per P1 burst.
    pub repeats: u64,
    pub starts: u64,
    pub reads: u64,
}

/// `start-probes`: what `scenarios/bench-start.sh` found on Debian's kernel, and was asked for.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The kernel's release.
    pub kernel: String,
    /// The kprobes and kretprobes of forky's bpftrace script at phylib's call sites, and its
    /// version.
    pub site_probes: u64,
    pub bpftrace27: String,
    /// Rounds of P2.
    pub starts: u64,
}

/// `p1`: ns per MDIO access of one burst with `tracer` running (`none`: untraced).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Access {
    pub tracer: String,
    pub round: u64,
    pub ns_per_access: u64,
}

/// `p2`: ms from `tracer`'s start until it was attached.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    pub tracer: String,
    pub round: u64,
    pub attach_ms: u64,
}

/// `p2-cold`: the boot's first call-site start, which searches the kernel text.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FirstStart {
    pub tracer: String,
    pub attach_ms: u64,
}

/// `c1-probes`: calls per C1 burst, and the call sites phytrace armed.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CallSites {
    pub calls: u64,
    pub call_sites: u64,
}

/// `c1`: ns per driver callback of one burst with `tracer` running (`none`: untraced).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub tracer: String,
    pub round: u64,
    pub ns_per_call: u64,
}

/// `profile`: one of phytrace's programs, or the burst it ran in, under `record
/// --mdio-probes PROBES` with the kernel's BPF statistics on.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Profile {
    Program(ProgramTime),
    Burst(ProfileBurst),
}

/// A program's runs in one burst and its ns per run.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramTime {
    pub probes: String,
    pub round: u64,
    pub program: String,
    pub runs: u64,
    pub ns_per_run: u64,
}

/// The burst's own ns per read, statistics on.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileBurst {
    pub probes: String,
    pub round: u64,
    pub burst_ns_per_read: u64,
}

/// `samples`: a sampled burst with `tracer` running, or its CPU samples in one kernel symbol.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Samples {
    Burst(SampledBurst),
    Symbol(SymbolSamples),
}

/// The sampled burst's reads and ns per read.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SampledBurst {
    pub tracer: String,
    pub round: u64,
    pub reads: u64,
    pub ns_per_access: u64,
}

/// The samples of the reading thread that landed in `symbol`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SymbolSamples {
    pub tracer: String,
    pub round: u64,
    pub symbol: String,
    pub samples: u64,
}

/// `p3`, `p3-jsonl`, `p3-metrics`: one round of MDIO reads at `rate` while `record --encoding
/// ENCODING` runs (`p3-metrics`: with `--metrics`, scraped every second).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateRound {
    pub rate: u64,
    pub encoding: String,
    pub round: u64,
    pub achieved_per_s: u64,
    /// The simulator's own count of reads, and the capture's.
    pub generated: u64,
    pub recorded: u64,
    pub lost: u64,
    /// `record`'s CPU time per event recorded.
    pub consumer_ns_per_event: u64,
}

/// `tui`: `phytrace tui`'s CPU % at `rate` events per second.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TuiShare {
    pub rate: u64,
    pub cpu_percent: u64,
}

/// `c45`: one QT2025 firmware load (its driver's probe), untraced or with `tracer` recording.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum FirmwareLoad {
    Traced(TracedLoad),
    Untraced(Load),
}

/// A load untraced (`tracer` `none`): the probe's µs as the kernel measured it, and the
/// simulator's count of firmware writes.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    pub tracer: String,
    pub round: u64,
    pub probe_us: u64,
    pub written: u64,
}

/// A load with `tracer` recording, and what its capture holds.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TracedLoad {
    pub tracer: String,
    pub round: u64,
    pub probe_us: u64,
    /// The simulator's count of firmware writes, and the capture's.
    pub written: u64,
    pub recorded: u64,
    /// Events the capture says were lost.
    pub lost: u64,
}

/// A row of one tracer's figure: its name, and the figure measured.
pub trait Figure {
    /// The `bench` of these rows, for errors.
    const BENCH: &'static str;
    fn tracer(&self) -> &str;
    fn figure(&self) -> u64;
}

/// [`Figure`] for `$row`, the rows of `bench` `$bench`, whose figure is `$field`.
macro_rules! figure {
    ($row:ty, $bench:literal, $field:ident) => {
        impl Figure for $row {
            const BENCH: &'static str = $bench;
            fn tracer(&self) -> &str {
                &self.tracer
            }
            fn figure(&self) -> u64 {
                self.$field
            }
        }
    };
}

figure!(Access, "p1", ns_per_access);
figure!(Call, "c1", ns_per_call);
figure!(Start, "p2", attach_ms);
figure!(FirstStart, "p2-cold", attach_ms);
figure!(SampledBurst, "samples", ns_per_access);
figure!(Load, "c45", probe_us);
figure!(TracedLoad, "c45", probe_us);

/// A run's results by kind, each kind in the order written.
#[derive(Debug, Default)]
pub struct Rows {
    pub runs: Vec<Run>,
    pub start_runs: Vec<StartRun>,
    pub p1: Vec<Access>,
    pub p2: Vec<Start>,
    pub p2_cold: Vec<FirstStart>,
    pub c1_probes: Vec<CallSites>,
    pub c1: Vec<Call>,
    pub programs: Vec<ProgramTime>,
    pub profile_bursts: Vec<ProfileBurst>,
    pub sampled_bursts: Vec<SampledBurst>,
    pub symbol_samples: Vec<SymbolSamples>,
    pub p3: Vec<RateRound>,
    pub p3_jsonl: Vec<RateRound>,
    pub p3_metrics: Vec<RateRound>,
    pub tui: Vec<TuiShare>,
    pub c45: Vec<Load>,
    pub c45_traced: Vec<TracedLoad>,
}

impl Rows {
    /// The rows of `text`, the results' lines.
    pub fn parse(text: &str) -> Result<Self> {
        let mut rows = Self::default();
        for (n, line) in text.lines().enumerate() {
            let row = serde_json::from_str(line).with_context(|| {
                format!(
                    "line {}: not a row scenarios/bench.sh writes (results older than this xtask? rerun `cargo xtask bench`): {line}",
                    n + 1
                )
            })?;
            rows.push(row);
        }
        Ok(rows)
    }

    fn push(&mut self, row: Row) {
        match row {
            Row::Run(run) => self.runs.push(run),
            Row::StartRun(run) => self.start_runs.push(run),
            Row::P1(access) => self.p1.push(access),
            Row::P2Cold(start) => self.p2_cold.push(start),
            Row::C1Probes(sites) => self.c1_probes.push(sites),
            Row::P2(start) => self.p2.push(start),
            Row::C1(call) => self.c1.push(call),
            Row::Profile(Profile::Program(program)) => self.programs.push(program),
            Row::Profile(Profile::Burst(burst)) => self.profile_bursts.push(burst),
            Row::Samples(Samples::Burst(burst)) => self.sampled_bursts.push(burst),
            Row::Samples(Samples::Symbol(symbol)) => self.symbol_samples.push(symbol),
            Row::P3(round) => self.p3.push(round),
            Row::P3Jsonl(round) => self.p3_jsonl.push(round),
            Row::P3Metrics(round) => self.p3_metrics.push(round),
            Row::Tui(share) => self.tui.push(share),
            Row::C45(FirmwareLoad::Untraced(load)) => self.c45.push(load),
            Row::C45(FirmwareLoad::Traced(load)) => self.c45_traced.push(load),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line of each kind, as bench.sh's `emit`, awk and profile-bpf.sh's jq print them.
    const LINES: &str = r#"{"bench":"probes","mdio_functions":2,"callbacks":9,"site_probes":30,"bpftrace":"v0.17.0","bpftrace27":"v0.27.0","repeats":5,"starts":9,"reads":20000}
{"bench":"start-probes","kernel":"7.3.4+deb13-amd64","site_probes":30,"bpftrace27":"v0.27.0","starts":9}
{"bench":"p1","tracer":"none","round":1,"ns_per_access":1841}
{"bench":"p1","tracer":"phytrace","round":1,"ns_per_access":2210}
{"bench":"p2-cold","tracer":"phytrace-callsite","attach_ms":612}
{"bench":"c1-probes","calls":20000,"call_sites":14}
{"bench":"p2","tracer":"bpftrace-kfunc","round":3,"attach_ms":1830}
{"bench":"c1","tracer":"floor-callsite","round":2,"ns_per_call":5120}
{"bench":"profile","probes":"fentry","round":1,"program":"mdio_read_exit","runs":20000,"ns_per_run":97}
{"bench":"profile","probes":"kprobe","round":1,"burst_ns_per_read":2904}
{"bench":"samples","tracer":"phytrace","round":1,"reads":2000000,"ns_per_access":2315}
{"bench":"samples","tracer":"phytrace","round":1,"symbol":"bpf_trampoline_6442474627","samples":118}
{"bench":"p3","rate":10000,"encoding":"binary","round":1,"achieved_per_s":9934,"generated":29900,"recorded":29900,"lost":0,"consumer_ns_per_event":6354}
{"bench":"p3-jsonl","rate":2000000,"encoding":"jsonl","round":1,"achieved_per_s":731759,"generated":2200004,"recorded":1172191,"lost":1027813,"consumer_ns_per_event":2661}
{"bench":"p3-metrics","rate":2000000,"encoding":"binary","round":1,"achieved_per_s":790000,"generated":2370003,"recorded":2370003,"lost":0,"consumer_ns_per_event":640}
{"bench":"tui","rate":100000,"cpu_percent":37}
{"bench":"c45","tracer":"none","round":1,"probe_us":81234,"written":24576}
{"bench":"c45","tracer":"phytrace","round":1,"probe_us":120345,"written":24576,"recorded":24576,"lost":0}"#;

    #[test]
    fn every_kind_bench_sh_writes_is_read() {
        let rows = Rows::parse(LINES).unwrap();
        assert_eq!(
            rows.runs,
            [Run {
                mdio_functions: 2,
                callbacks: 9,
                site_probes: 30,
                bpftrace: "v0.17.0".to_owned(),
                bpftrace27: "v0.27.0".to_owned(),
                repeats: 5,
                starts: 9,
                reads: 20000
            }]
        );
        assert_eq!(
            (
                rows.start_runs[0].kernel.as_str(),
                rows.start_runs[0].site_probes
            ),
            ("7.3.4+deb13-amd64", 30)
        );
        assert_eq!(
            rows.p1
                .iter()
                .map(|r| (r.tracer(), r.figure()))
                .collect::<Vec<_>>(),
            [("none", 1841), ("phytrace", 2210)]
        );
        assert_eq!(
            (rows.p2_cold[0].tracer(), rows.p2_cold[0].figure()),
            ("phytrace-callsite", 612)
        );
        assert_eq!(
            rows.c1_probes,
            [CallSites {
                calls: 20000,
                call_sites: 14
            }]
        );
        assert_eq!(
            (rows.p2[0].tracer(), rows.p2[0].figure()),
            ("bpftrace-kfunc", 1830)
        );
        assert_eq!(
            (rows.c1[0].tracer(), rows.c1[0].figure()),
            ("floor-callsite", 5120)
        );
        assert_eq!(
            (
                rows.programs[0].program.as_str(),
                rows.programs[0].ns_per_run
            ),
            ("mdio_read_exit", 97)
        );
        assert_eq!(
            (
                rows.profile_bursts[0].probes.as_str(),
                rows.profile_bursts[0].burst_ns_per_read
            ),
            ("kprobe", 2904)
        );
        assert_eq!(
            (
                rows.sampled_bursts[0].reads,
                rows.sampled_bursts[0].figure()
            ),
            (2_000_000, 2315)
        );
        assert_eq!(
            (
                rows.symbol_samples[0].symbol.as_str(),
                rows.symbol_samples[0].samples
            ),
            ("bpf_trampoline_6442474627", 118)
        );
        assert_eq!((rows.p3[0].rate, rows.p3[0].lost), (10000, 0));
        assert_eq!(
            (
                rows.p3_jsonl[0].encoding.as_str(),
                rows.p3_jsonl[0].recorded
            ),
            ("jsonl", 1172191)
        );
        assert_eq!(
            (
                rows.p3_metrics[0].rate,
                rows.p3_metrics[0].consumer_ns_per_event
            ),
            (2000000, 640)
        );
        assert_eq!(
            rows.tui,
            [TuiShare {
                rate: 100000,
                cpu_percent: 37
            }]
        );
        assert_eq!(
            (
                rows.c45[0].tracer(),
                rows.c45[0].figure(),
                rows.c45[0].written
            ),
            ("none", 81234, 24576)
        );
        assert_eq!(
            rows.c45_traced,
            [TracedLoad {
                tracer: "phytrace".to_owned(),
                round: 1,
                probe_us: 120345,
                written: 24576,
                recorded: 24576,
                lost: 0
            }]
        );
    }

    #[test]
    fn a_p3_row_writes_back_as_it_was_read() {
        let line = LINES.lines().find(|l| l.contains(r#""p3""#)).unwrap();
        let row: Row = serde_json::from_str(line).unwrap();
        let again: serde_json::Value = serde_json::to_value(&row).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(line).unwrap()
        );
    }

    #[test]
    fn unknown_and_malformed_rows_are_errors_naming_their_line() {
        for (bad, says) in [
            (
                r#"{"bench":"p9","tracer":"none","round":1}"#,
                "unknown variant `p9`",
            ),
            (
                r#"{"tracer":"none","round":1,"ns_per_access":5}"#,
                "missing field `bench`",
            ),
            (
                r#"{"bench":"p1","tracer":"none","round":1}"#,
                "missing field `ns_per_access`",
            ),
            (
                r#"{"bench":"p1","tracer":"none","round":1,"ns_per_access":5,"extra":1}"#,
                "unknown field `extra`",
            ),
            (
                r#"{"bench":"p1","tracer":"none","round":1,"ns_per_access":}"#,
                "expected value",
            ),
            (
                r#"{"bench":"tui","rate":0,"cpu_percent":-1}"#,
                "invalid value",
            ),
            (
                r#"{"bench":"samples","tracer":"none","round":1,"symbol":"x"}"#,
                "untagged enum Samples",
            ),
            (
                r#"{"bench":"profile","probes":"fentry","round":1}"#,
                "untagged enum Profile",
            ),
            (
                r#"{"bench":"c45","tracer":"phytrace","round":1,"probe_us":9,"written":24576,"recorded":24576}"#,
                "untagged enum FirmwareLoad",
            ),
            ("", "EOF"),
        ] {
            let text = format!("{}\n{bad}\n", LINES.lines().next().unwrap());
            let err = format!("{:#}", Rows::parse(&text).unwrap_err());
            assert!(err.starts_with("line 2: "), "{bad}: {err}");
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
