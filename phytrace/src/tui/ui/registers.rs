//! Registers of the selected PHY, decoded bit by bit; what changed since its latest callback
//! started is highlighted (and starred without colours). Clause 45 registers follow, per MMD,
//! with a run of unnamed registers in a row (a firmware window) on one line.

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{changed_span, pane_block};
use crate::model::PhyModel;
use crate::registers::{self, Change, Register};
use crate::render::runs::thousands;
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
    let mut lines: Vec<Line<'static>> = phy
        .registers
        .iter()
        .map(|(reg, current)| {
            let value = current.value;
            let before = baseline.get(reg).copied().unwrap_or(value);
            register_line(Register::C22(*reg), before, value, binary, theme)
        })
        .collect();
    lines.extend(mmd_lines(phy, binary, theme));
    lines
}

/// The MMD registers of `phy`, a heading per MMD: `pcs (MMD 3)`, then its registers; unnamed
/// ones in a row fold into `pcs.0x8000…0xbfff  16,384 registers, last 0x00a5`.
fn mmd_lines(phy: &PhyModel, binary: bool, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut entries = phy.mmd_registers.iter().peekable();
    let mut devad_shown = None;
    while let Some((&(devad, reg), &value)) = entries.next() {
        if devad_shown != Some(devad) {
            devad_shown = Some(devad);
            let name = registers::mmd_short_name(devad).unwrap_or("MMD");
            lines.push(Line::styled(format!("{name} (MMD {devad})"), theme.dim()));
        }
        let register = Register::C45 { devad, reg };
        let mut last = (reg, value);
        let mut count = 1u64;
        while register.spec().is_none()
            && let Some(&(&(d, r), &v)) = entries.peek()
            && d == devad
            && Some(r) == last.0.checked_add(1)
            && (Register::C45 { devad: d, reg: r }).spec().is_none()
        {
            last = (r, v);
            count += 1;
            entries.next();
        }
        if count >= 4 {
            lines.push(Line::from(vec![
                Span::styled(format!("{register}…{:#06x}", last.0), theme.name()),
                Span::raw(format!(
                    "  {} registers, last {:#06x}",
                    thousands(count),
                    last.1
                )),
            ]));
        } else {
            lines.push(register_line(register, value, value, binary, theme));
            let mut reg = reg;
            for _ in 1..count {
                reg += 1;
                let value = phy.mmd_registers[&(devad, reg)];
                lines.push(register_line(
                    Register::C45 { devad, reg },
                    value,
                    value,
                    binary,
                    theme,
                ));
            }
        }
    }
    lines
}

/// `BMSR  0x786d  [0111100001101101]  ERCAP LSTATUS* … -RFAULT*`
fn register_line(
    reg: Register,
    before: u16,
    value: u16,
    binary: bool,
    theme: Theme,
) -> Line<'static> {
    let diff = before ^ value;
    // Wide enough for `BMSR` and `ESTATUS`, or for `pcs.BASER_STAT1` and `phyxs.0x8000`.
    let width = match reg {
        Register::C22(_) => 10,
        Register::C45 { .. } => 16,
    };
    let mut spans = vec![
        Span::styled(format!("{reg:<width$}"), theme.name()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::test_events::qt2025;

    #[test]
    fn clause_45_registers_show_per_mmd_with_firmware_windows_folded() {
        let firmware = qt2025::firmware(24 * 1024);
        let mut model = Model::new();
        for event in qt2025::probe(qt2025::phy(2), 0, qt2025::REVISION_OK, &firmware) {
            model.apply(&event);
        }
        let phy = model.phy("phy_sim-1:02").unwrap();
        let text: Vec<String> = lines(phy, &BTreeMap::new(), false, Theme::mono())
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        insta::assert_snapshot!(text.join("\n"));
    }
}
