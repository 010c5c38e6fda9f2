//! Exit codes, one per kind of outcome, so scripts and CI can tell them apart: defined here
//! once, with the meaning `--help` and the man pages list ([`after_help`]).

use std::{fmt, fmt::Write as _, process::ExitCode};

use crate::kernel::error::{ProbeError, ProbeErrorKind};

/// An outcome phytrace exits with, and its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done (every rule holds, the captures are equal).
    Success,
    /// `check` found a rule violated, or `diff` found the captures different.
    Violation,
    /// A usage error, or a file, spec or capture phytrace cannot use.
    BadInput,
    /// This kernel or this user cannot trace.
    TracingUnavailable,
    /// Writing results failed.
    Output,
    /// Any other error.
    Other,
    /// COMMAND (`record -- COMMAND`, `check -- COMMAND`) failed; its own status is reported
    /// apart, so that it never passes for one of phytrace's.
    CommandFailed,
}

impl Status {
    /// Every status, in the order of their codes.
    pub const ALL: [Self; 7] = [
        Self::Success,
        Self::Violation,
        Self::BadInput,
        Self::TracingUnavailable,
        Self::Output,
        Self::Other,
        Self::CommandFailed,
    ];

    /// What a command that reads captures (and writes what it makes of them) can exit with.
    pub const READS: [Self; 4] = [Self::Success, Self::BadInput, Self::Output, Self::Other];

    /// What a command that checks or reads the kernel can exit with.
    pub const INSPECTS: [Self; 5] = [
        Self::Success,
        Self::BadInput,
        Self::TracingUnavailable,
        Self::Output,
        Self::Other,
    ];

    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Violation => 1,
            Self::BadInput => 2,
            Self::TracingUnavailable => 3,
            Self::Output => 4,
            Self::Other => 5,
            Self::CommandFailed => 6,
        }
    }

    /// What the code means, as `--help` says it.
    const fn meaning(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Violation => "a rule is violated (check), the captures differ (diff)",
            Self::BadInput => {
                "bad input: a usage error, a file, spec or capture that cannot be used"
            }
            Self::TracingUnavailable => {
                "tracing unavailable: privileges or kernel support missing (`phytrace doctor`)"
            }
            Self::Output => "output failed: a file or standard output cannot be written",
            Self::Other => "any other error",
            Self::CommandFailed => {
                "COMMAND failed: its own exit status or signal is on stderr (record: and in --status)"
            }
        }
    }

    /// The process exit code, as `main` returns it.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

/// `text` followed by the table of `statuses` and their meanings, for a command's after-help
/// (shown by `--help` and in its man page).
pub fn after_help(text: &str, statuses: &[Status]) -> String {
    let mut help = format!("{text}\n\nExit status:");
    for status in statuses {
        // Writing to a String cannot fail.
        let _ = write!(help, "\n  {}  {}", status.code(), status.meaning());
    }
    help
}

/// Why phytrace stopped with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A file, spec or argument phytrace cannot use (exit 2, as clap's usage errors).
    BadInput,
    /// This kernel or this user cannot trace: privileges, kprobes, BTF (exit 3).
    TracingUnavailable,
    /// Writing results failed, e.g. a full disk (exit 4).
    Output,
}

impl FailureKind {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::BadInput => Status::BadInput,
            Self::TracingUnavailable => Status::TracingUnavailable,
            Self::Output => Status::Output,
        }
        .code()
    }
}

/// An error with the exit code it deserves; other errors exit with [`EXIT_OTHER`].
#[derive(Debug)]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What went wrong and how to fix it.
    pub message: String,
}

impl Failure {
    /// A failure of `kind` saying `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Exit code of a check or comparison that found a violation or a difference.
pub const EXIT_VIOLATION: u8 = Status::Violation.code();
/// Exit code of any other error.
pub const EXIT_OTHER: u8 = Status::Other.code();

/// The exit code for `err`: its [`Failure`] kind if it has one, else that of the kernel side's
/// refusal in it.
pub fn code_for(err: &anyhow::Error) -> ExitCode {
    let code = err.chain().find_map(|cause| {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return Some(failure.kind.code());
        }
        let refusal = cause.downcast_ref::<ProbeError>()?;
        Some(
            match refusal.kind {
                ProbeErrorKind::Unavailable => FailureKind::TracingUnavailable,
                ProbeErrorKind::BadOption => FailureKind::BadInput,
            }
            .code(),
        )
    });
    ExitCode::from(code.unwrap_or(EXIT_OTHER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_in_order() {
        let codes: Vec<u8> = Status::ALL.iter().map(|s| s.code()).collect();
        assert_eq!(codes, (0..7).collect::<Vec<u8>>());
    }

    #[test]
    fn after_help_lists_the_codes_given() {
        let help = after_help(
            "Example:\n  phytrace dump x",
            &[Status::Success, Status::Output],
        );
        assert_eq!(
            help,
            "Example:\n  phytrace dump x\n\nExit status:\n  0  success\n  \
             4  output failed: a file or standard output cannot be written"
        );
    }
}
