//! The TUI's state: the model, the statistics, the events held for the log and the timeline,
//! what the user looks at (view, focus, filter, mode) and the panes, each keeping its own
//! position. `update` changes it, `ui` draws it; neither does I/O.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::capture::Header;
use crate::event::{Event, EventKind, PhyFilter, Text};
use crate::metrics::Feed;
use crate::model::{Applied, ClosedCallback, Model};
use crate::stats::{CallbackCollector, Collector, PhyCollector, PhyReport};

use super::filter::Filter;
use super::rate::RateMeter;
use super::source::SourceStatus;
use super::ui::theme::Theme;
use super::ui::{
    KmsgPane, LatencyPane, LogPane, PhysPane, RegistersPane, Sequenced, StatesPane, TimelinePane,
};

/// Default number of events held for the log and timeline (`--keep`).
pub const DEFAULT_KEEP: usize = 100_000;

/// An event as the log shows it, with what the model said it changed.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// Sequence number since the start (or the last replay rewind).
    pub seq: u64,
    /// The event.
    pub event: Event,
    /// Its effect (`closed` is moved to the timeline).
    pub applied: Applied,
}

impl Sequenced for LogEntry {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// A completed callback run, for the timeline.
#[derive(Clone, Debug)]
pub struct CallEntry {
    /// Sequence number of its exit event.
    pub seq: u64,
    /// Key of its PHY.
    pub key: String,
    /// The run with its MDIO accesses.
    pub call: ClosedCallback,
}

impl Sequenced for CallEntry {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// A kernel message, for its pane.
#[derive(Clone, Debug)]
pub struct KmsgEntry {
    /// When it was printed.
    pub ts_ns: u64,
    /// Its syslog level, if known.
    pub level: Option<u8>,
    /// Its text.
    pub text: Text,
}

/// The panes, in focus order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pane {
    /// The PHY list.
    #[default]
    Phys,
    /// Registers of the selected PHY.
    Registers,
    /// Callbacks of the selected PHY.
    Timeline,
    /// The kernel's log lines.
    Kmsg,
    /// `phy_state` history of the selected PHY.
    States,
    /// All events.
    Log,
    /// Latency percentiles of the selected PHY's callbacks (stats view).
    Latency,
    /// The other numbers of `phytrace stats` for the selected PHY (stats view).
    Figures,
    /// Latency histogram of the selected callback (stats view).
    Histogram,
    /// Link and `phy_state` over time, every PHY (stats view).
    Links,
    /// MDIO accesses per second of the selected PHY (stats view).
    Mdio,
}

impl Pane {
    /// The panes of `view`, in focus order.
    pub fn of(view: View) -> &'static [Self] {
        match view {
            View::Trace => &[
                Self::Phys,
                Self::Registers,
                Self::Timeline,
                Self::Kmsg,
                Self::States,
                Self::Log,
            ],
            View::Stats => &[
                Self::Latency,
                Self::Figures,
                Self::Histogram,
                Self::Links,
                Self::Mdio,
            ],
        }
    }

    /// The next pane of `view` (`forward`) or the previous one, wrapping; the first one if
    /// `self` is not in `view`.
    pub fn cycle(self, view: View, forward: bool) -> Self {
        let order = Self::of(view);
        let n = order.len();
        let next = match order.iter().position(|p| *p == self) {
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
            None => 0,
        };
        order[next]
    }
}

/// Which set of panes fills the screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    /// PHYs, registers, callbacks, `phy_state` history and events.
    #[default]
    Trace,
    /// Link/state timeline, latency percentiles and histogram, MDIO rate.
    Stats,
}

/// What a prompt asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    /// Text to search in the log.
    Search,
    /// Log filter.
    Filter,
    /// Time to jump to, in seconds.
    Goto,
    /// File to save the held events to.
    Save,
}

/// Input mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Keys act on the panes.
    #[default]
    Normal,
    /// The help overlay is shown.
    Help,
    /// A one-line prompt is being edited.
    Prompt(PromptKind, String),
}

