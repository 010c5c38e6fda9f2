//! Chrome JSON trace event format, as ui.perfetto.dev and `chrome://tracing` open it.
//!
//! One process per PHY (named after its key and driver) with one track: callbacks are complete
//! (`X`) slices with their return value, states and link as arguments; the MDIO accesses they
//! make are `X` slices inside them with the register decoded; `phy_state` and the link are
//! counter (`C`) tracks, and state changes also instant (`i`) events. Module attach, detach and
//! lost events are global instants of a `phytrace` process. Kernel messages are instants on a
//! `kernel log` thread of their PHY's process (of `phytrace`'s when they name no PHY). Each PHY also has an `mdio/s`
//! counter track (accesses per one-second window up to a day, then one sample per change),
//! and `otherData.stats` carries the `phytrace stats` report (`docs/stats.md`). Times are
//! microseconds since the capture's start.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::capture::Capture;
use crate::event::{Event, EventKind, KmsgLevel, MacChange};
use crate::model::{Applied, ClosedCallback, Model};
use crate::registers;
use crate::render;
use crate::stats::{Collector, Report, WINDOW_NS, Windows};

/// Process id of phytrace's own events; PHYs come after it.
const PHYTRACE_PID: u32 = 1;

/// Most `mdio/s` windows sampled one by one (a day); a longer capture gets a sample where the
/// rate changes only (the counter draws the same), which `otherData.limits` says.
const MAX_RATE_SAMPLES: u64 = 86_400;

/// Thread of a process whose track holds the kernel's log lines.
const KMSG_TID: u32 = 0x6b6d_7367;

/// A trace event and the keys it is sorted by.
struct Entry {
    ts_ns: u64,
    /// Longer slices first at the same time, so that parents precede children.
    dur_ns: u64,
    value: Value,
}

/// Builds the trace: a JSON object with `traceEvents`, sorted by time.
pub fn trace(capture: &Capture) -> Value {
    let origin = capture.origin_ns();
    let mut model = Model::new();
    let mut collector = Collector::new(origin);
    let mut trace = Trace::new(origin);
    let mut end_ns = origin;
    for event in &capture.events {
        end_ns = end_ns.max(event.ts_ns);
        let applied = model.apply(event);
        collector.observe(event, &applied, &model);
        match &applied.key {
            Some(key) => trace.phy_event(key, event, &applied),
            None => trace.session_event(event),
        }
    }
    trace.still_running(&model, end_ns);
    let end = capture
        .trailer
        .as_ref()
        .map_or(end_ns, |t| t.end_ns.max(end_ns));
    let report = collector.report(&model, end);
    trace.mdio_rates(&collector, &report);
    let limits = std::mem::take(&mut trace.limits);
    let mut json = json!({
        "traceEvents": trace.events(&model),
        "displayTimeUnit": "ns",
        "otherData": {
            "source": "phytrace",
            "kernel": capture.header.kernel_release,
            "host": capture.header.hostname,
            "stats": report,
        },
    });
    if !limits.is_empty() {
        json["otherData"]["limits"] = json!(limits);
    }
    json
}

/// The trace being built: its events, and the process of each PHY.
struct Trace {
    /// The capture's start: times are microseconds since it.
    origin_ns: u64,
    /// Process of each PHY, by key, in order of first event.
    pids: BTreeMap<String, u32>,
    /// Time of each PHY process's latest event.
    last_ts: BTreeMap<u32, u64>,
    entries: Vec<Entry>,
    /// What the trace leaves out (`otherData.limits`).
    limits: Vec<String>,
}

