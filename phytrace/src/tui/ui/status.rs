//! The bottom line: source and pause state, replay position, events/s, lost events, module
//! attach state; or the prompt being edited.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::short_time;
use crate::tui::app::{App, Mode, PromptKind};

/// Draws the status line, or the prompt.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    if let Mode::Prompt(kind, input) = &app.mode {
        let label = match kind {
            PromptKind::Search => "search: ",
            PromptKind::Filter => "filter (mdio cb err reg:BMSR phy:0:02 cb:read_status): ",
            PromptKind::Goto => "go to time (s): ",
            PromptKind::Save => "save held events to: ",
        };
        let line = Line::from(vec![
            Span::styled(label, app.theme.name()),
            Span::raw(format!("{input}█")),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let hint = " ?:help ";
    let line = status_line(app);
    let hint_width = if line.width() + hint.len() <= usize::from(area.width) {
        hint.len() as u16
    } else {
        0
    };
    let [left, right] =
        Layout::horizontal([Constraint::Fill(1), Constraint::Length(hint_width)]).areas(area);
    frame.render_widget(Paragraph::new(line), left);
    frame.render_widget(Paragraph::new(Span::styled(hint, app.theme.dim())), right);
}

fn status_line(app: &App) -> Line<'static> {
    let theme = app.theme;
    let src = &app.source;
    let mut spans = Vec::new();
    let mode = if src.live {
        "LIVE".to_owned()
    } else {
        format!("REPLAY ×{}", speed(src.speed))
    };
    spans.push(Span::styled(format!("{mode} "), theme.selected()));
    spans.push(if app.paused {
        Span::styled(" ⏸ PAUSED", theme.bad())
    } else {
        Span::raw(" ▶")
    });
    if !src.live {
        let at = src
            .position_ns
            .map_or("-".to_owned(), |t| short_time(app, t));
        let end = if src.done { " end" } else { "" };
        spans.push(Span::raw(format!(" {at}s #{}{end}", src.delivered)));
    }
    if src.held > 0 {
        spans.push(Span::raw(format!(" held {}", src.held)));
    }
    let (attach, bad) = attach_state(app);
    if !attach.is_empty() {
        spans.push(Span::raw(" │ "));
        spans.push(Span::styled(
            attach,
            if bad { theme.bad() } else { theme.good() },
        ));
    }
    spans.push(Span::raw(format!(" │ {}/s", app.rate.per_second())));
    let lost = app.model.unowned.lost;
    spans.push(Span::raw(" │ "));
    spans.push(if lost > 0 {
        let causes: Vec<String> = app
            .model
            .unowned
            .lost_by_cause
            .nonzero()
            .iter()
            .map(|(cause, count)| format!("{cause} {count}"))
            .collect();
        Span::styled(format!("LOST {lost} ({})", causes.join(", ")), theme.bad())
    } else {
        Span::raw("lost 0")
    });
    if src.issues > 0 {
        spans.push(Span::styled(
            format!(" │ {} damaged", src.issues),
            theme.bad(),
        ));
    }
    if let Some(message) = &app.message {
        spans.push(Span::raw(" │ "));
        spans.push(Span::styled(message.clone(), theme.name()));
    }
    Line::from(spans)
}

/// `1`, `0.5`, `64`.
fn speed(speed: f64) -> String {
    if speed >= 1.0 {
        format!("{speed:.0}")
    } else {
        format!("{speed:.3}").trim_end_matches('0').to_owned()
    }
}

fn join(names: &[&String]) -> String {
    names
        .iter()
        .map(|name| name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the modules are doing, and whether it needs attention: those seen loaded first, then
/// those awaited.
fn attach_state(app: &App) -> (String, bool) {
    let src = &app.source;
    let early = |name: &String| !src.late_attach.contains(name);
    let mut parts = Vec::new();
    let mut bad = false;
    for (name, module) in &app.model.modules {
        parts.push(match (module.attached, module.attaches) {
            (false, _) => {
                bad = true;
                format!("{name} unloaded, waiting for reload")
            }
            (true, _) if !early(name) => {
                bad = true;
                format!("{name} attached after load (first callbacks missed)")
            }
            (true, n) if n > 1 => format!("{name} re-attached after reload"),
            (true, _) => format!("{name} attached"),
        });
    }
    // A module seen loaded and awaited again is said above, as unloaded.
    let (armed, late): (Vec<&String>, Vec<&String>) = src
        .waiting_for
        .iter()
        .filter(|name| !app.model.modules.contains_key(*name))
        .partition(|name| early(name));
    if !armed.is_empty() {
        bad = true;
        parts.push(format!("{} armed, waiting for it to load", join(&armed)));
    }
    if !late.is_empty() {
        bad = true;
        parts.push(format!(
            "waiting for {} to load (no module file: first callbacks missed)",
            join(&late)
        ));
    }
    if parts.is_empty() && src.live {
        return ("no driver module attached".to_owned(), true);
    }
    (parts.join(", "), bad)
}

#[cfg(test)]
mod tests {
    use super::attach_state;
    use crate::model::ModuleStatus;
    use crate::synth;
    use crate::tui::app::App;
    use crate::tui::ui::theme::Theme;

    fn app(attached: &[&str], waiting: &[&str]) -> App {
        let mut app = App::new(synth::header(), 0, 1_000, Theme::mono());
        app.source.live = true;
        app.source.waiting_for = waiting.iter().map(|name| name.to_string()).collect();
        for name in attached {
            let status = ModuleStatus {
                attached: true,
                callbacks: 2,
                attaches: 1,
                since_ns: 0,
            };
            app.model.modules.insert(name.to_string(), status);
        }
        app
    }

    #[test]
    fn modules_attached_and_awaited_are_said_together() {
        let (text, bad) = attach_state(&app(&["ax88796b_rust"], &["qt2025"]));
        assert_eq!(
            text,
            "ax88796b_rust attached, qt2025 armed, waiting for it to load"
        );
        assert!(bad);
        let (text, bad) = attach_state(&app(&["ax88796b_rust"], &[]));
        assert_eq!((text.as_str(), bad), ("ax88796b_rust attached", false));
    }
}
