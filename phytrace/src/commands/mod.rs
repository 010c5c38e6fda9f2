//! Subcommands, one file each.

pub mod dump;
