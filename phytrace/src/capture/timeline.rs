//! Event times checked against the capture's span and each CPU's order, the records passed on
//! in file order.
//!
//! Every CPU's records are in time order (`docs/capture-format.md`), those of different CPUs
//! interleave. An event earlier than its CPU's previous one, or before the header's clock
//! reading, is refused at once. An event later than the one after it on its CPU is either a
//! time pushed forward or the next one pushed back: each CPU's latest events are held until
//! a third one tells which (the two that agree stay), and the last ones until the trailer's
//! end bounds them. Held events keep back the records after them, at most [`MAX_HELD`]: past
//! that, the oldest is passed on with the checks it has had.

use std::collections::{HashMap, VecDeque};

use super::reader::{Problem, ReadIssue};
use crate::event::Event;

/// Most records held back behind an event waiting for its CPU's next one.
pub const MAX_HELD: usize = 16_384;
/// How far past the trailer's end an event may be: a writer that stamps the end with the last
/// event it read (the TUI's saved window) may have read another CPU's later event before it.
pub const END_SLACK_NS: u64 = 1_000_000_000;

/// A record on its way out, with where it was read.
#[derive(Debug)]
struct Slot {
    item: Result<Event, ReadIssue>,
    /// Still waiting for its CPU's next event.
    held: bool,
    line: u64,
    offset: u64,
}

/// What is known of one CPU's events.
#[derive(Debug, Default)]
struct Cpu {
    /// Time of its latest event passed on (the capture's start before the first).
    floor_ns: u64,
    /// Its events held, by sequence number: one, or two out of order with each other.
    held: Vec<u64>,
}

/// The records read, in file order, with the events of impossible times refused.
#[derive(Debug)]
pub(super) struct Timeline {
    start_ns: u64,
    slots: VecDeque<Slot>,
    /// Sequence number of the first slot.
    base: u64,
    cpus: HashMap<u32, Cpu>,
}

/// Seconds between two times, for messages.
fn seconds(later: u64, earlier: u64) -> String {
    format!("{:.6} s", later.saturating_sub(earlier) as f64 / 1e9)
}

