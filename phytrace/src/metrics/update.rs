//! The metrics updated event by event from what the [`Model`] made of each one ([`Applied`]):
//! the same meanings `stats` takes (a completed call, a link or state change), not computed
//! again. The handles of each PHY's frequent series are kept, so that an MDIO access or a
//! callback costs no label built.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use super::Metrics;
use super::families::{
    self, CallbackLabels, CauseLabel, ErrorLabels, Families, KmsgLabels, MacLabels, PhyLabels,
    ProbeLabel, StateLabels, ToLabels,
};
use crate::event::{Duplex, Event, EventKind, KmsgLevel, LinkState, MacChange, MdioOp};
use crate::model::{Applied, ClosedCallback, Model, StateTransition};
use crate::render;

/// The series of one callback op of one PHY. A clone counts in the same series.
#[derive(Clone, Debug)]
pub struct CallbackSeries {
    calls: Counter,
    latency: Histogram,
}

impl CallbackSeries {
    /// A call that returned after `latency_ns`: counted, its latency observed.
    pub fn returned(&self, latency_ns: u64) {
        self.calls.inc();
        self.latency.observe(latency_ns as f64 / 1e9);
    }
}

/// The frequent series of one PHY, for its labels.
#[derive(Debug)]
struct PhyHandles {
    labels: PhyLabels,
    mdio: MdioSeries,
    link_up: Gauge,
    link_speed: Gauge,
    link_full_duplex: Gauge,
    callbacks: HashMap<String, CallbackSeries>,
}

/// Index of `op` in an [`MdioSeries`] and in what counts by op.
pub(super) fn op_index(op: MdioOp) -> usize {
    match op {
        MdioOp::Read => 0,
        MdioOp::Write => 1,
    }
}

impl PhyHandles {
    fn new(f: &Families, labels: PhyLabels) -> Self {
        let mdio = [MdioOp::Read, MdioOp::Write].map(|op| {
            let labels = with_op(&labels, op.name());
            (
                f.mdio_accesses.get_or_create_owned(&labels),
                f.mdio_errors.get_or_create_owned(&labels),
            )
        });
        Self {
            mdio: MdioSeries(mdio),
            link_up: f.link_up.get_or_create_owned(&labels),
            link_speed: f.link_speed.get_or_create_owned(&labels),
            link_full_duplex: f.link_full_duplex.get_or_create_owned(&labels),
            callbacks: HashMap::new(),
            labels,
        }
    }

    fn callback(&mut self, f: &Families, op: &str) -> &CallbackSeries {
        if !self.callbacks.contains_key(op) {
            let labels = with_op(&self.labels, op);
            let handles = CallbackSeries {
                calls: f.callbacks.get_or_create_owned(&labels),
                latency: f.callback_latency.get_or_create_owned(&labels),
            };
            self.callbacks.insert(op.to_owned(), handles);
        }
        &self.callbacks[op]
    }
}

/// The series of one PHY's MDIO accesses: accesses and errors by [`op_index`]. A clone
/// counts in the same series.
#[derive(Clone, Debug)]
pub struct MdioSeries([(Counter, Counter); 2]);

impl MdioSeries {
    /// An access `op`, `failed` or not.
    pub fn count(&self, op: MdioOp, failed: bool) {
        self.count_many(op, 1, u64::from(failed));
    }

    /// `accesses` accesses `op`, `failed` of them failed.
    pub fn count_many(&self, op: MdioOp, accesses: u64, failed: u64) {
        let (all, errors) = &self.0[op_index(op)];
        if accesses > 0 {
            all.inc_by(accesses);
        }
        if failed > 0 {
            errors.inc_by(failed);
        }
    }
}

/// `labels` with the op `op`.
fn with_op(labels: &PhyLabels, op: &str) -> CallbackLabels {
    CallbackLabels {
        phy: labels.phy.clone(),
        driver: labels.driver.clone(),
        op: op.to_owned(),
    }
}

/// Feeds a [`Metrics`] the events a model applied, in order.
#[derive(Debug)]
pub struct Feed {
    metrics: Arc<Metrics>,
    phys: HashMap<String, PhyHandles>,
    /// Callback symbol probes armed, by module ([`Metrics::symbol_probes`]).
    symbol_probes: Option<BTreeMap<String, usize>>,
}

