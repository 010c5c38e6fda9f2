//! The text form of a [`Report`], for people.

use std::fmt::Write as _;

use super::{CarrierReport, Interval, LostReport, PhyReport, Report, SIGNIFICANT_DIGITS, Summary};
use crate::render;

/// Seconds with millisecond precision: `7.512`.
pub fn secs(ns: u64) -> String {
    format!(
        "{}.{:03}",
        ns / 1_000_000_000,
        ns % 1_000_000_000 / 1_000_000
    )
}

/// `2 EIO, 1 ret -7`.
pub fn errors(list: &[super::ErrorCount]) -> String {
    if list.is_empty() {
        return "0".to_owned();
    }
    list.iter()
        .map(|e| match e.errno {
            Some(name) => format!("{} {name}", e.count),
            None => format!("{} ret {}", e.count, e.ret),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// min, p50, p90, p99 and max, right-aligned in 9 columns each; `-` without latencies.
fn latency_cells(l: &Summary) -> String {
    [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns]
        .iter()
        .map(|&ns| {
            let cell = if l.count == 0 {
                "-".to_owned()
            } else {
                render::duration(ns)
            };
            format!("  {cell:>9}")
        })
        .collect()
}

/// `, 7.3ms after link up` when `ns` is known.
pub fn after(what: &str, ns: Option<u64>) -> String {
    ns.map(|ns| format!(", {} after {what}", render::duration(ns)))
        .unwrap_or_default()
}

/// One line per interval: `    up   from    3.244 s  for 2.26s`.
fn intervals(out: &mut String, list: &[Interval]) {
    for i in list {
        let _ = writeln!(
            out,
            "    {:<4} from {:>8} s  for {}{}",
            if i.up { "up" } else { "down" },
            secs(i.start_ns),
            render::duration(i.duration_ns),
            if i.open { "+ (until the end)" } else { "" }
        );
    }
}

/// `2 (1 capture ended, 1 unloaded)`.
pub fn lost(l: &LostReport) -> String {
    if l.total == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = [
        (l.superseded, "superseded"),
        (l.unloaded, "unloaded"),
        (l.capture_ended, "capture ended"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    format!("{} ({})", l.total, parts.join(", "))
}

/// The report of one capture named `name`.
pub fn report(name: &str, r: &Report) -> String {
    let mut out = format!(
        "phytrace stats: {name}  {} s, {} events, {} lost by the kernel\n",
        secs(r.duration_ns),
        r.events,
        r.lost_events
    );
    if !r.kmsg.is_empty() {
        let counts: Vec<String> = r
            .kmsg
            .iter()
            .map(|k| format!("{} {}", k.count, k.level))
            .collect();
        let _ = writeln!(out, "kernel messages: {}", counts.join(", "));
    }
    let _ = writeln!(
        out,
        "latency: every completed call (from its exit event); p50/p90/p99 nearest rank from an HDR histogram, {SIGNIFICANT_DIGITS} significant digits (within 0.1%); min, max exact; calls whose return was lost are counted apart, not in the percentiles"
    );
    for phy in &r.phys {
        out.push('\n');
        phy_report(&mut out, phy);
    }
    out
}

fn phy_report(out: &mut String, phy: &PhyReport) {
    let driver = if phy.driver.is_empty() {
        "no driver"
    } else {
        &phy.driver
    };
    let _ = writeln!(out, "{}  {driver}  PHY ID {:08x}", phy.key, phy.phy_id);
    if !phy.callbacks.is_empty() {
        let width = phy
            .callbacks
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(0)
            .max(8);
        let _ = writeln!(
            out,
            "  {:<width$}  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:<10}  lost returns",
            "callback", "calls", "min", "p50", "p90", "p99", "max", "errors"
        );
        for c in &phy.callbacks {
            let _ = writeln!(
                out,
                "  {:<width$}  {:>5}{}  {:<10}  {}",
                c.name,
                c.calls,
                latency_cells(&c.latency),
                errors(&c.errors),
                lost(&c.lost_returns)
            );
            for call in c.lost_returns.calls.iter().take(5) {
                let _ = writeln!(
                    out,
                    "  {:<width$}    entered {} in {}, no return ({:?}; ran at least {})",
                    "",
                    secs(call.entered_ns),
                    call.state,
                    call.why,
                    render::duration(call.ran_at_least_ns)
                );
            }
        }
    }
    if phy.unmatched_exits > 0 {
        let _ = writeln!(
            out,
            "  {} returns without their entry (counted, latency from the exit event)",
            phy.unmatched_exits
        );
    }
    let m = &phy.mdio;
    let peak_at = m
        .peak_window_start_ns
        .map_or(String::new(), |t| format!(" at {} s", secs(t)));
    let _ = writeln!(
        out,
        "  MDIO  {} accesses, {:.1}/s mean over {} windows of 1 s, peak {}/s{peak_at}",
        m.accesses, m.mean_per_s, m.windows, m.peak_per_s
    );
    if m.accesses > 0 {
        let _ = writeln!(
            out,
            "    {:<9} {:>5}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}",
            "latency", "count", "min", "p50", "p90", "p99", "max"
        );
        for (op, l) in [("read", &m.latency.read), ("write", &m.latency.write)] {
            let _ = writeln!(out, "    {op:<9} {:>5}{}", l.count, latency_cells(l));
        }
    }
    let mut rest = m.registers.as_slice();
    while let Some(first) = rest.first() {
        // Unnamed Clause 45 registers in a row with the same counts (a firmware window) share
        // one line.
        let run = rest
            .iter()
            .zip(0u32..)
            .take_while(|(r, i)| {
                first.mmd.is_some()
                    && r.mmd == first.mmd
                    && u32::from(r.reg) == u32::from(first.reg) + i
                    && r.count == first.count
                    && r.name.contains(".0x")
            })
            .count()
            .max(1);
        let last = &rest[run - 1];
        let name = if run > 1 {
            let count = crate::render::runs::thousands(run as u64);
            format!("{}…{:#06x} ({count} registers, each)", first.name, last.reg)
        } else {
            first.name.clone()
        };
        let mut line = format!(
            "    {name:<9} read {:>5}  write {:>5}",
            first.count.reads, first.count.writes
        );
        if first.count.errors > 0 {
            let _ = write!(line, "  failed {}", first.count.errors);
        }
        let _ = writeln!(out, "{line}");
        rest = &rest[run..];
    }
    let link = &phy.link;
    if !link.intervals.is_empty() {
        let _ = writeln!(
            out,
            "  link  up {} s, down {} s",
            secs(link.up_ns),
            secs(link.down_ns)
        );
        intervals(out, &link.intervals);
        for up in &link.ups {
            let _ = writeln!(
                out,
                "    link up at {} s{}{}",
                secs(up.at_ns),
                after("link down", up.since_down_ns),
                after("autonegotiation start", up.since_aneg_start_ns)
            );
        }
    }
    if let Some(carrier) = &phy.carrier {
        carrier_report(out, carrier);
    }
    if !phy.states.is_empty() {
        let states: Vec<String> = phy
            .states
            .iter()
            .map(|s| {
                format!(
                    "{} {} s ({:.0}%, {}×)",
                    s.state,
                    secs(s.time_ns),
                    s.share * 100.0,
                    s.periods
                )
            })
            .collect();
        let _ = writeln!(out, "  phy_state  {}", states.join(", "));
    }
}

fn carrier_report(out: &mut String, c: &CarrierReport) {
    let netdev = c.netdev.as_deref().unwrap_or("(no carrier change)");
    let _ = writeln!(
        out,
        "  carrier {netdev}  up {} s, down {} s",
        secs(c.up_ns),
        secs(c.down_ns)
    );
    intervals(out, &c.intervals);
    for up in &c.ups {
        let _ = writeln!(
            out,
            "    carrier up at {} s{}{}{}",
            secs(up.at_ns),
            after("carrier down", up.since_down_ns),
            after("link up", up.since_link_up_ns),
            after("autonegotiation start", up.since_aneg_start_ns)
        );
    }
}