impl Timeline {
    /// A timeline of a capture whose header read the clock at `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        Self {
            start_ns,
            slots: VecDeque::new(),
            base: 0,
            cpus: HashMap::new(),
        }
    }

    /// The next record that can go out.
    pub fn pop(&mut self) -> Option<Result<Event, ReadIssue>> {
        if self.slots.len() > MAX_HELD && self.slots.front().is_some_and(|s| s.held) {
            self.force_front();
        }
        if self.slots.front()?.held {
            return None;
        }
        self.base += 1;
        self.slots.pop_front().map(|s| s.item)
    }

    /// Adds a damaged record.
    pub fn issue(&mut self, issue: ReadIssue) {
        let (line, offset) = (issue.line, issue.offset);
        self.slots.push_back(Slot {
            item: Err(issue),
            held: false,
            line,
            offset,
        });
    }

    /// Adds an event read at `line` (byte `offset`).
    pub fn event(&mut self, event: Event, line: u64, offset: u64) {
        let seq = self.base + self.slots.len() as u64;
        let (ts, cpu_number) = (event.ts_ns, event.cpu);
        self.slots.push_back(Slot {
            item: Ok(event),
            held: false,
            line,
            offset,
        });
        if ts < self.start_ns {
            let why = format!(
                "timestamp {} before the capture's start",
                seconds(self.start_ns, ts)
            );
            return self.refuse(seq, why);
        }
        let start_ns = self.start_ns;
        let cpu = self.cpus.entry(cpu_number).or_insert_with(|| Cpu {
            floor_ns: start_ns,
            held: Vec::new(),
        });
        if ts < cpu.floor_ns {
            let why = format!(
                "timestamp {} before CPU {cpu_number}'s previous event",
                seconds(cpu.floor_ns, ts)
            );
            return self.refuse(seq, why);
        }
        let held = cpu.held.clone();
        match held[..] {
            [] => {}
            [first] if ts >= self.ts(first) => self.pass(cpu_number, first),
            [_] => {}
            [first, second] if ts >= self.ts(first) => {
                self.refuse_backward(cpu_number, second, self.ts(first));
                self.pass(cpu_number, first);
            }
            [first, second] if ts >= self.ts(second) => {
                self.refuse_forward(cpu_number, first, self.ts(second));
                self.pass(cpu_number, second);
            }
            _ => {
                let why = format!(
                    "timestamp {} before CPU {cpu_number}'s previous event",
                    seconds(self.ts(held[1]), ts)
                );
                return self.refuse(seq, why);
            }
        }
        self.hold(cpu_number, seq);
    }

    /// Decides every held event, the latest of each CPU bounded by `end_ns` (the trailer's
    /// end, if trusted).
    pub fn finish(&mut self, end_ns: Option<u64>) {
        let cpus: Vec<u32> = self.cpus.keys().copied().collect();
        for cpu in cpus {
            let held = self
                .cpus
                .get(&cpu)
                .map(|c| c.held.clone())
                .unwrap_or_default();
            let late = |ts: u64| end_ns.filter(|&end| ts > end.saturating_add(END_SLACK_NS));
            let mut kept = None;
            for &seq in &held {
                let ts = self.ts(seq);
                if let Some(end) = late(ts) {
                    let why = format!("timestamp {} after the capture's end", seconds(ts, end));
                    self.refuse(seq, why);
                } else if let Some(earlier) = kept {
                    self.refuse_backward(cpu, seq, self.ts(earlier));
                } else {
                    kept = Some(seq);
                }
            }
            if let Some(seq) = kept {
                self.pass(cpu, seq);
            }
            self.forget_all(cpu);
        }
    }

    /// Passes on the oldest held event unconfirmed: too much waits behind it.
    fn force_front(&mut self) {
        let Some(Ok(event)) = self.slots.front().map(|s| &s.item) else {
            return;
        };
        let cpu = event.cpu;
        let held = self
            .cpus
            .get(&cpu)
            .map(|c| c.held.clone())
            .unwrap_or_default();
        self.pass(cpu, self.base);
        if let [_, second] = held[..] {
            self.refuse_backward(cpu, second, self.ts(self.base));
        }
    }

    fn slot(&mut self, seq: u64) -> Option<&mut Slot> {
        let index = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.slots.get_mut(index)
    }

    fn ts(&self, seq: u64) -> u64 {
        let index = usize::try_from(seq.saturating_sub(self.base)).unwrap_or(usize::MAX);
        match self.slots.get(index).map(|s| &s.item) {
            Some(Ok(event)) => event.ts_ns,
            _ => 0,
        }
    }

    fn hold(&mut self, cpu: u32, seq: u64) {
        if let Some(slot) = self.slot(seq) {
            slot.held = true;
        }
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.held.push(seq);
        }
    }

    /// Passes on held event `seq` of `cpu`, which then starts that CPU's order.
    fn pass(&mut self, cpu: u32, seq: u64) {
        let ts = self.ts(seq);
        if let Some(slot) = self.slot(seq) {
            slot.held = false;
        }
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.held.retain(|&s| s != seq);
            c.floor_ns = c.floor_ns.max(ts);
        }
    }

    /// Refuses held event `seq` of `cpu`, earlier than the CPU's event at `before_ns`.
    fn refuse_backward(&mut self, cpu: u32, seq: u64, before_ns: u64) {
        let why = format!(
            "timestamp {} before CPU {cpu}'s previous event",
            seconds(before_ns, self.ts(seq))
        );
        self.refuse(seq, why);
        self.forget(cpu, seq);
    }

    /// Refuses held event `seq` of `cpu`, later than the CPU's next events (from `next_ns`).
    fn refuse_forward(&mut self, cpu: u32, seq: u64, next_ns: u64) {
        let why = format!(
            "timestamp {} after CPU {cpu}'s next event",
            seconds(self.ts(seq), next_ns)
        );
        self.refuse(seq, why);
        self.forget(cpu, seq);
    }

    fn forget(&mut self, cpu: u32, seq: u64) {
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.held.retain(|&s| s != seq);
        }
    }

    fn forget_all(&mut self, cpu: u32) {
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.held.clear();
        }
    }

    /// Replaces event `seq` by the issue saying why it is refused.
    fn refuse(&mut self, seq: u64, why: String) {
        let Some(slot) = self.slot(seq) else { return };
        slot.held = false;
        slot.item = Err(ReadIssue {
            line: slot.line,
            offset: slot.offset,
            problem: Problem::Impossible(why),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, LossCause};
    use crate::test_events;

    fn event(cpu: u32, ts_ns: u64) -> Event {
        let lost = EventKind::Lost {
            count: 1,
            cause: Some(LossCause::RingFull),
        };
        Event {
            cpu,
            ..test_events::event(ts_ns, lost)
        }
    }

    /// Passes `(cpu, ts)` events through a timeline starting at 100 and ending at `end_ns`:
    /// the times passed on, and the lines refused with why.
    fn screen(events: &[(u32, u64)], end_ns: Option<u64>) -> (Vec<u64>, Vec<(u64, String)>) {
        let mut timeline = Timeline::new(100);
        let (mut passed, mut refused) = (Vec::new(), Vec::new());
        let mut take = |timeline: &mut Timeline| {
            while let Some(item) = timeline.pop() {
                match item {
                    Ok(event) => passed.push(event.ts_ns),
                    Err(issue) => refused.push((issue.line, issue.problem.to_string())),
                }
            }
        };
        for (line, &(cpu, ts)) in events.iter().enumerate() {
            timeline.event(event(cpu, ts), line as u64 + 2, 0);
            take(&mut timeline);
        }
        timeline.finish(end_ns);
        take(&mut timeline);
        (passed, refused)
    }

    #[test]
    fn cpus_interleave_each_in_order() {
        let events = [(0, 200), (1, 150), (0, 300), (1, 160), (1, 400), (0, 310)];
        let (passed, refused) = screen(&events, Some(500));
        assert_eq!(passed, [200, 150, 300, 160, 400, 310]);
        assert!(refused.is_empty());
    }

    #[test]
    fn a_time_pushed_forward_or_back_costs_its_event_only() {
        let forward = [
            (0, 200),
            (1, 150),
            (0, 90_000),
            (0, 300),
            (1, 160),
            (0, 310),
        ];
        let (passed, refused) = screen(&forward, None);
        assert_eq!(passed, [200, 150, 300, 160, 310]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, 4);
        assert!(
            refused[0].1.contains("after CPU 0's next event"),
            "{refused:?}"
        );

        let back = [(0, 200), (0, 300), (0, 250), (0, 400), (0, 500)];
        let (passed, refused) = screen(&back, None);
        assert_eq!(passed, [200, 300, 400, 500]);
        assert_eq!(refused[0].0, 4);
        assert!(refused[0].1.contains("before CPU 0's previous event"));

        let below = [(0, 200), (0, 150), (0, 400)];
        assert_eq!(screen(&below, None).0, [200, 400]);
    }

    #[test]
    fn times_outside_the_capture_are_refused() {
        let (passed, refused) = screen(&[(0, 50), (0, 200), (1, u64::MAX)], Some(300));
        assert_eq!(passed, [200]);
        assert!(refused[0].1.contains("before the capture's start"));
        assert!(refused[1].1.contains("after the capture's end"));
        let (passed, _) = screen(&[(0, 200), (1, 300 + END_SLACK_NS)], Some(300));
        assert_eq!(passed, [200, 300 + END_SLACK_NS]);
    }

    #[test]
    fn a_silent_cpu_holds_back_a_bounded_number_of_records() {
        let mut timeline = Timeline::new(0);
        timeline.event(event(0, 10), 2, 0);
        for i in 0..MAX_HELD as u64 + 10 {
            timeline.event(event(1, 20 + i), i + 3, 0);
            while timeline.pop().is_some() {}
            assert!(timeline.slots.len() <= MAX_HELD + 1);
        }
    }
}
