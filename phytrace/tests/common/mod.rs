//! Helpers shared by the integration tests: the phytrace binary run with arguments, the paths of
//! the recorded captures and shipped specs, and captures rewritten or damaged.
#![allow(dead_code, reason = "each test binary uses some of the helpers")]

pub mod binary;
pub mod damage;

use std::process::{Command, Output, Stdio};

/// The phytrace binary under test.
pub const PHYTRACE: &str = env!("CARGO_BIN_EXE_phytrace");
/// The captures recorded in the VM.
pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// The phytrace binary with `args`, reading nothing on standard input.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(PHYTRACE);
    command.args(args).stdin(Stdio::null());
    command
}

/// Runs phytrace with `args`, its output captured.
pub fn phytrace(args: &[&str]) -> Output {
    command(args).output().expect("run phytrace")
}

/// The path of `name` among the captures recorded in the VM ([`DATA`]).
pub fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

/// The path of the shipped spec `name` (`specs/`).
pub fn spec(name: &str) -> String {
    format!("{}/../specs/{name}", env!("CARGO_MANIFEST_DIR"))
}
