//! Loss accounting: events the kernel side could not deliver, counted by cause (in the
//! programs' `DROPS` map, and kprobe returns the kernel missed), reported as `Lost` events as
//! the counts grow; and ring records phytrace could not read.

use anyhow::Result;
use phytrace_common::DropCause;

use super::{Sink, Tracer, own_event_at};
use crate::event::{EventKind, LossCause};

/// Losses reported so far, and records discarded.
#[derive(Debug, Default)]
pub struct Losses {
    /// Losses reported, by cause (in [`LossCause::ALL`]'s order).
    reported: [u64; 4],
    /// Ring-buffer records that could not be read.
    discarded: u64,
}

impl Losses {
    /// Counts a ring-buffer record that could not be read.
    pub fn discard(&mut self) {
        self.discarded += 1;
    }

    /// Hands `out` a `Lost` event, stamped `at` (time, CPU), for each cause whose count in
    /// `lost` (in [`LossCause::ALL`]'s order) grew since the last report.
    pub fn report(&mut self, lost: [u64; 4], at: (u64, u32), out: &mut impl Sink) {
        for (i, cause) in LossCause::ALL.into_iter().enumerate() {
            if lost[i] > self.reported[i] {
                out.event(own_event_at(
                    at.0,
                    at.1,
                    EventKind::Lost {
                        count: lost[i] - self.reported[i],
                        cause: Some(cause),
                    },
                ));
                self.reported[i] = lost[i];
            }
        }
    }
}

impl Tracer {
    /// Events lost in the kernel so far, by cause (in [`LossCause::ALL`]'s order).
    pub fn lost_by_cause(&self) -> Result<[u64; 4]> {
        let mut lost = [0; 4];
        for (slot, cause) in lost.iter_mut().zip(LossCause::ALL) {
            let index = match cause {
                LossCause::RingFull => DropCause::RingFull,
                LossCause::TooDeep => DropCause::TooDeep,
                LossCause::MapFull => DropCause::MapFull,
                LossCause::MissedReturn => {
                    // Unreadable kprobe_profile: the count stays where it was.
                    *slot = self
                        .probes
                        .missed_returns()
                        .unwrap_or(self.losses.reported[3]);
                    continue;
                }
            };
            *slot = self.drops.get(&(index as u32), 0)?.iter().sum::<u64>();
        }
        Ok(lost)
    }

    /// Hands `out` the losses counted since the last call, and notes the call sites disabled
    /// since.
    pub(super) fn report_drops(&mut self, out: &mut impl Sink) -> Result<()> {
        if let Some(sites) = &mut self.call_sites {
            self.notes.extend(sites.newly_disabled()?);
        }
        self.notes.extend(self.mac.newly_disabled()?);
        let lost = self.lost_by_cause()?;
        self.losses.report(lost, self.held.last_seen(), out);
        Ok(())
    }

    /// Ring-buffer records that could not be read so far.
    pub fn discarded(&self) -> u64 {
        self.losses.discarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    fn lost(events: &[Event]) -> Vec<(u64, Option<LossCause>, u64, u32)> {
        events
            .iter()
            .map(|e| match e.kind {
                EventKind::Lost { count, cause } => (count, cause, e.ts_ns, e.cpu),
                _ => panic!("not a loss: {e:?}"),
            })
            .collect()
    }

    #[test]
    fn only_what_grew_since_the_last_report_is_reported() {
        let mut losses = Losses::default();
        let mut out = Vec::new();
        losses.report([0; 4], (10, 0), &mut |e| out.push(e));
        assert!(out.is_empty());
        losses.report([3, 0, 0, 1], (20, 1), &mut |e| out.push(e));
        assert_eq!(
            lost(&out),
            [
                (3, Some(LossCause::ALL[0]), 20, 1),
                (1, Some(LossCause::ALL[3]), 20, 1)
            ]
        );
        out.clear();
        losses.report([5, 0, 0, 1], (30, 0), &mut |e| out.push(e));
        assert_eq!(lost(&out), [(2, Some(LossCause::ALL[0]), 30, 0)]);
    }

    #[test]
    fn a_count_that_goes_back_is_not_reported_until_it_passes_the_last() {
        let mut losses = Losses::default();
        let mut out = Vec::new();
        losses.report([0, 0, 0, 4], (1, 0), &mut |e| out.push(e));
        out.clear();
        // A count below the last one reported adds nothing.
        losses.report([0, 0, 0, 2], (2, 0), &mut |e| out.push(e));
        assert!(out.is_empty());
        losses.report([0, 0, 0, 6], (3, 0), &mut |e| out.push(e));
        assert_eq!(lost(&out), [(2, Some(LossCause::ALL[3]), 3, 0)]);
    }
}
