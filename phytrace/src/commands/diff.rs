//! `phytrace diff`: where the MDIO register sequences of two captures diverge.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::capture::Capture;
use crate::diff::{self, Options};
use crate::exit::{self, EXIT_VIOLATION, Failure, FailureKind, Status};
use crate::output;
use crate::registers;

/// `diff --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  phytrace diff rust.ptrace c.ptrace
  phytrace diff --ignore-reads before.ptrace after.ptrace
  phytrace diff --ignore-value BMSR,LPA a.ptrace b.ptrace

PHYs are matched by bus:addr key, else by PHY ID. Timing is ignored.";

/// Compare the MDIO register sequences of two captures, PHY by PHY.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &[
    Status::Success,
    Status::Violation,
    Status::BadInput,
    Status::Output,
    Status::Other,
]))]
pub struct DiffArgs {
    /// First capture (A, lines marked `-`).
    pub a: PathBuf,
    /// Second capture (B, lines marked `+`).
    pub b: PathBuf,
    /// Compare writes only.
    #[arg(long)]
    pub ignore_reads: bool,
    /// Do not compare the values of these registers (names such as BMSR, or numbers).
    #[arg(long, value_name = "REG", value_delimiter = ',', value_parser = parse_register)]
    pub ignore_value: Vec<u16>,
}

/// A register name (`BMSR`) or number (`1`, `0x1f`).
fn parse_register(text: &str) -> Result<u16, String> {
    let number = match text.strip_prefix("0x") {
        Some(hex) => u16::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    };
    number
        .or_else(|| registers::number(text))
        .filter(|&reg| reg < 32)
        .ok_or_else(|| format!("`{text}` is not a register name or number (0 to 31)"))
}

fn read(path: &Path) -> anyhow::Result<Capture> {
    let capture =
        Capture::read(path).map_err(|e| Failure::new(FailureKind::BadInput, e.to_string()))?;
    for issue in capture.issues.iter().take(5) {
        eprintln!("phytrace: warning: {}: {issue}", path.display());
    }
    Ok(capture)
}

/// Runs `phytrace diff`.
pub fn run(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    let opts = Options {
        ignore_reads: args.ignore_reads,
        ignore_values: args.ignore_value.clone(),
    };
    let (pa, pb) = (
        diff::accesses(&a.events, &opts),
        diff::accesses(&b.events, &opts),
    );
    let diffs = diff::compare(&pa, &pb);
    let mut text = format!(
        "phytrace diff: A = {}, B = {} (MDIO accesses per PHY, timing ignored)\n",
        args.a.display(),
        args.b.display()
    );
    for d in &diffs {
        text.push('\n');
        text += &diff::render(d, &pa, &pb);
    }
    let differing = diffs.iter().filter(|d| d.differs()).count();
    text += &match differing {
        0 => format!("\nequal: {} PHYs\n", diffs.len()),
        n => format!("\ndiffer: {n} of {} PHYs\n", diffs.len()),
    };
    output::print(text.as_bytes())?;
    Ok(if differing > 0 {
        ExitCode::from(EXIT_VIOLATION)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::parse_register;

    #[test]
    fn registers_by_name_or_number() {
        assert_eq!(parse_register("BMSR"), Ok(1));
        assert_eq!(parse_register("lpa"), Ok(5));
        assert_eq!(parse_register("0x1f"), Ok(31));
        assert_eq!(parse_register("16"), Ok(16));
        assert!(parse_register("32").is_err());
        assert!(parse_register("NOPE").is_err());
    }
}
