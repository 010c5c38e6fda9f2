//! Reading the ring buffer in order: records handed to a [`Sink`] as they come, with the
//! events phytrace stamps itself (attachments at start) and the kernel's log lines released
//! in their place among them, and module loads and unloads acted on where they happen.

use std::{
    cell::OnceCell,
    collections::VecDeque,
    time::{Duration, Instant},
};

use anyhow::Result;
use aya::programs::Program;
use phytrace_common::{RawEvent, RawKind, RawNamed};

use super::{Tracer, prefetch::read_callbacks};
use crate::event::{Callback, Event};
use crate::probe::{
    driver_probes::SymbolArmer,
    ring_wait::{self, MAX_BATCH, Read},
};
use crate::records::{
    decode::{Decoder, c_string},
    raw::{self, Record},
};

/// How often drop counters are checked.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// A ring-buffer record handed to the sinks: its bytes as the ring held them, parsed, and its
/// event, decoded once, when a sink first asks.
pub struct Received<'a> {
    bytes: &'a [u8],
    parsed: &'a Record<'a>,
    decoder: &'a Decoder,
    event: OnceCell<Option<Event>>,
}

impl<'a> Received<'a> {
    /// The record `bytes`, parsed as `parsed`, which `decoder` names: the PHY or bus an
    /// identity names is learnt here, before any sink sees the record.
    pub fn new(decoder: &'a mut Decoder, bytes: &'a [u8], parsed: &'a Record<'a>) -> Self {
        if let Record::Identity(_) = parsed {
            decoder.decode(parsed);
        }
        Self {
            bytes,
            parsed,
            decoder,
            event: OnceCell::new(),
        }
    }

    /// The record as the ring held it.
    pub fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// The record, parsed.
    pub fn parsed(&self) -> &Record<'a> {
        self.parsed
    }

    /// Its event; none for records that are not driver events (identities, the self-test).
    pub fn event(&self) -> Option<&Event> {
        self.event
            .get_or_init(|| self.decoder.decode_known(self.parsed))
            .as_ref()
    }

    /// How many probe keys the session named so far.
    pub fn keys_named(&self) -> usize {
        self.decoder.key_count()
    }

    /// The probe keys named after the first `known`, with their callbacks.
    pub fn keys_after(&self, known: usize) -> impl Iterator<Item = (u64, &Callback)> {
        self.decoder.keys_after(known)
    }
}

/// Where a session's records go: decoded into events, or kept as the ring buffer held them.
pub trait Sink {
    /// An event phytrace itself made (a module attached or detached, events lost).
    fn event(&mut self, event: Event);

    /// A ring-buffer record; by default its event is handed to [`Sink::event`].
    fn receive(&mut self, record: &Received<'_>) {
        if let Some(event) = record.event() {
            self.event(event.clone());
        }
    }

    /// A read of the ring buffer ended: what the sink counted and kept back goes out.
    fn flush(&mut self) {}
}

impl<F: FnMut(Event)> Sink for F {
    fn event(&mut self, event: Event) {
        self(event);
    }
}

/// Events phytrace stamped itself, waiting for their place in the stream, and where the
/// stream is.
#[derive(Debug, Default)]
pub struct Held {
    /// In time order: handed out before the first record of their CPU stamped later, or when
    /// the ring is found empty.
    events: VecDeque<Event>,
    /// Time and CPU of the last record read: events phytrace adds later are stamped with them,
    /// so that every CPU's records stay in time order.
    last_seen: (u64, u32),
}

impl Held {
    /// Holds `event` until its place comes.
    pub fn hold(&mut self, event: Event) {
        self.events.push_back(event);
    }

    /// A record stamped `ts_ns` on `cpu` was read: hands out the held events that come before
    /// it. The records of one CPU come in time order, so none of that CPU stamped earlier
    /// follows.
    pub fn seen(&mut self, ts_ns: u64, cpu: u32, out: &mut impl Sink) {
        self.last_seen = (ts_ns, cpu);
        while let Some(event) = self
            .events
            .pop_front_if(|event| event.cpu == cpu && event.ts_ns <= ts_ns)
        {
            out.event(event);
        }
    }

    /// Every record stamped before now has been read: hands out every held event.
    pub fn release_all(&mut self, out: &mut impl Sink) {
        self.events.drain(..).for_each(|event| out.event(event));
    }

    /// Time and CPU of the last record read.
    pub fn last_seen(&self) -> (u64, u32) {
        self.last_seen
    }
}

impl Tracer {
    /// Waits until records arrive or [`POLL_INTERVAL`] passes, then hands `out` what happened:
    /// driver events, module (re)attachments, and lost-event counts. Cancel-safe.
    pub async fn next_events(&mut self, out: &mut impl Sink) -> Result<()> {
        let deadline = POLL_INTERVAL.saturating_sub(self.last_poll.elapsed());
        ring_wait::wait(&mut self.ring, self.last_read, deadline).await?;
        self.last_read = self.drain(out, MAX_BATCH)?;
        if self.last_poll.elapsed() >= POLL_INTERVAL {
            self.last_poll = Instant::now();
            if let Some(sites) = &mut self.call_sites {
                sites.close_stranded();
            }
            self.mac.arm_found(&mut self.ebpf, &mut self.notes);
            self.report_drops(out)?;
        }
        Ok(())
    }

