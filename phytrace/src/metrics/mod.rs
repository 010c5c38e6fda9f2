//! Metrics for Prometheus: one more sink of the [`Model`](crate::model::Model), like
//! [`stats`](crate::stats). Per PHY (labels `phy` = `bus:addr`, `driver`, `op` where it
//! applies): callbacks, their latency and errors, MDIO accesses and errors, link and
//! `phy_state` changes, the MAC side, kernel messages; and phytrace's own health. Served live
//! over HTTP as OpenMetrics text (`record --metrics`, `tui --metrics`), printed for a capture
//! (`stats --format openmetrics`): the same families either way, docs/lab.md.
//!
//! [`families`] names them, [`Feed`] updates them from what the model made of each event,
//! [`serve`] exposes them, [`MetricsSink`] takes a live session's events.

pub mod families;
pub mod serve;
mod sink;
mod update;

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::encoding::text;
use prometheus_client::registry::Registry;

use crate::capture::{Capture, Header};
use crate::model::Model;
use crate::probe::phy_site_probes::CallbackProbes;
pub use families::Families;
pub use sink::{MetricsSink, Tee};
pub use update::Feed;

/// The media type of the exposition, as Prometheus negotiates it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metric families of one session or of captures, and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    families: Families,
    registry: Registry,
    /// With probes on the Rust callback symbols: those armed at the start, by module. The
    /// modules attached and detached later move `probes_armed{kind="callback"}`.
    symbol_probes: Option<BTreeMap<String, usize>>,
}

/// What only a live session knows of its probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveHealth {
    /// Size of the kernel ring buffer, in bytes.
    pub ring_size: u32,
    /// Call sites the kernel refused to probe.
    pub call_sites_refused: usize,
}

impl Metrics {
    /// The metrics of a session `header` describes; `live` for a session running now.
    pub fn new(header: &Header, live: Option<LiveHealth>) -> Self {
        let (families, mut registry) = Families::register(live.is_some());
        families::register_build_info(&mut registry, &header.kernel_release);
        let armed = [
            ("call_site", header.call_sites.len()),
            (families::CALLBACK_PROBES, header.probes.len()),
            ("mdio_site", header.mdio_sites.len()),
        ];
        for (kind, count) in armed {
            families
                .probes_armed
                .get_or_create(&families::ProbeLabel {
                    kind: kind.to_owned(),
                })
                .set(count as i64);
        }
        if let Some(live) = live {
            families.ring_size.set(i64::from(live.ring_size));
            families
                .call_sites_refused
                .set(live.call_sites_refused as i64);
        }
        let symbol_probes = (header.callback_probes.as_deref()
            != Some(CallbackProbes::Callsite.name()))
        .then(|| {
            let mut by_module = BTreeMap::new();
            for probe in &header.probes {
                *by_module.entry(probe.module.clone()).or_default() += 1;
            }
            by_module
        });
        Self {
            families,
            registry,
            symbol_probes,
        }
    }

    /// The families, to update.
    pub fn families(&self) -> &Families {
        &self.families
    }

    /// The OpenMetrics text exposition, `# EOF` included.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail, nor can the families' encoders.
        let _ = text::encode(&mut text, &self.registry);
        text
    }
}

/// The exposition of `captures` replayed through the model: counters summed over them, the
/// gauges as the last one left them, the session's health as `header` (the last one's) says.
pub fn of_captures<'a>(header: &Header, captures: impl IntoIterator<Item = &'a Capture>) -> String {
    let metrics = Arc::new(Metrics::new(header, None));
    for capture in captures {
        let mut feed = Feed::new(Arc::clone(&metrics));
        let mut model = Model::new();
        for event in &capture.events {
            let applied = model.apply(event);
            feed.observe(event, &applied, &model);
        }
    }
    metrics.encode()
}

#[cfg(test)]
mod tests;
