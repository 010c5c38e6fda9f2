//! The capabilities tracing needs, in one place: what `doctor` checks, what refusals name and
//! what the documentation tells users to grant.
//!
//! - `CAP_BPF`: load the programs and create their maps;
//! - `CAP_PERFMON`: attach them (kprobes, trampolines, perf events) and read kernel memory;
//! - `CAP_DAC_OVERRIDE`: define the callback probes in tracefs (`kprobe_events`) and read their
//!   missed returns (`kprobe_profile`): root-only files.
//!
//! `CAP_SYSLOG` is not needed: callbacks are probed by name, and kallsyms' addresses, hidden
//! without it, are only shown.

/// `CAP_DAC_OVERRIDE` (`include/uapi/linux/capability.h`).
const CAP_DAC_OVERRIDE: u32 = 1;
/// `CAP_SYS_ADMIN`, which implies the BPF and perf capabilities.
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON`.
const CAP_PERFMON: u32 = 38;
/// `CAP_BPF`.
const CAP_BPF: u32 = 39;

/// The capabilities tracing needs, by number and name.
pub const NEEDED: [(u32, &str); 3] = [
    (CAP_BPF, "CAP_BPF"),
    (CAP_PERFMON, "CAP_PERFMON"),
    (CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE"),
];

/// The names of [`NEEDED`], for messages: `CAP_BPF, CAP_PERFMON and CAP_DAC_OVERRIDE`.
pub const NEEDED_NAMES: &str = "CAP_BPF, CAP_PERFMON and CAP_DAC_OVERRIDE";

/// The command that grants them to the phytrace binary.
pub const SETCAP: &str = "setcap cap_bpf,cap_perfmon,cap_dac_override+ep $(command -v phytrace)";

/// The effective capability set of this process (`CapEff` of /proc/self/status).
pub fn effective() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// `names` as a list in words: `A`, `A and B`, `A, B and C`.
pub fn in_words(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The names of the needed capabilities that `caps` lacks.
pub fn missing(caps: u64) -> Vec<&'static str> {
    let has = |cap: u32| caps & (1 << cap) != 0;
    NEEDED
        .iter()
        .filter(|(cap, _)| {
            // CAP_SYS_ADMIN stands in for the BPF and perf ones (kernels before 5.8 have only it).
            !(has(*cap) || (*cap != CAP_DAC_OVERRIDE && has(CAP_SYS_ADMIN)))
        })
        .map(|(_, name)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_lacks_nothing_and_nobody_everything() {
        assert!(missing(u64::MAX).is_empty());
        assert_eq!(missing(0), ["CAP_BPF", "CAP_PERFMON", "CAP_DAC_OVERRIDE"]);
        assert_eq!(
            missing(1 << CAP_SYS_ADMIN | 1 << CAP_DAC_OVERRIDE),
            Vec::<&str>::new()
        );
        assert_eq!(
            missing(1 << CAP_BPF | 1 << CAP_PERFMON),
            ["CAP_DAC_OVERRIDE"]
        );
        assert_eq!(in_words(&missing(0)), NEEDED_NAMES);
        assert_eq!(in_words(&["A", "B"]), "A and B");
    }
}
