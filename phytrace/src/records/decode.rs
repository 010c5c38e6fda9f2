//! Ring-buffer records → [`Event`]: resolve probe keys to callbacks, PHY and bus addresses to
//! the identities named earlier in the stream, decode states.
use foldhash::HashMap as FastMap;

use phytrace_common::{MAC_RX_PAUSE, MAC_TX_PAUSE, RawEvent, RawIdentity, RawKind, RawNamed};

use super::{raw::Record, states::PhyStates};
use crate::event::{
    Callback, Duplex, Event, EventKind, LinkState, MacChange, MdioOp, PhyRef, Text,
};

/// `phy_driver` operations that return nothing: their "return value" is a stale register.
fn is_void(callback: &str) -> bool {
    matches!(callback, "link_change_notify" | "remove")
}

/// The bytes of a NUL-padded C string field, up to the first NUL.
fn c_bytes(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

/// A NUL-padded C string field as text.
pub fn c_string(field: &[u8]) -> String {
    String::from_utf8_lossy(c_bytes(field)).into_owned()
}

/// The direction of `raw` if it is an MDIO access, Clause 22 or 45.
pub fn mdio_op(raw: &RawEvent) -> Option<MdioOp> {
    match RawKind::from_u8(raw.kind)? {
        RawKind::MdioRead | RawKind::MdioC45Read => Some(MdioOp::Read),
        RawKind::MdioWrite | RawKind::MdioC45Write => Some(MdioOp::Write),
        _ => None,
    }
}

/// The negative errno an MDIO access `raw` failed with.
pub fn mdio_error(raw: &RawEvent) -> Option<i32> {
    (raw.ret < 0).then_some(raw.ret)
}

/// The link a callback exit or an MDIO access `raw` read from its `struct phy_device`.
pub fn link(raw: &RawEvent) -> LinkState {
    LinkState {
        up: raw.link != 0,
        speed: raw.speed,
        duplex: Duplex::from_kernel(raw.duplex),
    }
}

/// Most PHYs or buses remembered, which bounds memory should the stream carry garbage.
const MAX_NAMED: usize = 4096;

/// What the decoder knows: probe key → callback, and the PHYs and buses named so far.
#[derive(Debug, Default)]
pub struct Decoder {
    callbacks: FastMap<u64, Callback>,
    /// Keys in the order they were taught.
    keys: Vec<u64>,
    states: PhyStates,
    /// `struct phy_device *` → the PHY it was last named as.
    phys: FastMap<u64, PhyRef>,
    /// `struct mii_bus *` → its id.
    buses: FastMap<u64, Text>,
}

impl Decoder {
    /// A decoder naming states with `states`.
    pub fn new(states: PhyStates) -> Self {
        Self {
            states,
            ..Self::default()
        }
    }

    /// Teaches the decoder the callback probed with `key`.
    pub fn add_callback(&mut self, key: u64, callback: Callback) {
        if self.callbacks.get(&key) != Some(&callback) {
            self.keys.push(key);
            self.callbacks.insert(key, callback);
        }
    }

    /// Whether it was taught `key`.
    pub fn knows(&self, key: u64) -> bool {
        self.callbacks.contains_key(&key)
    }

    /// How many keys it was taught (counting a key taught another callback again).
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The keys taught after the first `known`, with their callbacks, in the order taught.
    pub fn keys_after(&self, known: usize) -> impl Iterator<Item = (u64, &Callback)> {
        self.keys
            .iter()
            .skip(known)
            .map(|key| (*key, &self.callbacks[key]))
    }

    fn callback(&self, key: u64) -> Callback {
        self.callbacks
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Callback {
                name: format!("unknown#{key}").into(),
                driver_type: Text::default(),
            })
    }

    /// Learns the PHY or bus a [`RawIdentity`] names.
    fn learn(&mut self, identity: &RawIdentity) {
        if self.phys.len() >= MAX_NAMED || self.buses.len() >= MAX_NAMED {
            self.phys.clear();
            self.buses.clear();
        }
        let bus_id = c_bytes(&identity.bus_id);
        let bus = match self.buses.get(&identity.bus) {
            Some(known) if known.as_bytes() == bus_id => known.clone(),
            _ => {
                let text: Text = String::from_utf8_lossy(bus_id).into();
                self.buses.insert(identity.bus, text.clone());
                text
            }
        };
        if identity.phydev != 0 {
            let driver = c_bytes(&identity.driver);
            let phy = PhyRef {
                bus,
                addr: identity.addr,
                phy_id: identity.phy_id,
                driver: match self.phys.get(&identity.phydev) {
                    Some(known) if known.driver.as_bytes() == driver => known.driver.clone(),
                    _ => String::from_utf8_lossy(driver).into(),
                },
            };
            self.phys.insert(identity.phydev, phy);
        }
    }

    /// The PHY of `raw`: the one `phydev` was named as, else the bus and address of an MDIO
    /// access to an address without a PHY.
    fn phy(&self, raw: &RawEvent) -> Option<PhyRef> {
        if raw.phydev != 0 {
            return Some(
                self.phys
                    .get(&raw.phydev)
                    .cloned()
                    .unwrap_or_else(|| PhyRef {
                        bus: format!("unnamed-{:x}", raw.phydev).into(),
                        addr: raw.addr,
                        phy_id: 0,
                        driver: Text::default(),
                    }),
            );
        }
        let bus = self.buses.get(&raw.bus)?;
        Some(PhyRef {
            bus: bus.clone(),
            addr: raw.addr,
            phy_id: 0,
            driver: Text::default(),
        })
    }

    fn state(&self, value: u8) -> crate::event::PhyState {
        self.states.state(u32::from(value))
    }

    /// Decodes one record; `None` for records that are not driver events (identities, which
    /// it learns; the self-test; module loads, which the tracer handles).
    pub fn decode(&mut self, record: &Record<'_>) -> Option<Event> {
        if let Record::Identity(identity) = record {
            self.learn(identity);
        }
        self.decode_known(record)
    }

    /// Decodes one record without learning from it: an identity gives nothing (see
    /// [`Decoder::decode`], which learns it).
    pub fn decode_known(&self, record: &Record<'_>) -> Option<Event> {
        match record {
            Record::Event(raw) => self.decode_event(raw),
            Record::Identity(_) => None,
            Record::Named(named) => self.decode_named(named),
        }
    }

    fn decode_named(&self, named: &RawNamed) -> Option<Event> {
        let raw = &named.event;
        let up = match RawKind::from_u8(raw.kind)? {
            RawKind::CarrierOn => true,
            RawKind::CarrierOff => false,
            _ => return None,
        };
        let netdev: Text = String::from_utf8_lossy(c_bytes(&named.name)).into();
        Some(self.event(
            raw,
            EventKind::Mac {
                change: MacChange::Carrier { netdev, up },
            },
        ))
    }

    fn event(&self, raw: &RawEvent, kind: EventKind) -> Event {
        Event {
            ts_ns: raw.ts_ns,
            cpu: u32::from(raw.cpu),
            tid: raw.tid,
            phy: self.phy(raw),
            kind,
        }
    }

    fn decode_event(&self, raw: &RawEvent) -> Option<Event> {
        let kind = match RawKind::from_u8(raw.kind)? {
            RawKind::CallbackEnter => EventKind::CallbackEnter {
                callback: self.callback(raw.key),
                depth: raw.depth,
                state: self.state(raw.state_before),
            },
            RawKind::CallbackExit => {
                let callback = self.callback(raw.key);
                EventKind::CallbackExit {
                    ret: if is_void(&callback.name) {
                        0
                    } else {
                        i64::from(raw.ret)
                    },
                    callback,
                    depth: raw.depth,
                    latency_ns: raw.latency_ns,
                    state_before: self.state(raw.state_before),
                    state_after: self.state(raw.state_after),
                    link: link(raw),
                }
            }
            kind @ (RawKind::MdioRead
            | RawKind::MdioWrite
            | RawKind::MdioC45Read
            | RawKind::MdioC45Write) => EventKind::Mdio {
                op: mdio_op(raw)?,
                reg: raw.regnum,
                devad: matches!(kind, RawKind::MdioC45Read | RawKind::MdioC45Write)
                    .then_some(raw.devad),
                value: raw.value,
                error: mdio_error(raw),
                latency_ns: raw.latency_ns,
                caller: (raw.key != 0).then(|| self.callback(raw.key)),
                state: (raw.phydev != 0).then(|| self.state(raw.state_before)),
                link: (raw.phydev != 0).then(|| link(raw)),
            },
            RawKind::MacLinkUp => EventKind::Mac {
                change: MacChange::LinkUp {
                    speed: raw.speed,
                    duplex: Duplex::from_kernel(raw.duplex),
                    tx_pause: raw.value & MAC_TX_PAUSE != 0,
                    rx_pause: raw.value & MAC_RX_PAUSE != 0,
                },
            },
            RawKind::MacLinkDown => EventKind::Mac {
                change: MacChange::LinkDown,
            },
            RawKind::PhylinkResolve => EventKind::Mac {
                change: MacChange::Resolve {
                    latency_ns: raw.latency_ns,
                },
            },
            RawKind::SelfTestEnter
            | RawKind::SelfTestExit
            | RawKind::ModuleLoad
            | RawKind::ModuleFree
            | RawKind::CarrierOn
            | RawKind::CarrierOff
            | RawKind::Identity => return None,
        };
        Some(self.event(raw, kind))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn states() -> PhyStates {
        PhyStates {
            names: vec![(0, "DOWN".into()), (5, "NOLINK".into())],
        }
    }

    fn event(raw: RawEvent) -> Record<'static> {
        Record::Event(Cow::Owned(raw))
    }

    fn identity(phydev: u64, bus: u64, bus_id: &[u8], driver: &[u8]) -> Record<'static> {
        let mut identity = RawIdentity::ZERO;
        identity.phydev = phydev;
        identity.bus = bus;
        identity.addr = 3;
        identity.phy_id = 0x003b_1861;
        identity.bus_id[..bus_id.len()].copy_from_slice(bus_id);
        identity.driver[..driver.len()].copy_from_slice(driver);
        Record::Identity(Cow::Owned(identity))
    }

    fn mdio_read(phydev: u64) -> RawEvent {
        let mut raw = RawEvent::ZERO;
        raw.kind = RawKind::MdioRead as u8;
        raw.phydev = phydev;
        raw.bus = 0xb05;
        raw.addr = 3;
        raw.key = 0x1000;
        raw.regnum = 1;
        raw.value = 0x786d;
        raw.ret = 0x786d;
        raw.state_before = 5;
        raw.link = 1;
        raw.speed = 100;
        raw.duplex = 1;
        raw
    }

    #[test]
    fn mdio_reads_are_attributed_to_the_running_callback() {
        let mut decoder = Decoder::new(states());
        let callback = Callback {
            name: "read_status".into(),
            driver_type: "m::T".into(),
        };
        decoder.add_callback(0x1000, callback.clone());
        assert!(
            decoder
                .decode(&identity(0xdead, 0xb05, b"sim-0", b"Asix"))
                .is_none()
        );
        let event = decoder.decode(&event(mdio_read(0xdead))).unwrap();
        let phy = event.phy.as_ref().unwrap();
        assert_eq!(phy.key(), "sim-0:03");
        assert_eq!((&*phy.driver, phy.phy_id), ("Asix", 0x003b_1861));
        let EventKind::Mdio {
            op,
            reg,
            value,
            error,
            caller,
            state,
            link,
            devad,
            ..
        } = event.kind
        else {
            panic!("not an MDIO event");
        };
        assert_eq!((op, reg, value, error), (MdioOp::Read, 1, 0x786d, None));
        assert_eq!(caller, Some(callback));
        assert_eq!(&*state.unwrap().name, "NOLINK");
        assert_eq!(devad, None);
        let link = link.unwrap();
        assert_eq!(
            (link.up, link.speed, link.duplex),
            (true, 100, Duplex::Full)
        );
    }

    #[test]
    fn a_renamed_phy_is_named_anew() {
        let mut decoder = Decoder::new(states());
        decoder.decode(&identity(0xdead, 0xb05, b"usb-001:002", b""));
        decoder.decode(&identity(0xdead, 0xb05, b"usb-001:003", b"Asix"));
        let phy = decoder
            .decode(&event(mdio_read(0xdead)))
            .unwrap()
            .phy
            .unwrap();
        assert_eq!(
            (phy.key(), &*phy.driver),
            ("usb-001:003:03".to_owned(), "Asix")
        );
    }

    #[test]
    fn accesses_without_a_phy_name_their_bus() {
        let mut decoder = Decoder::new(states());
        decoder.decode(&identity(0, 0xb05, b"sim-0", b""));
        let mut raw = mdio_read(0);
        raw.kind = RawKind::MdioC45Write as u8;
        raw.devad = 7;
        raw.ret = -5;
        let event = decoder.decode(&event(raw)).unwrap();
        assert_eq!(event.phy.unwrap().key(), "sim-0:03");
        assert!(matches!(
            event.kind,
            EventKind::Mdio {
                op: MdioOp::Write,
                devad: Some(7),
                error: Some(-5),
                state: None,
                link: None,
                ..
            }
        ));
    }

    #[test]
    fn unknown_keys_and_states_are_named_not_dropped() {
        let mut decoder = Decoder::new(states());
        let mut raw = RawEvent::ZERO;
        raw.kind = RawKind::CallbackEnter as u8;
        raw.key = 0xabc;
        raw.phydev = 0xbeef;
        raw.state_before = 9;
        let event = decoder.decode(&event(raw)).unwrap();
        assert_eq!(&*event.phy.unwrap().bus, "unnamed-beef");
        let EventKind::CallbackEnter {
            callback, state, ..
        } = event.kind
        else {
            panic!("not a callback event");
        };
        assert_eq!(&*callback.name, "unknown#2748");
        assert_eq!(&*state.name, "UNKNOWN_9");
    }

    #[test]
    fn carrier_changes_carry_their_device() {
        let decoder = Decoder::new(states());
        let mut named = RawNamed {
            event: RawEvent::ZERO,
            name: [0; phytrace_common::NAME_LEN],
        };
        named.event.kind = RawKind::CarrierOn as u8;
        named.name[..4].copy_from_slice(b"eth0");
        let event = decoder.decode_named(&named).unwrap();
        assert!(matches!(
            event.kind,
            EventKind::Mac {
                change: MacChange::Carrier { ref netdev, up: true }
            } if &**netdev == "eth0"
        ));
    }
}
