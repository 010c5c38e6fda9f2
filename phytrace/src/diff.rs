//! Comparison of the MDIO register sequences of two captures, PHY by PHY, timing ignored.
//!
//! Each PHY's accesses become tokens `(op, register, value or error)`; the two token lists are
//! aligned with a sequence diff (Myers, from the `similar` crate), and the differing stretches
//! are shown decoded, with the callback that made each access. Where both captures name the
//! callbacks that made a PHY's accesses, the callback is compared too: two drivers are then
//! compared callback by callback (each access made in the same op).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline, group_diff_ops};

use crate::event::{Event, EventKind, MacChange, MdioOp};
use crate::registers::{self, Register};
use crate::render;

/// Unchanged accesses shown around each difference.
pub const CONTEXT: usize = 2;
/// Longest time spent aligning one PHY; past it the alignment is coarser but still correct.
const DEADLINE: Duration = Duration::from_secs(10);

/// What the comparison ignores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Compare writes only.
    pub ignore_reads: bool,
    /// Clause 22 registers whose values are not compared (only that they were accessed).
    pub ignore_values: Vec<u16>,
}

/// What is compared of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token {
    /// A write (else a read).
    pub write: bool,
    /// Register, Clause 22 or 45.
    pub reg: Register,
    /// Value, unless ignored or the access failed.
    pub value: Option<u16>,
    /// Negative errno of a failed access.
    pub error: Option<i32>,
    /// A MAC-side link change instead of an access (`mac_link_up`, `carrier_off`, …): where
    /// the MAC followed the PHY is part of the sequence.
    pub mac: Option<&'static str>,
}

/// One MDIO access of a PHY, as compared and as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access<'a> {
    /// What is compared.
    pub token: Token,
    /// The value read or written, even when ignored.
    pub value: u16,
    /// The callback that made it, if known.
    pub caller: Option<&'a str>,
}

/// The accesses of one PHY in a capture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhyAccesses<'a> {
    /// Latest non-zero PHY ID.
    pub phy_id: u32,
    /// Latest non-empty bound driver name.
    pub driver: &'a str,
    /// Accesses in capture order.
    pub accesses: Vec<Access<'a>>,
}

/// The accesses of every PHY of `events`, by `bus:addr` key.
pub fn accesses<'a>(events: &'a [Event], opts: &Options) -> BTreeMap<String, PhyAccesses<'a>> {
    let mut phys: BTreeMap<String, PhyAccesses<'a>> = BTreeMap::new();
    for event in events {
        let Some(phy) = &event.phy else { continue };
        let (op, reg, value, error, caller) = match &event.kind {
            EventKind::Mdio {
                op,
                reg,
                devad,
                value,
                error,
                caller,
                ..
            } => (
                *op,
                Register::of(*devad, *reg),
                *value,
                *error,
                caller.as_ref(),
            ),
            // The link changes the MAC saw; how long phylink_resolve took is not compared.
            EventKind::Mac { change } if !matches!(change, MacChange::Resolve { .. }) => {
                phys.entry(phy.key()).or_default().accesses.push(Access {
                    token: Token {
                        write: false,
                        reg: Register::C22(0),
                        value: None,
                        error: None,
                        mac: Some(change.name()),
                    },
                    value: 0,
                    caller: None,
                });
                continue;
            }
            _ => continue,
        };
        let entry = phys.entry(phy.key()).or_default();
        if phy.phy_id != 0 {
            entry.phy_id = phy.phy_id;
        }
        if !phy.driver.is_empty() {
            entry.driver = &phy.driver;
        }
        if opts.ignore_reads && op == MdioOp::Read {
            continue;
        }
        let ignored = matches!(reg, Register::C22(r) if opts.ignore_values.contains(&r));
        let compared = error.is_none() && !ignored;
        entry.accesses.push(Access {
            token: Token {
                write: op == MdioOp::Write,
                reg,
                value: compared.then_some(value),
                error,
                mac: None,
            },
            value,
            caller: caller.map(|c| c.name.as_ref()),
        });
    }
    phys
}

