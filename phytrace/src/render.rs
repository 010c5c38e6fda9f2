//! One-line text form of decoded events, as `phytrace dump` prints them.
//!
//! ```text
//!     1.000123  phy_sim-0:10  → read_status  NOLINK
//!     1.000160  phy_sim-0:10      read_status → read  BMSR      0x786d  [LSTATUS ANEGCOMPLETE …]  (+LSTATUS)
//!     1.000201  phy_sim-0:10  ← read_status  78.1µs  ret=0  NOLINK  link up 100/full
//! ```

use std::fmt::Write as _;

use crate::event::{
    Duplex, Event, EventKind, Guarantee, KmsgLevel, LinkState, LossCause, MacChange, PhyState,
};
use crate::model::Applied;
use crate::registers;

pub mod runs;

/// Seconds since `start_ns`, with microsecond precision, right-aligned: `    1.000123`.
pub fn relative_time(ts_ns: u64, start_ns: u64) -> String {
    let delta = i128::from(ts_ns) - i128::from(start_ns);
    let sign = if delta < 0 { "-" } else { "" };
    let us = delta.unsigned_abs() / 1_000;
    format!(
        "{:>12}",
        format!("{sign}{}.{:06}", us / 1_000_000, us % 1_000_000)
    )
}

/// A duration in the most readable unit: `850ns`, `78.1µs`, `12.3ms`, `1.20s`.
pub fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{:.1}µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}

/// A return value or errno: `0`, `-110 (ETIMEDOUT)`.
pub fn errno(ret: i64) -> String {
    match errno_name(ret) {
        Some(name) => format!("{ret} ({name})"),
        None => ret.to_string(),
    }
}

/// The name of the negative errno `ret`, for the errnos PHY drivers return: `EIO` for -5.
pub fn errno_name(ret: i64) -> Option<&'static str> {
    Some(match ret.checked_neg()? {
        1 => "EPERM",
        5 => "EIO",
        6 => "ENXIO",
        11 => "EAGAIN",
        12 => "ENOMEM",
        16 => "EBUSY",
        19 => "ENODEV",
        22 => "EINVAL",
        95 => "EOPNOTSUPP",
        110 => "ETIMEDOUT",
        _ => return None,
    })
}

/// Link as `up 100/full` or `down`.
pub fn link(link: &LinkState) -> String {
    if !link.up {
        return "down".to_owned();
    }
    let duplex = match link.duplex {
        Duplex::Full => "full",
        Duplex::Half => "half",
        Duplex::Unknown => "?",
    };
    match link.speed {
        s if s > 0 => format!("up {s}/{duplex}"),
        _ => format!("up ?/{duplex}"),
    }
}

fn state_change(from: &PhyState, to: &PhyState) -> String {
    if from == to {
        to.name.to_string()
    } else {
        format!("{}→{}", from.name, to.name)
    }
}

