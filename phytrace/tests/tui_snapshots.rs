//! Snapshots of every TUI view on the real captures, at 80×24 and larger, with and without
//! colours (`cargo insta review` after an intended change).

use std::path::Path;
use std::time::Duration;

use phytrace::capture::Capture;
use phytrace::tui::app::{App, Mode, Pane};
use phytrace::tui::source::SourceStatus;
use phytrace::tui::ui::{self, theme::Theme};
use phytrace::tui::update;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use ratatui::{Terminal, backend::TestBackend};

const CAPTURES: &[&str] = &["rust-plug-unplug", "rust-module-reload", "c-plug-unplug"];

/// An app that replayed the whole capture `name`.
fn replayed(name: &str, theme: Theme) -> App {
    replayed_while(name, theme, |_| true)
}

/// The app after replaying the capture's events up to the first one `keep` refuses.
fn replayed_while(
    name: &str,
    theme: Theme,
    mut keep: impl FnMut(&phytrace::event::Event) -> bool,
) -> App {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.ptrace"));
    let mut capture = Capture::read(&path).expect("capture");
    let cut = capture
        .events
        .iter()
        .position(|e| !keep(e))
        .unwrap_or(capture.events.len());
    capture.events.truncate(cut);
    let mut app = App::new(
        capture.header.clone(),
        capture.header.clock.boot_ns,
        100_000,
        theme,
    );
    let n = capture.events.len() as u64;
    let last = capture.events.last().map(|e| e.ts_ns);
    app.ingest(capture.events, Duration::ZERO);
    app.set_source_status(SourceStatus {
        speed: 1.0,
        position_ns: last,
        delivered: n,
        done: true,
        ..SourceStatus::default()
    });
    app
}

fn render(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| ui::draw(frame, app)).unwrap();
    terminal
}

fn key(app: &mut App, code: KeyCode) {
    let action = update::on_key(app, &KeyEvent::new(code, KeyModifiers::NONE));
    assert_eq!(action, None, "{code:?} needs the event loop");
}

fn type_text(app: &mut App, text: &str) {
    text.chars().for_each(|c| key(app, KeyCode::Char(c)));
}

#[test]
fn overview_of_each_capture_at_80x24_and_160x48() {
    for name in CAPTURES {
        let app = replayed(name, Theme::colored());
        insta::assert_snapshot!(format!("{name}-80x24"), render(&app, 80, 24).backend());
        insta::assert_snapshot!(format!("{name}-160x48"), render(&app, 160, 48).backend());
    }
}

#[test]
fn each_pane_zoomed() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    for pane in [
        Pane::Phys,
        Pane::Registers,
        Pane::Timeline,
        Pane::States,
        Pane::Log,
    ] {
        app.focus = pane;
        app.zoom = true;
        insta::assert_snapshot!(
            format!("zoom-{pane:?}-80x24"),
            render(&app, 80, 24).backend()
        );
    }
}

#[test]
fn register_changes_of_the_second_phy() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    key(&mut app, KeyCode::Right);
    app.focus = Pane::Registers;
    app.zoom = true;
    insta::assert_snapshot!(render(&app, 120, 30).backend());
}

#[test]
fn selected_callback_shows_its_accesses() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    app.focus = Pane::Timeline;
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    insta::assert_snapshot!(render(&app, 120, 40).backend());
}

#[test]
fn help_overlay() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    key(&mut app, KeyCode::Char('?'));
    assert_eq!(app.mode, Mode::Help);
    insta::assert_snapshot!(render(&app, 80, 24).backend());
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn filter_and_search_in_the_log() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    key(&mut app, KeyCode::Char('f'));
    type_text(&mut app, "mdio reg:BMSR phy:0:01");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "0x7849");
    insta::assert_snapshot!("search-prompt", render(&app, 100, 30).backend());
    key(&mut app, KeyCode::Enter);
    app.zoom = true;
    insta::assert_snapshot!("filtered-and-searched", render(&app, 100, 30).backend());
}

#[test]
fn reload_shows_reattach() {
    let app = replayed("rust-module-reload", Theme::colored());
    let screen = render(&app, 120, 30).backend().to_string();
    assert!(screen.contains("re-attached after reload"), "{screen}");
}

#[test]
fn no_color_uses_no_colours_but_keeps_markers() {
    for name in CAPTURES {
        let mut app = replayed(name, Theme::mono());
        for (width, height) in [(80, 24), (160, 48)] {
            let terminal = render(&app, width, height);
            let buffer = terminal.backend().buffer();
            for cell in &buffer.content {
                assert_eq!(
                    (cell.fg, cell.bg),
                    (Color::Reset, Color::Reset),
                    "{name}: coloured cell {cell:?}"
                );
            }
            insta::assert_snapshot!(
                format!("{name}-no-color-{width}x{height}"),
                terminal.backend()
            );
        }
        app.focus = Pane::Registers;
        app.zoom = true;
        let screen = render(&app, 120, 30).backend().to_string();
        assert!(screen.contains("BMSR"), "{screen}");
    }
    // Right after the poll that saw the cable go: BMSR lost LSTATUS during that read_status.
    let mut link_lost = false;
    let mut app = replayed_while("rust-plug-unplug", Theme::mono(), |event| {
        let keep = !link_lost;
        if let phytrace::event::EventKind::CallbackExit {
            callback,
            state_before,
            link,
            ..
        } = &event.kind
        {
            link_lost |=
                &*callback.name == "read_status" && !link.up && &*state_before.name == "RUNNING";
        }
        keep
    });
    app.focus = Pane::Registers;
    app.zoom = true;
    let screen = render(&app, 120, 30).backend().to_string();
    assert!(
        screen.contains('*'),
        "changed bits are not starred:\n{screen}"
    );
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    for (w, h) in [(1, 1), (10, 3), (20, 5), (80, 24), (300, 100), (40, 60)] {
        for zoom in [false, true] {
            app.zoom = zoom;
            render(&app, w, h);
        }
        key(&mut app, KeyCode::Char('?'));
        render(&app, w, h);
        key(&mut app, KeyCode::Esc);
    }
}
