//! Registers of the selected PHY, decoded bit by bit; what changed since its latest callback
//! started is highlighted (and starred without colours).

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{changed_span, pane_block};
use crate::model::PhyModel;
use crate::registers::{self, Change};
use crate::tui::app::{App, Pane};
use crate::tui::ui::theme::Theme;

/// Inner width from which each register also shows its 16 bits.
const BINARY_WIDTH: u16 = 60;

/// The registers of the selected PHY and how far they are scrolled.
#[derive(Debug, Default)]
pub struct RegistersPane {
    /// Lines scrolled from the top.
    scroll: u16,
}

impl RegistersPane {
    /// Scrolls by `delta` lines (at most a thousand), down when positive.
    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll = self
            .scroll
            .saturating_add_signed(delta.clamp(-1_000, 1_000) as i16);
    }

    /// Back to the first register.
    pub fn scroll_to_top(&mut self) {
        self.scroll = 0;
    }

    /// Draws the register panel.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let key = app.selected_key();
        let title = format!(" Registers {} ", key.unwrap_or(""));
        let block = pane_block(app, Pane::Registers, title);
        let Some(phy) = key.and_then(|k| app.model.phy(k)) else {
            frame.render_widget(Paragraph::new("").block(block), area);
            return;
        };
        let empty = BTreeMap::new();
        let baseline = key.and_then(|k| app.baselines.get(k)).unwrap_or(&empty);
        let binary = area.width.saturating_sub(2) >= BINARY_WIDTH;
        let lines = lines(phy, baseline, binary, app.theme);
        let paragraph = Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((self.scroll, 0))
            .block(block);
        frame.render_widget(paragraph, area);
    }
}

/// Text of every register known for `phy`.
fn lines(
    phy: &PhyModel,
    baseline: &BTreeMap<u16, u16>,
    binary: bool,
    theme: Theme,
) -> Vec<Line<'static>> {
    phy.registers
        .iter()
        .map(|(reg, current)| {
            let value = current.value;
            let before = baseline.get(reg).copied().unwrap_or(value);
            register_line(*reg, before, value, binary, theme)
        })
        .collect()
}

/// `BMSR  0x786d  [0111100001101101]  ERCAP LSTATUS* … -RFAULT*`
fn register_line(reg: u16, before: u16, value: u16, binary: bool, theme: Theme) -> Line<'static> {
    let diff = before ^ value;
    let mut spans = vec![
        Span::styled(format!("{:<10}", registers::name(reg)), theme.name()),
        changed_span(
            theme,
            format!("{value:#06x}"),
            diff != 0,
            Default::default(),
        ),
        Span::raw(" "),
    ];
    if binary {
        spans.push(Span::raw("["));
        for bit in (0..16).rev() {
            let mask = 1u16 << bit;
            let digit = if value & mask != 0 { "1" } else { "0" };
            spans.push(if diff & mask != 0 {
                Span::styled(digit, theme.changed())
            } else {
                Span::raw(digit)
            });
        }
        spans.push(Span::raw("] "));
    }
    let decoded = registers::decode(reg, value);
    let changes = registers::changes(reg, before, value);
    let changed = |name: &str| {
        changes.list.iter().any(|c| match c {
            Change::Set(n) | Change::Field { name: n, .. } => *n == name,
            Change::Cleared(_) | Change::Raw { .. } => false,
        })
    };
    for flag in decoded.flags() {
        spans.push(changed_span(
            theme,
            flag.to_owned(),
            changed(flag),
            Default::default(),
        ));
        spans.push(Span::raw(" "));
    }
    for (name, shown) in decoded.fields() {
        spans.push(changed_span(
            theme,
            format!("{name}={shown}"),
            changed(name),
            Default::default(),
        ));
        spans.push(Span::raw(" "));
    }
    if let Some(resv) = decoded.reserved() {
        spans.push(Span::raw(format!("RESV={resv:#06x} ")));
    }
    for change in &changes.list {
        if let Change::Cleared(name) = change {
            spans.push(changed_span(
                theme,
                format!("-{name}"),
                true,
                Default::default(),
            ));
            spans.push(Span::raw(" "));
        }
    }
    Line::from(spans)
}
