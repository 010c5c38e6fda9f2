//! What the running kernel offers for BPF, probed without loading anything: the two options
//! no file of their own shows.

/// A function the kernel has only with `CONFIG_BPF_EVENTS` (`kernel/trace/bpf_trace.c`): the
/// one that runs BPF programs on kprobes.
pub const BPF_EVENTS_SYMBOL: &str = "trace_call_bpf";

/// The error number the `bpf()` system call answers a command it does not know with (ENOSYS
/// when the kernel has no such call), or `None` if it took it.
pub fn bpf_syscall_answer() -> Option<i32> {
    // SAFETY: an unknown command with no attribute (null, size 0) reads and writes no memory.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            libc::c_int::MAX,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_uint,
        )
    };
    (ret < 0)
        .then(|| std::io::Error::last_os_error().raw_os_error())
        .flatten()
}

/// Whether a `bpf()` answer shows the system call: any answer but ENOSYS (EINVAL for the
/// unknown command; EPERM without privileges or under seccomp) comes from the kernel's
/// `CONFIG_BPF_SYSCALL` code.
pub fn has_bpf_syscall(answer: Option<i32>) -> bool {
    answer != Some(libc::ENOSYS)
}

/// Where the lockdown LSM says which mode holds: the one in brackets.
pub const LOCKDOWN: &str = "/sys/kernel/security/lockdown";

/// Whether securityfs, where [`LOCKDOWN`] lives, is mounted (`/proc/self/mounts`).
pub fn securityfs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|mounts| {
        mounts
            .lines()
            .any(|line| line.split_whitespace().nth(2) == Some("securityfs"))
    })
}

/// The lockdown mode in [`LOCKDOWN`]'s text (`none [integrity] confidentiality`).
pub fn lockdown_mode(text: &str) -> Option<&str> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    Some(&text[start..start + len])
}

/// Whether lockdown mode `mode` keeps phytrace from tracing: confidentiality refuses every
/// read of kernel memory (`/proc/kcore`, `bpf_probe_read_kernel`) and tracefs.
pub fn lockdown_refuses(mode: &str) -> bool {
    mode == "confidentiality"
}

/// The refusal of a session under a lockdown that refuses tracing, if this kernel is under
/// one.
pub fn refused_by_lockdown() -> Option<String> {
    let text = std::fs::read_to_string(LOCKDOWN).ok()?;
    let mode = lockdown_mode(&text).filter(|mode| lockdown_refuses(mode))?;
    Some(format!(
        "the kernel is locked down ({LOCKDOWN}: {mode}): it refuses every read of its memory \
         and tracefs, so phytrace cannot trace; boot with lockdown=integrity (or none), which \
         Secure Boot's default on Debian is"
    ))
}

/// Whether kallsyms text defines the function `name`.
pub fn defines(kallsyms: &str, name: &str) -> bool {
    super::kallsyms::lines(kallsyms).any(|line| line.is_text() && line.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lockdown_mode_is_the_bracketed_one() {
        assert_eq!(
            lockdown_mode("[none] integrity confidentiality\n"),
            Some("none")
        );
        assert_eq!(
            lockdown_mode("none integrity [confidentiality]\n"),
            Some("confidentiality")
        );
        assert_eq!(lockdown_mode("none"), None);
        assert!(lockdown_refuses("confidentiality") && !lockdown_refuses("integrity"));
    }

    #[test]
    fn only_enosys_means_no_bpf_syscall() {
        assert!(!has_bpf_syscall(Some(libc::ENOSYS)));
        for answer in [Some(libc::EINVAL), Some(libc::EPERM), None] {
            assert!(has_bpf_syscall(answer), "{answer:?}");
        }
    }

    #[test]
    fn defines_matches_whole_function_names() {
        let text = "ffffffff81123c10 T trace_call_bpf\n0000000000000000 t trace_call_bpf_x\n\
                    0000000000000000 d other [mod]\n";
        assert!(defines(text, "trace_call_bpf"));
        assert!(defines(text, "trace_call_bpf_x"));
        assert!(!defines(text, "trace_call"));
        assert!(!defines(text, "other"));
        assert!(!defines("", "trace_call_bpf"));
    }
}
