//! The PHY list: `bus:addr`, PHY ID and name, driver, link, `phy_state`, the MAC side's
//! carrier.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table};

use super::pane_block;
use crate::model::Model;
use crate::registers::PhyId;
use crate::render;
use crate::tui::app::{App, Pane};

/// The PHY list and which PHY is selected: the one the other panes show.
#[derive(Debug, Default)]
pub struct PhysPane {
    /// Key of the PHY chosen (`None`: the first one).
    chosen: Option<String>,
}

impl PhysPane {
    /// Key of the selected PHY of `model`: the chosen one if still known, else the first.
    pub fn selected<'a>(&'a self, model: &'a Model) -> Option<&'a str> {
        self.chosen
            .as_deref()
            .filter(|k| model.phys.contains_key(*k))
            .or_else(|| model.phys.keys().next().map(String::as_str))
    }

    /// Moves the selection by `delta` PHYs of `model`; `false` if it has none.
    pub fn select_by(&mut self, model: &Model, delta: isize) -> bool {
        let keys: Vec<&String> = model.phys.keys().collect();
        let Some(last) = keys.len().checked_sub(1) else {
            return false;
        };
        let current = self
            .selected(model)
            .and_then(|k| keys.iter().position(|x| *x == k))
            .unwrap_or(0);
        let next = current.saturating_add_signed(delta).min(last);
        self.chosen = Some(keys[next].clone());
        true
    }

    /// Draws the PHY list; the selected PHY is reversed and marked `▶`.
    pub fn draw(&self, frame: &mut Frame, app: &App, area: Rect) {
        let block = pane_block(
            app,
            Pane::Phys,
            format!(" PHYs ({}) ", app.model.phys.len()),
        );
        if app.model.phys.is_empty() {
            let hint = Paragraph::new("no PHY seen yet").style(app.theme.dim());
            frame.render_widget(hint.block(block), area);
            return;
        }
        let selected = self.selected(&app.model);
        let theme = app.theme;
        let height = usize::from(area.height.saturating_sub(3)).max(1);
        let index = selected
            .and_then(|k| app.model.phys.keys().position(|x| x == k))
            .unwrap_or(0);
        let skip = (index + 1).saturating_sub(height);
        let rows = app
            .model
            .phys
            .iter()
            .skip(skip)
            .take(height)
            .map(|(key, phy)| {
                let is_selected = Some(key.as_str()) == selected;
                let id = PhyId(phy.phy.phy_id);
                let name = id.known_name().unwrap_or("?");
                let (link, link_style) = match &phy.seen_link {
                    Some(l) if l.up => (render::link(l), theme.good()),
                    Some(l) => (render::link(l), theme.bad()),
                    None => ("?".to_owned(), theme.dim()),
                };
                let state = phy.state.as_ref().map_or("?", |s| s.name.as_ref());
                // The MAC side: the network device's carrier, as phylib or phylink set it.
                let (carrier, carrier_style) = match &phy.mac.carrier {
                    Some((netdev, true)) => (format!("{netdev} on"), theme.good()),
                    Some((netdev, false)) => (format!("{netdev} off"), theme.bad()),
                    None => ("-".to_owned(), theme.dim()),
                };
                let marker = if is_selected { "▶ " } else { "  " };
                let row = Row::new(vec![
                    Line::from(format!("{marker}{key}")),
                    Line::from(format!("{:08x}", phy.phy.phy_id)),
                    Line::from(Span::styled(name, theme.name())),
                    Line::from(Span::styled(link, link_style)),
                    Line::from(state.to_owned()),
                    Line::from(Span::styled(carrier, carrier_style)),
                    Line::from(phy.phy.driver.to_string()),
                ]);
                if is_selected {
                    row.style(theme.selected())
                } else {
                    row
                }
            });
        let header = Row::new([
            "  bus:addr",
            "PHY ID",
            "name",
            "link",
            "state",
            "carrier",
            "driver",
        ])
        .style(theme.dim());
        let table = Table::new(
            rows,
            [
                Constraint::Length(16),
                Constraint::Length(8),
                Constraint::Length(8),
                Constraint::Length(11),
                Constraint::Length(9),
                Constraint::Length(10),
                Constraint::Fill(1),
            ],
        )
        .header(header)
        .block(block);
        frame.render_widget(table, area);
    }
}
