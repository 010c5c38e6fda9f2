//! A live session's events into the metrics: [`MetricsSink`] applies them to a model of its
//! own and feeds the metrics; [`Tee`] hands a session's records to the capture and to it.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use super::{Feed, LiveHealth, Metrics, serve};
use crate::capture::Header;
use crate::event::{Event, PhyFilter};
use crate::model::Model;
use crate::probe::tracer::Sink;
use crate::records::decode::Decoder;
use crate::records::raw::Record;

/// State and link changes the sink's model keeps per PHY: the metrics need only the latest.
const HISTORY_CAP: usize = 16;

/// The metrics of a live session, served over HTTP while it runs.
pub struct MetricsSink {
    feed: Feed,
    model: Model,
    filter: Option<PhyFilter>,
    address: SocketAddr,
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
        Ok(Self {
            feed: Feed::new(metrics),
            model: Model::with_history_cap(HISTORY_CAP),
            filter,
            address,
        })
    }

    /// Where the metrics are served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Sink for MetricsSink {
    fn event(&mut self, event: Event) {
        if self.filter.as_ref().is_none_or(|f| f.keeps(&event)) {
            let applied = self.model.apply(&event);
            self.feed.observe(&event, &applied, &self.model);
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

    fn record(&mut self, decoder: &mut Decoder, bytes: &[u8], parsed: &Record<'_>) {
        self.0.record(decoder, bytes, parsed);
        if let Some(second) = &mut self.1 {
            second.record(decoder, bytes, parsed);
        }
    }
}
