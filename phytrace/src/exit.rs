//! Exit codes, one per kind of outcome, so scripts and CI can tell them apart.

use std::{fmt, process::ExitCode};

use crate::probe::error::{ProbeError, ProbeErrorKind};

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
            Self::BadInput => 2,
            Self::TracingUnavailable => 3,
            Self::Output => 4,
        }
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
pub const EXIT_VIOLATION: u8 = 1;
/// Exit code of any other error.
pub const EXIT_OTHER: u8 = 5;

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
