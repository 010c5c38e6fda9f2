//! One module per subcommand.

pub mod doctor;
pub mod dump;
pub mod generate;
pub mod probes;
pub mod record;
pub mod tui;
