//! The event log, as `phytrace dump` prints it, through the filter, with search matches
//! marked. Folded, each run of like MDIO accesses is one line, as `dump --summary` prints it.

use std::collections::{HashMap, VecDeque};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::list::{Cursor, window};
use super::pane_block;
use crate::render;
use crate::render::runs::Run;
use crate::tui::app::{App, LogEntry, Pane};
use crate::tui::filter::Filter;

/// The event log and its cursor.
#[derive(Debug, Default)]
pub struct LogPane {
    cursor: Cursor,
    /// Runs of like accesses are folded.
    folded: bool,
}

/// The folding of a log: the runs that fold, by the sequence number of their last entry (the
/// line that stands for the run), each with the sequence number of its first.
#[derive(Debug, Default)]
pub struct Folds {
    /// Folded runs and their first entry's sequence number, by their last entry's.
    pub runs: HashMap<u64, (u64, Run)>,
}

impl Folds {
    /// The runs of `log` that fold.
    pub fn of(log: &VecDeque<LogEntry>) -> Self {
        let mut folds = Self::default();
        let mut current: Option<(Run, u64, u64)> = None;
        for entry in log {
            let key = entry.applied.key.as_deref();
            if let Some((run, _, last)) = &mut current
                && run.continued_by(&entry.event, key)
            {
                run.extend(&entry.event);
                *last = entry.seq;
                continue;
            }
            folds.close(current.take());
            current = Run::start(&entry.event, key).map(|run| (run, entry.seq, entry.seq));
        }
        folds.close(current);
        folds
    }

    fn close(&mut self, run: Option<(Run, u64, u64)>) {
        if let Some((run, first, last)) = run
            && run.folds()
        {
            self.runs.insert(last, (first, run));
        }
    }

    /// Whether the entry `seq` is hidden in a folded run (every entry of one but its last).
    fn hides(&self, seq: u64) -> bool {
        // Runs are few: the hidden ranges are looked up among them.
        self.runs
            .iter()
            .any(|(&last, &(first, _))| (first..last).contains(&seq))
    }
}

impl LogPane {
    /// Folds runs of like accesses into one line each, or shows them again.
    pub fn toggle_folded(&mut self) {
        self.folded = !self.folded;
    }

    /// Sequence number of the event the cursor stays on; `None` while following the newest.
    pub fn selected(&self) -> Option<u64> {
        self.cursor.selected()
    }

    /// Follows the newest event.
    pub fn follow(&mut self) {
        self.cursor.select(None);
    }

    /// Moves by `delta` events that `filter` shows; past the newest it follows again.
    pub fn move_by(&mut self, log: &VecDeque<LogEntry>, filter: &Filter, delta: isize) {
        self.cursor.step(log, |e| filter.matches(&e.event), delta);
    }

    /// Stays on the last event at or before `ts_ns` (the oldest if none is).
    pub fn show_time(&mut self, log: &VecDeque<LogEntry>, ts_ns: u64) {
        self.cursor.show_until(log, |e| e.event.ts_ns <= ts_ns);
    }

    /// Moves to the previous (`older`) or next event that `matches`; `false` if there is none.
    pub fn find(
        &mut self,
        log: &VecDeque<LogEntry>,
        matches: impl Fn(&LogEntry) -> bool,
        older: bool,
    ) -> bool {
        let start = self.cursor.index(log);
        let found = if older {
            let end = start.unwrap_or(log.len());
            (0..end).rev().find(|i| matches(&log[*i]))
        } else {
            let begin = start.map_or(log.len(), |i| i + 1);
            (begin..log.len()).find(|i| matches(&log[*i]))
        };
        if let Some(i) = found {
            self.cursor.select(Some(log[i].seq));
        }
        found.is_some()
    }