    /// Ends the session: detaches every program (none runs any more once this returns), then
    /// hands `out` every record left in the ring and the last lost-event counts.
    pub fn finish(&mut self, out: &mut impl Sink) -> Result<()> {
        if let Some(sites) = &mut self.call_sites {
            sites.disarm();
        }
        self.mac.disarm(&mut self.notes);
        self.probes.disarm_all();
        for (_, program) in self.ebpf.programs_mut() {
            // Unloading detaches its links; one that fails to unload is detached when the
            // session is dropped.
            let _ = match program {
                Program::KProbe(p) => p.unload(),
                Program::FEntry(p) => p.unload(),
                Program::FExit(p) => p.unload(),
                Program::RawTracePoint(p) => p.unload(),
                _ => Ok(()),
            };
        }
        self.flush(out)
    }

    /// Hands `out` every record in the ring buffer until it is empty (at most a full ring's
    /// worth, should the kernel still be producing), then any lost-event count.
    pub fn flush(&mut self, out: &mut impl Sink) -> Result<()> {
        while self.drain(out, self.ring_capacity())? == Read::Backlog {}
        self.report_drops(out)
    }

    /// How many records a full ring buffer holds (at most: the smallest is a `RawEvent` and
    /// its 8-byte header).
    fn ring_capacity(&self) -> usize {
        self.options.ring_size as usize / (size_of::<RawEvent>() + 8)
    }

    /// Hands `out` up to `limit` records from the ring buffer.
    fn drain(&mut self, out: &mut impl Sink, limit: usize) -> Result<Read> {
        // The kernel's lines printed so far, before the records stamped after them.
        self.kmsg.poll();
        for taken in 0..limit {
            let Some(record) = self.ring.get_mut().next() else {
                // Every record stamped before now has been read.
                self.held.release_all(out);
                self.kmsg.release_all(out);
                out.flush();
                return Ok(Read::after(taken, limit));
            };
            let Some(parsed) = raw::parse(&record) else {
                self.losses.discard();
                continue;
            };
            let stamped = match &parsed {
                Record::Event(raw) => Some(&**raw),
                Record::Named(named) => Some(&named.event),
                Record::Identity(_) => None,
            };
            if let Some(raw) = stamped {
                self.held.seen(raw.ts_ns, u32::from(raw.cpu), out);
                self.kmsg.release(raw.ts_ns, u32::from(raw.cpu), out);
            }
            if let Record::Named(named) = &parsed
                && let Some(kind @ (RawKind::ModuleLoad | RawKind::ModuleFree)) =
                    RawKind::from_u8(named.event.kind)
            {
                let named: RawNamed = **named;
                drop(record);
                self.module_changed(kind, &named, out)?;
                continue;
            }
            if let Some(sites) = &mut self.call_sites {
                sites.teach(&mut self.decoder, &parsed);
            }
            let received = Received::new(&mut self.decoder, &record, &parsed);
            // The PHYs and the network devices they are attached to, for the kernel's lines
            // naming them.
            match &parsed {
                Record::Identity(identity) => self.kmsg.learn_phy(identity),
                Record::Named(_) => {
                    if let Some(event) = received.event() {
                        self.kmsg.learn(event);
                    }
                }
                Record::Event(_) => {}
            }
            out.receive(&received);
        }
        out.flush();
        Ok(Read::after(limit, limit))
    }

    /// A module went live or away: reports it where it happened in the stream (see
    /// [`super::arming::Arming::loaded`]), and rearms phylink's MAC call sites.
    fn module_changed(
        &mut self,
        kind: RawKind,
        named: &RawNamed,
        out: &mut impl Sink,
    ) -> Result<()> {
        let module = c_string(&named.name);
        self.mac.module_changed(kind, &module, &mut self.notes);
        if kind == RawKind::ModuleLoad {
            if let Some(sites) = &mut self.call_sites {
                sites.module_loaded();
            }
            self.mdio_module_loaded(&module);
        }
        let at = (named.event.ts_ns, u32::from(named.event.cpu));
        let event = if kind == RawKind::ModuleFree {
            self.arming.freed(module, at)
        } else {
            let mut armer = SymbolArmer {
                probes: &mut self.probes,
                ebpf: &mut self.ebpf,
                decoder: &mut self.decoder,
            };
            self.arming
                .loaded(module, at, &mut armer, read_callbacks, &mut self.notes)?
        };
        if let Some(event) = event {
            out.event(event);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::session::own_event_at;

    /// An event phytrace stamped `ts_ns` on `cpu`.
    fn own(ts_ns: u64, cpu: u32) -> Event {
        own_event_at(ts_ns, cpu, EventKind::Detached { module: "m".into() })
    }

    fn stamps(events: &[Event]) -> Vec<(u64, u32)> {
        events.iter().map(|e| (e.ts_ns, e.cpu)).collect()
    }

    #[test]
    fn held_events_come_before_the_first_later_record_of_their_cpu() {
        let mut held = Held::default();
        held.hold(own(100, 0));
        held.hold(own(150, 1));
        held.hold(own(200, 0));
        let mut out = Vec::new();
        // Another CPU's record releases nothing of CPU 0, and stops at the first of CPU 0.
        held.seen(120, 1, &mut |e| out.push(e));
        assert!(out.is_empty());
        held.seen(180, 0, &mut |e| out.push(e));
        assert_eq!(stamps(&out), [(100, 0)]);
        held.seen(180, 1, &mut |e| out.push(e));
        assert_eq!(stamps(&out), [(100, 0), (150, 1)]);
        assert_eq!(held.last_seen(), (180, 1));
        held.release_all(&mut |e| out.push(e));
        assert_eq!(stamps(&out), [(100, 0), (150, 1), (200, 0)]);
    }

    #[test]
    fn a_record_stamped_the_same_time_follows_the_held_event() {
        let mut held = Held::default();
        held.hold(own(100, 2));
        let mut out = Vec::new();
        held.seen(100, 2, &mut |e| out.push(e));
        assert_eq!(stamps(&out), [(100, 2)]);
    }
}
