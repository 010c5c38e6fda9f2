//! What the kernel side refuses, in words a kernel developer can act on. The command line maps
//! each kind to an exit code (`exit::code_for`).

use std::fmt;

/// Why a probe operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeErrorKind {
    /// This kernel or this user cannot trace: privileges, kprobes, BTF, trampolines.
    Unavailable,
    /// An option the kernel side cannot use (a ring size, a callback depth).
    BadOption,
}

/// A refusal of the kernel side, with what to do about it.
#[derive(Debug)]
pub struct ProbeError {
    /// What kind of refusal.
    pub kind: ProbeErrorKind,
    /// What went wrong and how to fix it.
    pub message: String,
}

impl ProbeError {
    /// Tracing is not possible here, because of `message`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            kind: ProbeErrorKind::Unavailable,
            message: message.into(),
        }
    }

    /// An option the kernel side cannot use.
    pub fn bad_option(message: impl Into<String>) -> Self {
        Self {
            kind: ProbeErrorKind::BadOption,
            message: message.into(),
        }
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProbeError {}
