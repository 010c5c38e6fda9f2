//! A live session's events into the metrics: [`MetricsSink`] applies them to a model of its
//! own and feeds the metrics; [`Tee`] hands a session's records to the capture and to it.
//!
//! Most of a session's records are MDIO accesses and callbacks that change nothing the
//! metrics show but their counts: the same `phy_state` as the model holds, and for a callback's
//! return the same link and no error. Once a first record of their PHY went through the model,
//! these are counted from the ring's record itself; any other goes through the model again.
//! MDIO accesses are counted in the sink and added to the metrics at the end of each read of
//! the ring, before the scrapes served between reads.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;
use foldhash::HashMap as FastMap;
use phytrace_common::{RawEvent, RawKind};
use prometheus_client::metrics::counter::Counter;

use super::update::{CallbackSeries, MdioSeries, op_index};
use super::{Feed, LiveHealth, Metrics, serve};
use crate::capture::Header;
use crate::event::{Event, EventKind, LinkState, MdioOp, PhyFilter};
use crate::model::{Applied, Model};
use crate::records::decode;
use crate::records::raw::Record;
use crate::session::{Received, Sink};

/// State and link changes the sink's model keeps per PHY: the metrics need only the latest.
const HISTORY_CAP: usize = 16;

/// The `struct phy_device *`, `struct mii_bus *` and address of a record.
type Accessor = (u64, u64, u8);

/// Where one accessor's records count, as the model placed its first one, and the MDIO
/// accesses counted since the last [`Sink::flush`].
#[derive(Debug)]
struct Slot {
    accessor: Accessor,
    /// `None`: the PHY filter leaves them out.
    series: Option<PhySeries>,
    /// The `phy_state` value the model holds for the accessor's PHY (`None`: an address
    /// without a PHY, whose records carry none): a record that carries another goes through
    /// the model.
    state: Option<u32>,
    /// The link the model holds for the accessor's PHY: a callback that returns another goes
    /// through the model.
    link: Option<LinkState>,
    /// MDIO accesses and failed ones not counted in `series` yet, by [`op_index`] and failure.
    pending: [[u64; 2]; 2],
}

/// The series one accessor's records count in.
#[derive(Debug)]
struct PhySeries {
    mdio: MdioSeries,
    /// By probe key, the callbacks that returned through the model once.
    callbacks: FastMap<u64, CallbackSeries>,
}

/// The metrics of a live session, served over HTTP while it runs.
pub struct MetricsSink {
    feed: Feed,
    model: Model,
    filter: Option<PhyFilter>,
    address: SocketAddr,
    events: Counter,
    /// Events counted from their records since the last flush.
    pending_events: u64,
    slots: Vec<Slot>,
    /// Each accessor's slot.
    accessors: FastMap<Accessor, usize>,
    /// The slot of the last record counted: most come from the same accessor as the last.
    last: Option<(Accessor, usize)>,
    /// Probe keys the decoder knew when the slots were made: a key named anew forgets them.
    keys_known: usize,
}

impl MetricsSink {
    /// Serves, on `address` (bound already, [`serve::bind`]), the metrics of the session
    /// `header` describes, of the PHYs `filter` keeps; must run inside the session's tokio
    /// runtime, which serves the scrapes between reads of the ring.
    pub fn serve(
        listener: std::net::TcpListener,
        header: &Header,
        health: LiveHealth,
        filter: Option<PhyFilter>,
    ) -> Result<Self> {
        let metrics = Arc::new(Metrics::new(header, Some(health)));
        let address = serve::spawn(listener, Arc::clone(&metrics))?;
        let feed = Feed::new(metrics);
        Ok(Self {
            events: feed.events(),
            feed,
            model: Model::with_history_cap(HISTORY_CAP),
            filter,
            address,
            pending_events: 0,
            slots: Vec::new(),
            accessors: FastMap::default(),
            last: None,
            keys_known: 0,
        })
    }

    /// Where the metrics are served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Takes `event` through the model into the metrics; `None` if the filter leaves it out.
    fn take(&mut self, event: &Event) -> Option<Applied> {
        if !self.filter.as_ref().is_none_or(|f| f.keeps(event)) {
            return None;
        }
        let applied = self.model.apply(event);
        self.feed.observe(event, &applied, &self.model);
        Some(applied)
    }

    /// The slot of `accessor`, if it has one.
    fn slot_of(&mut self, accessor: Accessor) -> Option<usize> {
        match self.last {
            Some((last, index)) if last == accessor => Some(index),
            _ => {
                let index = *self.accessors.get(&accessor)?;
                self.last = Some((accessor, index));
                Some(index)
            }
        }
    }

