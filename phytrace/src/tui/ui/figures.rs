//! The numbers of `phytrace stats` for the selected PHY (its [`PhyReport`]): errors by errno and
//! lost returns by cause, link-ups and their delays, the carrier of the MAC side, MDIO latency,
//! MDIO accesses per register and time in each `phy_state`. A pane at least
//! [`TWO_COLUMNS`] wide shows them in two columns; a section cut short says how many lines it
//! left out, and lines are cut at the pane's edge (`z` zooms).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::phy_pane_frame;
use super::theme::Theme;
use crate::render;
use crate::stats::text::{errors, lost, secs};
use crate::stats::{Interval, PhyReport, Summary};
use crate::tui::app::{App, Pane};

/// Inner width from which the sections are laid out in two columns.
const TWO_COLUMNS: u16 = 90;

/// Column width from which the MDIO latency table has min and p90 (its rows' width).
const FULL_LATENCY: usize = 59;

/// Width of a delay column: ` after aneg`.
const DELAY: usize = 11;

/// A heading and its lines.
struct Section {
    /// What a note names it when it is left out.
    name: &'static str,
    head: Line<'static>,
    lines: Vec<Line<'static>>,
}

/// Draws the figures.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let inner = phy_pane_frame(frame, app, Pane::Figures, "Figures", area);
    let Some(report) = app.selected_report() else {
        return;
    };
    let theme = app.theme;
    let two = inner.width >= TWO_COLUMNS;
    let width = usize::from(if two {
        inner.width / 2 - 1
    } else {
        inner.width
    });
    let mut left = vec![errors_section(theme, &report), link_section(theme, &report)];
    left.extend(carrier_section(theme, &report));
    let mut right = vec![
        mdio_latency_section(theme, &report, width),
        registers_section(theme, &report, width),
        states_section(theme, &report, width),
    ];
    if two {
        let [a, _, b] = Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Fill(1),
        ])
        .areas(inner);
        render_column(frame, left, a);
        render_column(frame, right, b);
    } else {
        left.append(&mut right);
        render_column(frame, left, inner);
    }
}

/// Fills `area` with `sections` in order; a section that does not fit ends with a count of
/// what it left out, and later sections are named on the last row.
fn render_column(frame: &mut Frame, sections: Vec<Section>, area: Rect) {
    let rows = usize::from(area.height);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut left_out: Vec<&str> = Vec::new();
    for section in sections {
        let room = rows.saturating_sub(out.len());
        if room == 0 || (room == 1 && !section.lines.is_empty()) {
            left_out.push(section.name);
            continue;
        }
        out.push(section.head);
        let room = room - 1;
        let n = section.lines.len();
        if n <= room {
            out.extend(section.lines);
        } else {
            out.extend(section.lines.into_iter().take(room.saturating_sub(1)));
            out.push(Line::from(format!(
                "  … {} more",
                n - room.saturating_sub(1)
            )));
        }
    }
    if !left_out.is_empty() {
        let note = Line::from(format!("… z shows {}", left_out.join(", ")));
        if out.len() >= rows {
            out.pop();
        }
        out.push(note);
    }
    frame.render_widget(Paragraph::new(out), area);
}

fn head(theme: Theme, name: &str, rest: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(name.to_owned(), theme.name()),
        Span::raw(rest),
    ])
}

/// Callbacks that failed or lost returns: `read_status  1 EIO · lost 1 (1 superseded)`.
fn errors_section(theme: Theme, r: &PhyReport) -> Section {
    let lines: Vec<Line<'static>> = r
        .callbacks
        .iter()
        .filter(|c| !c.errors.is_empty() || c.lost_returns.total > 0)
        .map(|c| {
            let mut what = Vec::new();
            if !c.errors.is_empty() {
                what.push(errors(&c.errors));
            }
            if c.lost_returns.total > 0 {
                what.push(format!("lost {}", lost(&c.lost_returns)));
            }
            Line::from(vec![
                Span::raw(format!("  {} ", c.name)),
                Span::styled(what.join(" · "), theme.bad()),
            ])
        })
        .collect();
    let rest = if lines.is_empty() {
        " none, no lost returns".to_owned()
    } else {
        " by errno, lost returns by cause".to_owned()
    };
    Section {
        name: "errors",
        head: head(theme, "Errors", rest),
        lines,
    }
}

/// `up 2.417 s, down 2.696 s` of `intervals`.
fn up_down(up_ns: u64, down_ns: u64, intervals: &[Interval]) -> String {
    if intervals.is_empty() {
        " not seen".to_owned()
    } else {
        format!("  up {} s, down {} s", secs(up_ns), secs(down_ns))
    }
}

/// A table of ups and their delays: `up at`, then one column per delay (`-` when unknown).
fn delays(theme: Theme, heads: &[&str], rows: Vec<(u64, Vec<Option<u64>>)>) -> Vec<Line<'static>> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mut head = format!("  {:<9}", "up at");
    for h in heads {
        head.push_str(&format!("{h:>DELAY$}"));
    }
    let mut lines = vec![Line::from(Span::styled(head, theme.dim()))];
    lines.extend(rows.into_iter().map(|(at, cells)| {
        let mut text = format!("  {:<9}", format!("{} s", secs(at)));
        for ns in cells {
            let cell = ns.map_or_else(|| "-".to_owned(), render::duration);
            text.push_str(&format!("{cell:>DELAY$}"));
        }
        Line::from(text)
    }));
    lines
}