/// The panes that keep a position of their own; the others show what these select.
#[derive(Debug, Default)]
pub struct Panes {
    /// The PHY list: which PHY the panes show.
    pub phys: PhysPane,
    /// The registers and their scroll.
    pub registers: RegistersPane,
    /// The callbacks and their cursor.
    pub timeline: TimelinePane,
    /// The kernel's lines and their scroll.
    pub kmsg: KmsgPane,
    /// The `phy_state` history and its scroll.
    pub states: StatesPane,
    /// The events and their cursor.
    pub log: LogPane,
    /// The latency table: which callback the histogram shows.
    pub latency: LatencyPane,
}

/// Everything the TUI shows.
#[derive(Debug)]
pub struct App {
    /// Per-PHY state.
    pub(super) model: Model,
    /// Description of the events (for saving).
    pub(super) header: Header,
    /// Timestamps are shown relative to this.
    pub(super) start_ns: u64,
    /// Events held, oldest first, at most `keep`.
    pub(super) log: VecDeque<LogEntry>,
    /// Completed callbacks held, oldest first, at most `keep`.
    pub calls: VecDeque<CallEntry>,
    /// The kernel's lines held, oldest first, at most `keep`.
    pub(super) kmsgs: VecDeque<KmsgEntry>,
    /// Events held at most.
    keep: usize,
    /// Statistics of every event taken in (not only the held ones): latencies, MDIO rate, link
    /// and state history, per PHY and callback.
    pub stats: Collector,
    /// The metrics served (`--metrics`), fed every event taken in, as the statistics are.
    pub metrics: Option<Feed>,
    /// Registers of each PHY when its latest top-level callback was entered.
    pub(super) baselines: BTreeMap<String, BTreeMap<u16, u16>>,
    /// Panes shown.
    pub view: View,
    /// Focused pane.
    pub focus: Pane,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// The panes' positions.
    pub panes: Panes,
    /// Log filter.
    pub filter: Filter,
    /// Log search text (lower case).
    pub(super) search: Option<String>,
    /// Input mode.
    pub mode: Mode,
    /// Paused by the user.
    pub paused: bool,
    /// Source state for the status line.
    pub(super) source: SourceStatus,
    /// Events per second.
    pub(super) rate: RateMeter,
    /// A one-off message for the status line.
    pub(super) message: Option<String>,
    /// Colours or `NO_COLOR` styles.
    pub(super) theme: Theme,
    /// Only events this keeps are taken in (`--phy`).
    pub phy_filter: Option<PhyFilter>,
    /// This terminal is the kernel's console: a line the console prints lands on the screen.
    pub console_shared: bool,
    /// The screen may hold what phytrace did not draw: clear it and draw it whole.
    pub(super) repaint: bool,
    /// Something changed since the last frame.
    pub(super) dirty: bool,
    /// The user asked to quit.
    pub(super) quit: bool,
    next_seq: u64,
}

impl App {
    /// An empty view holding at most `keep` events; times are shown relative to `start_ns`.
    pub fn new(header: Header, start_ns: u64, keep: usize, theme: Theme) -> Self {
        let keep = keep.max(1);
        Self {
            model: Model::with_history_cap(keep),
            header,
            start_ns,
            // Exactly `keep`: a deque grown by doubling would hold up to twice that once full
            // (memory is taken as entries come).
            log: VecDeque::with_capacity(keep),
            calls: VecDeque::with_capacity(keep),
            kmsgs: VecDeque::new(),
            keep,
            stats: Collector::new(start_ns),
            metrics: None,
            baselines: BTreeMap::new(),
            view: View::default(),
            focus: Pane::default(),
            zoom: false,
            panes: Panes::default(),
            filter: Filter::default(),
            search: None,
            mode: Mode::default(),
            paused: false,
            source: SourceStatus::default(),
            rate: RateMeter::default(),
            message: None,
            theme,
            phy_filter: None,
            console_shared: false,
            repaint: false,
            dirty: true,
            quit: false,
            next_seq: 0,
        }
    }

    /// Forgets every event (a replay rewinds); the view settings stay.
    pub fn reset(&mut self) {
        self.model = Model::with_history_cap(self.keep);
        self.log.clear();
        self.calls.clear();
        self.kmsgs.clear();
        self.stats = Collector::new(self.start_ns);
        self.baselines.clear();
        self.follow_newest();
        self.panes.states.scroll_to_newest();
        self.next_seq = 0;
        self.dirty = true;
    }

