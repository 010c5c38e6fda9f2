//! One module per subcommand.

pub mod check;
pub mod diff;
pub mod doctor;
pub mod dump;
pub mod export;
pub mod generate;
pub mod probes;
pub mod record;
pub mod stats;
pub mod tui;
