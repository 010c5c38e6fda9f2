//! The panes, one file each, and how the screen is laid out. A pane that keeps a position of
//! its own (a cursor, a scroll, a selection) is a type holding it, with the moves it makes and
//! its drawing; the others draw the [`App`] state into a screen area.

mod axis;
mod figures;
mod help;
mod histogram;
mod kmsg;
mod latency;
mod links;
mod list;
mod log;
mod mdio;
mod phys;
mod registers;
mod states;
mod status;
pub mod theme;
mod timeline;

pub use kmsg::KmsgPane;
pub use latency::LatencyPane;
pub(super) use list::Sequenced;
pub use log::LogPane;
pub use phys::PhysPane;
pub use registers::RegistersPane;
pub use states::StatesPane;
pub use timeline::TimelinePane;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::app::{App, Mode, Pane, View};
use theme::Theme;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let [main, status_area] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(frame.area());
    if app.zoom {
        draw_pane(frame, app, app.focus, main);
    } else if app.view == View::Stats {
        draw_stats(frame, app, main);
    } else {
        let phys_height = (app.model.phys.len().clamp(1, 6) + 3) as u16;
        // The kernel's lines under the callbacks, the whole width: a border and up to five.
        let kmsg_height = (main.height / 7).clamp(3, 7);
        let [phys_area, middle, kmsg_area, bottom] = Layout::vertical([
            Constraint::Length(phys_height),
            Constraint::Fill(3),
            Constraint::Length(kmsg_height),
            Constraint::Fill(2),
        ])
        .areas(main);
        let [regs_area, timeline_area] =
            Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                .areas(middle);
        let [states_area, log_area] =
            Layout::horizontal([Constraint::Percentage(34), Constraint::Percentage(66)])
                .areas(bottom);
        for (pane, area) in [
            (Pane::Phys, phys_area),
            (Pane::Registers, regs_area),
            (Pane::Timeline, timeline_area),
            (Pane::Kmsg, kmsg_area),
            (Pane::States, states_area),
            (Pane::Log, log_area),
        ] {
            draw_pane(frame, app, pane, area);
        }
    }
    status::draw(frame, app, status_area);
    if app.mode == Mode::Help {
        help::draw(frame, app, frame.area());
    }
}

/// The stats view: latencies with the other figures under them and the selected callback's
/// histogram above, the link/state strip of every PHY and the MDIO rate below, on one time
/// axis. Without room for [`MIN_FIGURES`] rows of figures, they take the whole top row while
/// focused.
fn draw_stats(frame: &mut Frame, app: &App, area: Rect) {
    // Two rows per PHY, the ticks, the legend and the border.
    let links_height = (app.model.phys.len().clamp(1, 6) * 2 + 4) as u16;
    let mdio_height = (area.height / 5).clamp(5, 10);
    let [top, links_area, mdio_area] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(links_height),
        Constraint::Length(mdio_height),
    ])
    .areas(area);
    // The header, a row per callback and the border.
    let callbacks = app.selected_stats().map_or(0, |p| p.callbacks.len());
    let latency_height = u16::try_from(callbacks + 3).unwrap_or(u16::MAX);
    let mut panes = Vec::with_capacity(5);
    if top.height >= latency_height.saturating_add(MIN_FIGURES) {
        let [left, histogram_area] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        let [latency_area, figures_area] =
            Layout::vertical([Constraint::Length(latency_height), Constraint::Min(0)]).areas(left);
        panes.extend([
            (Pane::Latency, latency_area),
            (Pane::Figures, figures_area),
            (Pane::Histogram, histogram_area),
        ]);
    } else if app.focus == Pane::Figures {
        panes.push((Pane::Figures, top));
    } else {
        let [latency_area, histogram_area] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        panes.extend([
            (Pane::Latency, latency_area),
            (Pane::Histogram, histogram_area),
        ]);
    }
    panes.extend([(Pane::Links, links_area), (Pane::Mdio, mdio_area)]);
    for (pane, area) in panes {
        draw_pane(frame, app, pane, area);
    }
}

/// Rows the figures pane gets at least beside the others (border and two lines).
const MIN_FIGURES: u16 = 4;

fn draw_pane(frame: &mut Frame, app: &App, pane: Pane, area: Rect) {
    match pane {
        Pane::Phys => app.panes.phys.draw(frame, app, area),
        Pane::Registers => app.panes.registers.draw(frame, app, area),
        Pane::Timeline => app.panes.timeline.draw(frame, app, area),
        Pane::Kmsg => app.panes.kmsg.draw(frame, app, area),
        Pane::States => app.panes.states.draw(frame, app, area),
        Pane::Log => app.panes.log.draw(frame, app, area),
        Pane::Latency => app.panes.latency.draw(frame, app, area),
        Pane::Histogram => histogram::draw(frame, app, area),
        Pane::Figures => figures::draw(frame, app, area),
        Pane::Links => links::draw(frame, app, area),
        Pane::Mdio => mdio::draw(frame, app, area),
    }
}

/// The frame of a pane: thick border and bold title when focused, so focus shows without
/// colours too.
fn pane_block<'a>(app: &App, pane: Pane, title: impl Into<Line<'a>>) -> Block<'a> {
    let focused = app.focus == pane;
    let (set, style) = if focused {
        (border::THICK, app.theme.focused())
    } else {
        (border::PLAIN, Style::new())
    };
    Block::bordered()
        .border_set(set)
        .border_style(style)
        .title(title.into().style(style))
}

/// Draws the frame of a pane about the selected PHY, titled ` {name} {key} `; returns the area
/// inside it.
fn phy_pane_frame(frame: &mut Frame, app: &App, pane: Pane, name: &str, area: Rect) -> Rect {
    let key = app.selected_key().unwrap_or("");
    let block = pane_block(app, pane, format!(" {name} {key} "));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

/// Seconds since the start, microsecond precision, without padding: `8.868204`.
fn time(app: &App, ts_ns: u64) -> String {
    crate::render::relative_time(ts_ns, app.start_ns)
        .trim_start()
        .to_owned()
}

/// Seconds since the start, millisecond precision, for narrow columns: `8.868`.
fn short_time(app: &App, ts_ns: u64) -> String {
    let full = time(app, ts_ns);
    full.get(..full.len().saturating_sub(3))
        .unwrap_or_default()
        .to_owned()
}

/// `text` styled `style`, with the theme's changed-marker when `changed`.
fn changed_span(theme: Theme, text: String, changed: bool, style: Style) -> Span<'static> {
    if changed {
        Span::styled(format!("{text}{}", theme.changed_marker()), theme.changed())
    } else {
        Span::styled(text, style)
    }
}

/// The screen `app` draws at 120×30, one string a row.
#[cfg(test)]
fn screen(app: &App) -> Vec<String> {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 30)).unwrap();
    terminal.draw(|frame| draw(frame, app)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect()
        })
        .collect()
}