/// The text line of `event` (without newline); `applied` is what the model said it changed.
pub fn event_line(event: &Event, applied: &Applied, start_ns: u64) -> String {
    let mut line = relative_time(event.ts_ns, start_ns);
    let key = applied.key.as_deref().unwrap_or("-");
    let _ = write!(line, "  {key:<14}");
    match &event.kind {
        EventKind::CallbackEnter {
            callback,
            depth,
            state,
        } => {
            let indent = "  ".repeat(usize::from(depth.saturating_sub(1)));
            let _ = write!(line, "{indent}→ {}  {}", callback.name, state.name);
            if let Some(t) = &applied.transition
                && let Some(from) = &t.from
            {
                let _ = write!(line, " (was {})", from.name);
            }
        }
        EventKind::CallbackExit {
            callback,
            depth,
            latency_ns,
            ret,
            state_before,
            state_after,
            ..
        } => {
            let indent = "  ".repeat(usize::from(depth.saturating_sub(1)));
            let _ = write!(
                line,
                "{indent}← {}  {}  ret={}  {}",
                callback.name,
                duration(*latency_ns),
                errno(*ret),
                state_change(state_before, state_after)
            );
            if let Some(change) = &applied.link_change {
                let _ = write!(line, "  link {}", self::link(&change.to));
            }
        }
        EventKind::Mdio {
            op,
            reg,
            devad,
            value,
            error,
            caller,
            ..
        } => {
            let caller = caller.as_ref().map_or("(phylib)", |c| c.name.as_ref());
            let op = format!("{:<5}", op.name());
            let register = registers::Register::of(*devad, *reg);
            let _ = write!(line, "    {caller} → {op} {:<9}", register.labelled());
            match error {
                Some(err) => {
                    let _ = write!(line, " failed {}", errno(i64::from(*err)));
                }
                None => {
                    let _ = write!(
                        line,
                        " {value:#06x}  [{}]",
                        registers::decode(register, *value)
                    );
                    if let Some(prev) = applied.previous {
                        let changes = registers::changes(register, prev, *value);
                        if !changes.is_empty() {
                            let _ = write!(line, "  ({changes})");
                        }
                    }
                    if let Some(mmd) = &applied.mmd {
                        let _ = write!(line, "  {mmd}");
                    }
                }
            }
        }
        EventKind::Attached {
            module,
            callbacks,
            reattached,
            guarantee,
        } => {
            let again = if *reattached {
                "re-attached"
            } else {
                "attached"
            };
            let _ = write!(line, "{again} to {module} ({callbacks} callbacks");
            let _ = match guarantee {
                Some(Guarantee::FirstCallback) => write!(line, ", from its first callback)"),
                Some(Guarantee::AfterLoad) => {
                    write!(line, ", after it loaded: earlier callbacks missed)")
                }
                None => write!(line, ")"),
            };
        }
        EventKind::Detached { module } => {
            let _ = write!(line, "detached from {module} (module unloaded)");
        }
        EventKind::Lost { count, cause } => {
            let why = match cause {
                Some(LossCause::RingFull) => "ring buffer full",
                Some(LossCause::TooDeep) => "callbacks nested deeper than the callback stack",
                Some(LossCause::MapFull) => "no room for a thread's callbacks",
                Some(LossCause::MissedReturn) => {
                    "returns missed by the kernel: maxactive exhausted"
                }
                None => "cause not recorded",
            };
            let _ = write!(line, "LOST {count} events ({why})");
        }
        EventKind::Mac { change } => {
            let _ = write!(line, "  MAC {}", mac_change(change));
        }
        EventKind::Kmsg { level, text } => {
            let _ = write!(
                line,
                "  KERN {:<6} {}",
                KmsgLevel::name(*level),
                printable(text)
            );
        }
    }
    line
}

/// `text` with its control characters (a message's newlines) shown as `\n` and `\xNN`, so that
/// one event stays one line on a terminal.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `mac_link_up 100/full pause tx+rx`, `carrier_off eth0`, `phylink_resolve 52.1µs`.
pub fn mac_change(change: &MacChange) -> String {
    let name = change.name();
    match change {
        MacChange::Resolve { latency_ns } => format!("{name} {}", duration(*latency_ns)),
        MacChange::LinkUp {
            speed,
            duplex,
            tx_pause,
            rx_pause,
        } => {
            let pause = match (tx_pause, rx_pause) {
                (true, true) => "tx+rx",
                (true, false) => "tx",
                (false, true) => "rx",
                (false, false) => "off",
            };
            let duplex = match duplex {
                Duplex::Full => "full",
                Duplex::Half => "half",
                Duplex::Unknown => "?",
            };
            format!("{name} {speed}/{duplex} pause {pause}")
        }
        MacChange::LinkDown => name.to_owned(),
        MacChange::Carrier { netdev, .. } => format!("{name} {netdev}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(relative_time(1_000_123_456, 0), "    1.000123");
        assert_eq!(relative_time(0, 2_500_000), "   -0.002500");
        assert_eq!(duration(850), "850ns");
        assert_eq!(duration(78_149), "78.1µs");
        assert_eq!(duration(12_300_000), "12.3ms");
        assert_eq!(duration(1_200_000_000), "1.20s");
        assert_eq!(errno(-110), "-110 (ETIMEDOUT)");
        assert_eq!(errno(0), "0");
        assert_eq!(errno(-999), "-999");
    }

    #[test]
    fn mac_changes_read_as_the_kernel_names_them() {
        let up = MacChange::LinkUp {
            speed: 100,
            duplex: Duplex::Full,
            tx_pause: true,
            rx_pause: false,
        };
        assert_eq!(mac_change(&up), "mac_link_up 100/full pause tx");
        assert_eq!(mac_change(&MacChange::LinkDown), "mac_link_down");
        let off = MacChange::Carrier {
            netdev: "eth0".into(),
            up: false,
        };
        assert_eq!(mac_change(&off), "carrier_off eth0");
        let resolve = MacChange::Resolve {
            latency_ns: 11_600_000,
        };
        assert_eq!(mac_change(&resolve), "phylink_resolve 11.6ms");
    }
}
