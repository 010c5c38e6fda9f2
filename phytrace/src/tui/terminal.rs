//! Raw mode and the alternate screen, undone on drop (return or error) and by ratatui's panic
//! hook.

use std::io;

use ratatui::DefaultTerminal;

/// The terminal in TUI mode while this lives.
pub struct TerminalGuard {
    terminal: DefaultTerminal,
}

impl TerminalGuard {
    /// Enters raw mode and the alternate screen, and installs the panic hook that leaves them.
    pub fn enter() -> io::Result<Self> {
        match ratatui::try_init() {
            Ok(terminal) => Ok(Self { terminal }),
            Err(err) => {
                ratatui::restore();
                Err(err)
            }
        }
    }

    /// The terminal to draw on.
    pub fn terminal(&mut self) -> &mut DefaultTerminal {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}
