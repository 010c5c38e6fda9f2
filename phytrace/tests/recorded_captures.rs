//! Captures recorded in the VM (`phytrace/tests/data/*.ptrace`, when present) read back without
//! damage, replay through the model, and dump.

use std::path::PathBuf;
use std::process::ExitCode;

use phytrace::capture::Capture;
use phytrace::commands::dump::{DumpArgs, Format, dump};
use phytrace::model::Model;

fn recorded() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptrace"))
        .collect();
    files.sort();
    files
}

#[test]
fn recorded_captures_replay_cleanly() {
    for path in recorded() {
        let capture = Capture::read(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(capture.issues, [], "{}", path.display());
        assert!(capture.trailer.is_some(), "{}", path.display());
        let mut model = Model::new();
        for event in &capture.events {
            model.apply(event);
        }
        assert_eq!(model.totals().events, capture.events.len() as u64);

        for format in [Format::Text, Format::Json] {
            let args = DumpArgs {
                file: path.clone(),
                format,
                phy: None,
                kind: Vec::new(),
            };
            let (mut out, mut err) = (Vec::new(), Vec::new());
            assert_eq!(dump(&args, &mut out, &mut err).unwrap(), ExitCode::SUCCESS);
            assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
        }
    }
}