    /// Applies events to the model and holds them; `now` is the time since the TUI started.
    pub fn ingest(&mut self, events: impl IntoIterator<Item = Event>, now: Duration) {
        let mut count = 0;
        for event in events {
            if self.phy_filter.as_ref().is_some_and(|f| !f.keeps(&event)) {
                continue;
            }
            self.ingest_one(event);
            count += 1;
        }
        if self.rate.add(count, now) || count > 0 {
            self.dirty = true;
        }
    }

    fn ingest_one(&mut self, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let (EventKind::CallbackEnter { depth, .. }, Some(phy)) = (&event.kind, &event.phy)
            && *depth <= 1
        {
            let key = phy.key();
            let registers = self
                .model
                .phy(&key)
                .map(|p| p.registers.iter().map(|(reg, v)| (*reg, v.value)).collect());
            self.baselines.insert(key, registers.unwrap_or_default());
        }
        if let EventKind::Kmsg { level, text } = &event.kind {
            if self.kmsgs.len() >= self.keep {
                self.kmsgs.pop_front();
            }
            self.kmsgs.push_back(KmsgEntry {
                ts_ns: event.ts_ns,
                level: *level,
                text: text.clone(),
            });
            self.repaint |= self.console_shared && crate::tui::console::prints(*level);
        }
        let mut applied = self.model.apply(&event);
        self.stats.observe(&event, &applied, &self.model);
        if let Some(metrics) = &mut self.metrics {
            metrics.observe(&event, &applied, &self.model);
        }
        if let (Some(call), Some(key)) = (applied.closed.take(), &applied.key) {
            if self.calls.len() >= self.keep {
                self.calls.pop_front();
            }
            self.calls.push_back(CallEntry {
                seq,
                key: key.clone(),
                call: *call,
            });
        }
        if self.log.len() >= self.keep {
            self.log.pop_front();
        }
        self.log.push_back(LogEntry {
            seq,
            event,
            applied,
        });
    }

    /// Updates the source state; marks the view dirty if it changed.
    pub fn set_source_status(&mut self, status: SourceStatus) {
        if self.source != status {
            self.source = status;
            self.dirty = true;
        }
    }

    /// Rolls the events/s meter; marks the view dirty if the figure changed.
    pub fn tick(&mut self, now: Duration) {
        if self.rate.add(0, now) {
            self.dirty = true;
        }
    }

    /// Keys of the PHYs seen, in order.
    pub fn phy_keys(&self) -> impl Iterator<Item = &String> {
        self.model.phys.keys()
    }

    /// Key of the selected PHY: the chosen one if still known, else the first.
    pub fn selected_key(&self) -> Option<&str> {
        self.panes.phys.selected(&self.model)
    }

    /// Statistics of the selected PHY.
    pub fn selected_stats(&self) -> Option<&PhyCollector> {
        self.stats.phys.get(self.selected_key()?)
    }

    /// The `phytrace stats` report of the selected PHY, up to the latest event taken in.
    pub fn selected_report(&self) -> Option<PhyReport> {
        let key = self.selected_key()?;
        Some(self.stats.phy(key, &self.model, self.stats.last_ns))
    }

    /// Name and statistics of the selected callback of the selected PHY: the chosen one if the
    /// PHY has it, else its first.
    pub fn selected_callback_stats(&self) -> Option<(&str, &CallbackCollector)> {
        self.panes.latency.selected(self.selected_stats()?)
    }

    /// Moves the PHY selection by `delta` PHYs; the panes that show the selected PHY go back
    /// to its newest callbacks, first registers and newest states.
    pub fn select_phy(&mut self, delta: isize) {
        if self.panes.phys.select_by(&self.model, delta) {
            self.panes.timeline.follow();
            self.panes.registers.scroll_to_top();
            self.panes.states.scroll_to_newest();
        }
    }

