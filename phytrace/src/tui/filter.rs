//! The event log's filter: what `f` accepts (`mdio reg:BMSR phy:0:02 err`).

use std::fmt;

use crate::event::{Event, EventKind, Kind};
use crate::registers;

/// Kinds of events a filter can select.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindSel {
    /// Callback entries and returns.
    Callbacks,
    /// Callback entries.
    Enter,
    /// Callback returns.
    Exit,
    /// MDIO accesses.
    Mdio,
    /// Attach, detach and lost events.
    Session,
    /// The MAC side: phylink, the MAC driver, carrier.
    Mac,
    /// Kernel messages.
    Kmsg,
}

impl KindSel {
    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "cb" | "callback" | "callbacks" => Self::Callbacks,
            "enter" => Self::Enter,
            "exit" => Self::Exit,
            "mdio" => Self::Mdio,
            "session" | "attach" | "attached" | "detached" | "lost" => Self::Session,
            "mac" | "carrier" | "phylink" => Self::Mac,
            "kmsg" | "log" | "printk" => Self::Kmsg,
            _ => return None,
        })
    }

    /// The event kinds this selects.
    fn kinds(self) -> &'static [Kind] {
        match self {
            Self::Callbacks => &[Kind::CallbackEnter, Kind::CallbackExit],
            Self::Enter => &[Kind::CallbackEnter],
            Self::Exit => &[Kind::CallbackExit],
            Self::Mdio => &[Kind::Mdio],
            Self::Session => &[Kind::Attached, Kind::Detached, Kind::Lost],
            Self::Mac => &[Kind::Mac],
            Self::Kmsg => &[Kind::Kmsg],
        }
    }

    fn matches(self, kind: &EventKind) -> bool {
        self.kinds().contains(&kind.kind())
    }
}

/// A conjunction of conditions on events; the empty filter lets everything through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Any of these kinds (empty: any kind).
    pub kinds: Vec<KindSel>,
    /// MDIO accesses to this register.
    pub reg: Option<u16>,
    /// PHY key (`phy_sim-0:02`) or driver containing this.
    pub phy: Option<String>,
    /// Callback name containing this (the callback itself or the MDIO access's caller).
    pub callback: Option<String>,
    /// Only failures: callbacks returning < 0, failed MDIO accesses, lost events.
    pub errors: bool,
    text: String,
}

/// A word the filter does not understand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError(pub String);

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "filter: `{}` is not a kind (mdio cb enter exit session mac kmsg), err, reg:NAME, phy:KEY or cb:NAME",
            self.0
        )
    }
}

/// The register number of `name` (`BMSR`, `bmsr`, `1`, `0x01`).
fn register(name: &str) -> Option<u16> {
    if let Some(hex) = name.strip_prefix("0x") {
        return u16::from_str_radix(hex, 16).ok();
    }
    if let Ok(num) = name.parse() {
        return Some(num);
    }
    registers::SPECS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(|s| s.num)
}

impl Filter {
    /// Parses space-separated words: kinds, `err`, `reg:NAME` (or a bare register name),
    /// `phy:KEY`, `cb:NAME`.
    pub fn parse(text: &str) -> Result<Self, FilterError> {
        let mut filter = Self {
            text: text.trim().to_owned(),
            ..Self::default()
        };
        for word in text.split_whitespace() {
            let lower = word.to_ascii_lowercase();
            let bad = || FilterError(word.to_owned());
            match lower.split_once(':') {
                Some(("reg", name)) => filter.reg = Some(register(name).ok_or_else(bad)?),
                Some(("phy", key)) => filter.phy = Some(key.to_owned()),
                Some(("cb", name)) => filter.callback = Some(name.to_owned()),
                Some(("kind", kind)) => filter.kinds.push(KindSel::parse(kind).ok_or_else(bad)?),
                Some(_) => return Err(bad()),
                None if lower == "err" || lower == "errors" => filter.errors = true,
                None => match (KindSel::parse(&lower), register(word)) {
                    (Some(kind), _) => filter.kinds.push(kind),
                    (None, Some(reg)) if word.parse::<u16>().is_err() => filter.reg = Some(reg),
                    _ => return Err(bad()),
                },
            }
        }
        Ok(filter)
    }

    /// True when the filter lets everything through.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `event` passes.
    pub fn matches(&self, event: &Event) -> bool {
        if self.is_empty() {
            return true;
        }
        if !self.kinds.is_empty() && !self.kinds.iter().any(|k| k.matches(&event.kind)) {
            return false;
        }
        if let Some(phy) = &self.phy
            && !event.phy.as_ref().is_some_and(|p| {
                p.key().to_ascii_lowercase().contains(phy)
                    || p.driver.to_ascii_lowercase().contains(phy)
            })
        {
            return false;
        }
        let (callback, reg, failed) = match &event.kind {
            EventKind::CallbackEnter { callback, .. } => (Some(callback), None, false),
            EventKind::CallbackExit { callback, ret, .. } => (Some(callback), None, *ret < 0),
            EventKind::Mdio {
                caller, reg, error, ..
            } => (caller.as_ref(), Some(*reg), error.is_some()),
            EventKind::Lost { .. } => (None, None, true),
            // Errors and worse.
            EventKind::Kmsg { level, .. } => (None, None, level.is_some_and(|l| l <= 3)),
            EventKind::Attached { .. } | EventKind::Detached { .. } | EventKind::Mac { .. } => {
                (None, None, false)
            }
        };
        if self.errors && !failed {
            return false;
        }
        if self.reg.is_some() && self.reg != reg {
            return false;
        }
        if let Some(name) = &self.callback
            && !callback.is_some_and(|c| c.name.contains(name.as_str()))
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::{Mdio, callback, event, phy};

    fn mdio(reg: u16, error: Option<i32>) -> Event {
        let access = Mdio {
            error,
            latency_ns: 10,
            caller: Some(callback("read_status", "ax88796b_rust::PhyAX88772C")),
            ..Mdio::read(reg, 0x786d)
        };
        Event {
            tid: 1,
            phy: Some(phy(
                "phy_sim-0",
                2,
                0x003b_1881,
                "Asix Electronics AX88772C",
            )),
            ..event(1, access)
        }
    }

    #[test]
    fn words_combine() {
        let f = Filter::parse("mdio reg:BMSR phy:0:02 cb:read").unwrap();
        assert!(f.matches(&mdio(1, None)));
        assert!(!f.matches(&mdio(0, None)));
        assert!(Filter::parse("bmsr").unwrap().matches(&mdio(1, None)));
        assert!(!Filter::parse("phy:0:03").unwrap().matches(&mdio(1, None)));
        assert!(!Filter::parse("enter").unwrap().matches(&mdio(1, None)));
        assert!(Filter::parse("").unwrap().is_empty());
    }

    #[test]
    fn errors_only_and_bad_words() {
        let f = Filter::parse("err").unwrap();
        assert!(f.matches(&mdio(1, Some(-5))));
        assert!(!f.matches(&mdio(1, None)));
        assert!(Filter::parse("bogus").is_err());
        assert!(Filter::parse("reg:NOPE").is_err());
        assert!(Filter::parse("x:y").is_err());
    }
}
