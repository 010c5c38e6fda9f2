//! Attaching kprobes and kretprobes, with errors that say what is wrong.

use aya::{
    Ebpf,
    programs::{KProbe, ProgramError, kprobe::KProbeLinkId},
};

use super::error::{Cause, ProbeError, Stage};
use super::loader::explain_refusal;

/// The kprobe PMU, there when the kernel has kprobes.
pub const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// The kprobe program `program`, loaded into the kernel (once).
pub fn loaded_kprobe<'a>(ebpf: &'a mut Ebpf, program: &str) -> anyhow::Result<&'a mut KProbe> {
    let probe: &mut KProbe = ebpf
        .program_mut(program)
        .ok_or_else(|| anyhow::anyhow!("the eBPF object has no program `{program}`"))?
        .try_into()?;
    if probe.fd().is_err() {
        probe.load().map_err(|err| {
            explain_refusal(
                &format!("loading the `{program}` program"),
                Stage::LoadKprobe,
                &err,
            )
        })?;
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
fn explain(err: &ProgramError, program: &str, symbol: &str) -> ProbeError {
    let stage = Stage::AttachKprobe {
        rust_symbol: symbol.starts_with("_R"),
    };
    let cause = Cause::of(stage, super::os_error(err))
        .or_else(|| (!std::path::Path::new(KPROBE_PMU).exists()).then_some(Cause::NoKprobes));
    let hint = cause.map_or_else(
        || "run `phytrace doctor` for a diagnosis".to_owned(),
        Cause::fix,
    );
    ProbeError::refused(
        cause,
        format!("attaching `{program}` to {symbol} failed: {err:#}: {hint}"),
    )
}
