//! The metric families phytrace exposes, their labels and their registry: one place that
//! names them, so that the live server, `stats --format openmetrics` and docs/lab.md agree.
//!
//! Labels are bounded: a PHY (`phy`, `driver`), a callback op, an errno, an MDIO op, a state
//! name, a level or a cause; never a time, a thread or a value.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds of the callback latency buckets, in seconds: 1-2.5-5 steps from 1 µs (a
/// simulated bus) to 250 ms (several USB MDIO round trips).
pub const LATENCY_BUCKETS: [f64; 18] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1, 0.25, 0.5,
];

/// A PHY: its `bus:addr` key and its bound driver (empty when none).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhyLabels {
    pub phy: String,
    pub driver: String,
}

/// A PHY and an op: one of its driver's callbacks (`read_status`), or an MDIO access
/// (`read`, `write`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallbackLabels {
    pub phy: String,
    pub driver: String,
    pub op: String,
}

/// A callback's negative return, by errno name (`EIO`; the number where it has none).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub phy: String,
    pub driver: String,
    pub op: String,
    pub errno: String,
}

/// A PHY and what it changed to: `up` or `down` for its link, a `phy_state` name
/// (`RUNNING`) for its state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToLabels {
    pub phy: String,
    pub driver: String,
    pub to: String,
}

/// A PHY and one of its `phy_state`s.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub phy: String,
    pub driver: String,
    pub state: String,
}

/// A PHY and a MAC-side event (`mac_link_up`, `carrier_on`, …).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MacLabels {
    pub phy: String,
    pub driver: String,
    pub event: String,
}

/// A PHY (empty when the line names none) and a kernel log level (`err`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KmsgLabels {
    pub phy: String,
    pub driver: String,
    pub level: String,
}

/// Why events were lost (`ring_full`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabel {
    pub cause: String,
}

/// A kind of probe (`call_site`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProbeLabel {
    pub kind: String,
}

/// `probes_armed`'s kind of the probes on Rust callback symbols.
pub const CALLBACK_PROBES: &str = "callback";

/// This phytrace and the kernel it traces (or traced, for a capture).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: String,
    pub kernel: String,
}

/// A histogram with [`LATENCY_BUCKETS`].
fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Every family, registered in one [`Registry`] with the `phytrace` prefix. The metrics are
/// shared handles: updating one here updates what the registry encodes.
#[derive(Debug)]
pub struct Families {
    pub callbacks: Family<CallbackLabels, Counter>,
    pub callback_latency: Family<CallbackLabels, Histogram, fn() -> Histogram>,
    pub callback_errors: Family<ErrorLabels, Counter>,
    pub mdio_accesses: Family<CallbackLabels, Counter>,
    pub mdio_errors: Family<CallbackLabels, Counter>,
    pub link_changes: Family<ToLabels, Counter>,
    pub link_up: Family<PhyLabels, Gauge>,
    pub link_speed: Family<PhyLabels, Gauge>,
    pub link_full_duplex: Family<PhyLabels, Gauge>,
    pub state_transitions: Family<ToLabels, Counter>,
    pub state: Family<StateLabels, Gauge>,
    pub mac_events: Family<MacLabels, Counter>,
    pub carrier_up: Family<PhyLabels, Gauge>,
    pub kernel_messages: Family<KmsgLabels, Counter>,
    pub events: Counter,
    pub events_lost: Family<CauseLabel, Counter>,
    pub ring_size: Gauge,
    pub probes_armed: Family<ProbeLabel, Gauge>,
    pub call_sites_refused: Gauge,
}

