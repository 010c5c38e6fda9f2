//! Statistics of a trace: per PHY and callback, calls, errors by errno and latency percentiles;
//! per PHY, MDIO accesses per second, per register and their latencies, link intervals and
//! delays to link-up, the carrier of its MAC side and its delays, and time in each `phy_state`. `phytrace stats`, the TUI's charts, latency rules of
//! `phytrace check` and the Perfetto export all take them from here.
//!
//! Everything is computed from what the [`Model`] says each event did ([`Applied`]: its
//! completed runs, link and state changes; [`Model::lost_returns`]). A [`Collector`] is fed event by event
//! (a capture, or the TUI live); [`Collector::report`] adds the calls still running at the end
//! as lost returns, so that no entered call is ever left out silently.

mod carrier;
mod latency;
mod link;
mod mdio;
pub mod text;
mod updown;

use std::collections::BTreeMap;

use serde::Serialize;

pub use carrier::{CarrierHistory, CarrierUp};
pub use latency::{Latencies, PERCENTILES, SIGNIFICANT_DIGITS, Summary};
pub use link::{LinkHistory, LinkUp, StatePeriod};
pub use mdio::{MdioCounts, RegisterCount, WINDOW_NS, Windows};
pub use updown::Interval;

use crate::capture::Capture;
use crate::event::{Event, EventKind, KmsgLevel, MacChange, MdioOp};
use crate::model::{Applied, LostReturn, LostWhy, Model};
use crate::registers;
use crate::render;

/// Version of the JSON form (`docs/stats.md`); changed only when a field changes meaning or
/// goes away.
pub const SCHEMA: &str = "phytrace-stats/1";

/// Most lost returns listed per callback; all are counted.
const MAX_LOST_LISTED: usize = 10;

/// Calls of one callback of one PHY.
#[derive(Clone, Debug, Default)]
pub struct CallbackCollector {
    /// Latencies of the completed calls (from their exit events).
    pub latencies: Latencies,
    /// Calls that returned a negative value, by return value.
    pub errors: BTreeMap<i64, u64>,
    /// Lost returns, by why.
    pub lost: BTreeMap<LostWhy, u64>,
    /// The first [`MAX_LOST_LISTED`] lost returns.
    pub lost_calls: Vec<LostReturn>,
}

impl CallbackCollector {
    fn lose(&mut self, lost: &LostReturn) {
        *self.lost.entry(lost.why).or_default() += 1;
        if self.lost_calls.len() < MAX_LOST_LISTED {
            self.lost_calls.push(lost.clone());
        }
    }
}

/// What is collected of one PHY.
#[derive(Clone, Debug, Default)]
pub struct PhyCollector {
    /// Per callback name.
    pub callbacks: BTreeMap<String, CallbackCollector>,
    /// MDIO accesses.
    pub mdio: MdioCounts,
    /// Link and state history.
    pub link: LinkHistory,
    /// The MAC side: carrier history.
    pub carrier: CarrierHistory,
}

/// Statistics fed event by event, after the model applied each one.
#[derive(Clone, Debug)]
pub struct Collector {
    /// Times are offsets from this (the capture's start), as `dump` shows them.
    pub origin_ns: u64,
    /// Latest event time seen.
    pub last_ns: u64,
    /// Events seen.
    pub events: u64,
    /// Events the kernel side lost (sum of `Lost` events).
    pub lost_events: u64,
    /// Per PHY key.
    pub phys: BTreeMap<String, PhyCollector>,
    /// Kernel messages by level name.
    pub kmsg: BTreeMap<&'static str, u64>,
}

impl Collector {
    /// An empty collector; times count from `origin_ns`.
    pub fn new(origin_ns: u64) -> Self {
        Self {
            origin_ns,
            last_ns: origin_ns,
            events: 0,
            lost_events: 0,
            phys: BTreeMap::new(),
            kmsg: BTreeMap::new(),
        }
    }

    fn offset(&self, ts_ns: u64) -> u64 {
        ts_ns.saturating_sub(self.origin_ns)
    }

