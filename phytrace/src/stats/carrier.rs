//! The MAC side of one PHY's link: the carrier of its network device over time, and how long
//! after the PHY's link-up (and the autonegotiation start before it) each carrier-up came.

use serde::Serialize;

use super::link::LinkHistory;
use super::updown::{Interval, UpDown};

/// How long a carrier-up took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CarrierUp {
    /// When the carrier came up (`netif_carrier_on`), ns since the origin.
    pub at_ns: u64,
    /// Since the carrier went down before it.
    pub since_down_ns: Option<u64>,
    /// Since the PHY's latest link-up after the previous carrier-up (seen at a callback
    /// return: needs the PHY driver's callbacks traced).
    pub since_link_up_ns: Option<u64>,
    /// Since the latest autonegotiation start (BMCR write with RESET or ANRESTART) after the
    /// previous carrier-up.
    pub since_aneg_start_ns: Option<u64>,
}

/// Carrier changes of one PHY's network device, as they come.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CarrierHistory {
    /// A MAC-side event of this PHY was seen.
    pub seen: bool,
    /// Name of the network device, as of its latest carrier change.
    pub netdev: Option<String>,
    /// Up and down periods.
    carrier: UpDown,
    /// Carrier-ups.
    pub ups: Vec<CarrierUp>,
}

impl CarrierHistory {
    /// The carrier of `netdev` was seen `up` at `offset_ns`; `link` is the PHY's history so far.
    pub fn carrier(&mut self, offset_ns: u64, netdev: &str, up: bool, link: &LinkHistory) {
        self.seen = true;
        if self.netdev.as_deref() != Some(netdev) {
            self.netdev = Some(netdev.to_owned());
        }
        let Some(ended) = self.carrier.set(offset_ns, up) else {
            return;
        };
        if !up {
            return;
        }
        let previous = self.ups.last().map_or(0, |u| u.at_ns);
        let since = |t: Option<u64>| {
            t.filter(|&t| t >= previous && t <= offset_ns)
                .map(|t| offset_ns - t)
        };
        self.ups.push(CarrierUp {
            at_ns: offset_ns,
            since_down_ns: ended.filter(|i| !i.up).map(|i| i.duration_ns),
            since_link_up_ns: since(link.ups.last().map(|u| u.at_ns)),
            since_aneg_start_ns: since(link.latest_aneg_start_ns()),
        });
    }

    /// The intervals with the current one closed at `end_ns`.
    pub fn intervals_until(&self, end_ns: u64) -> Vec<Interval> {
        self.carrier.until(end_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_from_the_phy_link_up_and_the_aneg_start() {
        let mut link = LinkHistory::default();
        let mut c = CarrierHistory::default();
        c.carrier(5, "usb0", false, &link);
        link.link(10, false);
        link.mdio_write(20, 0, 0x1200);
        link.link(50, true);
        c.carrier(58, "eth0", true, &link);
        c.carrier(70, "eth0", false, &link);
        // No PHY link-up nor autonegotiation since the previous carrier-up.
        c.carrier(90, "eth0", true, &link);
        let ups: Vec<_> = c
            .ups
            .iter()
            .map(|u| {
                (
                    u.at_ns,
                    u.since_down_ns,
                    u.since_link_up_ns,
                    u.since_aneg_start_ns,
                )
            })
            .collect();
        assert_eq!(
            ups,
            [
                (58, Some(53), Some(8), Some(38)),
                (90, Some(20), None, None)
            ]
        );
        assert_eq!(c.netdev.as_deref(), Some("eth0"));
        assert_eq!(c.intervals_until(100).len(), 4);
    }
}