impl Feed {
    /// A feed of `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            symbol_probes: metrics.symbol_probes.clone(),
            metrics,
            phys: HashMap::new(),
        }
    }

    /// The metrics fed.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The count of every event taken in; a clone counts in the same series.
    pub fn events(&self) -> Counter {
        self.metrics.families.events.clone()
    }

    /// The MDIO series of the PHY `key`, once an event of it was taken in.
    pub fn mdio_series(&self, key: &str) -> Option<MdioSeries> {
        self.phys.get(key).map(|handles| handles.mdio.clone())
    }

    /// The series of the PHY `key`'s callback `op`, once an event of the PHY was taken in.
    pub fn callback_series(&mut self, key: &str, op: &str) -> Option<CallbackSeries> {
        let f = &self.metrics.families;
        let handles = self.phys.get_mut(key)?;
        Some(handles.callback(f, op).clone())
    }

    /// Takes in `event`, which `model` just applied with the result `applied`.
    pub fn observe(&mut self, event: &Event, applied: &Applied, model: &Model) {
        let f = &self.metrics.families;
        f.events.inc();
        match &event.kind {
            EventKind::Lost { count, cause } => {
                let cause = cause.map_or("unknown", |c| c.name()).to_owned();
                f.events_lost
                    .get_or_create(&CauseLabel { cause })
                    .inc_by(*count);
            }
            EventKind::Attached {
                module, callbacks, ..
            } => symbol_probes_armed(f, &mut self.symbol_probes, module, *callbacks),
            EventKind::Detached { module } => {
                symbol_probes_armed(f, &mut self.symbol_probes, module, 0);
            }
            EventKind::Kmsg { level, .. } => {
                let (phy, driver) = match &event.phy {
                    Some(phy) => (phy.key(), phy.driver.to_string()),
                    None => Default::default(),
                };
                let level = KmsgLevel::name(*level).to_owned();
                let labels = KmsgLabels { phy, driver, level };
                f.kernel_messages.get_or_create(&labels).inc();
            }
            _ => {}
        }
        let Some(key) = &applied.key else { return };
        let Some(phy) = model.phy(key) else { return };
        let driver = &*phy.phy.driver;
        if self
            .phys
            .get(key)
            .is_none_or(|h| *h.labels.driver != *driver)
        {
            let labels = PhyLabels {
                phy: key.clone(),
                driver: driver.to_owned(),
            };
            self.phys.insert(key.clone(), PhyHandles::new(f, labels));
        }
        let Some(handles) = self.phys.get_mut(key) else {
            return;
        };
        if let Some(closed) = &applied.closed {
            callback_returned(f, handles, closed);
        }
        if let Some(transition) = &applied.transition {
            state_changed(f, &handles.labels, transition);
        }
        if let Some(change) = &applied.link_change {
            if change.from.as_ref().map(|from| from.up) != Some(change.to.up) {
                let to = if change.to.up { "up" } else { "down" };
                f.link_changes
                    .get_or_create(&to_labels(&handles.labels, to))
                    .inc();
            }
            set_link(handles, &change.to);
        }
        match &event.kind {
            EventKind::Mdio { op, error, .. } => handles.mdio.count(*op, error.is_some()),
            EventKind::Mac { change } => {
                let labels = MacLabels {
                    phy: handles.labels.phy.clone(),
                    driver: handles.labels.driver.clone(),
                    event: change.name().to_owned(),
                };
                f.mac_events.get_or_create(&labels).inc();
                if let MacChange::Carrier { up, .. } = change {
                    f.carrier_up
                        .get_or_create(&handles.labels)
                        .set(i64::from(*up));
                }
            }
            _ => {}
        }
    }
}

/// With symbol probes (`by_module`), `module`'s callbacks probed now: `callbacks`.
fn symbol_probes_armed(
    f: &Families,
    by_module: &mut Option<BTreeMap<String, usize>>,
    module: &str,
    callbacks: usize,
) {
    let Some(by_module) = by_module else {
        return;
    };
    by_module.insert(module.to_owned(), callbacks);
    let armed: usize = by_module.values().sum();
    let kind = families::CALLBACK_PROBES.to_owned();
    f.probes_armed
        .get_or_create(&ProbeLabel { kind })
        .set(armed as i64);
}

/// A completed call: counted, its latency observed, its error counted.
fn callback_returned(f: &Families, handles: &mut PhyHandles, closed: &ClosedCallback) {
    let op = &*closed.callback.name;
    handles.callback(f, op).returned(closed.latency_ns);
    if closed.ret < 0 {
        let errno =
            render::errno_name(closed.ret).map_or_else(|| closed.ret.to_string(), str::to_owned);
        let labels = ErrorLabels {
            phy: handles.labels.phy.clone(),
            driver: handles.labels.driver.clone(),
            op: op.to_owned(),
            errno,
        };
        f.callback_errors.get_or_create(&labels).inc();
    }
}

/// A `phy_state` entered: counted, and the current state moved.
fn state_changed(f: &Families, labels: &PhyLabels, transition: &StateTransition) {
    let to = &*transition.to.name;
    f.state_transitions
        .get_or_create(&to_labels(labels, to))
        .inc();
    let state = |name: &str| StateLabels {
        phy: labels.phy.clone(),
        driver: labels.driver.clone(),
        state: name.to_owned(),
    };
    if let Some(from) = &transition.from {
        f.state.get_or_create(&state(&from.name)).set(0);
    }
    f.state.get_or_create(&state(to)).set(1);
}

/// Bytes per second in one Mb/s, the unit the kernel gives speeds in.
const BYTES_PER_SECOND_PER_MBIT: i64 = 125_000;

/// The link as a callback's return showed it.
fn set_link(handles: &PhyHandles, link: &LinkState) {
    handles.link_up.set(i64::from(link.up));
    let speed = if link.speed > 0 {
        i64::from(link.speed) * BYTES_PER_SECOND_PER_MBIT
    } else {
        0
    };
    handles.link_speed.set(speed);
    handles
        .link_full_duplex
        .set(i64::from(link.duplex == Duplex::Full));
}

/// `labels` with `to`.
fn to_labels(labels: &PhyLabels, to: &str) -> ToLabels {
    ToLabels {
        phy: labels.phy.clone(),
        driver: labels.driver.clone(),
        to: to.to_owned(),
    }
}
