//! A capture read once through the model: the facts rules match, grouped per PHY, the calls
//! whose return was never seen, and what the model said each event changed (for the report).

use std::collections::BTreeMap;

use crate::event::{Event, Text};
use crate::model::{Applied, Fact, LostReturn, Model};

/// The facts of one PHY and who it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhyFacts {
    /// Bound driver name (latest non-empty).
    pub driver: Text,
    /// PHY ID (latest non-zero).
    pub phy_id: u32,
    /// Facts in capture order.
    pub facts: Vec<Fact>,
}

/// What the model made of the events of a capture.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The facts of every PHY, by `bus:addr` key.
    pub phys: BTreeMap<String, PhyFacts>,
    /// Calls entered whose return was never seen: given up by the model, or still running
    /// at the end.
    pub unfinished: Vec<LostReturn>,
    /// What applying each event changed, by event index (completed runs left out).
    pub applied: Vec<Applied>,
}

impl Observed {
    /// Applies `events` in order to a model that says what each established.
    pub fn of(events: &[Event]) -> Self {
        let mut model = Model::with_facts();
        let mut observed = Self {
            applied: Vec::with_capacity(events.len()),
            ..Self::default()
        };
        for event in events {
            let mut applied = model.apply(event);
            applied.closed = None;
            observed
                .unfinished
                .extend(model.lost_returns().iter().cloned());
            if let (Some(key), Some(phy)) = (&applied.key, &event.phy) {
                let facts = observed.phys.entry(key.clone()).or_default();
                if !phy.driver.is_empty() {
                    facts.driver = phy.driver.clone();
                }
                if phy.phy_id != 0 {
                    facts.phy_id = phy.phy_id;
                }
                facts.facts.extend(model.drain_facts());
            }
            observed.applied.push(applied);
        }
        let end = model.span_ns.map_or(0, |(_, last)| last);
        observed.unfinished.extend(model.still_running(end));
        observed
    }
}
