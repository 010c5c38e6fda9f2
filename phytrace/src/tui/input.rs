//! Terminal input read on its own thread, so the event loop can wait on it with the source.

use std::io;

use tokio::sync::mpsc;

pub use ratatui::crossterm::event::Event as TermEvent;

/// Starts a thread that forwards terminal events until reading fails or the receiver is gone.
pub fn spawn() -> mpsc::UnboundedReceiver<io::Result<TermEvent>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        loop {
            let event = ratatui::crossterm::event::read();
            let failed = event.is_err();
            if tx.send(event).is_err() || failed {
                break;
            }
        }
    });
    rx
}