/// Two PHYs compared, or a PHY found in one capture only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PhyDiff {
    /// Found in both: the alignment of their accesses.
    Both {
        /// Key in A.
        a: String,
        /// Key in B.
        b: String,
        /// The alignment (equal, deleted, inserted and replaced stretches).
        ops: Vec<DiffOp>,
        /// Whether the callback that made each access was compared (both captures name them).
        by_callback: bool,
    },
    /// Found in A only.
    OnlyA(String),
    /// Found in B only.
    OnlyB(String),
}

impl PhyDiff {
    /// Whether this shows a difference.
    pub fn differs(&self) -> bool {
        match self {
            Self::Both { ops, .. } => ops.iter().any(|op| !matches!(op, DiffOp::Equal { .. })),
            Self::OnlyA(_) | Self::OnlyB(_) => true,
        }
    }
}

/// Pairs the PHYs of A and B (same key, else same PHY ID) and aligns each pair.
pub fn compare(
    a: &BTreeMap<String, PhyAccesses<'_>>,
    b: &BTreeMap<String, PhyAccesses<'_>>,
) -> Vec<PhyDiff> {
    let mut pairs: Vec<(&String, &String)> = a
        .keys()
        .filter_map(|k| b.get_key_value(k).map(|(kb, _)| (k, kb)))
        .collect();
    let mut rest_b: Vec<&String> = b.keys().filter(|k| !a.contains_key(*k)).collect();
    let mut only_a = Vec::new();
    for (key, phy) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
        match rest_b
            .iter()
            .position(|kb| phy.phy_id != 0 && b[*kb].phy_id == phy.phy_id)
        {
            Some(i) => pairs.push((key, rest_b.remove(i))),
            None => only_a.push(PhyDiff::OnlyA(key.clone())),
        }
    }
    let mut diffs: Vec<PhyDiff> = pairs
        .into_iter()
        .map(|(ka, kb)| {
            let named = |phy: &PhyAccesses<'_>| phy.accesses.iter().any(|x| x.caller.is_some());
            let by_callback = named(&a[ka]) && named(&b[kb]);
            let (ta, tb) = (compared(&a[ka], by_callback), compared(&b[kb], by_callback));
            let deadline = Instant::now() + DEADLINE;
            PhyDiff::Both {
                a: ka.clone(),
                b: kb.clone(),
                ops: capture_diff_slices_deadline(Algorithm::Myers, &ta, &tb, Some(deadline)),
                by_callback,
            }
        })
        .collect();
    diffs.extend(only_a);
    diffs.extend(rest_b.into_iter().map(|k| PhyDiff::OnlyB(k.clone())));
    diffs
}

/// What is compared of each of `phy`'s accesses: its token, and the callback that made it if
/// `by_callback`.
fn compared<'a>(phy: &PhyAccesses<'a>, by_callback: bool) -> Vec<(Token, Option<&'a str>)> {
    phy.accesses
        .iter()
        .map(|x| (x.token, x.caller.filter(|_| by_callback)))
        .collect()
}

/// `phy_sim-0:01 (Asix Electronics AX88772A)`.
fn label(key: &str, phy: &PhyAccesses<'_>) -> String {
    match phy.driver {
        "" => key.to_owned(),
        driver => format!("{key} ({driver})"),
    }
}

/// One access as a line: `write BMCR      0x8200  [RESET ANRESTART]  soft_reset`.
fn access_line(x: &Access<'_>) -> String {
    if let Some(mac) = x.token.mac {
        return format!("MAC {mac}");
    }
    let op = if x.token.write { "write" } else { "read " };
    let name = x.token.reg.to_string();
    let caller = x.caller.unwrap_or("(phylib)");
    match x.token.error {
        Some(err) => format!(
            "{op} {name:<9} failed {}  in {caller}",
            render::errno(i64::from(err))
        ),
        None => format!(
            "{op} {name:<9} {:#06x}  [{}]  in {caller}",
            x.value,
            registers::decode(x.token.reg, x.value)
        ),
    }
}