/// Link time and each link-up's delays.
fn link_section(theme: Theme, r: &PhyReport) -> Section {
    let l = &r.link;
    let rows = l
        .ups
        .iter()
        .map(|u| (u.at_ns, vec![u.since_down_ns, u.since_aneg_start_ns]))
        .collect();
    Section {
        name: "link",
        head: head(theme, "Link", up_down(l.up_ns, l.down_ns, &l.intervals)),
        lines: delays(theme, &["after down", "after aneg"], rows),
    }
}

/// Carrier time and each carrier-up's delays, for a PHY with a MAC side.
fn carrier_section(theme: Theme, r: &PhyReport) -> Option<Section> {
    let c = r.carrier.as_ref()?;
    let rows = c
        .ups
        .iter()
        .map(|u| {
            let cells = vec![u.since_link_up_ns, u.since_aneg_start_ns, u.since_down_ns];
            (u.at_ns, cells)
        })
        .collect();
    let netdev = c.netdev.as_deref().unwrap_or("");
    Some(Section {
        name: "carrier",
        head: head(
            theme,
            "Carrier",
            format!(" {netdev}{}", up_down(c.up_ns, c.down_ns, &c.intervals)),
        ),
        lines: delays(theme, &["after link", "after aneg", "after down"], rows),
    })
}

/// Reads and writes: count and percentiles (min and p90 when `width` allows).
fn mdio_latency_section(theme: Theme, r: &PhyReport, width: usize) -> Section {
    let full = width >= FULL_LATENCY;
    let cells = |l: &Summary| -> Vec<u64> {
        if full {
            vec![l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns]
        } else {
            vec![l.p50_ns, l.p99_ns, l.max_ns]
        }
    };
    let heads: &[&str] = if full {
        &["min", "p50", "p90", "p99", "max"]
    } else {
        &["p50", "p99", "max"]
    };
    let mut head_text = format!("{:>7}", "count");
    for h in heads {
        head_text.push_str(&format!("{h:>8}"));
    }
    let lat = &r.mdio.latency;
    let lines = [("read", &lat.read), ("write", &lat.write)]
        .into_iter()
        .map(|(op, l)| {
            let mut text = format!("  {op:<10}{:>7}", l.count);
            for ns in cells(l) {
                let cell = if l.count == 0 {
                    "-".to_owned()
                } else {
                    render::duration(ns)
                };
                text.push_str(&format!("{cell:>8}"));
            }
            Line::from(text)
        })
        .collect();
    Section {
        name: "MDIO latency",
        head: Line::from(vec![
            Span::styled("MDIO latency", theme.name()),
            Span::styled(head_text, theme.dim()),
        ]),
        lines,
    }
}

/// `items` packed into lines of at most `width` columns, two spaces before each.
fn packed(items: Vec<String>, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for item in items {
        if !line.is_empty() && line.chars().count() + 2 + item.chars().count() > width {
            lines.push(Line::from(std::mem::take(&mut line)));
        }
        line.push_str("  ");
        line.push_str(&item);
    }
    if !line.is_empty() {
        lines.push(Line::from(line));
    }
    lines
}

/// Accesses per register: `BMSR r10 w0 fail 1`.
fn registers_section(theme: Theme, r: &PhyReport, width: usize) -> Section {
    let m = &r.mdio;
    let items = m
        .registers
        .iter()
        .map(|reg| {
            let c = &reg.count;
            let mut item = format!("{} r{} w{}", reg.name, c.reads, c.writes);
            if c.errors > 0 {
                item.push_str(&format!(" fail {}", c.errors));
            }
            item
        })
        .collect();
    Section {
        name: "registers",
        head: head(
            theme,
            "Registers",
            format!(
                " {} accesses, {:.1}/s mean, peak {}/s",
                m.accesses, m.mean_per_s, m.peak_per_s
            ),
        ),
        lines: packed(items, width),
    }
}

/// Time in each `phy_state`, longest first: `RUNNING 2.340 s 43% 2×`.
fn states_section(theme: Theme, r: &PhyReport, width: usize) -> Section {
    let mut states: Vec<_> = r.states.iter().collect();
    states.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.state.cmp(&b.state)));
    let items = states
        .iter()
        .map(|s| {
            format!(
                "{} {} s {:.0}% {}×",
                s.state,
                secs(s.time_ns),
                s.share * 100.0,
                s.periods
            )
        })
        .collect();
    Section {
        name: "phy_state",
        head: head(theme, "phy_state", " time, share, entries".to_owned()),
        lines: packed(items, width),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_wraps_at_the_width() {
        let items = vec!["BMCR r18 w9".to_owned(), "BMSR r10 w0".to_owned()];
        let lines = packed(items.clone(), 30);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].to_string(), "  BMCR r18 w9  BMSR r10 w0");
        assert_eq!(packed(items, 16).len(), 2);
        assert!(packed(Vec::new(), 10).is_empty());
    }
}
