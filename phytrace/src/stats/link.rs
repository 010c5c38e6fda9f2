//! Link history of one PHY (up and down intervals, delays to link-up) and its time in each
//! `phy_state`, from the link and state changes the model reports.

use std::collections::BTreeMap;

use serde::Serialize;

use super::updown::{Interval, UpDown};
use crate::registers::{BMCR_ANRESTART, BMCR_RESET, MII_BMCR};

/// BMCR bits that start an autonegotiation.
const BMCR_ANEG_START: u16 = BMCR_RESET | BMCR_ANRESTART;

/// A period in one `phy_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatePeriod<'a> {
    /// `RUNNING`.
    pub state: &'a str,
    /// When it was seen entered, ns since the origin.
    pub start_ns: u64,
    /// How long it lasted; to the end when `open`.
    pub duration_ns: u64,
    /// Still going at the end (its length is a lower bound).
    pub open: bool,
}

/// How long a link-up took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkUp {
    /// When the link was seen up, ns since the origin.
    pub at_ns: u64,
    /// Since the link was seen down before it (cable out, replug and autonegotiation).
    pub since_down_ns: Option<u64>,
    /// Since the latest autonegotiation start before it (a BMCR write with RESET or ANRESTART
    /// after the previous link-up): the autonegotiation time when the driver restarts it on
    /// replug.
    pub since_aneg_start_ns: Option<u64>,
}

/// Link changes and state times of one PHY, as they come.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkHistory {
    /// Up and down periods.
    link: UpDown,
    /// Link-ups.
    pub ups: Vec<LinkUp>,
    /// The latest autonegotiation start since the latest link-up.
    aneg_start_ns: Option<u64>,
    /// The latest autonegotiation start of all.
    latest_aneg_start_ns: Option<u64>,
    /// Time spent in each state (closed periods only).
    in_state: BTreeMap<String, (u64, u64)>,
    /// Closed state periods, oldest first (one per `phy_state` change, as `intervals` is one
    /// per link change): start, duration, index in `state_names`.
    periods: Vec<(u64, u64, usize)>,
    /// Names of the states seen, in order of first appearance.
    state_names: Vec<String>,
    state: Option<(String, u64)>,
}

impl LinkHistory {
    /// The link was seen `up` at `offset_ns` (only changes of up/down matter).
    pub fn link(&mut self, offset_ns: u64, up: bool) {
        let Some(ended) = self.link.set(offset_ns, up) else {
            return;
        };
        if up {
            self.ups.push(LinkUp {
                at_ns: offset_ns,
                since_down_ns: ended.map(|i| i.duration_ns),
                since_aneg_start_ns: self.aneg_start_ns.map(|t| offset_ns.saturating_sub(t)),
            });
            self.aneg_start_ns = None;
        }
    }

    /// An MDIO write of `value` to register `reg` at `offset_ns`.
    pub fn mdio_write(&mut self, offset_ns: u64, reg: u16, value: u16) {
        if reg == MII_BMCR && value & BMCR_ANEG_START != 0 {
            self.aneg_start_ns = Some(offset_ns);
            self.latest_aneg_start_ns = Some(offset_ns);
        }
    }

    /// When the latest autonegotiation start was seen, ns since the origin.
    pub fn latest_aneg_start_ns(&self) -> Option<u64> {
        self.latest_aneg_start_ns
    }

    /// `phy_state` became `state` at `offset_ns`.
    pub fn state(&mut self, offset_ns: u64, state: &str) {
        if let Some((was, since)) = self.state.take() {
            let duration_ns = offset_ns.saturating_sub(since);
            let name = match self.state_names.iter().position(|n| *n == was) {
                Some(i) => i,
                None => {
                    self.state_names.push(was.clone());
                    self.state_names.len() - 1
                }
            };
            self.periods.push((since, duration_ns, name));
            let entry = self.in_state.entry(was).or_default();
            entry.0 += duration_ns;
            entry.1 += 1;
        }
        self.state = Some((state.to_owned(), offset_ns));
    }

    /// The intervals with the current one closed at `end_ns`.
    pub fn intervals_until(&self, end_ns: u64) -> Vec<Interval> {
        self.link.until(end_ns)
    }

    /// The state periods with the current one closed at `end_ns`, oldest first.
    pub fn periods_until(&self, end_ns: u64) -> impl Iterator<Item = StatePeriod<'_>> {
        let closed = self
            .periods
            .iter()
            .map(|&(start_ns, duration_ns, name)| StatePeriod {
                state: self.state_names.get(name).map_or("?", String::as_str),
                start_ns,
                duration_ns,
                open: false,
            });
        let current = self.state.as_ref().map(|(state, since)| StatePeriod {
            state,
            start_ns: *since,
            duration_ns: end_ns.saturating_sub(*since),
            open: true,
        });
        closed.chain(current)
    }

    /// Time in each state until `end_ns` and how many periods: `state → (ns, periods)`.
    pub fn states_until(&self, end_ns: u64) -> BTreeMap<String, (u64, u64)> {
        let mut all = self.in_state.clone();
        if let Some((state, since)) = &self.state {
            let entry = all.entry(state.clone()).or_default();
            entry.0 += end_ns.saturating_sub(*since);
            entry.1 += 1;
        }
        all
    }

    /// When the first link or state was seen, ns since the origin.
    pub fn first_seen_ns(&self) -> Option<u64> {
        let state = self.periods.first().map(|p| p.0);
        [
            self.link.first_seen_ns(),
            state,
            self.state.as_ref().map(|s| s.1),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_delays() {
        let mut l = LinkHistory::default();
        l.link(10, false);
        l.mdio_write(20, 0, 0x1200);
        l.link(50, true);
        l.link(60, true);
        l.link(80, false);
        l.link(100, true);
        let iv = l.intervals_until(130);
        let spans: Vec<(bool, u64, u64, bool)> = iv
            .iter()
            .map(|i| (i.up, i.start_ns, i.duration_ns, i.open))
            .collect();
        assert_eq!(
            spans,
            [
                (false, 10, 40, false),
                (true, 50, 30, false),
                (false, 80, 20, false),
                (true, 100, 30, true)
            ]
        );
        assert_eq!(l.ups[0].since_down_ns, Some(40));
        assert_eq!(l.ups[0].since_aneg_start_ns, Some(30));
        assert_eq!(l.ups[1].since_aneg_start_ns, None);
        assert_eq!(l.first_seen_ns(), Some(10));
        assert_eq!(LinkHistory::default().first_seen_ns(), None);
    }

    #[test]
    fn time_in_state() {
        let mut l = LinkHistory::default();
        l.state(0, "READY");
        l.state(5, "UP");
        l.state(7, "READY");
        let s = l.states_until(10);
        assert_eq!(s["READY"], (8, 2));
        assert_eq!(s["UP"], (2, 1));
        let p: Vec<(&str, u64, u64, bool)> = l
            .periods_until(10)
            .map(|p| (p.state, p.start_ns, p.duration_ns, p.open))
            .collect();
        assert_eq!(
            p,
            [
                ("READY", 0, 5, false),
                ("UP", 5, 2, false),
                ("READY", 7, 3, true)
            ]
        );
    }
}