    /// Takes in `event`, which `model` just applied with the result `applied`.
    pub fn observe(&mut self, event: &Event, applied: &Applied, model: &Model) {
        self.events += 1;
        self.last_ns = self.last_ns.max(event.ts_ns);
        match &event.kind {
            EventKind::Lost { count, .. } => self.lost_events += count,
            EventKind::Kmsg { level, .. } => {
                *self.kmsg.entry(KmsgLevel::name(*level)).or_default() += 1;
            }
            _ => {}
        }
        for lost in model.lost_returns() {
            lose(self.phys.entry(lost.key.clone()).or_default(), lost);
        }
        let Some(key) = &applied.key else { return };
        let origin = self.origin_ns;
        let offset = |ts: u64| ts.saturating_sub(origin);
        let at = offset(event.ts_ns);
        let phy = match self.phys.get_mut(key) {
            Some(phy) => phy,
            None => self.phys.entry(key.clone()).or_default(),
        };
        if let Some(t) = &applied.transition {
            phy.link.state(offset(t.ts_ns), &t.to.name);
        }
        if let Some(closed) = &applied.closed {
            let name = &*closed.callback.name;
            if !phy.callbacks.contains_key(name) {
                phy.callbacks
                    .insert(name.to_owned(), CallbackCollector::default());
            }
            if let Some(c) = phy.callbacks.get_mut(name) {
                c.latencies.record(closed.latency_ns);
                if closed.ret < 0 {
                    *c.errors.entry(closed.ret).or_default() += 1;
                }
            }
        }
        if let Some(change) = &applied.link_change {
            phy.link.link(offset(change.ts_ns), change.to.up);
        }
        match &event.kind {
            EventKind::Mdio {
                op,
                reg,
                devad,
                value,
                error,
                latency_ns,
                ..
            } => {
                let register = registers::Register::of(*devad, *reg);
                phy.mdio
                    .record(at, *op, register, error.is_some(), *latency_ns);
                // BMCR's resets and restarts: Clause 22 only.
                if *op == MdioOp::Write && error.is_none() && devad.is_none() {
                    phy.link.mdio_write(at, *reg, *value);
                }
            }
            EventKind::Mac {
                change: MacChange::Carrier { netdev, up },
            } => phy.carrier.carrier(at, netdev, *up, &phy.link),
            EventKind::Mac { .. } => phy.carrier.seen = true,
            _ => {}
        }
    }

    /// One-second rate windows from the origin to `end_ns` or the latest event, whichever is
    /// later, rounded up (at least one): what every MDIO rate is taken over.
    pub fn windows_until(&self, end_ns: u64) -> u64 {
        self.offset(end_ns.max(self.last_ns))
            .div_ceil(WINDOW_NS)
            .max(1)
    }

    /// The statistics as of now; `model` is the one that applied the events, `end_ns` the end
    /// of the capture (calls still open then count as lost returns, `CaptureEnded`).
    pub fn report(&self, model: &Model, end_ns: u64) -> Report {
        let end_ns = end_ns.max(self.last_ns);
        let mut collectors = self.phys.clone();
        for lost in model.still_running(end_ns) {
            lose(collectors.entry(lost.key.clone()).or_default(), &lost);
        }
        let phys = collectors
            .iter()
            .map(|(key, c)| self.phy_report(key, c, model, end_ns))
            .collect();
        Report {
            schema: SCHEMA,
            method: Method::default(),
            origin_ns: self.origin_ns,
            duration_ns: self.offset(end_ns),
            events: self.events,
            lost_events: self.lost_events,
            kmsg: KmsgLevel::NAMES
                .iter()
                .chain(&["unknown"])
                .filter_map(|&level| {
                    let count = *self.kmsg.get(level)?;
                    Some(KmsgCount { level, count })
                })
                .collect(),
            phys,
        }
    }

    /// The statistics of the PHY `key` alone, as [`Collector::report`] has them.
    pub fn phy(&self, key: &str, model: &Model, end_ns: u64) -> PhyReport {
        let end_ns = end_ns.max(self.last_ns);
        let mut c = self.phys.get(key).cloned().unwrap_or_default();
        for lost in model.still_running(end_ns).filter(|l| l.key == key) {
            lose(&mut c, &lost);
        }
        self.phy_report(key, &c, model, end_ns)
    }

