//! [`RawEvent`] → [`Event`]: resolve addresses to callbacks, decode strings and states.
use foldhash::HashMap as FastMap;

use phytrace_common::{BUS_ID_LEN, DRIVER_NAME_LEN, MAC_RX_PAUSE, MAC_TX_PAUSE, RawEvent, RawKind};

use super::btf::PhyStates;
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

/// What the decoder needs to know about the probes: probe key → callback.
#[derive(Default)]
pub struct Decoder {
    callbacks: FastMap<u64, Callback>,
    states: PhyStates,
    texts: Texts,
    /// The last record's PHY, raw and decoded: records come in runs from the same PHY.
    last_phy: Option<(RawIdentity, PhyRef)>,
}

/// The fields of a record that identify its PHY.
#[derive(PartialEq, Eq)]
struct RawIdentity {
    bus_id: [u8; BUS_ID_LEN],
    driver: [u8; DRIVER_NAME_LEN],
    addr: u8,
    phy_id: u32,
}

/// The NUL-padded C strings of records (bus ids, driver names) as shared [`Text`]: the same
/// few come with every record, so each is decoded once.
#[derive(Default)]
struct Texts(FastMap<Box<[u8]>, Text>);

impl Texts {
    /// Most strings kept, which bounds memory should records carry garbage.
    const MAX: usize = 256;

    fn get(&mut self, field: &[u8]) -> Text {
        let bytes = c_bytes(field);
        if let Some(text) = self.0.get(bytes) {
            return text.clone();
        }
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        let text: Text = String::from_utf8_lossy(bytes).into();
        self.0.insert(bytes.into(), text.clone());
        text
    }
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
        self.callbacks.insert(key, callback);
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

    fn phy(&mut self, raw: &RawEvent) -> PhyRef {
        let identity = RawIdentity {
            bus_id: raw.bus_id,
            driver: raw.driver,
            addr: raw.mdio_addr,
            phy_id: raw.phy_id,
        };
        if let Some((last, phy)) = &self.last_phy
            && *last == identity
        {
            return phy.clone();
        }
        let phy = PhyRef {
            bus: self.texts.get(&raw.bus_id),
            addr: raw.mdio_addr,
            phy_id: raw.phy_id,
            driver: self.texts.get(&raw.driver),
        };
        self.last_phy = Some((identity, phy.clone()));
        phy
    }

    /// Decodes one record; `None` for kinds that are not driver events (the self-test, module
    /// loads, which the tracer handles).
    pub fn decode(&mut self, raw: &RawEvent) -> Option<Event> {
        let phy = (raw.phydev != 0 || raw.bus_id[0] != 0).then(|| self.phy(raw));
        let kind = match RawKind::from_u8(raw.kind)? {
            RawKind::CallbackEnter => EventKind::CallbackEnter {
                callback: self.callback(raw.func_ip),
                depth: raw.depth,
                state: self.states.state(raw.state_before),
            },
            RawKind::CallbackExit => {
                let callback = self.callback(raw.func_ip);
                EventKind::CallbackExit {
                    ret: if is_void(&callback.name) { 0 } else { raw.ret },
                    callback,
                    depth: raw.depth,
                    latency_ns: raw.latency_ns,
                    state_before: self.states.state(raw.state_before),
                    state_after: self.states.state(raw.state_after),
                    link: LinkState {
                        up: raw.link != 0,
                        speed: raw.speed,
                        duplex: Duplex::from_kernel(raw.duplex),
                    },
                }
            }
            kind @ (RawKind::MdioRead | RawKind::MdioWrite) => EventKind::Mdio {
                op: if kind == RawKind::MdioRead {
                    MdioOp::Read
                } else {
                    MdioOp::Write
                },
                reg: raw.regnum,
                value: raw.value,
                error: (raw.ret < 0).then_some(raw.ret as i32),
                latency_ns: raw.latency_ns,
                caller: (raw.caller_ip != 0).then(|| self.callback(raw.caller_ip)),
                state: (raw.phydev != 0).then(|| self.states.state(raw.state_before)),
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
            kind @ (RawKind::CarrierOn | RawKind::CarrierOff) => EventKind::Mac {
                change: MacChange::Carrier {
                    netdev: self.texts.get(&raw.netdev),
                    up: kind == RawKind::CarrierOn,
                },
            },
            RawKind::PhylinkResolve => EventKind::Mac {
                change: MacChange::Resolve {
                    latency_ns: raw.latency_ns,
                },
            },
            RawKind::SelfTestEnter
            | RawKind::SelfTestExit
            | RawKind::ModuleLoad
            | RawKind::ModuleFree => return None,
        };
        Some(Event {
            ts_ns: raw.ts_ns,
            cpu: raw.cpu,
            tid: raw.tid,
            phy,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> PhyStates {
        PhyStates {
            names: vec![(0, "DOWN".into()), (5, "NOLINK".into())],
        }
    }

    #[test]
    fn mdio_reads_are_attributed_to_the_running_callback() {
        let mut decoder = Decoder::new(states());
        let callback = Callback {
            name: "read_status".into(),
            driver_type: "m::T".into(),
        };
        decoder.add_callback(0x1000, callback.clone());
        let mut raw = RawEvent::ZERO;
        raw.kind = RawKind::MdioRead as u8;
        raw.phydev = 0xdead;
        raw.caller_ip = 0x1000;
        raw.regnum = 1;
        raw.value = 0x786d;
        raw.ret = 0x786d;
        raw.state_before = 5;
        raw.bus_id[..5].copy_from_slice(b"sim-0");
        raw.mdio_addr = 3;
        let event = decoder.decode(&raw).unwrap();
        assert_eq!(event.phy.as_ref().unwrap().key(), "sim-0:03");
        let EventKind::Mdio {
            op,
            reg,
            value,
            error,
            caller,
            state,
            ..
        } = event.kind
        else {
            panic!("not an MDIO event");
        };
        assert_eq!((op, reg, value, error), (MdioOp::Read, 1, 0x786d, None));
        assert_eq!(caller, Some(callback));
        assert_eq!(&*state.unwrap().name, "NOLINK");
    }

    #[test]
    fn failed_accesses_carry_their_errno() {
        let mut decoder = Decoder::new(states());
        let mut raw = RawEvent::ZERO;
        raw.kind = RawKind::MdioWrite as u8;
        raw.ret = -5;
        let event = decoder.decode(&raw).unwrap();
        assert!(matches!(
            event.kind,
            EventKind::Mdio {
                error: Some(-5),
                caller: None,
                ..
            }
        ));
        assert!(event.phy.is_none());
    }

    #[test]
    fn unknown_addresses_and_states_are_named_not_dropped() {
        let mut decoder = Decoder::new(states());
        let mut raw = RawEvent::ZERO;
        raw.kind = RawKind::CallbackEnter as u8;
        raw.func_ip = 0xabc;
        raw.state_before = 9;
        let EventKind::CallbackEnter {
            callback, state, ..
        } = decoder.decode(&raw).unwrap().kind
        else {
            panic!("not a callback event");
        };
        assert_eq!(&*callback.name, "unknown#2748");
        assert_eq!(&*state.name, "UNKNOWN_9");
    }
}
