//! Feeds arbitrary bytes to the capture reader, the model and the text renderer: none of them
//! may panic, whatever the input.
//!
//! From the repository root, with a synthetic capture as seed:
//!
//! ```text
//! mkdir -p fuzz/corpus/capture_reader
//! AYA_BUILD_SKIP=1 cargo +nightly-2026-05-19 fuzz run capture_reader \
//!     fuzz/corpus/capture_reader fuzz/seeds/capture_reader
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use phytrace::capture::Reader;
use phytrace::model::Model;
use phytrace::render;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = Reader::new(data, "fuzz") else {
        return;
    };
    let start = reader.header().clock.boot_ns;
    let mut model = Model::with_history_cap(16);
    for event in reader.flatten() {
        let applied = model.apply(&event);
        let _ = render::event_line(&event, &applied, start);
    }
    let _ = model.totals();
});