impl Families {
    /// Every family, empty, registered in a new registry; those of the kernel ring buffer
    /// and of the call sites refused only for a `live` session (a capture knows neither).
    pub fn register(live: bool) -> (Self, Registry) {
        let families = Self {
            callbacks: Family::default(),
            callback_latency: Family::new_with_constructor(latency_histogram),
            callback_errors: Family::default(),
            mdio_accesses: Family::default(),
            mdio_errors: Family::default(),
            link_changes: Family::default(),
            link_up: Family::default(),
            link_speed: Family::default(),
            link_full_duplex: Family::default(),
            state_transitions: Family::default(),
            state: Family::default(),
            mac_events: Family::default(),
            carrier_up: Family::default(),
            kernel_messages: Family::default(),
            events: Counter::default(),
            events_lost: Family::default(),
            ring_size: Gauge::default(),
            probes_armed: Family::default(),
            call_sites_refused: Gauge::default(),
        };
        let mut registry = Registry::with_prefix("phytrace");
        let f = &families;
        let r = &mut registry;
        r.register(
            "callbacks",
            "Driver callbacks that returned, per PHY and op",
            f.callbacks.clone(),
        );
        r.register_with_unit(
            "callback_duration",
            "Time inside a driver callback, from its return",
            Unit::Seconds,
            f.callback_latency.clone(),
        );
        r.register(
            "callback_errors",
            "Driver callbacks that returned a negative errno, per PHY, op and errno",
            f.callback_errors.clone(),
        );
        r.register(
            "mdio_accesses",
            "MDIO register accesses, successful or not, per PHY and op (read, write)",
            f.mdio_accesses.clone(),
        );
        r.register(
            "mdio_errors",
            "MDIO register accesses the bus failed, per PHY and op (read, write)",
            f.mdio_errors.clone(),
        );
        r.register(
            "link_changes",
            "Link changes a callback return showed, per PHY and direction (to: up, down); \
             the first link seen counts",
            f.link_changes.clone(),
        );
        r.register(
            "link_up",
            "Whether the PHY's link is up (1) or down (0), as last seen",
            f.link_up.clone(),
        );
        r.register(
            "link_speed_bytes_per_second",
            "The PHY's link speed as last seen, in bytes per second (100 Mb/s: 12.5e6; 0 when \
             unknown)",
            f.link_speed.clone(),
        );
        r.register(
            "link_full_duplex",
            "Whether the PHY's link is full duplex (1) or not (0), as last seen",
            f.link_full_duplex.clone(),
        );
        r.register(
            "phy_state_transitions",
            "phy_state entries, per PHY and state entered (to); the first state seen counts",
            f.state_transitions.clone(),
        );
        r.register(
            "phy_state",
            "The PHY's phy_state: 1 for the current one, 0 for the others seen",
            f.state.clone(),
        );
        r.register(
            "mac_events",
            "MAC-side events of the PHY's link (event: phylink_resolve, mac_link_up, \
             mac_link_down, carrier_on, carrier_off)",
            f.mac_events.clone(),
        );
        r.register(
            "carrier_up",
            "Whether the carrier of the PHY's network device is on (1) or off (0), as last seen",
            f.carrier_up.clone(),
        );
        r.register(
            "kernel_messages",
            "Kernel log lines taken, per PHY (empty: none named) and level (err, warn, …)",
            f.kernel_messages.clone(),
        );
        r.register("events", "Events phytrace handled", f.events.clone());
        r.register(
            "events_lost",
            "Events the kernel side lost, by cause (ring_full, too_deep, map_full, \
             missed_return, unknown)",
            f.events_lost.clone(),
        );
        r.register(
            "probes_armed",
            "Probes armed, by kind: call_site (phylib's op calls), callback (Rust callback \
             symbols), mdio_site (inlined MDIO accessors' bus calls)",
            f.probes_armed.clone(),
        );
        if live {
            r.register_with_unit(
                "ring_size",
                "Size of the kernel ring buffer",
                Unit::Bytes,
                f.ring_size.clone(),
            );
            r.register(
                "call_sites_refused",
                "phylib op call sites found that the kernel refused to probe",
                f.call_sites_refused.clone(),
            );
        }
        (families, registry)
    }
}

/// Registers the build-info gauge (`phytrace_build_info`, always 1) of this phytrace and
/// `kernel`: a gauge, as Prometheus's text format (which promtool reads) has no info type.
pub fn register_build_info(registry: &mut Registry, kernel: &str) {
    let info: Family<BuildLabels, Gauge> = Family::default();
    info.get_or_create(&BuildLabels {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        kernel: kernel.to_owned(),
    })
    .set(1);
    registry.register(
        "build_info",
        "This phytrace's version and the traced kernel's release, always 1",
        info,
    );
}
