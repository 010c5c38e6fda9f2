//! Captures recorded in the VM (`phytrace/tests/data/*.ptrace`) read back without damage,
//! replay through the model, and dump. A missing capture, or a missing directory, fails.

mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use phytrace::capture::Capture;
use phytrace::commands::{
    Format,
    dump::{DumpArgs, dump},
};
use phytrace::model::Model;

/// The captures the tests rely on; any other `.ptrace` file beside them is checked too.
const FIXTURES: &[&str] = &[
    "c-dongle.ptrace",
    "c-plug-unplug.ptrace",
    "rust-dongle.ptrace",
    "rust-module-reload.ptrace",
    "rust-plug-unplug.ptrace",
];

fn recorded() -> Vec<PathBuf> {
    let dir = PathBuf::from(common::DATA);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the recorded captures' directory {}: {e}", dir.display()));
    let mut files: Vec<_> = entries
        .map(|e| e.expect("listing tests/data").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptrace"))
        .collect();
    files.sort();
    for fixture in FIXTURES {
        assert!(
            files.contains(&dir.join(fixture)),
            "recorded capture {fixture} missing from {}",
            dir.display()
        );
    }
    files
}

#[test]
fn recorded_captures_replay_cleanly() {
    for path in recorded() {
        let capture = Capture::read(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(capture.issues, [], "{}", path.display());
        let trailer = capture
            .trailer
            .as_ref()
            .unwrap_or_else(|| panic!("{}", path.display()));
        assert_eq!(
            trailer.events,
            capture.events.len() as u64,
            "{}: events written",
            path.display()
        );
        let mut model = Model::new();
        for event in &capture.events {
            model.apply(event);
        }
        // Nothing was lost in these sessions: every return meets its call.
        let totals = model.totals();
        assert_eq!(
            (totals.unmatched_exits, totals.lost),
            (0, trailer.lost),
            "{}: exits without their entry, losses",
            path.display()
        );

        for format in [Format::Text, Format::Json] {
            let args = DumpArgs {
                file: path.clone(),
                format,
                phy: None,
                kind: Vec::new(),
                summary: false,
            };
            let (mut out, mut err) = (Vec::new(), Vec::new());
            assert_eq!(dump(&args, &mut out, &mut err).unwrap(), ExitCode::SUCCESS);
            assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
        }
    }
}
