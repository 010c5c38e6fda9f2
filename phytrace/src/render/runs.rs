//! Runs of like MDIO accesses, folded into one line: a firmware load's 16,384 byte writes to
//! `3.0x8000…0xBFFF` read as `16,384 writes to pcs 3.0x8000…0xBFFF in probe`.
//!
//! Accesses are alike when they concern the same PHY, go the same way, address the same MMD
//! (or Clause 22), succeed, come from the same callback, and each names the register of the one
//! before it or the next one (a poll of one register, or a sweep up a range).

use crate::event::{Event, EventKind, MdioOp};
use crate::registers::{Register, mmd_short_name};

/// Fewest accesses that `dump --summary` and the TUI fold into one line.
pub const MIN_FOLDED: u64 = 8;

/// What accesses of one run share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Likeness {
    /// The PHY's `bus:addr` key.
    pub key: Option<String>,
    /// Read or write.
    pub op: MdioOp,
    /// The MMD, for Clause 45.
    pub devad: Option<u8>,
    /// The callback they were made in.
    pub caller: Option<String>,
}

/// One run of like accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// What they share.
    pub like: Likeness,
    /// How many.
    pub count: u64,
    /// Register of the first.
    pub first_reg: u16,
    /// Register of the last.
    pub last_reg: u16,
    /// Time of the first.
    pub start_ns: u64,
    /// Time of the last.
    pub end_ns: u64,
}

/// The register and likeness of a successful MDIO access; `None` for any other event.
fn access(event: &Event) -> Option<(u16, MdioOp, Option<u8>, Option<&str>)> {
    match &event.kind {
        EventKind::Mdio {
            op,
            reg,
            devad,
            error: None,
            caller,
            ..
        } => Some((*reg, *op, *devad, caller.as_ref().map(|c| c.name.as_ref()))),
        _ => None,
    }
}

impl Run {
    /// A run of the access `event` alone (`key` is its PHY's); `None` if it is no successful
    /// access.
    pub fn start(event: &Event, key: Option<&str>) -> Option<Self> {
        let (reg, op, devad, caller) = access(event)?;
        Some(Self {
            like: Likeness {
                key: key.map(str::to_owned),
                op,
                devad,
                caller: caller.map(str::to_owned),
            },
            count: 1,
            first_reg: reg,
            last_reg: reg,
            start_ns: event.ts_ns,
            end_ns: event.ts_ns,
        })
    }

    /// Whether `event` (of the PHY `key`) continues the run.
    pub fn continued_by(&self, event: &Event, key: Option<&str>) -> bool {
        let Some((reg, op, devad, caller)) = access(event) else {
            return false;
        };
        let like = &self.like;
        (reg == self.last_reg || Some(reg) == self.last_reg.checked_add(1))
            && op == like.op
            && devad == like.devad
            && key == like.key.as_deref()
            && caller == like.caller.as_deref()
    }

    /// Adds `event`, which [`Run::continued_by`] accepted.
    pub fn extend(&mut self, event: &Event) {
        if let EventKind::Mdio { reg, .. } = &event.kind {
            self.count += 1;
            self.last_reg = *reg;
            self.end_ns = event.ts_ns;
        }
    }

    /// Whether it is long enough to fold.
    pub fn folds(&self) -> bool {
        self.count >= MIN_FOLDED
    }

    /// `16,384 writes to pcs 3.0x8000…0xBFFF in probe`, `40 reads of pcs.STAT1 (3.0x0001) in
    /// read_status`.
    pub fn describe(&self) -> String {
        let like = &self.like;
        let what = match like.op {
            MdioOp::Read => "reads of",
            MdioOp::Write => "writes to",
        };
        let first = Register::of(like.devad, self.first_reg);
        let target = if self.first_reg == self.last_reg {
            first.labelled()
        } else {
            let last = match like.devad {
                Some(_) => format!("{:#06X}", self.last_reg).replacen("0X", "0x", 1),
                None => format!("{:#04x}", self.last_reg),
            };
            let mmd = like
                .devad
                .and_then(mmd_short_name)
                .map_or(String::new(), |name| format!("{name} "));
            let first = match like.devad {
                Some(devad) => format!("{devad}.{:#06X}", self.first_reg).replacen("0X", "0x", 1),
                None => format!("{:#04x}", self.first_reg),
            };
            format!("{mmd}{first}…{last}")
        };
        let caller = like.caller.as_deref().unwrap_or("(phylib)");
        format!("{} {what} {target} in {caller}", thousands(self.count))
    }
}

impl Run {
    /// Its line in the log, in the columns of [`super::event_line`]: the first access's time
    /// and PHY, what the run did and for how long:
    /// `    0.000014  phy_sim-1:02      … 16,384 writes to pcs 3.0x8000…0xBFFF in probe (16.4ms)`.
    pub fn line(&self, start_ns: u64) -> String {
        format!(
            "{}  {:<14}    … {} ({})",
            super::relative_time(self.start_ns, start_ns),
            self.like.key.as_deref().unwrap_or("-"),
            self.describe(),
            super::duration(self.end_ns.saturating_sub(self.start_ns))
        )
    }
}

/// `24576` as `24,576`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::{Mdio, callback, event};

    fn write(devad: u8, reg: u16, caller: &str) -> Event {
        event(
            0,
            Mdio {
                op: MdioOp::Write,
                devad: Some(devad),
                caller: Some(callback(caller, "qt2025::PhyQT2025")),
                ..Mdio::read(reg, 0)
            },
        )
    }

    #[test]
    fn a_sweep_up_a_range_is_one_run_and_reads_as_one_line() {
        let mut run = Run::start(&write(3, 0x8000, "probe"), Some("k")).unwrap();
        for reg in 0x8001..=0xbfff {
            let event = write(3, reg, "probe");
            assert!(run.continued_by(&event, Some("k")));
            run.extend(&event);
        }
        assert!(run.folds());
        assert_eq!(
            run.describe(),
            "16,384 writes to pcs 3.0x8000…0xBFFF in probe"
        );
        assert!(
            !run.continued_by(&write(4, 0x8000, "probe"), Some("k")),
            "another MMD"
        );
        assert!(
            !run.continued_by(&write(3, 0xc000, "probe"), Some("j")),
            "another PHY"
        );
        assert!(
            !run.continued_by(&write(3, 0xc000, "start"), Some("k")),
            "another callback"
        );
        assert!(
            !run.continued_by(&write(3, 0x8000, "probe"), Some("k")),
            "a jump"
        );
    }

    #[test]
    fn a_poll_of_one_register_names_it() {
        let read = event(
            0,
            Mdio {
                devad: Some(3),
                caller: Some(callback("read_status", "qt2025::PhyQT2025")),
                ..Mdio::read(1, 0)
            },
        );
        let mut run = Run::start(&read, None).unwrap();
        run.extend(&read);
        assert!(!run.folds());
        assert_eq!(
            run.describe(),
            "2 reads of pcs.STAT1 (3.0x0001) in read_status"
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
