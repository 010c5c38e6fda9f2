//! Feeds arbitrary bytes as a capture, binary or JSON Lines, to what the commands make of it:
//! `export` (the Perfetto trace), `stats` (the report and its text), `diff` (against a real
//! capture), `check` (the shipped driver spec) and the TUI's replay (its model, statistics and
//! every pane drawn). None may panic; `cargo xtask fuzz` bounds each input's time and memory
//! (libFuzzer's `-timeout` and `-rss_limit_mb`), which no value inside a capture may push past.
//!
//! From the repository root (or `cargo xtask fuzz`, see docs/fuzzing.md):
//!
//! ```text
//! mkdir -p fuzz/corpus/capture_commands
//! AYA_BUILD_SKIP=1 cargo +nightly-2026-05-19 fuzz run capture_commands \
//!     fuzz/corpus/capture_commands fuzz/seeds/capture_reader -- -dict=fuzz/capture.dict
//! ```
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use phytrace::capture::{Capture, Reader};
use phytrace::check::{self, Spec, report::Checked};
use phytrace::tui::{app::App, ui, ui::theme::Theme};
use phytrace::{diff, export::perfetto, stats};
use ratatui::{Terminal, backend::TestBackend};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../phytrace/tests/data");

/// The capture `diff` compares with.
fn reference() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| Capture::read(format!("{DATA}/rust-dongle.ptrace")).unwrap())
}

/// The spec `check` evaluates.
fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../specs/ax88796b.spec");
        check::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = Reader::new(data, "fuzz") else {
        return;
    };
    let capture = Capture::collect(reader);
    let _ = perfetto::trace(&capture);
    let _ = stats::text::report("fuzz", &stats::of_capture(&capture));
    let opts = diff::Options::default();
    let (a, b) = (
        diff::accesses(&capture.events, &opts),
        diff::accesses(&reference().events, &opts),
    );
    for d in &diff::compare(&a, &b) {
        let _ = diff::render(d, &a, &b);
    }
    let checked = Checked::new("fuzz.ptrace", &capture, spec());
    let _ = check::report::text("fuzz.spec", spec(), &checked);
    let mut app = App::new(
        capture.header.clone(),
        capture.origin_ns(),
        64,
        Theme::mono(),
    );
    app.ingest(capture.events.iter().cloned(), Duration::ZERO);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|frame| ui::draw(frame, &app)).unwrap();
});
