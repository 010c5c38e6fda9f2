//! Captures converted for other tools.

pub mod perfetto;
