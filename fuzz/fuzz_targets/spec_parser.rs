//! Feeds arbitrary text to the spec parser: it may not panic, and every error must point at a
//! real line and column with a message. A spec that parses is evaluated on a real capture and
//! reported as text and JUnit XML, which may not panic either.
//!
//! From the repository root (or `cargo xtask fuzz`):
//!
//! ```text
//! mkdir -p fuzz/corpus/spec_parser
//! AYA_BUILD_SKIP=1 cargo +nightly-2026-05-19 fuzz run spec_parser \
//!     fuzz/corpus/spec_parser fuzz/seeds/spec_parser -- -dict=fuzz/spec.dict
//! ```
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use phytrace::capture::{Capture, Reader};
use phytrace::check::{self, junit, report, report::Checked};

/// The capture the specs that parse are checked on.
const CAPTURE: &[u8] = include_bytes!("../../phytrace/tests/data/rust-plug-unplug.ptrace");

/// [`CAPTURE`], read once.
fn capture() -> &'static Capture {
    static CAPTURE_READ: OnceLock<Capture> = OnceLock::new();
    CAPTURE_READ.get_or_init(|| {
        let reader = Reader::new(CAPTURE, "rust-plug-unplug.ptrace").expect("a valid capture");
        Capture::collect(reader)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let spec = match check::parse(text) {
        Ok(spec) => spec,
        Err(e) => {
            let line = text.lines().nth(e.line.wrapping_sub(1));
            let line = line.unwrap_or_else(|| panic!("{e}: no line {} in {text:?}", e.line));
            assert!(
                (1..=line.chars().count() + 1).contains(&e.column),
                "{e}: column {} is outside line {line:?}",
                e.column
            );
            assert!(!e.message.trim().is_empty(), "empty message at {e}");
            return;
        }
    };
    let checked = Checked::new("fuzz.ptrace", capture(), &spec);
    let _ = report::text("fuzz.spec", &spec, &checked);
    let _ = junit::document("fuzz.spec", &spec, &[checked]);
});