    /// Moves to the nearest event that `matches` looking from the one after the cursor towards
    /// older events (the cursor's own event first unless it is the newest held; every event
    /// while following); without a match, the cursor is left one event on.
    pub fn find_here(
        &mut self,
        log: &VecDeque<LogEntry>,
        matches: impl Fn(&LogEntry) -> bool,
    ) -> bool {
        self.cursor
            .select(self.cursor.selected().map(|seq| seq + 1));
        self.find(log, matches, true)
    }

    /// Draws the log, bottom-anchored at the cursor (or the newest event).
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let theme = app.theme;
        let mut title = vec![Span::raw(format!(" Events {} ", app.log.len()))];
        if !app.filter.is_empty() {
            title.push(Span::styled(
                format!("[f: {}] ", app.filter.text()),
                theme.name(),
            ));
        }
        if let Some(search) = &app.search {
            title.push(Span::styled(format!("[/{search}] "), theme.matched()));
        }
        let folds = if self.folded {
            let folds = Folds::of(&app.log);
            title.push(Span::styled(
                format!("[o: {} runs folded] ", folds.runs.len()),
                theme.name(),
            ));
            folds
        } else {
            Folds::default()
        };
        let block = pane_block(app, Pane::Log, Line::from(title));
        let height = usize::from(area.height.saturating_sub(2));
        let end = self.cursor.index(&app.log);
        let rows = window(&app.log, end, height, |e| {
            app.filter.matches(&e.event) && !folds.hides(e.seq)
        });
        let lines: Vec<Line> = rows
            .into_iter()
            .map(|(_, entry)| {
                let text = match folds.runs.get(&entry.seq) {
                    Some((_, run)) => run.line(app.start_ns),
                    None => render::event_line(&entry.event, &entry.applied, app.start_ns),
                };
                // Times below 1000 s leave three columns of padding: give them to the text.
                let text = text.strip_prefix("   ").map_or(text.clone(), str::to_owned);
                let matched = app
                    .search
                    .as_ref()
                    .is_some_and(|s| text.to_lowercase().contains(s.as_str()));
                let cursor = self.cursor.selected() == Some(entry.seq);
                let text = match (matched, theme.color) {
                    (true, false) => format!("»{}", text.get(1..).unwrap_or_default()),
                    _ => text,
                };
                let line = Line::from(text);
                match (cursor, matched) {
                    (true, _) => line.style(theme.selected()),
                    (false, true) => line.style(theme.matched()),
                    (false, false) => line,
                }
            })
            .collect();
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::synth;
    use crate::test_events::qt2025;
    use crate::tui::app::{App, Pane};
    use crate::tui::ui::{screen, theme::Theme};

    #[test]
    fn a_firmware_load_folds_into_one_line_per_window_and_unfolds() {
        let firmware = qt2025::firmware(24 * 1024);
        let events = qt2025::probe(qt2025::phy(2), 0, qt2025::REVISION_OK, &firmware);
        let mut app = App::new(synth::header(), 0, 100_000, Theme::mono());
        app.ingest(events, Duration::ZERO);
        app.focus = Pane::Log;
        app.zoom = true;
        let unfolded = screen(&app).join("\n");
        assert!(
            unfolded.contains("probe → write phyxs.0x9fff"),
            "{unfolded}"
        );
        app.panes.log.toggle_folded();
        let folded = screen(&app).join("\n");
        assert!(folded.contains("[o: 2 runs folded]"), "{folded}");
        assert!(
            folded.contains("… 16,384 writes to pcs 3.0x8000…0xBFFF in probe (16.4ms)"),
            "{folded}"
        );
        assert!(
            folded.contains("… 8,192 writes to phyxs 4.0x8000…0x9FFF in probe"),
            "{folded}"
        );
        assert!(folded.contains("probe → read  pma.0xd001"), "{folded}");
        assert!(!folded.contains("pcs.0x8001"), "{folded}");
        app.panes.log.toggle_folded();
        assert_eq!(screen(&app).join("\n"), unfolded);
    }
}