    /// Counts `raw` (of `kind`) in its accessor's slot, if the model would learn nothing the
    /// metrics show from it; false if it must go through the model.
    fn count_known(&mut self, raw: &RawEvent, kind: RawKind) -> bool {
        let Some(index) = self.slot_of((raw.phydev, raw.bus, raw.addr)) else {
            return false;
        };
        let slot = &mut self.slots[index];
        let Some(series) = &slot.series else {
            return true;
        };
        if slot.state != (raw.phydev != 0).then_some(u32::from(raw.state_before)) {
            return false;
        }
        match kind {
            RawKind::CallbackEnter => {}
            RawKind::CallbackExit => {
                let Some(callback) = series.callbacks.get(&raw.key) else {
                    return false;
                };
                if raw.state_after != raw.state_before
                    || raw.ret < 0
                    || slot.link.as_ref() != Some(&decode::link(raw))
                {
                    return false;
                }
                callback.returned(raw.latency_ns);
            }
            _ => {
                let Some(op) = decode::mdio_op(raw) else {
                    return false;
                };
                let failed = decode::mdio_error(raw).is_some();
                slot.pending[op_index(op)][usize::from(failed)] += 1;
            }
        }
        self.pending_events += 1;
        true
    }

    /// After `event` (of `raw`) went through the model (`applied`, `None` if filtered out):
    /// where its accessor's records count, and the state and link the model holds for its
    /// `struct phy_device *` in every slot of it.
    fn learn(&mut self, raw: &RawEvent, event: &Event, applied: Option<Applied>) {
        let key = applied.and_then(|applied| applied.key);
        let phy = key.as_ref().and_then(|key| self.model.phy(key));
        let state = phy.and_then(|phy| phy.state.as_ref()).map(|s| s.value);
        let link = phy.and_then(|phy| phy.link.clone());
        if raw.phydev != 0 {
            for slot in self.slots.iter_mut().filter(|s| s.accessor.0 == raw.phydev) {
                slot.state = state;
                slot.link.clone_from(&link);
            }
        }
        let accessor = (raw.phydev, raw.bus, raw.addr);
        let index = match self.accessors.get(&accessor) {
            Some(&index) => index,
            None => {
                let series = match &key {
                    // An address on a bus not named yet: each record goes through the model.
                    Some(key) => match self.feed.mdio_series(key) {
                        Some(mdio) => Some(PhySeries {
                            mdio,
                            callbacks: FastMap::default(),
                        }),
                        None => return,
                    },
                    None => None,
                };
                self.accessors.insert(accessor, self.slots.len());
                self.slots.push(Slot {
                    accessor,
                    series,
                    state: if raw.phydev == 0 { None } else { state },
                    link: if raw.phydev == 0 { None } else { link },
                    pending: [[0; 2]; 2],
                });
                self.slots.len() - 1
            }
        };
        let (Some(key), EventKind::CallbackExit { callback, .. }) = (&key, &event.kind) else {
            return;
        };
        let Some(series) = &mut self.slots[index].series else {
            return;
        };
        if let std::collections::hash_map::Entry::Vacant(entry) = series.callbacks.entry(raw.key)
            && let Some(callback) = self.feed.callback_series(key, &callback.name)
        {
            entry.insert(callback);
        }
    }

    /// Forgets every accessor, once what they counted is out: the PHYs or callbacks were
    /// named anew.
    fn forget_accessors(&mut self) {
        self.flush();
        self.slots.clear();
        self.accessors.clear();
        self.last = None;
    }
}

impl Sink for MetricsSink {
    fn event(&mut self, event: Event) {
        self.take(&event);
    }

    fn receive(&mut self, record: &Received<'_>) {
        let raw = match record.parsed() {
            Record::Event(raw) => &**raw,
            // A PHY named anew (another driver bound): its accessors are learnt again.
            Record::Identity(_) => {
                self.forget_accessors();
                return;
            }
            Record::Named(_) => {
                if let Some(event) = record.event() {
                    self.take(event);
                }
                return;
            }
        };
        if record.keys_named() != self.keys_known {
            self.forget_accessors();
            self.keys_known = record.keys_named();
        }
        if RawKind::from_u8(raw.kind).is_some_and(|kind| self.count_known(raw, kind)) {
            return;
        }
        let Some(event) = record.event() else {
            return;
        };
        if event.phy.is_none() {
            self.take(event);
            return;
        }
        let applied = self.take(event);
        self.learn(raw, event, applied);
    }

    fn flush(&mut self) {
        self.events.inc_by(std::mem::take(&mut self.pending_events));
        for slot in &mut self.slots {
            let (Some(series), pending) = (&slot.series, &mut slot.pending) else {
                continue;
            };
            for (op, counts) in [MdioOp::Read, MdioOp::Write].into_iter().zip(pending) {
                let [ok, failed] = std::mem::take(counts);
                series.mdio.count_many(op, ok + failed, failed);
            }
        }
    }
}