    fn phy_report(&self, key: &str, c: &PhyCollector, model: &Model, end_ns: u64) -> PhyReport {
        let end = self.offset(end_ns);
        let windows = self.windows_until(end_ns);
        let phy = model.phy(key);
        let callbacks = c
            .callbacks
            .iter()
            .map(|(name, cb)| CallbackReport {
                name: name.clone(),
                calls: cb.latencies.count(),
                errors: cb
                    .errors
                    .iter()
                    .map(|(&ret, &count)| ErrorCount {
                        ret,
                        errno: render::errno_name(ret),
                        count,
                    })
                    .collect(),
                latency: cb.latencies.summary(),
                lost_returns: LostReport {
                    total: cb.lost.values().sum(),
                    superseded: cb.lost.get(&LostWhy::Superseded).copied().unwrap_or(0),
                    unloaded: cb.lost.get(&LostWhy::Unloaded).copied().unwrap_or(0),
                    capture_ended: cb.lost.get(&LostWhy::CaptureEnded).copied().unwrap_or(0),
                    calls: cb
                        .lost_calls
                        .iter()
                        .map(|l| LostCall {
                            entered_ns: self.offset(l.open.enter_ns),
                            known_at_ns: self.offset(l.known_at_ns),
                            ran_at_least_ns: l.known_at_ns.saturating_sub(l.open.enter_ns),
                            why: l.why,
                            state: l.open.state.name.to_string(),
                        })
                        .collect(),
                },
            })
            .collect();
        let (mean, peak, peak_window) = c.mdio.rate(windows);
        let intervals = c.link.intervals_until(end);
        let states = c.link.states_until(end);
        let observed: u64 = states.values().map(|s| s.0).sum();
        PhyReport {
            key: key.to_owned(),
            driver: phy.map(|p| p.phy.driver.to_string()).unwrap_or_default(),
            phy_id: phy.map_or(0, |p| p.phy.phy_id),
            unmatched_exits: phy.map_or(0, |p| p.counters.unmatched_exits),
            callbacks,
            mdio: MdioReport {
                accesses: c.mdio.total,
                windows,
                mean_per_s: mean,
                peak_per_s: peak,
                peak_window_start_ns: peak_window.map(|i| i.saturating_mul(WINDOW_NS)),
                latency: MdioLatency {
                    read: c.mdio.read_latency.summary(),
                    write: c.mdio.write_latency.summary(),
                },
                registers: c
                    .mdio
                    .registers
                    .iter()
                    .map(|(&reg, count)| RegisterReport {
                        mmd: reg.devad(),
                        reg: reg.number(),
                        name: reg.to_string(),
                        count: count.clone(),
                    })
                    .collect(),
            },
            link: LinkReport {
                up_ns: updown::time(&intervals, true),
                down_ns: updown::time(&intervals, false),
                intervals,
                ups: c.link.ups.clone(),
            },
            carrier: c.carrier.seen.then(|| {
                let intervals = c.carrier.intervals_until(end);
                CarrierReport {
                    netdev: c.carrier.netdev.clone(),
                    up_ns: updown::time(&intervals, true),
                    down_ns: updown::time(&intervals, false),
                    intervals,
                    ups: c.carrier.ups.clone(),
                }
            }),
            states: states
                .into_iter()
                .map(|(state, (ns, periods))| StateTime {
                    state,
                    time_ns: ns,
                    periods,
                    share: if observed == 0 {
                        0.0
                    } else {
                        ns as f64 / observed as f64
                    },
                })
                .collect(),
        }
    }
}

/// Counts a lost return of `phy`.
fn lose(phy: &mut PhyCollector, lost: &LostReturn) {
    phy.callbacks
        .entry(lost.open.callback.name.to_string())
        .or_default()
        .lose(lost);
}

/// The statistics of a whole capture (its start as the origin, its trailer's end as the end).
pub fn of_capture(capture: &Capture) -> Report {
    let origin = capture.origin_ns();
    let mut model = Model::new();
    let mut collector = Collector::new(origin);
    for event in &capture.events {
        let applied = model.apply(event);
        collector.observe(event, &applied, &model);
    }
    let end = capture
        .trailer
        .as_ref()
        .map_or(collector.last_ns, |t| t.end_ns);
    collector.report(&model, end)
}

/// How the numbers are made, repeated in the JSON so that a reader need not guess.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Method {
    /// Which calls the latencies are of.
    pub sample: &'static str,
    /// How percentiles are computed.
    pub percentiles: &'static str,
    /// Significant digits of the histogram.
    pub significant_digits: u8,
    /// Length of an MDIO rate window.
    pub rate_window_ns: u64,
}

impl Default for Method {
    fn default() -> Self {
        Self {
            sample: "every completed call in the capture (latency from its exit event); calls whose return was lost are counted apart, never in the percentiles",
            percentiles: "nearest rank, from an HDR histogram (hdrhistogram crate); min, max and mean exact",
            significant_digits: SIGNIFICANT_DIGITS,
            rate_window_ns: WINDOW_NS,
        }
    }
}

/// Statistics of one capture (or of what the TUI has seen). Times ending in `_ns` without
/// `duration` are offsets from `origin_ns`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// How the numbers are made.
    pub method: Method,
    /// Boot-clock time of the origin (the capture's start).
    pub origin_ns: u64,
    /// From the origin to the end.
    pub duration_ns: u64,
    /// Events.
    pub events: u64,
    /// Events lost by the kernel side.
    pub lost_events: u64,
    /// Kernel messages in the capture, by level, most severe first (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kmsg: Vec<KmsgCount>,
    /// Per PHY, by key.
    pub phys: Vec<PhyReport>,
}

/// Kernel messages of one level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KmsgCount {
    /// `err`, `warn`, … (`unknown` when the log could not be read).
    pub level: &'static str,
    /// Messages.
    pub count: u64,
}