impl Trace {
    fn new(origin_ns: u64) -> Self {
        Self {
            origin_ns,
            pids: BTreeMap::new(),
            last_ts: BTreeMap::new(),
            entries: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// Microseconds since the capture's start.
    fn us(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.origin_ns) as f64 / 1e3
    }

    /// An instant event `name` at `ts` on process `pid`'s track (`scope` `g`: global).
    fn instant(&self, name: String, ts: u64, pid: u32, scope: &str, args: Value) -> Entry {
        Entry {
            ts_ns: ts,
            dur_ns: 0,
            value: json!({"ph": "i", "s": scope, "name": name, "ts": self.us(ts), "pid": pid,
                          "tid": pid, "args": args}),
        }
    }

    /// A counter `name` of process `pid` set to `args` at `ts`.
    fn counter(&self, name: &str, ts: u64, pid: u32, args: Value) -> Entry {
        Entry {
            ts_ns: ts,
            dur_ns: 0,
            value: json!({"ph": "C", "name": name, "ts": self.us(ts), "pid": pid,
                          "tid": pid, "args": args}),
        }
    }

    /// A kernel message as a log entry: an instant on the `kernel log` track of process `pid`.
    fn kmsg(&self, level: Option<u8>, text: &str, pid: u32, ts: u64) -> Entry {
        let level = KmsgLevel::name(level);
        Entry {
            ts_ns: ts,
            dur_ns: 0,
            value: json!({"ph": "i", "s": "t", "cat": "kmsg", "name": render::printable(text),
                          "ts": self.us(ts), "pid": pid, "tid": KMSG_TID,
                          "args": {"level": level, "text": text}}),
        }
    }

    /// An event that names no PHY: a global instant of the `phytrace` process, or a line on
    /// its `kernel log` track.
    fn session_event(&mut self, event: &Event) {
        let ts = event.ts_ns;
        let (name, args) = match &event.kind {
            EventKind::Attached {
                module, callbacks, ..
            } => (
                format!("attached {module}"),
                json!({"callbacks": callbacks}),
            ),
            EventKind::Detached { module } => (format!("detached {module}"), json!({})),
            EventKind::Lost { count, cause } => (
                "lost events".to_owned(),
                json!({"count": count, "cause": cause.map(|c| c.name())}),
            ),
            EventKind::Mac { change } => (render::mac_change(change), json!({})),
            EventKind::Kmsg { level, text } => {
                let entry = self.kmsg(*level, text, PHYTRACE_PID, ts);
                self.entries.push(entry);
                return;
            }
            _ => ("event without PHY".to_owned(), json!({})),
        };
        let entry = self.instant(name, ts, PHYTRACE_PID, "g", args);
        self.entries.push(entry);
    }

    /// An event of the PHY `key`, which the model applied with the result `applied`.
    fn phy_event(&mut self, key: &str, event: &Event, applied: &Applied) {
        let ts = event.ts_ns;
        let next_pid = PHYTRACE_PID + 1 + self.pids.len() as u32;
        let pid = *self.pids.entry(key.to_owned()).or_insert(next_pid);
        let previous = self.last_ts.insert(pid, ts).unwrap_or(0);
        self.phy_changes(applied, ts, pid);
        let entries: Vec<Entry> = match &event.kind {
            EventKind::CallbackExit { .. } => applied
                .closed
                .iter()
                .map(|closed| self.callback_slice(closed, pid))
                .collect(),
            EventKind::Mdio { .. } => {
                // Never before the PHY's previous event, so slices nest inside callbacks.
                let not_before = previous.min(ts);
                let slice = self.mdio_slice(event, applied.previous, not_before, pid);
                slice.into_iter().collect()
            }
            EventKind::Mac { change } => self.mac_entries(change, ts, pid),
            EventKind::Kmsg { level, text } => vec![self.kmsg(*level, text, pid, ts)],
            _ => Vec::new(),
        };
        self.entries.extend(entries);
    }

    /// What `applied` changed of the PHY at `pid`: its `phy_state` (a counter and an instant)
    /// and its link (a counter).
    fn phy_changes(&mut self, applied: &Applied, ts: u64, pid: u32) {
        if let Some(t) = &applied.transition {
            let state = self.counter("phy_state", ts, pid, json!({"state": t.to.value}));
            let from = t.from.as_ref().map_or("?", |s| s.name.as_ref());
            let args = json!({"from": from, "to": t.to.name, "during": t.during});
            let instant = self.instant(format!("state {}", t.to.name), ts, pid, "t", args);
            self.entries.extend([state, instant]);
        }
        if let Some(change) = &applied.link_change {
            let link = self.counter("link", ts, pid, json!({"up": u8::from(change.to.up)}));
            self.entries.push(link);
        }
    }

    /// A MAC-side change at `ts` on the PHY at `pid`: `phylink_resolve` as a slice; any other
    /// as an instant, a carrier change also as a counter.
    fn mac_entries(&self, change: &MacChange, ts: u64, pid: u32) -> Vec<Entry> {
        if let MacChange::Resolve { latency_ns } = change {
            let start = ts.saturating_sub(*latency_ns);
            return vec![Entry {
                ts_ns: start,
                dur_ns: *latency_ns,
                value: json!({"ph": "X", "cat": "mac", "name": "phylink_resolve",
                              "ts": self.us(start), "dur": *latency_ns as f64 / 1e3,
                              "pid": pid, "tid": pid, "args": {}}),
            }];
        }
        let carrier = match change {
            MacChange::Carrier { up, .. } => {
                Some(self.counter("carrier", ts, pid, json!({"up": u8::from(*up)})))
            }
            _ => None,
        };
        let instant = self.instant(render::mac_change(change), ts, pid, "t", json!({}));
        carrier.into_iter().chain([instant]).collect()
    }

    /// The slice of `event` if it is an MDIO access, starting no earlier than `not_before`,
    /// with the register's `previous` value to show what changed.
    fn mdio_slice(
        &self,
        event: &Event,
        previous: Option<u16>,
        not_before: u64,
        pid: u32,
    ) -> Option<Entry> {
        let EventKind::Mdio {
            op,
            reg,
            devad,
            value,
            error,
            latency_ns,
            caller,
            ..
        } = &event.kind
        else {
            return None;
        };
        let ts = event.ts_ns;
        let start = ts.saturating_sub(*latency_ns).max(not_before);
        let op_name = op.name();
        let register = registers::Register::of(*devad, *reg);
        let reg_name = register.to_string();
        let mut args = json!({
            "register": register.labelled(),
            "reg": reg,
            "caller": caller.as_ref().map_or("(phylib)", |c| c.name.as_ref()),
        });
        if let Some(devad) = devad {
            args["mmd"] = json!(devad);
        }
        match error {
            Some(err) => args["error"] = json!(render::errno(i64::from(*err))),
            None => {
                args["value"] = json!(format!("{value:#06x}"));
                args["bits"] = json!(registers::decode(register, *value).to_string());
                if let Some(prev) = previous {
                    args["changes"] = json!(registers::changes(register, prev, *value).to_string());
                }
            }
        }
        Some(Entry {
            ts_ns: start,
            dur_ns: ts - start,
            value: json!({"ph": "X", "cat": "mdio", "name": format!("{op_name} {reg_name}"),
                          "ts": self.us(start), "dur": (ts - start) as f64 / 1e3,
                          "pid": pid, "tid": pid, "args": args}),
        })
    }

    /// The slice of a completed callback, from its entry (or return minus latency) to its
    /// return.
    fn callback_slice(&self, closed: &ClosedCallback, pid: u32) -> Entry {
        let start = closed
            .enter_ns
            .unwrap_or_else(|| closed.exit_ns.saturating_sub(closed.latency_ns))
            .min(closed.exit_ns);
        let dur = closed.exit_ns - start;
        Entry {
            ts_ns: start,
            dur_ns: dur,
            value: json!({
                "ph": "X", "cat": "callback", "name": closed.callback.name,
                "ts": self.us(start), "dur": dur as f64 / 1e3, "pid": pid, "tid": pid,
                "args": {
                    "ret": render::errno(closed.ret),
                    "state_before": closed.state_before.name,
                    "state_after": closed.state_after.name,
                    "link": render::link(&closed.link),
                    "depth": closed.depth,
                    "driver_type": closed.callback.driver_type,
                    "mdio_accesses": closed.accesses.len(),
                },
            }),
        }
    }

    /// Slices of the callbacks still running at `end_ns`, the end of the capture.
    fn still_running(&mut self, model: &Model, end_ns: u64) {
        for (key, phy) in &model.phys {
            let Some(&pid) = self.pids.get(key) else {
                continue;
            };
            for (_, stack) in phy.open.iter() {
                for open in stack {
                    let dur = end_ns.saturating_sub(open.enter_ns);
                    let slice = Entry {
                        ts_ns: open.enter_ns,
                        dur_ns: dur,
                        value: json!({"ph": "X", "cat": "callback", "name": open.callback.name,
                                      "ts": self.us(open.enter_ns), "dur": dur as f64 / 1e3,
                                      "pid": pid, "tid": pid,
                                      "args": {"unfinished": true, "state": open.state.name,
                                               "driver_type": open.callback.driver_type}}),
                    };
                    self.entries.push(slice);
                }
            }
        }
    }

    /// Each PHY's `mdio/s` counter: one sample per one-second window of the statistics (to
    /// the end of the capture), or where the rate changes past [`MAX_RATE_SAMPLES`].
    fn mdio_rates(&mut self, collector: &Collector, report: &Report) {
        for (key, &pid) in &self.pids {
            let (Some(phy), Some(stats)) = (
                collector.phys.get(key),
                report.phys.iter().find(|p| p.key == *key),
            ) else {
                continue;
            };
            let windows = stats.mdio.windows;
            let samples: Vec<u64> = if windows <= MAX_RATE_SAMPLES {
                (0..windows).collect()
            } else {
                self.limits.push(format!(
                    "{key}: mdio/s sampled where it changes, {windows} windows of 1 s being more \
                     than {MAX_RATE_SAMPLES}"
                ));
                rate_changes(&phy.mdio.windows, windows)
            };
            for i in samples {
                let count = phy.mdio.windows.get(i);
                let ts_ns = self.origin_ns.saturating_add(i.saturating_mul(WINDOW_NS));
                let sample = self.counter("mdio/s", ts_ns, pid, json!({"accesses": count}));
                self.entries.push(sample);
            }
        }
    }

    /// The trace's events: the processes' and threads' names, then every entry by time.
    fn events(self, model: &Model) -> Vec<Value> {
        let mut events = vec![
            json!({"ph": "M", "name": "process_name", "pid": PHYTRACE_PID, "tid": PHYTRACE_PID,
                   "args": {"name": "phytrace"}}),
        ];
        for (key, &pid) in &self.pids {
            let driver = model.phy(key).map_or("", |p| p.phy.driver.as_ref());
            let name = if driver.is_empty() {
                key.clone()
            } else {
                format!("{key} {driver}")
            };
            events.extend([
                json!({"ph": "M", "name": "process_name", "pid": pid, "tid": pid,
                       "args": {"name": name}}),
                json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": pid,
                       "args": {"sort_index": pid}}),
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": pid,
                       "args": {"name": format!("{key} callbacks and MDIO")}}),
            ]);
        }
        for pid in std::iter::once(PHYTRACE_PID).chain(self.pids.values().copied()) {
            events.push(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": KMSG_TID,
                       "args": {"name": "kernel log"}}),
            );
        }
        let mut entries = self.entries;
        entries.sort_by(|a, b| a.ts_ns.cmp(&b.ts_ns).then(b.dur_ns.cmp(&a.dur_ns)));
        events.extend(entries.into_iter().map(|e| e.value));
        events
    }
}

/// The windows (of `windows`) where the rate changes: the first, each one with accesses and
/// the one after it.
fn rate_changes(counts: &Windows, windows: u64) -> Vec<u64> {
    let mut at: BTreeSet<u64> = BTreeSet::from([0]);
    for (i, _) in counts.nonempty() {
        at.extend([i, i.saturating_add(1)]);
    }
    at.into_iter().filter(|&i| i < windows).collect()
}
