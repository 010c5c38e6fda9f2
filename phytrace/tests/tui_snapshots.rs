//! Snapshots of every TUI view on the real captures, at 80×24 and larger, with and without
//! colours (`cargo insta review` after an intended change). The coloured views are snapshotted
//! with their styles ([`styled`]), the others as text.

mod common;

use std::time::Duration;

use phytrace::capture::Capture;
use phytrace::tui::app::{App, Mode, Pane, View};
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
    let mut capture = Capture::read(common::data(&format!("{name}.ptrace"))).expect("capture");
    let cut = capture
        .events
        .iter()
        .position(|e| !keep(e))
        .unwrap_or(capture.events.len());
    capture.events.truncate(cut);
    let mut app = App::new(
        capture.header.clone(),
        capture.header.clock.mono_ns,
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

/// The screen and its styles: ratatui's `Buffer` debug form lists, after the text, where each
/// run of cells with the same foreground, background and modifiers starts, so that a change of
/// colour fails the snapshot as a change of text does.
fn styled(terminal: &Terminal<TestBackend>) -> String {
    format!("{:?}", terminal.backend().buffer())
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
        insta::assert_snapshot!(format!("{name}-80x24"), styled(&render(&app, 80, 24)));
        insta::assert_snapshot!(format!("{name}-160x48"), styled(&render(&app, 160, 48)));
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

/// The emulated USB dongle (`rust-dongle.ptrace`, see tests/diff_export.rs): its PHY on the
/// `usb-…` bus, USB-slow MDIO and the MAC side in the log.
#[test]
fn dongle_capture_overview() {
    let app = replayed("rust-dongle", Theme::mono());
    let terminal = render(&app, 160, 48);
    let screen = format!("{:?}", terminal.backend());
    assert!(screen.contains("usb-001:002:10"), "{screen}");
    insta::assert_snapshot!("rust-dongle-no-color-160x48", terminal.backend());
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

/// Asserts no cell of `terminal` is coloured.
fn assert_no_colour(terminal: &Terminal<TestBackend>, what: &str) {
    for cell in &terminal.backend().buffer().content {
        assert_eq!(
            (cell.fg, cell.bg),
            (Color::Reset, Color::Reset),
            "{what}: coloured cell {cell:?}"
        );
    }
}

#[test]
fn stats_view_of_each_capture_at_80x24_and_160x48() {
    for name in CAPTURES {
        let mut app = replayed(name, Theme::colored());
        key(&mut app, KeyCode::Char('s'));
        assert_eq!((app.view, app.focus), (View::Stats, Pane::Latency));
        insta::assert_snapshot!(format!("{name}-stats-80x24"), styled(&render(&app, 80, 24)));
        insta::assert_snapshot!(
            format!("{name}-stats-160x48"),
            styled(&render(&app, 160, 48))
        );
    }
}

#[test]
fn each_stats_pane_zoomed_at_two_sizes() {
    let mut app = replayed("rust-plug-unplug", Theme::colored());
    key(&mut app, KeyCode::Char('s'));
    for pane in [
        Pane::Latency,
        Pane::Figures,
        Pane::Histogram,
        Pane::Links,
        Pane::Mdio,
    ] {
        assert_eq!(app.focus, pane);
        key(&mut app, KeyCode::Char('z'));
        for (width, height) in [(80, 24), (160, 48)] {
            insta::assert_snapshot!(
                format!("stats-zoom-{pane:?}-{width}x{height}"),
                render(&app, width, height).backend()
            );
        }
        key(&mut app, KeyCode::Char('z'));
        key(&mut app, KeyCode::Tab);
    }
    assert_eq!(app.focus, Pane::Latency);
    key(&mut app, KeyCode::Char('s'));
    assert_eq!((app.view, app.focus), (View::Trace, Pane::Phys));
}

#[test]
fn stats_keys_choose_the_callback_and_the_phy() {
    let mut app = replayed("rust-plug-unplug", Theme::mono());
    key(&mut app, KeyCode::Char('s'));
    let first = app.selected_callback_stats().map(|(n, _)| n.to_owned());
    key(&mut app, KeyCode::Down);
    let second = app.selected_callback_stats().map(|(n, _)| n.to_owned());
    assert_ne!(first, second);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(
        app.selected_callback_stats().map(|(n, _)| n.to_owned()),
        first
    );
    // read_status: the histogram follows the choice, kept by name across PHYs (the second
    // PHY has no read_status: its first callback is shown).
    while app
        .selected_callback_stats()
        .is_some_and(|(n, _)| n != "read_status")
    {
        key(&mut app, KeyCode::Down);
    }
    let screen = render(&app, 120, 40).backend().to_string();
    assert!(screen.contains("Histogram read_status"), "{screen}");
    insta::assert_snapshot!(screen);
    key(&mut app, KeyCode::Right);
    let screen = render(&app, 120, 40).backend().to_string();
    assert!(screen.contains("Latencies phy_sim-0:02"), "{screen}");
    assert!(screen.contains("Histogram resume"), "{screen}");
    key(&mut app, KeyCode::Left);
    let screen = render(&app, 120, 40).backend().to_string();
    assert!(screen.contains("Histogram read_status"), "{screen}");
}

#[test]
fn stats_view_without_colours() {
    for name in CAPTURES {
        let mut app = replayed(name, Theme::mono());
        key(&mut app, KeyCode::Char('s'));
        for (width, height) in [(80, 24), (160, 48)] {
            let terminal = render(&app, width, height);
            assert_no_colour(&terminal, name);
            if *name == "rust-plug-unplug" {
                insta::assert_snapshot!(
                    format!("{name}-stats-no-color-{width}x{height}"),
                    terminal.backend()
                );
            }
        }
    }
}

/// The dongle's MAC side and USB MDIO latency in the figures: beside the latencies when there is
/// room, over the whole top row while focused when there is not.
#[test]
fn stats_figures_of_the_dongle() {
    for name in ["rust-dongle", "c-dongle"] {
        let mut app = replayed(name, Theme::mono());
        key(&mut app, KeyCode::Char('s'));
        for (width, height) in [(80, 24), (160, 48)] {
            let terminal = render(&app, width, height);
            assert_no_colour(&terminal, name);
            insta::assert_snapshot!(format!("{name}-stats-{width}x{height}"), terminal.backend());
        }
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.focus, Pane::Figures);
        let screen = render(&app, 80, 24).backend().to_string();
        insta::assert_snapshot!(format!("{name}-figures-focused-80x24"), screen);
        key(&mut app, KeyCode::Char('z'));
        let screen = render(&app, 80, 24).backend().to_string();
        assert!(screen.contains("Carrier eth0"), "{screen}");
        assert!(screen.contains("MDIO latency"), "{screen}");
    }
    // The figures are the report of `phytrace stats` for the selected PHY.
    let app = replayed("rust-dongle", Theme::mono());
    let capture = Capture::read(common::data("rust-dongle.ptrace")).expect("capture");
    let mut whole = phytrace::stats::of_capture(&capture);
    let mut shown = app.selected_report().expect("a PHY");
    // The TUI's end is its latest event, the capture's its trailer: the open intervals differ.
    let close = |p: &mut phytrace::stats::PhyReport| {
        p.link.intervals.pop();
        if let Some(c) = p.carrier.as_mut() {
            c.intervals.pop();
        }
    };
    close(&mut shown);
    let stats = &mut whole.phys[0];
    close(stats);
    assert_eq!(shown.callbacks, stats.callbacks);
    assert_eq!(shown.mdio.latency, stats.mdio.latency);
    assert_eq!(shown.mdio.registers, stats.mdio.registers);
    assert_eq!(shown.link.intervals, stats.link.intervals);
    assert_eq!(shown.link.ups, stats.link.ups);
    assert_eq!(
        shown.carrier.map(|c| c.ups),
        stats.carrier.clone().map(|c| c.ups)
    );
}

/// Halfway through a replay the charts show what was taken in so far, not the whole capture.
#[test]
fn stats_follow_the_replay() {
    let capture = Capture::read(common::data("rust-plug-unplug.ptrace")).expect("capture");
    let half = capture.events[capture.events.len() / 2].ts_ns;
    let mut partial = replayed_while("rust-plug-unplug", Theme::mono(), |e| e.ts_ns < half);
    let whole = replayed("rust-plug-unplug", Theme::mono());
    let calls = |app: &App| -> u64 {
        app.stats
            .phys
            .values()
            .flat_map(|p| p.callbacks.values())
            .map(|c| c.latencies.count())
            .sum()
    };
    assert!(0 < calls(&partial) && calls(&partial) < calls(&whole));
    key(&mut partial, KeyCode::Char('s'));
    insta::assert_snapshot!(render(&partial, 100, 30).backend());
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
        key(&mut app, KeyCode::Char('s'));
        for _ in Pane::of(View::Stats) {
            for zoom in [false, true] {
                app.zoom = zoom;
                render(&app, w, h);
            }
            key(&mut app, KeyCode::Tab);
        }
        key(&mut app, KeyCode::Char('s'));
    }
}
