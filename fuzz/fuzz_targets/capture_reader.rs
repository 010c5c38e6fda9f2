//! Feeds arbitrary bytes to the capture reader, the model and the text renderer: none of them
//! may panic, whatever the input, and every error or damage report must say something.
//!
//! From the repository root (or `cargo xtask fuzz`, see docs/fuzzing.md):
//!
//! ```text
//! mkdir -p fuzz/corpus/capture_reader
//! AYA_BUILD_SKIP=1 cargo +nightly-2026-05-19 fuzz run capture_reader \
//!     fuzz/corpus/capture_reader fuzz/seeds/capture_reader -- -dict=fuzz/capture.dict
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use phytrace::capture::{Problem, Reader};
use phytrace::model::Model;
use phytrace::render;

fuzz_target!(|data: &[u8]| {
    let reader = match Reader::new(data, "fuzz") {
        Ok(reader) => reader,
        Err(e) => {
            assert!(e.to_string().contains("fuzz"), "{e}: the source is not named");
            return;
        }
    };
    let start = reader.header().clock.mono_ns;
    let mut model = Model::with_history_cap(16);
    for item in reader {
        let event = match item {
            Ok(event) => event,
            Err(issue) => {
                if let Problem::Corrupt(why) | Problem::Unexpected(why) | Problem::Io(why) =
                    &issue.problem
                {
                    assert!(!why.trim().is_empty(), "{issue}: says not why");
                }
                continue;
            }
        };
        let applied = model.apply(&event);
        let _ = render::event_line(&event, &applied, start);
    }
    let _ = model.totals();
});
