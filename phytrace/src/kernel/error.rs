//! What the kernel side refuses, in words a kernel developer can act on. The command line maps
//! each kind to an exit code (`exit::code_for`).

use std::fmt;

use super::privileges;

/// Why a probe operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeErrorKind {
    /// This kernel or this user cannot trace: privileges, kprobes, BTF, trampolines.
    Unavailable,
    /// An option the kernel side cannot use (a ring size, a callback depth).
    BadOption,
}

/// What a refused operation was doing, which decides what its error number means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Creating the maps, or loading a program that is not a kprobe.
    Load,
    /// Loading a kprobe program.
    LoadKprobe,
    /// Attaching a kprobe; Rust functions (`_R…`) have no ftrace site.
    AttachKprobe {
        /// Whether the function is a Rust one.
        rust_symbol: bool,
    },
    /// Attaching anything else.
    Attach,
}

/// What the kernel lacks or refuses, as far as an error number tells: each has one fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// No `bpf()` system call (ENOSYS).
    NoBpfSyscall,
    /// No BPF programs on kprobes (EINVAL loading a kprobe program).
    NoBpfEvents,
    /// A kprobe on a Rust function refused (EIO in 6.12, EINVAL since): it has no ftrace site
    /// and the kernel lacks `CONFIG_KPROBE_EVENTS_ON_NOTRACE`.
    NotraceKprobe,
    /// Not permitted (EPERM, EACCES).
    NotPermitted,
    /// The function is gone or cannot be probed (ENOENT, EINVAL attaching a kprobe).
    NoSymbol,
    /// The kernel has no kprobe PMU.
    NoKprobes,
}

impl Cause {
    /// The cause `errno` stands for at `stage`, if it names one.
    pub fn of(stage: Stage, errno: Option<i32>) -> Option<Self> {
        match (stage, errno?) {
            (Stage::Load | Stage::LoadKprobe, libc::ENOSYS) => Some(Self::NoBpfSyscall),
            (_, libc::EPERM | libc::EACCES) => Some(Self::NotPermitted),
            (Stage::LoadKprobe, libc::EINVAL) => Some(Self::NoBpfEvents),
            (Stage::AttachKprobe { rust_symbol: true }, libc::EIO | libc::EINVAL) => {
                Some(Self::NotraceKprobe)
            }
            (Stage::AttachKprobe { .. }, libc::ENOENT | libc::EINVAL) => Some(Self::NoSymbol),
            _ => None,
        }
    }

    /// What to do about it.
    pub fn fix(self) -> String {
        match self {
            Self::NoBpfSyscall => {
                "boot a kernel built with CONFIG_BPF_SYSCALL=y (the bpf() system call)".to_owned()
            }
            Self::NoBpfEvents => {
                "boot a kernel built with CONFIG_BPF_EVENTS=y (BPF programs on kprobes)".to_owned()
            }
            Self::NotraceKprobe => "this kernel refuses kprobes in Rust code (Rust functions \
                                    have no ftrace site, and it is built without \
                                    CONFIG_KPROBE_EVENTS_ON_NOTRACE): trace callbacks at \
                                    phylib's call sites (`--callback-probes callsite`, chosen \
                                    by `auto` on such a kernel), or rebuild the kernel with \
                                    CONFIG_KPROBE_EVENTS_ON_NOTRACE=y"
                .to_owned(),
            Self::NotPermitted => privileges::fix(),
            Self::NoSymbol => "the function is not in /proc/kallsyms or cannot be probed \
                               (module unloaded, or inlined)"
                .to_owned(),
            Self::NoKprobes => "use a kernel built with CONFIG_KPROBES=y and \
                                CONFIG_KPROBE_EVENTS=y (cargo xtask kernel builds one)"
                .to_owned(),
        }
    }
}

/// A refusal of the kernel side, with what to do about it.
#[derive(Debug)]
pub struct ProbeError {
    /// What kind of refusal.
    pub kind: ProbeErrorKind,
    /// What went wrong and how to fix it.
    pub message: String,
    /// What the kernel lacks or refuses, when known.
    pub cause: Option<Cause>,
}

impl ProbeError {
    /// Tracing is not possible here, because of `message`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            kind: ProbeErrorKind::Unavailable,
            message: message.into(),
            cause: None,
        }
    }

    /// Tracing is not possible here, because the kernel lacks or refuses `cause`.
    pub fn refused(cause: Option<Cause>, message: impl Into<String>) -> Self {
        Self {
            cause,
            ..Self::unavailable(message)
        }
    }

    /// An option the kernel side cannot use.
    pub fn bad_option(message: impl Into<String>) -> Self {
        Self {
            kind: ProbeErrorKind::BadOption,
            message: message.into(),
            cause: None,
        }
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProbeError {}

/// The OS error code somewhere in `err`'s chain of causes, if any.
pub fn os_error(err: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cause = Some(err);
    while let Some(current) = cause {
        if let Some(code) = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(code);
        }
        cause = current.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_number_means_what_its_stage_makes_it() {
        let rust = Stage::AttachKprobe { rust_symbol: true };
        let other = Stage::AttachKprobe { rust_symbol: false };
        let cases = [
            (Stage::Load, libc::ENOSYS, Some(Cause::NoBpfSyscall)),
            (Stage::LoadKprobe, libc::ENOSYS, Some(Cause::NoBpfSyscall)),
            (rust, libc::ENOSYS, None),
            (Stage::Load, libc::EPERM, Some(Cause::NotPermitted)),
            (Stage::Attach, libc::EACCES, Some(Cause::NotPermitted)),
            (Stage::LoadKprobe, libc::EINVAL, Some(Cause::NoBpfEvents)),
            (Stage::Load, libc::EINVAL, None),
            (rust, libc::EIO, Some(Cause::NotraceKprobe)),
            (other, libc::EIO, None),
            (other, libc::ENOENT, Some(Cause::NoSymbol)),
            (rust, libc::EINVAL, Some(Cause::NotraceKprobe)),
            (other, libc::EINVAL, Some(Cause::NoSymbol)),
            (Stage::Attach, libc::ENOENT, None),
        ];
        for (stage, errno, cause) in cases {
            assert_eq!(Cause::of(stage, Some(errno)), cause, "{stage:?} {errno}");
        }
        assert_eq!(Cause::of(Stage::Load, None), None);
    }
}
