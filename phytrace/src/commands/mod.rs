//! One module per subcommand.

pub mod doctor;
pub mod dump;