/// The text of one PHY's differences, with [`CONTEXT`] equal accesses around each.
pub fn render(
    diff: &PhyDiff,
    a: &BTreeMap<String, PhyAccesses<'_>>,
    b: &BTreeMap<String, PhyAccesses<'_>>,
) -> String {
    let mut out = String::new();
    let (ka, kb, ops, by_callback) = match diff {
        PhyDiff::OnlyA(k) => {
            return format!(
                "{}: only in A ({} accesses)\n",
                label(k, &a[k]),
                a[k].accesses.len()
            );
        }
        PhyDiff::OnlyB(k) => {
            return format!(
                "{}: only in B ({} accesses)\n",
                label(k, &b[k]),
                b[k].accesses.len()
            );
        }
        PhyDiff::Both {
            a: ka,
            b: kb,
            ops,
            by_callback,
        } => (ka, kb, ops, *by_callback),
    };
    let (pa, pb) = (&a[ka], &b[kb]);
    let name = if ka == kb {
        label(ka, pa)
    } else {
        format!("{} ↔ {}", label(ka, pa), label(kb, pb))
    };
    if !diff.differs() {
        let how = if by_callback {
            ", each made in the same callback"
        } else {
            ""
        };
        let _ = writeln!(out, "{name}: equal ({} accesses{how})", pa.accesses.len());
        return out;
    }
    let groups = group_diff_ops(ops.clone(), CONTEXT);
    let _ = writeln!(
        out,
        "{name}: {} vs {} accesses, {} differing stretches",
        pa.accesses.len(),
        pb.accesses.len(),
        groups.len()
    );
    for group in &groups {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (ra, rb) = (
            first.old_range().start..last.old_range().end,
            first.new_range().start..last.new_range().end,
        );
        let _ = writeln!(
            out,
            "@@ A #{}..#{}  B #{}..#{} @@",
            ra.start + 1,
            ra.end,
            rb.start + 1,
            rb.end
        );
        for op in group {
            match *op {
                DiffOp::Equal { old_index, len, .. } => {
                    for x in &pa.accesses[old_index..old_index + len] {
                        let _ = writeln!(out, "    {}", access_line(x));
                    }
                }
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    let (old, new) = (
                        &pa.accesses[old_index..old_index + old_len],
                        &pb.accesses[new_index..new_index + new_len],
                    );
                    let common = old_len.min(new_len);
                    for (x, y) in old.iter().zip(new) {
                        out += &changed(x, y);
                    }
                    for x in &old[common..] {
                        let _ = writeln!(out, "  - {}", access_line(x));
                    }
                    for y in &new[common..] {
                        let _ = writeln!(out, "  + {}", access_line(y));
                    }
                }
                _ => {
                    for x in &pa.accesses[op.old_range()] {
                        let _ = writeln!(out, "  - {}", access_line(x));
                    }
                    for y in &pb.accesses[op.new_range()] {
                        let _ = writeln!(out, "  + {}", access_line(y));
                    }
                }
            }
        }
    }
    out
}

