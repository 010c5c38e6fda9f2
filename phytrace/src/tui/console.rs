//! Whether the kernel's console writes on the TUI's terminal: then a line it prints lands on
//! the screen, and the TUI, which sees the same line as an event, draws the screen anew.

use std::fs;
use std::path::Path;

/// Whether standard output is one of the kernel's active consoles (`/dev/ttyS0` when
/// `/sys/class/tty/console/active` lists `ttyS0`).
pub fn is_shared() -> bool {
    let Ok(tty) = fs::read_link("/proc/self/fd/1") else {
        return false;
    };
    let Some(name) = tty.strip_prefix("/dev").ok().map(Path::to_owned) else {
        return false;
    };
    let name = name.to_string_lossy().into_owned();
    fs::read_to_string("/sys/class/tty/console/active")
        .is_ok_and(|active| active.split_whitespace().any(|c| c == name))
}

/// Whether the console prints a line of `level` now (below `console_loglevel`, the first
/// field of `/proc/sys/kernel/printk`); a line of unknown level may be printed.
pub fn prints(level: Option<u8>) -> bool {
    let console_level = fs::read_to_string("/proc/sys/kernel/printk")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u8>().ok());
    match (level, console_level) {
        (Some(level), Some(console)) => level < console,
        _ => true,
    }
}
