//! The capabilities tracing needs, in one place: what `doctor` checks, what refusals name, what
//! `phytrace generate capabilities` prints for packages and what the documentation tells users
//! to grant. [`DEFAULT`] gives the default session everything: callbacks at phylib's call sites,
//! MDIO, the MAC side and kernel messages.

/// A capability the default session uses, and what is lost without it.
pub struct Capability {
    /// Its number (`include/uapi/linux/capability.h`).
    pub number: u32,
    /// Its name, as `capabilities(7)` spells it.
    pub name: &'static str,
    /// What phytrace does with it.
    pub used_for: &'static str,
    /// What a session without it loses.
    pub lost_without: &'static str,
}

/// `CAP_SYS_ADMIN`, which stands in for `CAP_BPF` and `CAP_PERFMON`, and which
/// `kernel.perf_event_paranoid` 3 (Debian's and Ubuntu's default) asks of `perf_event_open`.
pub const CAP_SYS_ADMIN: u32 = 21;

/// The capabilities of the default session, in the order messages name them. `CAP_SYS_RAWIO`
/// is not one: where `/proc/kcore` is refused, a BPF program reads the kernel's code
/// (`bpf_memory`).
pub const DEFAULT: [Capability; 4] = [
    Capability {
        number: 39,
        name: "CAP_BPF",
        used_for: "load the eBPF programs and create their maps",
        lost_without: "nothing is traced",
    },
    Capability {
        number: 38,
        name: "CAP_PERFMON",
        used_for: "attach kprobes and trampolines, and read kernel memory from them: the \
                   traced structures, and the kernel's code, where phylib's call sites are \
                   found",
        lost_without: "nothing is traced",
    },
    Capability {
        number: 1,
        name: "CAP_DAC_OVERRIDE",
        used_for: "write tracefs' root-only files: kprobe events armed before a module loads, \
                   the kernel-message instance",
        lost_without: "record stops: callbacks of a module that loads later, tail-call sites \
                       and kernel messages need tracefs",
    },
    Capability {
        number: 34,
        name: "CAP_SYSLOG",
        used_for: "read kallsyms' addresses: the functions to decode and the drivers' names",
        lost_without: "no call sites: callbacks only on Rust drivers' symbols, where the \
                       kernel allows that",
    },
];

/// Where the kernel says how far unprivileged users may use perf events.
pub const PERF_EVENT_PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// The `kernel.perf_event_paranoid` level from which Debian's and Ubuntu's kernels refuse every
/// `perf_event_open` (so every kprobe) without `CAP_SYS_ADMIN`, whatever else the process holds.
pub const PARANOID_ANY: i32 = 3;

/// The names of [`DEFAULT`] in words: `CAP_BPF, CAP_PERFMON, …, and CAP_SYSLOG`.
pub fn names() -> String {
    in_words(&DEFAULT.map(|cap| cap.name))
}

/// [`DEFAULT`] as `setcap(8)` takes them: `cap_bpf,cap_perfmon,…+ep`.
pub fn setcap_text() -> String {
    let names: Vec<String> = DEFAULT
        .iter()
        .map(|cap| cap.name.to_ascii_lowercase())
        .collect();
    format!("{}+ep", names.join(","))
}

/// The command that grants [`DEFAULT`] to the phytrace binary.
pub fn setcap_command() -> String {
    format!("setcap {} \"$(command -v phytrace)\"", setcap_text())
}

/// What to do when perf events are refused for [`PARANOID_ANY`]: the sysctl that lets
/// `CAP_PERFMON` be enough, or `CAP_SYS_ADMIN`.
pub fn paranoid_fix() -> String {
    format!(
        "run as root, or `sudo sysctl kernel.perf_event_paranoid=2` (kept across reboots by a \
         file in /etc/sysctl.d), or add cap_sys_admin to `{}`",
        setcap_command()
    )
}

/// What to do when the kernel refused an operation for want of privileges: the capabilities
/// this process lacks, or, where it holds them, the paranoid level that still refuses it.
pub fn fix() -> String {
    let caps = effective().unwrap_or(0);
    if missing(caps).is_empty() && paranoid_refuses(caps, perf_event_paranoid()) {
        return format!(
            "kernel.perf_event_paranoid is {PARANOID_ANY} or more, which refuses perf events \
             (every kprobe) without CAP_SYS_ADMIN: {}",
            paranoid_fix()
        );
    }
    format!(
        "run as root, or give phytrace {} (`sudo {}`)",
        names(),
        setcap_command()
    )
}

/// The effective capability set of this process (`CapEff` of /proc/self/status).
pub fn effective() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// This kernel's `kernel.perf_event_paranoid`, if it can be read.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string(PERF_EVENT_PARANOID)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether `caps` holds capability `number`.
pub fn holds(caps: u64, number: u32) -> bool {
    caps & (1 << number) != 0
}

/// Whether `perf_event_open`, so every kprobe, is refused to a process holding `caps` at
/// paranoid level `paranoid`.
pub fn paranoid_refuses(caps: u64, paranoid: Option<i32>) -> bool {
    paranoid.is_some_and(|level| level >= PARANOID_ANY) && !holds(caps, CAP_SYS_ADMIN)
}

/// `names` as a list in words: `A`, `A and B`, `A, B and C`.
pub fn in_words(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The capabilities of [`DEFAULT`] that `caps` lacks.
pub fn missing(caps: u64) -> Vec<&'static Capability> {
    DEFAULT
        .iter()
        .filter(|cap| {
            // CAP_SYS_ADMIN stands in for the BPF and perf ones (bpf_capable, perfmon_capable).
            let implied =
                matches!(cap.name, "CAP_BPF" | "CAP_PERFMON") && holds(caps, CAP_SYS_ADMIN);
            !(holds(caps, cap.number) || implied)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_of(caps: &[&Capability]) -> Vec<&'static str> {
        caps.iter().map(|cap| cap.name).collect()
    }

    #[test]
    fn root_lacks_nothing_and_nobody_everything() {
        assert!(missing(u64::MAX).is_empty());
        assert_eq!(missing(0).len(), DEFAULT.len());
        let admin = 1 << CAP_SYS_ADMIN | 1 << 1 | 1 << 34;
        assert!(missing(admin).is_empty());
        assert_eq!(
            names_of(&missing(1 << 39 | 1 << 38)),
            ["CAP_DAC_OVERRIDE", "CAP_SYSLOG"]
        );
        // CAP_SYS_RAWIO (17) is not asked for: BPF reads the kernel's code without it.
        let documented = 1 << 39 | 1 << 38 | 1 << 1 | 1 << 34;
        assert!(missing(documented).is_empty());
    }

    #[test]
    fn the_set_is_spelled_from_one_table() {
        assert_eq!(
            names(),
            "CAP_BPF, CAP_PERFMON, CAP_DAC_OVERRIDE and CAP_SYSLOG"
        );
        assert_eq!(
            setcap_text(),
            "cap_bpf,cap_perfmon,cap_dac_override,cap_syslog+ep"
        );
        assert_eq!(in_words(&["A", "B"]), "A and B");
        assert_eq!(in_words(&[]), "");
    }

    #[test]
    fn paranoid_three_refuses_all_but_sys_admin() {
        let perfmon = 1 << 38;
        assert!(!paranoid_refuses(perfmon, Some(2)));
        assert!(paranoid_refuses(perfmon, Some(3)));
        assert!(paranoid_refuses(perfmon, Some(4)));
        assert!(!paranoid_refuses(1 << CAP_SYS_ADMIN, Some(3)));
        assert!(!paranoid_refuses(perfmon, None));
    }
}