/// Two accesses at the same place: one `~` line with the bit changes when only the value
/// differs, else `-` and `+` lines.
fn changed(x: &Access<'_>, y: &Access<'_>) -> String {
    let same_access = x.token.mac.is_none()
        && y.token.mac.is_none()
        && x.token.write == y.token.write
        && x.token.reg == y.token.reg;
    if same_access && x.token.error.is_none() && y.token.error.is_none() {
        let changes = registers::changes(x.token.reg, x.value, y.value);
        format!("  ~ {}  B: {:#06x} ({changes})\n", access_line(x), y.value)
    } else {
        format!("  - {}\n  + {}\n", access_line(x), access_line(y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::{Mdio, callback, event, phy};

    fn mdio(bus: &str, phy_id: u32, op: MdioOp, reg: u16, value: u16) -> Event {
        let access = Mdio {
            op,
            caller: Some(callback("read_status", "x")),
            ..Mdio::read(reg, value)
        };
        Event {
            tid: 1,
            phy: Some(phy(bus, 1, phy_id, "")),
            ..event(0, access)
        }
    }

    fn stream(bus: &str, bmsr: u16, extra_write: bool) -> Vec<Event> {
        let mut events = vec![
            mdio(bus, 0x1861, MdioOp::Read, 0, 0x3100),
            mdio(bus, 0x1861, MdioOp::Read, 1, bmsr),
        ];
        if extra_write {
            events.push(mdio(bus, 0x1861, MdioOp::Write, 0, 0x8200));
        }
        events.push(mdio(bus, 0x1861, MdioOp::Read, 5, 0x41e1));
        events
    }

    #[test]
    fn phys_pair_by_id_when_keys_differ_and_values_show_bit_changes() {
        let (a, b) = (
            stream("usb-1", 0x786d, false),
            stream("usb-2", 0x7849, true),
        );
        let (pa, pb) = (
            accesses(&a, &Options::default()),
            accesses(&b, &Options::default()),
        );
        let diffs = compare(&pa, &pb);
        assert_eq!(diffs.len(), 1);
        assert!(diffs[0].differs());
        let text = render(&diffs[0], &pa, &pb);
        assert!(
            text.starts_with("usb-1:01 ↔ usb-2:01: 3 vs 4 accesses"),
            "{text}"
        );
        assert!(text.contains("~ read  BMSR      0x786d"), "{text}");
        assert!(
            text.contains("B: 0x7849 (-LSTATUS -ANEGCOMPLETE)"),
            "{text}"
        );
        assert!(
            text.contains("  + write BMCR      0x8200  [ANRESTART RESET]  in read_status"),
            "{text}"
        );
    }

    #[test]
    fn accesses_are_compared_callback_by_callback_where_both_name_them() {
        let a = stream("bus", 0x786d, false);
        let mut b = a.clone();
        let EventKind::Mdio { caller, .. } = &mut b[1].kind else {
            unreachable!("stream makes MDIO events")
        };
        *caller = Some(callback("soft_reset", "y"));
        let (pa, pb) = (
            accesses(&a, &Options::default()),
            accesses(&b, &Options::default()),
        );
        assert!(
            compare(&pa, &pb)[0].differs(),
            "BMSR read in another callback"
        );
        let equal = compare(&pa, &pa);
        assert!(
            render(&equal[0], &pa, &pa)
                .contains("equal (3 accesses, each made in the same callback)")
        );
        // A capture without callbacks (the C driver under symbol probes): MDIO only.
        for event in &mut b {
            if let EventKind::Mdio { caller, .. } = &mut event.kind {
                *caller = None;
            }
        }
        let pb = accesses(&b, &Options::default());
        let diffs = compare(&pa, &pb);
        assert!(!diffs[0].differs());
        assert!(render(&diffs[0], &pa, &pb).contains("equal (3 accesses)"));
    }

    #[test]
    fn ignored_values_and_reads_make_streams_equal() {
        let (a, b) = (stream("bus", 0x786d, false), stream("bus", 0x7849, false));
        let opts = Options {
            ignore_reads: false,
            ignore_values: vec![1],
        };
        assert!(!compare(&accesses(&a, &opts), &accesses(&b, &opts))[0].differs());
        let (a, b) = (stream("bus", 0x786d, false), stream("bus", 0x7849, true));
        let opts = Options {
            ignore_reads: true,
            ignore_values: vec![],
        };
        assert!(compare(&accesses(&a, &opts), &accesses(&b, &opts))[0].differs());
        let c = vec![mdio("other", 0x1234, MdioOp::Read, 1, 0)];
        let diffs = compare(&accesses(&a, &opts), &accesses(&c, &opts));
        assert_eq!(
            diffs,
            [
                PhyDiff::OnlyA("bus:01".into()),
                PhyDiff::OnlyB("other:01".into())
            ]
        );
    }

    #[test]
    fn clause_45_accesses_are_compared_by_mmd_and_register() {
        use crate::test_events::qt2025;
        let firmware = qt2025::firmware(64);
        let mut changed = firmware.clone();
        changed[5] ^= 0xff;
        let a = qt2025::probe(qt2025::phy(2), 0, qt2025::REVISION_OK, &firmware);
        let b = qt2025::probe(qt2025::phy(2), 0, qt2025::REVISION_OK, &changed);
        let (pa, pb) = (
            accesses(&a, &Options::default()),
            accesses(&b, &Options::default()),
        );
        assert!(
            pa["phy_sim-1:02"].accesses[0].token.reg
                == Register::C45 {
                    devad: 1,
                    reg: 0xd001
                }
        );
        let diffs = compare(&pa, &pb);
        assert!(diffs[0].differs());
        let text = render(&diffs[0], &pa, &pb);
        assert!(text.contains("~ write pcs.0x8005"), "{text}");
        assert!(text.contains("1 differing stretches"), "{text}");
        assert!(!compare(&pa, &pa)[0].differs());
    }
}