/// Statistics of one PHY.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhyReport {
    /// `bus:addr`.
    pub key: String,
    /// Bound driver, as last seen.
    pub driver: String,
    /// PHY ID, as last seen.
    pub phy_id: u32,
    /// Returns seen without their entry (tracing started inside the call, or events lost);
    /// their latencies are in the statistics, from the exit event.
    pub unmatched_exits: u64,
    /// Per callback, by name.
    pub callbacks: Vec<CallbackReport>,
    /// MDIO accesses.
    pub mdio: MdioReport,
    /// Link history.
    pub link: LinkReport,
    /// Carrier history of the MAC side, if a MAC-side event of this PHY was seen.
    pub carrier: Option<CarrierReport>,
    /// Time in each `phy_state`, by name.
    pub states: Vec<StateTime>,
}

/// Calls of one callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallbackReport {
    /// `read_status`.
    pub name: String,
    /// Completed calls (returns seen).
    pub calls: u64,
    /// Negative returns, by value.
    pub errors: Vec<ErrorCount>,
    /// Latencies of the completed calls.
    pub latency: Summary,
    /// Calls entered whose return was never seen.
    pub lost_returns: LostReport,
}

/// Calls that returned one negative value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorCount {
    /// The return value (`-5`).
    pub ret: i64,
    /// Its errno name (`EIO`), if known.
    pub errno: Option<&'static str>,
    /// How many.
    pub count: u64,
}

/// Lost returns of one callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LostReport {
    /// All of them.
    pub total: u64,
    /// A later event on the thread showed the return was missed (events lost).
    pub superseded: u64,
    /// The module was unloaded while the call ran.
    pub unloaded: u64,
    /// Still running when the capture ended.
    pub capture_ended: u64,
    /// The first ones.
    pub calls: Vec<LostCall>,
}

/// One call whose return was lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LostCall {
    /// When it was entered.
    pub entered_ns: u64,
    /// When its return was known lost.
    pub known_at_ns: u64,
    /// It ran at least this long (a lower bound of its latency).
    pub ran_at_least_ns: u64,
    /// Why.
    pub why: LostWhy,
    /// `phy_state` at entry.
    pub state: String,
}

/// MDIO accesses of one PHY.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MdioReport {
    /// All accesses, successful or not.
    pub accesses: u64,
    /// One-second windows from the origin to the end (rounded up).
    pub windows: u64,
    /// Accesses per second: `accesses / windows`.
    pub mean_per_s: f64,
    /// Accesses in the busiest window.
    pub peak_per_s: u64,
    /// Start of the busiest window (the first of equals).
    pub peak_window_start_ns: Option<u64>,
    /// Latencies of the reads and of the writes.
    pub latency: MdioLatency,
    /// Per register.
    pub registers: Vec<RegisterReport>,
}

/// Latencies of MDIO accesses, successful or failed, as the bus accessor returned them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MdioLatency {
    /// Reads.
    pub read: Summary,
    /// Writes.
    pub write: Summary,
}

/// Accesses to one register.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegisterReport {
    /// The MMD of a Clause 45 register.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmd: Option<u8>,
    /// Number (in its MMD for Clause 45).
    pub reg: u16,
    /// Name (`BMSR`, `pcs.STAT1`, or the number: `R0x10`, `pcs.0x8000`).
    pub name: String,
    /// Counts.
    #[serde(flatten)]
    pub count: RegisterCount,
}

/// Link history of one PHY.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkReport {
    /// Time with the link up, from its first report.
    pub up_ns: u64,
    /// Time with the link down, from its first report.
    pub down_ns: u64,
    /// Every interval, in order; the last one is `open`.
    pub intervals: Vec<Interval>,
    /// Every link-up and what led to it.
    pub ups: Vec<LinkUp>,
}

/// Carrier history of a PHY's MAC side (`netif_carrier_on`/`_off` of its network device).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CarrierReport {
    /// The network device, as of its latest carrier change.
    pub netdev: Option<String>,
    /// Time with the carrier up, from its first report.
    pub up_ns: u64,
    /// Time with the carrier down, from its first report.
    pub down_ns: u64,
    /// Every interval, in order; the last one is `open`.
    pub intervals: Vec<Interval>,
    /// Every carrier-up and how long after the PHY's link-up it came.
    pub ups: Vec<CarrierUp>,
}

/// Time in one `phy_state`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateTime {
    /// `RUNNING`.
    pub state: String,
    /// Total time, from each entry to the next change (or the end).
    pub time_ns: u64,
    /// Times it was entered.
    pub periods: u64,
    /// Share of the time since the first state was seen (0 to 1).
    pub share: f64,
}

#[cfg(test)]
mod tests;
