//! Callbacks of the selected PHY, newest last: latency, return value, state change and the
//! MDIO accesses made inside (`read_status → BMSR 0x786d, LPA 0x41e1`). With a cursor, the
//! selected run's accesses are listed decoded below.

use std::collections::VecDeque;
use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::list::{Cursor, window};
use super::{phy_pane_frame, short_time, time};
use crate::event::MdioOp;
use crate::model::{Access, ClosedCallback};
use crate::registers;
use crate::render;
use crate::tui::app::{App, CallEntry, Pane};

/// The callbacks of the selected PHY and the cursor among them.
#[derive(Debug, Default)]
pub struct TimelinePane {
    cursor: Cursor,
}

impl TimelinePane {
    /// Stays on the run whose exit has sequence number `seq`; `None` follows the newest.
    pub fn select(&mut self, seq: Option<u64>) {
        self.cursor.select(seq);
    }

    /// Follows the newest run.
    pub fn follow(&mut self) {
        self.cursor.select(None);
    }

    /// Moves by `delta` runs of the PHY `key`; past the newest it follows again.
    pub fn move_by(&mut self, calls: &VecDeque<CallEntry>, key: Option<&str>, delta: isize) {
        self.cursor.step(calls, |c| shows(key, c), delta);
    }

    /// Stays on the last run that returned at or before `ts_ns` (the oldest if none did).
    pub fn show_time(&mut self, calls: &VecDeque<CallEntry>, ts_ns: u64) {
        self.cursor.show_until(calls, |c| c.call.exit_ns <= ts_ns);
    }

    /// Draws the timeline.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let inner = phy_pane_frame(frame, app, Pane::Timeline, "Callbacks", area);
        let key = app.selected_key();
        let end = self.cursor.index(&app.calls);
        let selected = end.map(|i| &app.calls[i]).filter(|c| shows(key, c));
        let (list_area, detail_area) = match selected {
            Some(_) if inner.height >= 8 => {
                let [list, detail] =
                    Layout::vertical([Constraint::Fill(1), Constraint::Fill(1)]).areas(inner);
                (list, Some(detail))
            }
            _ => (inner, None),
        };
        let rows = window(&app.calls, end, usize::from(list_area.height), |c| {
            shows(key, c)
        });
        let lines: Vec<Line> = rows
            .into_iter()
            .map(|(_, entry)| call_line(app, entry, selected.is_some_and(|s| s.seq == entry.seq)))
            .collect();
        frame.render_widget(Paragraph::new(lines), list_area);
        if let (Some(area), Some(entry)) = (detail_area, selected) {
            let detail = Paragraph::new(detail_lines(app, &entry.call)).wrap(Wrap { trim: false });
            frame.render_widget(
                detail
                    .block(ratatui::widgets::Block::new().borders(ratatui::widgets::Borders::TOP)),
                area,
            );
        }
    }
}

/// Whether the timeline of the PHY `key` shows `entry`.
fn shows(key: Option<&str>, entry: &CallEntry) -> bool {
    key == Some(entry.key.as_str())
}

/// `8.868 read_status 531.5µs ret 0 UP→RUNNING: BMCR 0x3100, BMSR 0x786d`
fn call_line<'a>(app: &App, entry: &'a CallEntry, selected: bool) -> Line<'a> {
    let theme = app.theme;
    let call = &entry.call;
    let indent = "  ".repeat(usize::from(call.depth.saturating_sub(1)));
    let mut spans = vec![
        Span::styled(
            format!("{:>7} ", short_time(app, call.exit_ns)),
            theme.dim(),
        ),
        Span::styled(format!("{indent}{}", call.callback.name), theme.name()),
        Span::raw(format!(" {} ", render::duration(call.latency_ns))),
    ];
    if call.ret < 0 {
        spans.push(Span::styled(
            format!("! ret {}", render::errno(call.ret)),
            theme.bad(),
        ));
    } else {
        spans.push(Span::raw(format!("ret {}", call.ret)));
    }
    if call.state_before != call.state_after {
        spans.push(Span::raw(format!(
            " {}→{}",
            call.state_before.name, call.state_after.name
        )));
    }
    if !call.accesses.is_empty() {
        spans.push(Span::raw(format!(": {}", accesses(call))));
    }
    let line = Line::from(spans);
    if selected {
        line.style(theme.selected())
    } else {
        line
    }
}

/// `BMSR 0x786d, BMCR←0x8200, LPA ✗-5`
fn accesses(call: &ClosedCallback) -> String {
    let mut text = String::new();
    for (i, a) in call.accesses.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let name = a.register();
        let _ = match (a.error, a.op) {
            (Some(err), _) => write!(text, "{sep}{name} ✗{err}"),
            (None, MdioOp::Read) => write!(text, "{sep}{name} {:#06x}", a.value),
            (None, MdioOp::Write) => write!(text, "{sep}{name}←{:#06x}", a.value),
        };
    }
    if call.accesses_dropped > 0 {
        let _ = write!(text, " (+{} more)", call.accesses_dropped);
    }
    text
}

/// The selected run: entry, return, and each access decoded.
fn detail_lines<'a>(app: &App, call: &'a ClosedCallback) -> Vec<Line<'a>> {
    let theme = app.theme;
    let entered = call.enter_ns.map_or_else(
        || "entry not seen".to_owned(),
        |t| format!("entered {}", time(app, t)),
    );
    let mut lines = vec![Line::from(vec![
        Span::styled(call.callback.name.to_string(), theme.name()),
        Span::raw(format!(
            "  {entered}  {}  ret={}  {}→{}  link {}",
            render::duration(call.latency_ns),
            render::errno(call.ret),
            call.state_before.name,
            call.state_after.name,
            render::link(&call.link)
        )),
    ])];
    lines.extend(call.accesses.iter().map(|a| access_line(app, a)));
    lines
}

fn access_line<'a>(app: &App, a: &Access) -> Line<'a> {
    let head = format!(
        "{:>10} {:<5} {:<9}",
        time(app, a.ts_ns),
        a.op.name(),
        a.register()
    );
    match a.error {
        Some(err) => Line::from(vec![
            Span::raw(head),
            Span::styled(
                format!(" ! failed {}", render::errno(i64::from(err))),
                app.theme.bad(),
            ),
        ]),
        None => Line::from(format!(
            "{head} {:#06x} {}",
            a.value,
            registers::decode(a.register(), a.value)
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::synth;
    use crate::test_events::qt2025;
    use crate::tui::app::App;
    use crate::tui::ui::{screen, theme::Theme};

    #[test]
    fn clause_45_accesses_are_named_by_mmd_in_a_callback_line() {
        let events = qt2025::probe(qt2025::phy(4), 0, qt2025::REVISION_OK, &[1, 2, 3]);
        let mut app = App::new(synth::header(), 0, 1_000, Theme::mono());
        app.ingest(events, Duration::ZERO);
        let text = screen(&app).join("\n");
        assert!(text.contains("probe"), "{text}");
        assert!(text.contains("pma.0xd001 0xb3ff"), "{text}");
        assert!(!text.contains("R0xd001"), "{text}");
    }
}
