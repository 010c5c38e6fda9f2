//! The TUI's state: the model, the statistics, the events held for the log and the timeline,
//! and what the user looks at. `update` changes it, `ui` draws it; neither does I/O.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::capture::Header;
use crate::event::{Event, EventKind, PhyFilter, Text};
use crate::model::{Applied, ClosedCallback, Model};
use crate::stats::{CallbackCollector, Collector, PhyCollector, PhyReport};

use super::filter::Filter;
use super::rate::RateMeter;
use super::source::SourceStatus;
use super::ui::theme::Theme;

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

/// A bottom-anchored list position: `None` follows the newest entry, `Some(seq)` stays on it.
pub type Cursor = Option<u64>;

/// Everything the TUI shows.
#[derive(Debug)]
pub struct App {
    /// Per-PHY state.
    pub model: Model,
    /// Description of the events (for saving).
    pub header: Header,
    /// Timestamps are shown relative to this.
    pub start_ns: u64,
    /// Events held, oldest first, at most `keep`.
    pub log: VecDeque<LogEntry>,
    /// Completed callbacks held, oldest first, at most `keep`.
    pub calls: VecDeque<CallEntry>,
    /// Events held at most.
    pub keep: usize,
    /// Statistics of every event taken in (not only the held ones): latencies, MDIO rate, link
    /// and state history, per PHY and callback.
    pub stats: Collector,
    /// Registers of each PHY when its latest top-level callback was entered.
    pub baselines: BTreeMap<String, BTreeMap<u16, u16>>,
    /// Key of the selected PHY (`None`: the first one).
    pub selected: Option<String>,
    /// Callback whose latency histogram is shown (`None`: the first one of the selected PHY).
    pub selected_callback: Option<String>,
    /// Panes shown.
    pub view: View,
    /// Focused pane.
    pub focus: Pane,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// Log position.
    pub log_cursor: Cursor,
    /// Timeline position.
    pub call_cursor: Cursor,
    /// Register pane scroll, in lines from the top.
    pub reg_scroll: u16,
    /// State history scroll, in entries from the newest.
    pub state_scroll: usize,
    /// The kernel's lines held, oldest first, at most `keep`.
    pub kmsgs: VecDeque<KmsgEntry>,
    /// Kernel message scroll, in lines from the newest.
    pub kmsg_scroll: usize,
    /// This terminal is the kernel's console: a line the console prints lands on the screen.
    pub console_shared: bool,
    /// The screen may hold what phytrace did not draw: clear it and draw it whole.
    pub repaint: bool,
    /// Log filter.
    pub filter: Filter,
    /// Log search text (lower case).
    pub search: Option<String>,
    /// Input mode.
    pub mode: Mode,
    /// Paused by the user.
    pub paused: bool,
    /// Source state for the status line.
    pub source: SourceStatus,
    /// Events per second.
    pub rate: RateMeter,
    /// A one-off message for the status line.
    pub message: Option<String>,
    /// Colours or `NO_COLOR` styles.
    pub theme: Theme,
    /// Only events this keeps are taken in (`--phy`).
    pub phy_filter: Option<PhyFilter>,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// The user asked to quit.
    pub quit: bool,
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
            keep,
            stats: Collector::new(start_ns),
            baselines: BTreeMap::new(),
            selected: None,
            selected_callback: None,
            view: View::default(),
            focus: Pane::default(),
            zoom: false,
            log_cursor: None,
            call_cursor: None,
            reg_scroll: 0,
            state_scroll: 0,
            kmsgs: VecDeque::new(),
            kmsg_scroll: 0,
            console_shared: false,
            repaint: false,
            filter: Filter::default(),
            search: None,
            mode: Mode::default(),
            paused: false,
            source: SourceStatus::default(),
            rate: RateMeter::default(),
            message: None,
            theme,
            phy_filter: None,
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
        self.log_cursor = None;
        self.call_cursor = None;
        self.state_scroll = 0;
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
        self.selected
            .as_deref()
            .filter(|k| self.model.phys.contains_key(*k))
            .or_else(|| self.model.phys.keys().next().map(String::as_str))
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
        let callbacks = &self.selected_stats()?.callbacks;
        self.selected_callback
            .as_deref()
            .and_then(|name| callbacks.get_key_value(name))
            .or_else(|| callbacks.iter().next())
            .map(|(name, c)| (name.as_str(), c))
    }

    /// Whether the log shows `entry`.
    pub fn log_shows(&self, entry: &LogEntry) -> bool {
        self.filter.matches(&entry.event)
    }

    /// Whether the timeline shows `entry`.
    pub fn timeline_shows(&self, entry: &CallEntry) -> bool {
        self.selected_key() == Some(entry.key.as_str())
    }

    /// Index in `log` of the entry with sequence number `seq` or the nearest before it.
    pub fn log_index(&self, seq: u64) -> Option<usize> {
        index_of(&self.log, seq, |e| e.seq)
    }

    /// Index in `calls` of the entry with sequence number `seq` or the nearest before it.
    pub fn call_index(&self, seq: u64) -> Option<usize> {
        index_of(&self.calls, seq, |e| e.seq)
    }
}

/// Position of the last entry whose sequence number is at most `seq`.
fn index_of<T>(entries: &VecDeque<T>, seq: u64, seq_of: impl Fn(&T) -> u64) -> Option<usize> {
    entries.partition_point(|e| seq_of(e) <= seq).checked_sub(1)
}

/// Up to `height` entries of `entries` that `shows`, ending at `cursor` (the newest when
/// following), oldest first, with their indices.
pub fn window<T>(
    entries: &VecDeque<T>,
    end: Option<usize>,
    height: usize,
    shows: impl Fn(&T) -> bool,
) -> Vec<(usize, &T)> {
    let end = match end {
        Some(i) => (i + 1).min(entries.len()),
        None => entries.len(),
    };
    let mut rows: Vec<_> = entries
        .range(..end)
        .enumerate()
        .rev()
        .filter(|(_, e)| shows(e))
        .take(height)
        .collect();
    rows.reverse();
    rows
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
        assert_eq!(app.log_index(95_000), Some(5_000));
        assert_eq!(app.log_index(1), None);
    }

    #[test]
    fn window_is_bottom_anchored_and_filtered() {
        let entries: VecDeque<u32> = (0..10).collect();
        let rows = window(&entries, None, 3, |v| v % 2 == 0);
        assert_eq!(rows, vec![(4, &4), (6, &6), (8, &8)]);
        let rows = window(&entries, Some(5), 2, |_| true);
        assert_eq!(rows, vec![(4, &4), (5, &5)]);
        assert!(window(&entries, Some(99), 0, |_| true).is_empty());
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
