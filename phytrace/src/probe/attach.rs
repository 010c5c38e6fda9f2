//! Attaching kprobes and kretprobes, with errors that say what is wrong.

use aya::{
    Ebpf,
    programs::{KProbe, ProgramError, kprobe::KProbeLinkId},
};

use super::loader::explain_refusal;
use crate::exit::{Failure, FailureKind};

/// The kprobe program `program`, loaded into the kernel (once).
pub fn loaded_kprobe<'a>(ebpf: &'a mut Ebpf, program: &str) -> anyhow::Result<&'a mut KProbe> {
    let probe: &mut KProbe = ebpf
        .program_mut(program)
        .ok_or_else(|| anyhow::anyhow!("the eBPF object has no program `{program}`"))?
        .try_into()?;
    if probe.fd().is_err() {
        probe
            .load()
            .map_err(|err| explain_refusal(&format!("loading the `{program}` program"), &err))?;
    }
    Ok(probe)
}

/// Loads (once) the kprobe program `program` and attaches it to `symbol`.
pub fn attach(ebpf: &mut Ebpf, program: &str, symbol: &str) -> anyhow::Result<KProbeLinkId> {
    loaded_kprobe(ebpf, program)?
        .attach(symbol, 0)
        .map_err(|err| explain(&err, program, symbol).into())
}

/// Why attaching failed, in words a kernel developer can act on.
fn explain(err: &ProgramError, program: &str, symbol: &str) -> Failure {
    let text = format!("{err:#}");
    let os_error = super::os_error(err);
    let hint = match os_error {
        Some(libc::EIO) if symbol.starts_with("_R") => {
            "Rust functions have no ftrace site: this kernel needs CONFIG_KPROBE_EVENTS_ON_NOTRACE=y"
        }
        Some(libc::ENOENT) | Some(libc::EINVAL) => {
            "the symbol is not in /proc/kallsyms or cannot be probed (module unloaded, or inlined)"
        }
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "not permitted: run as root, or with CAP_BPF, CAP_PERFMON and CAP_DAC_OVERRIDE"
        }
        _ if !std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() => {
            "this kernel has no kprobe PMU: it needs CONFIG_KPROBES and CONFIG_KPROBE_EVENTS"
        }
        _ => "run `phytrace doctor` for a diagnosis",
    };
    Failure::new(
        FailureKind::TracingUnavailable,
        format!("attaching `{program}` to {symbol} failed: {text}: {hint}"),
    )
}
