//! `w`: the events held by the view, written as a capture file.

use std::path::Path;

use crate::capture::{WriteError, Writer};
use crate::tui::app::App;

/// Writes the held events with the session's header; returns how many.
pub fn save_window(path: &Path, app: &App) -> Result<u64, WriteError> {
    let mut writer = Writer::create(path, &app.header)?;
    for entry in &app.log {
        writer.write(&entry.event)?;
    }
    let end_ns = app.log.back().map_or(app.start_ns, |e| e.event.ts_ns);
    let trailer = writer.finish(end_ns, 0)?;
    Ok(trailer.events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::synth::{Synth, header};
    use crate::tui::ui::theme::Theme;
    use std::time::Duration;

    #[test]
    fn saved_window_reads_back() {
        let mut app = App::new(header(), 0, 50, Theme::mono());
        app.ingest(Synth::new(7).take(120), Duration::ZERO);
        let dir = std::env::temp_dir().join(format!("phytrace-save-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("window.ptrace");
        assert_eq!(save_window(&path, &app).unwrap(), 50);
        let capture = Capture::read(&path).unwrap();
        let held: Vec<_> = app.log.iter().map(|e| e.event.clone()).collect();
        assert_eq!(capture.events, held);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