/// Two sinks fed the same records and events, the second one when there is one.
pub struct Tee<'a, A, B>(pub &'a mut A, pub Option<&'a mut B>);

impl<A: Sink, B: Sink> Sink for Tee<'_, A, B> {
    fn event(&mut self, event: Event) {
        if let Some(second) = &mut self.1 {
            second.event(event.clone());
        }
        self.0.event(event);
    }

    fn receive(&mut self, record: &Received<'_>) {
        self.0.receive(record);
        if let Some(second) = &mut self.1 {
            second.receive(record);
        }
    }

    fn flush(&mut self) {
        self.0.flush();
        if let Some(second) = &mut self.1 {
            second.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use phytrace_common::RawKind;

    use super::*;
    use crate::records::decode::Decoder;
    use crate::records::raw;
    use crate::records::states::PhyStates;
    use crate::{synth, test_events};

    const PHY: u64 = 0xffff_8880_0000_1000;
    const OTHER_PHY: u64 = 0xffff_8880_0000_2000;
    const BUS: u64 = 0xffff_8880_0001_0000;
    const OTHER_BUS: u64 = 0xffff_8880_0002_0000;
    const UNNAMED_BUS: u64 = 0xffff_8880_0003_0000;
    const READ_STATUS: u64 = 7;
    const CONFIG_ANEG: u64 = 8;

    fn identity(phydev: u64, bus: u64, addr: u8, bus_id: &str, driver: &str) -> Vec<u8> {
        test_events::identity_record(phydev, bus, &test_events::phy(bus_id, addr, 0, driver))
    }

    /// A record of `kind` of `PHY` at address 1 in `state`, changed by `fill`.
    fn ring(kind: RawKind, state: u8, fill: impl FnOnce(&mut RawEvent)) -> Vec<u8> {
        let mut event = RawEvent::ZERO;
        (event.kind, event.tid, event.cpu) = (kind as u8, 42, 1);
        (event.phydev, event.bus, event.addr) = (PHY, BUS, 1);
        (event.state_before, event.state_after) = (state, state);
        (event.key, event.depth) = (READ_STATUS, 1);
        fill(&mut event);
        raw::Record::Event(Cow::Owned(event)).to_bytes()
    }

    fn read(state: u8) -> Vec<u8> {
        ring(RawKind::MdioRead, state, |e| {
            (e.regnum, e.ret) = (1, 0x786d)
        })
    }

    /// Every path an MDIO access takes: repeated accesses of a PHY, one that carries a new
    /// `phy_state`, a failed write, Clause 45, a PHY bound anew to another driver, a second
    /// PHY, addresses without a PHY on a named and an unnamed bus, callbacks between.
    fn session() -> Vec<Vec<u8>> {
        let mut records = vec![
            identity(PHY, BUS, 1, "phy_sim-0", "Asix Electronics AX88772A"),
            identity(0, OTHER_BUS, 0, "usb-001:002", ""),
            ring(RawKind::CallbackEnter, 5, |_| {}),
        ];
        records.extend((0..3).map(|_| read(5)));
        records.push(ring(RawKind::MdioWrite, 5, |e| e.ret = -110));
        // phylib moved the state while the callback ran.
        records.extend([read(6), read(6)]);
        records.push(ring(RawKind::MdioC45Read, 6, |e| e.devad = 3));
        records.push(ring(RawKind::CallbackExit, 6, |e| {
            (e.state_after, e.link, e.speed, e.duplex) = (4, 1, 100, 1);
        }));
        records.extend([read(4), read(5), read(5)]);
        // Calls that change nothing but their counts, then one that fails, one that takes
        // the link down, one of another op and one that moves the state.
        let exit = |ret, link, (before, after), key| {
            ring(RawKind::CallbackExit, before, move |e| {
                (e.state_after, e.ret, e.key) = (after, ret, key);
                (e.link, e.speed, e.duplex, e.latency_ns) =
                    (link, 100, 1, 1500 + u64::from(ret.unsigned_abs()));
            })
        };
        for (ret, link, states, key) in [
            (0, 1, (5, 5), READ_STATUS),
            (0, 1, (5, 5), READ_STATUS),
            (0, 1, (5, 5), READ_STATUS),
            (-5, 1, (5, 5), READ_STATUS),
            (0, 0, (5, 5), READ_STATUS),
            (0, 0, (5, 5), READ_STATUS),
            (0, 0, (5, 5), CONFIG_ANEG),
            (0, 0, (5, 5), CONFIG_ANEG),
            (0, 0, (5, 6), READ_STATUS),
            (0, 0, (6, 6), READ_STATUS),
        ] {
            records.push(ring(RawKind::CallbackEnter, states.0, |e| e.key = key));
            records.push(read(states.0));
            records.push(exit(ret, link, states, key));
        }
        records.push(identity(PHY, BUS, 1, "phy_sim-0", "Generic PHY"));
        records.extend([read(5), read(5)]);
        records.push(identity(OTHER_PHY, BUS, 2, "phy_sim-0", "Other PHY"));
        for _ in 0..2 {
            records.push(ring(RawKind::MdioWrite, 3, |e| {
                (e.phydev, e.addr) = (OTHER_PHY, 2);
            }));
        }
        for bus in [OTHER_BUS, OTHER_BUS, UNNAMED_BUS, UNNAMED_BUS] {
            records.push(ring(RawKind::MdioRead, 0, |e| {
                (e.phydev, e.bus, e.addr, e.ret) = (0, bus, 9, -19);
            }));
        }
        records
    }

    fn decoder() -> Decoder {
        let mut decoder = Decoder::new(PhyStates::from_list(&synth::header().phy_states));
        let read_status = test_events::callback("read_status", "ax88796b_rust::PhyAX88772A");
        decoder.add_callback(READ_STATUS, read_status);
        let config_aneg = test_events::callback("config_aneg", "ax88796b_rust::PhyAX88772A");
        decoder.add_callback(CONFIG_ANEG, config_aneg);
        decoder
    }

    /// The exposition of `session()` through a live sink keeping what `filter` keeps, and the
    /// events its model applied.
    fn live(filter: Option<&str>) -> (String, u64) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _entered = runtime.enter();
        let listener = serve::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let health = LiveHealth {
            ring_size: 1 << 22,
            call_sites_refused: 0,
        };
        let filter = filter.map(|f| PhyFilter::from(f.to_owned()));
        let mut sink = MetricsSink::serve(listener, &synth::header(), health, filter).unwrap();
        let mut decoder = decoder();
        for bytes in session() {
            let parsed = raw::parse(&bytes).unwrap();
            sink.receive(&Received::new(&mut decoder, &bytes, &parsed));
        }
        sink.flush();
        (sink.feed.metrics().encode(), sink.model.totals().events)
    }

    /// The exposition of `session()` with every record decoded and taken through a model.
    fn through_the_model(filter: Option<&str>) -> String {
        let health = LiveHealth {
            ring_size: 1 << 22,
            call_sites_refused: 0,
        };
        let metrics = Arc::new(Metrics::new(&synth::header(), Some(health)));
        let mut feed = Feed::new(Arc::clone(&metrics));
        let mut model = Model::new();
        let mut decoder = decoder();
        for bytes in session() {
            let Some(event) = decoder.decode(&raw::parse(&bytes).unwrap()) else {
                continue;
            };
            if filter.is_none_or(|f| PhyFilter::from(f.to_owned()).keeps(&event)) {
                let applied = model.apply(&event);
                feed.observe(&event, &applied, &model);
            }
        }
        metrics.encode()
    }

    /// The lines of `exposition`, sorted: a family's series come in no set order.
    fn sorted(exposition: &str) -> Vec<&str> {
        let mut lines: Vec<&str> = exposition.lines().collect();
        lines.sort_unstable();
        lines
    }

    #[test]
    fn records_counted_from_the_ring_count_as_through_the_model() {
        for filter in [None, Some("phy_sim-0:01"), Some("Other")] {
            let ((live, _), whole) = (live(filter), through_the_model(filter));
            assert_eq!(sorted(&live), sorted(&whole), "filter {filter:?}");
            assert!(live.contains("phytrace_mdio_accesses_total"), "{live}");
        }
        let (live, through_model) = live(None);
        for line in [
            r#"phytrace_callbacks_total{phy="phy_sim-0:01",driver="Asix Electronics AX88772A",op="read_status"} 9"#,
            r#"phytrace_callbacks_total{phy="phy_sim-0:01",driver="Asix Electronics AX88772A",op="config_aneg"} 2"#,
            r#"op="read_status",errno="EIO"} 1"#,
            r#"phytrace_link_changes_total{phy="phy_sim-0:01",driver="Asix Electronics AX88772A",to="down"} 1"#,
        ] {
            assert!(live.contains(line), "{line} in {live}");
        }
        let events = session()
            .iter()
            .filter(|r| matches!(raw::parse(r), Some(raw::Record::Event(_))))
            .count() as u64;
        assert!(
            through_model * 2 < events,
            "{through_model} of {events} through the model"
        );
    }
}
