//! One module per subcommand.

pub mod doctor;
