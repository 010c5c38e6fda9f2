//! Events made by hand for tests (the `testkit` feature, like [`crate::synth`]): the fields a
//! test is about given, the others plain.
//!
//! ```
//! use phytrace::event::{Event, EventKind};
//! use phytrace::test_events::{Mdio, event, phy};
//!
//! // phytrace's own event: no PHY, CPU 0, thread 0.
//! let lost = event(5, EventKind::Lost { count: 1, cause: None });
//! // A driver's: struct update sets what differs.
//! let read = Event {
//!     tid: 7,
//!     phy: Some(phy("phy_sim-0", 1, 0x003b_1861, "Asix Electronics AX88772A")),
//!     ..event(6, Mdio { error: Some(-5), ..Mdio::read(1, 0) })
//! };
//! assert_eq!((lost.phy, read.ts_ns), (None, 6));
//! ```

use std::borrow::Cow;

use phytrace_common::RawIdentity;

use crate::event::{Callback, Event, EventKind, LinkState, MdioOp, PhyRef, PhyState};
use crate::records::raw::Record;

pub mod qt2025;

/// `kind` at `ts_ns`, on CPU 0, from thread 0, of no PHY.
pub fn event(ts_ns: u64, kind: impl Into<EventKind>) -> Event {
    Event {
        ts_ns,
        cpu: 0,
        tid: 0,
        phy: None,
        kind: kind.into(),
    }
}

/// The PHY `phy_id` at `addr` on `bus`, bound to `driver` (empty: none).
pub fn phy(bus: &str, addr: u8, phy_id: u32, driver: &str) -> PhyRef {
    PhyRef {
        bus: bus.into(),
        addr,
        phy_id,
        driver: driver.into(),
    }
}

/// The ring-buffer record that names `phy` as the `struct phy_device *` `phydev` (0: the bus
/// alone) on the `struct mii_bus *` `bus`.
pub fn identity_record(phydev: u64, bus: u64, phy: &PhyRef) -> Vec<u8> {
    let mut identity = RawIdentity::ZERO;
    (identity.phydev, identity.bus) = (phydev, bus);
    (identity.addr, identity.phy_id) = (phy.addr, phy.phy_id);
    identity.bus_id[..phy.bus.len()].copy_from_slice(phy.bus.as_bytes());
    identity.driver[..phy.driver.len()].copy_from_slice(phy.driver.as_bytes());
    Record::Identity(Cow::Owned(identity)).to_bytes()
}

/// The callback `name` of the Rust type `driver_type`.
pub fn callback(name: &str, driver_type: &str) -> Callback {
    Callback {
        name: name.into(),
        driver_type: driver_type.into(),
    }
}

/// The fields of an [`EventKind::Mdio`], each as a test sets it (struct update from
/// [`Mdio::read`]).
#[derive(Clone, Debug)]
pub struct Mdio {
    pub op: MdioOp,
    pub reg: u16,
    pub devad: Option<u8>,
    pub value: u16,
    pub error: Option<i32>,
    pub latency_ns: u64,
    pub caller: Option<Callback>,
    pub state: Option<PhyState>,
    pub link: Option<LinkState>,
}

impl Mdio {
    /// A Clause-22 read of `value` from `reg` that succeeded in no time, outside any callback,
    /// with neither the PHY's state nor its link seen.
    pub fn read(reg: u16, value: u16) -> Self {
        Self {
            op: MdioOp::Read,
            reg,
            devad: None,
            value,
            error: None,
            latency_ns: 0,
            caller: None,
            state: None,
            link: None,
        }
    }
}

impl From<Mdio> for EventKind {
    fn from(m: Mdio) -> Self {
        EventKind::Mdio {
            op: m.op,
            reg: m.reg,
            devad: m.devad,
            value: m.value,
            error: m.error,
            latency_ns: m.latency_ns,
            caller: m.caller,
            state: m.state,
            link: m.link,
        }
    }
}
