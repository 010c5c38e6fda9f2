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
use crate::event::{EventKind, KmsgLevel, MacChange, MdioOp};
use crate::model::{ClosedCallback, Model};
use crate::registers;
use crate::render;
use crate::stats::{Collector, WINDOW_NS, Windows};

/// Process id of phytrace's own events; PHYs come after it.
const PHYTRACE_PID: u32 = 1;

/// Most `mdio/s` windows sampled one by one (a day); a longer capture gets a sample where the
/// rate changes only (the counter draws the same), which `otherData.limits` says.
pub const MAX_RATE_SAMPLES: u64 = 86_400;

/// Thread of a process whose track holds the kernel's log lines.
const KMSG_TID: u32 = 0x6b6d_7367;

/// A kernel message as a log entry: an instant on the `kernel log` track of process `pid`.
fn kmsg_entry(level: Option<u8>, text: &str, pid: u32, ts: u64, us: &impl Fn(u64) -> f64) -> Entry {
    let level = KmsgLevel::name(level);
    Entry {
        ts_ns: ts,
        dur_ns: 0,
        value: json!({"ph": "i", "s": "t", "cat": "kmsg", "name": render::printable(text),
                      "ts": us(ts), "pid": pid, "tid": KMSG_TID,
                      "args": {"level": level, "text": text}}),
    }
}

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
    let us = |ns: u64| ns.saturating_sub(origin) as f64 / 1e3;
    let mut model = Model::new();
    let mut collector = Collector::new(origin);
    let mut pids: BTreeMap<String, u32> = BTreeMap::new();
    let mut last_ts: BTreeMap<u32, u64> = BTreeMap::new();
    let mut entries: Vec<Entry> = Vec::new();
    let mut meta = vec![
        json!({"ph": "M", "name": "process_name", "pid": PHYTRACE_PID, "tid": PHYTRACE_PID,
               "args": {"name": "phytrace"}}),
    ];
    let mut end_ns = origin;
    for event in &capture.events {
        end_ns = end_ns.max(event.ts_ns);
        let applied = model.apply(event);
        collector.observe(event, &applied, &model);
        let ts = event.ts_ns;
        let instant = |name: String, pid: u32, scope: &str, args: Value| Entry {
            ts_ns: ts,
            dur_ns: 0,
            value: json!({"ph": "i", "s": scope, "name": name, "ts": us(ts), "pid": pid,
                          "tid": pid, "args": args}),
        };
        let Some(key) = applied.key.clone() else {
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
                    entries.push(kmsg_entry(*level, text, PHYTRACE_PID, ts, &us));
                    continue;
                }
                _ => ("event without PHY".to_owned(), json!({})),
            };
            entries.push(instant(name, PHYTRACE_PID, "g", args));
            continue;
        };
        let next_pid = PHYTRACE_PID + 1 + pids.len() as u32;
        let pid = *pids.entry(key).or_insert(next_pid);
        let previous = last_ts.insert(pid, ts).unwrap_or(0);
        if let Some(t) = &applied.transition {
            entries.push(Entry {
                ts_ns: ts,
                dur_ns: 0,
                value: json!({"ph": "C", "name": "phy_state", "ts": us(ts), "pid": pid,
                              "tid": pid, "args": {"state": t.to.value}}),
            });
            let from = t.from.as_ref().map_or("?", |s| s.name.as_ref());
            let args = json!({"from": from, "to": t.to.name, "during": t.during});
            entries.push(instant(format!("state {}", t.to.name), pid, "t", args));
        }
        if let Some(change) = &applied.link_change {
            entries.push(Entry {
                ts_ns: ts,
                dur_ns: 0,
                value: json!({"ph": "C", "name": "link", "ts": us(ts), "pid": pid, "tid": pid,
                              "args": {"up": u8::from(change.to.up)}}),
            });
        }
        match &event.kind {
            EventKind::CallbackExit { .. } => {
                if let Some(closed) = &applied.closed {
                    entries.push(callback_slice(closed, pid, &us));
                }
            }
            EventKind::Mdio {
                op,
                reg,
                value,
                error,
                latency_ns,
                caller,
                ..
            } => {
                // Never before the PHY's previous event, so slices nest inside callbacks.
                let start = ts.saturating_sub(*latency_ns).max(previous.min(ts));
                let op_name = match op {
                    MdioOp::Read => "read",
                    MdioOp::Write => "write",
                };
                let reg_name = registers::name(*reg).to_string();
                let mut args = json!({
                    "register": reg_name,
                    "reg": reg,
                    "caller": caller.as_ref().map_or("(phylib)", |c| c.name.as_ref()),
                });
                match error {
                    Some(err) => args["error"] = json!(render::errno(i64::from(*err))),
                    None => {
                        args["value"] = json!(format!("{value:#06x}"));
                        args["bits"] = json!(registers::decode(*reg, *value).to_string());
                        if let Some(prev) = applied.previous {
                            args["changes"] =
                                json!(registers::changes(*reg, prev, *value).to_string());
                        }
                    }
                }
                entries.push(Entry {
                    ts_ns: start,
                    dur_ns: ts - start,
                    value: json!({"ph": "X", "cat": "mdio", "name": format!("{op_name} {reg_name}"),
                                  "ts": us(start), "dur": (ts - start) as f64 / 1e3,
                                  "pid": pid, "tid": pid, "args": args}),
                });
            }
            EventKind::Mac {
                change: MacChange::Resolve { latency_ns },
            } => {
                let start = ts.saturating_sub(*latency_ns);
                entries.push(Entry {
                    ts_ns: start,
                    dur_ns: *latency_ns,
                    value: json!({"ph": "X", "cat": "mac", "name": "phylink_resolve",
                                  "ts": us(start), "dur": *latency_ns as f64 / 1e3,
                                  "pid": pid, "tid": pid, "args": {}}),
                });
            }
            EventKind::Mac { change } => {
                if let MacChange::Carrier { up, .. } = change {
                    entries.push(Entry {
                        ts_ns: ts,
                        dur_ns: 0,
                        value: json!({"ph": "C", "name": "carrier", "ts": us(ts), "pid": pid,
                                      "tid": pid, "args": {"up": u8::from(*up)}}),
                    });
                }
                entries.push(instant(render::mac_change(change), pid, "t", json!({})));
            }
            EventKind::Kmsg { level, text } => {
                entries.push(kmsg_entry(*level, text, pid, ts, &us));
            }
            _ => {}
        }
    }
    // Callbacks still running at the end of the capture.
    for (key, phy) in &model.phys {
        let Some(&pid) = pids.get(key) else { continue };
        for (_, stack) in phy.open.iter() {
            for open in stack {
                let dur = end_ns.saturating_sub(open.enter_ns);
                entries.push(Entry {
                    ts_ns: open.enter_ns,
                    dur_ns: dur,
                    value: json!({"ph": "X", "cat": "callback", "name": open.callback.name,
                                  "ts": us(open.enter_ns), "dur": dur as f64 / 1e3,
                                  "pid": pid, "tid": pid,
                                  "args": {"unfinished": true, "state": open.state.name,
                                           "driver_type": open.callback.driver_type}}),
                });
            }
        }
    }
    let end = capture
        .trailer
        .as_ref()
        .map_or(end_ns, |t| t.end_ns.max(end_ns));
    let report = collector.report(&model, end);
    let mut limits = Vec::new();
    for (key, &pid) in &pids {
        let (Some(phy), Some(stats)) = (
            collector.phys.get(key),
            report.phys.iter().find(|p| p.key == *key),
        ) else {
            continue;
        };
        // One sample per one-second window of the statistics (to the end of the capture).
        let windows = stats.mdio.windows;
        let samples: Vec<u64> = if windows <= MAX_RATE_SAMPLES {
            (0..windows).collect()
        } else {
            limits.push(format!(
                "{key}: mdio/s sampled where it changes, {windows} windows of 1 s being more \
                 than {MAX_RATE_SAMPLES}"
            ));
            rate_changes(&phy.mdio.windows, windows)
        };
        for i in samples {
            let count = phy.mdio.windows.get(i);
            let ts_ns = origin.saturating_add(i.saturating_mul(WINDOW_NS));
            entries.push(Entry {
                ts_ns,
                dur_ns: 0,
                value: json!({"ph": "C", "name": "mdio/s", "ts": us(ts_ns), "pid": pid,
                              "tid": pid, "args": {"accesses": count}}),
            });
        }
    }
    for (key, &pid) in &pids {
        let driver = model.phy(key).map_or("", |p| p.phy.driver.as_ref());
        let name = if driver.is_empty() {
            key.clone()
        } else {
            format!("{key} {driver}")
        };
        meta.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": pid,
                         "args": {"name": name}}),
        );
        meta.push(
            json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": pid,
                         "args": {"sort_index": pid}}),
        );
        meta.push(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": pid,
                         "args": {"name": format!("{key} callbacks and MDIO")}}),
        );
    }
    for pid in std::iter::once(PHYTRACE_PID).chain(pids.values().copied()) {
        meta.push(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": KMSG_TID,
                         "args": {"name": "kernel log"}}),
        );
    }
    entries.sort_by(|a, b| a.ts_ns.cmp(&b.ts_ns).then(b.dur_ns.cmp(&a.dur_ns)));
    meta.extend(entries.into_iter().map(|e| e.value));
    let mut trace = json!({
        "traceEvents": meta,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": "phytrace",
            "kernel": capture.header.kernel_release,
            "host": capture.header.hostname,
            "stats": report,
        },
    });
    if !limits.is_empty() {
        trace["otherData"]["limits"] = json!(limits);
    }
    trace
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

/// The slice of a completed callback, from its entry (or return minus latency) to its return.
fn callback_slice(closed: &ClosedCallback, pid: u32, us: &impl Fn(u64) -> f64) -> Entry {
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
            "ts": us(start), "dur": dur as f64 / 1e3, "pid": pid, "tid": pid,
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