    /// Moves in the focused pane by `delta` lines or entries (negative: up, towards older).
    pub fn move_in_focus(&mut self, delta: isize) {
        // Selections and the register scroll move by at most a thousand.
        let bounded = delta.clamp(-1_000, 1_000);
        let panes = &mut self.panes;
        match self.focus {
            Pane::Phys | Pane::Figures | Pane::Links | Pane::Mdio => self.select_phy(bounded),
            Pane::Latency | Pane::Histogram => {
                let key = panes.phys.selected(&self.model);
                if let Some(phy) = key.and_then(|k| self.stats.phys.get(k)) {
                    panes.latency.select_by(phy, bounded);
                }
            }
            Pane::Registers => panes.registers.scroll_by(bounded),
            Pane::States => panes.states.scroll_by(delta),
            Pane::Kmsg => panes.kmsg.scroll_by(delta),
            Pane::Log => panes.log.move_by(&self.log, &self.filter, delta),
            Pane::Timeline => {
                let key = panes.phys.selected(&self.model);
                panes.timeline.move_by(&self.calls, key, delta);
            }
        }
    }

    /// The log and the timeline follow their newest entries.
    pub fn follow_newest(&mut self) {
        self.panes.log.follow();
        self.panes.timeline.follow();
    }

    /// Points the log and the timeline at their last entries at or before `ts_ns`.
    pub fn show_time(&mut self, ts_ns: u64) {
        self.panes.log.show_time(&self.log, ts_ns);
        self.panes.timeline.show_time(&self.calls, ts_ns);
        self.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Synth, header};

    /// What the TUI holds `--keep` of: a regression here multiplies by 100 000 by default.
    #[test]
    fn kept_log_entries_stay_small() {
        assert!(
            size_of::<LogEntry>() <= 256,
            "{} bytes",
            size_of::<LogEntry>()
        );
    }

    /// The update path fed as the event loop would at 100 000 events/s (5 000 per 50 ms frame):
    /// every event reaches the model, memory stays bounded by `keep`.
    #[test]
    fn synthetic_feed_at_100k_events_per_second_stays_bounded() {
        let keep = 10_000;
        let mut app = App::new(header(), 0, keep, Theme::mono());
        let mut synth = Synth::with_phys(3, 3);
        for frame in 0..20u64 {
            let batch: Vec<Event> = synth.by_ref().take(5_000).collect();
            app.ingest(batch, Duration::from_millis(frame * 50));
        }
        assert_eq!(app.model.totals().events, 100_000);
        assert_eq!(app.log.len(), keep);
        assert!(app.calls.len() <= keep);
        assert_eq!(app.log.back().map(|e| e.seq), Some(99_999));
        for phy in app.model.phys.values() {
            assert!(phy.state_history.len() <= keep);
        }
        app.tick(Duration::from_secs(1));
        assert_eq!(app.rate.per_second(), 100_000);
        assert_eq!(app.log.front().map(|e| e.seq), Some(90_000));
    }

    #[test]
    fn panes_cycle_both_ways() {
        assert_eq!(Pane::Log.cycle(View::Trace, true), Pane::Phys);
        assert_eq!(Pane::Phys.cycle(View::Trace, false), Pane::Log);
        assert_eq!(Pane::Mdio.cycle(View::Stats, true), Pane::Latency);
        assert_eq!(Pane::Phys.cycle(View::Stats, true), Pane::Latency);
    }

    /// The statistics follow every event taken in, beyond what `keep` holds, and a rewind
    /// forgets them.
    #[test]
    fn stats_follow_ingestion_beyond_keep_and_reset() {
        let keep = 100;
        let mut app = App::new(header(), 0, keep, Theme::mono());
        let events: Vec<Event> = Synth::with_phys(2, 3).take(5_000).collect();
        app.ingest(events.clone(), Duration::ZERO);
        assert_eq!(app.stats.events, 5_000);
        let mut model = Model::new();
        let mut whole = Collector::new(0);
        for event in &events {
            let applied = model.apply(event);
            whole.observe(event, &applied, &model);
        }
        for (key, phy) in &whole.phys {
            for (name, cb) in &phy.callbacks {
                let seen = &app.stats.phys[key].callbacks[name];
                assert_eq!(
                    seen.latencies.summary(),
                    cb.latencies.summary(),
                    "{key} {name}"
                );
            }
            assert_eq!(app.stats.phys[key].mdio, phy.mdio, "{key}");
        }
        app.reset();
        assert_eq!(app.stats.events, 0);
        assert!(app.stats.phys.is_empty());
    }
}
