//! A JSON Lines capture rewritten as the binary capture `record` would have written of the same
//! session: driver events as ring-buffer records (with the identities and probe keys they
//! refer to), phytrace's own events as JSON frames.

use std::borrow::Cow;
use std::collections::HashMap;

use phytrace::capture::{Capture, Encoding, Writer};
use phytrace::event::{Callback, Duplex, Event, EventKind, MacChange, MdioOp, PhyRef};
use phytrace::records::raw::Record;
use phytrace_common::{
    MAC_RX_PAUSE, MAC_TX_PAUSE, NAME_LEN, RawEvent, RawIdentity, RawKind, RawNamed,
};

/// The bytes of `capture` as a binary capture, closed like the original.
pub fn rewrite(capture: &Capture) -> Vec<u8> {
    let mut header = capture.header.clone();
    (header.format_version, header.encoding) = (4, Encoding::Binary);
    let mut out = Vec::new();
    let mut writer = Writer::new(&mut out, "binary", &header).unwrap();
    let mut names = Names::default();
    for event in &capture.events {
        match ring(event, &mut names, &mut writer) {
            Some((kind, bytes)) => writer.write_ring(kind, &bytes).unwrap(),
            None => writer.write(event).unwrap(),
        }
    }
    let trailer = capture.trailer.as_ref().unwrap();
    writer.finish(trailer.end_ns, trailer.discarded).unwrap();
    out
}

/// Addresses given to the PHYs and buses, keys to the callbacks.
#[derive(Default)]
struct Names {
    phys: HashMap<PhyRef, u64>,
    buses: HashMap<String, u64>,
    keys: HashMap<Callback, u64>,
}

impl Names {
    fn key(&mut self, callback: &Callback, writer: &mut Writer<&mut Vec<u8>>) -> u64 {
        let next = self.keys.len() as u64 + 1;
        *self.keys.entry(callback.clone()).or_insert_with(|| {
            writer.define_probe(next, callback).unwrap();
            next
        })
    }

    /// `(phydev, bus)` of `phy`, named first if new; `phydev` 0 for an address without a PHY.
    fn phy(
        &mut self,
        phy: &PhyRef,
        has_phy: bool,
        writer: &mut Writer<&mut Vec<u8>>,
    ) -> (u64, u64) {
        let next_bus = 0xffff_8880_1000_0000 + 0x1000 * self.buses.len() as u64;
        let bus = *self.buses.entry(phy.bus.to_string()).or_insert(next_bus);
        let next_phy = 0xffff_8880_0000_0000 + 0x1000 * (self.phys.len() as u64 + 1);
        let known = self.phys.contains_key(phy);
        let phydev = if has_phy {
            *self.phys.entry(phy.clone()).or_insert(next_phy)
        } else {
            0
        };
        if !known || !has_phy {
            let mut identity = RawIdentity::ZERO;
            identity.kind = RawKind::Identity as u8;
            (
                identity.phydev,
                identity.bus,
                identity.addr,
                identity.phy_id,
            ) = (phydev, bus, phy.addr, phy.phy_id);
            identity.bus_id[..phy.bus.len()].copy_from_slice(phy.bus.as_bytes());
            identity.driver[..phy.driver.len()].copy_from_slice(phy.driver.as_bytes());
            let bytes = Record::Identity(Cow::Owned(identity)).to_bytes();
            writer.write_ring(RawKind::Identity, &bytes).unwrap();
        }
        (phydev, bus)
    }
}

fn duplex(duplex: Duplex) -> u8 {
    match duplex {
        Duplex::Half => 0,
        Duplex::Full => 1,
        Duplex::Unknown => 0xff,
    }
}

/// The ring-buffer record of `event`, `None` for phytrace's own events.
fn ring(
    event: &Event,
    names: &mut Names,
    writer: &mut Writer<&mut Vec<u8>>,
) -> Option<(RawKind, Vec<u8>)> {
    let mut raw = RawEvent::ZERO;
    (raw.ts_ns, raw.cpu, raw.tid) = (event.ts_ns, event.cpu as u16, event.tid);
    let has_phy = match &event.kind {
        EventKind::Mdio { state, .. } => state.is_some(),
        _ => true,
    };
    if let Some(phy) = &event.phy {
        (raw.phydev, raw.bus) = names.phy(phy, has_phy, writer);
        raw.addr = phy.addr;
    }
    let kind = match &event.kind {
        EventKind::CallbackEnter {
            callback,
            depth,
            state,
        } => {
            (raw.key, raw.depth) = (names.key(callback, writer), *depth);
            raw.state_before = state.value as u8;
            RawKind::CallbackEnter
        }
        EventKind::CallbackExit {
            callback,
            depth,
            latency_ns,
            ret,
            state_before,
            state_after,
            link,
        } => {
            (raw.key, raw.depth) = (names.key(callback, writer), *depth);
            (raw.latency_ns, raw.ret) = (*latency_ns, *ret as i32);
            (raw.state_before, raw.state_after) =
                (state_before.value as u8, state_after.value as u8);
            (raw.link, raw.speed, raw.duplex) = (link.up.into(), link.speed, duplex(link.duplex));
            RawKind::CallbackExit
        }
        EventKind::Mdio {
            op,
            reg,
            devad,
            value,
            error,
            latency_ns,
            caller,
            state,
            link,
        } => {
            raw.key = caller.as_ref().map_or(0, |c| names.key(c, writer));
            (raw.regnum, raw.value, raw.latency_ns) = (*reg, *value, *latency_ns);
            raw.ret = error.unwrap_or(i32::from(*value));
            raw.devad = devad.unwrap_or(0);
            raw.state_before = state.as_ref().map_or(0, |s| s.value as u8);
            if let Some(link) = link {
                (raw.link, raw.speed, raw.duplex) =
                    (link.up.into(), link.speed, duplex(link.duplex));
            }
            match (op, devad) {
                (MdioOp::Read, None) => RawKind::MdioRead,
                (MdioOp::Write, None) => RawKind::MdioWrite,
                (MdioOp::Read, Some(_)) => RawKind::MdioC45Read,
                (MdioOp::Write, Some(_)) => RawKind::MdioC45Write,
            }
        }
        EventKind::Mac { change } => match change {
            MacChange::Resolve { latency_ns } => {
                raw.latency_ns = *latency_ns;
                RawKind::PhylinkResolve
            }
            MacChange::LinkUp {
                speed,
                duplex: d,
                tx_pause,
                rx_pause,
            } => {
                (raw.speed, raw.duplex) = (*speed, duplex(*d));
                raw.value = if *tx_pause { MAC_TX_PAUSE } else { 0 }
                    | if *rx_pause { MAC_RX_PAUSE } else { 0 };
                RawKind::MacLinkUp
            }
            MacChange::LinkDown => RawKind::MacLinkDown,
            MacChange::Carrier { netdev, up } => {
                let kind = if *up {
                    RawKind::CarrierOn
                } else {
                    RawKind::CarrierOff
                };
                raw.kind = kind as u8;
                let mut named = RawNamed {
                    event: raw,
                    name: [0; NAME_LEN],
                };
                named.name[..netdev.len()].copy_from_slice(netdev.as_bytes());
                return Some((kind, Record::Named(Cow::Owned(named)).to_bytes()));
            }
        },
        _ => return None,
    };
    raw.kind = kind as u8;
    Some((kind, Record::Event(Cow::Owned(raw)).to_bytes()))
}
