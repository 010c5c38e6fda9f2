//! Attaching kprobes and kretprobes, with errors that say what is wrong; and the seams between
//! the tracer's logic and the kernel ([`Programs`], [`ArmCallbacks`]), which tests stand in for.

use aya::{
    Ebpf,
    programs::{KProbe, Program, ProgramError, kprobe::KProbeLinkId},
};

use super::loader::explain_refusal;
use crate::kernel::error::{Cause, ProbeError, Stage};
use crate::kernel::symbols::CallbackSymbol;

/// The kprobe PMU, there when the kernel has kprobes.
pub const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// Where programs are found by name: the whole object, or the programs handed over one by one
/// while others are still being loaded (`preload::Arriving`).
pub trait Programs {
    /// The program `name`, `None` if there is none.
    fn program_mut(&mut self, name: &str) -> Option<&mut Program>;

    /// The program `name` as a `T`, or an error that names it.
    fn typed<'a, T>(&'a mut self, name: &str) -> anyhow::Result<&'a mut T>
    where
        &'a mut T: TryFrom<&'a mut Program, Error = ProgramError>,
    {
        let program = self
            .program_mut(name)
            .ok_or_else(|| anyhow::anyhow!("the eBPF object has no program `{name}`"))?;
        Ok(program.try_into()?)
    }
}

impl Programs for Ebpf {
    fn program_mut(&mut self, name: &str) -> Option<&mut Program> {
        Ebpf::program_mut(self, name)
    }
}

/// A driver module's callbacks as armed: their symbols, and `CLOCK_MONOTONIC` just before the
/// first was armed.
pub struct Armed<'a> {
    pub callbacks: Vec<&'a CallbackSymbol>,
    pub armed_ns: u64,
}

/// Where driver modules' symbol probes are armed: the session's
/// ([`super::driver_probes::SymbolArmer`]), or a stand-in in the tests of what is armed when.
pub trait ArmCallbacks {
    /// Arms `symbols` of `module`, replacing what was armed for it.
    fn arm(&mut self, module: &str, symbols: Vec<CallbackSymbol>) -> anyhow::Result<()>;

    /// What is armed for `module`, if anything.
    fn armed(&self, module: &str) -> Option<Armed<'_>>;
}

/// The kprobe program `program`, loaded into the kernel (once).
pub fn loaded_kprobe<'a>(
    programs: &'a mut impl Programs,
    program: &str,
) -> anyhow::Result<&'a mut KProbe> {
    let probe: &mut KProbe = programs.typed(program)?;
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
pub fn attach(
    programs: &mut impl Programs,
    program: &str,
    symbol: &str,
) -> anyhow::Result<KProbeLinkId> {
    loaded_kprobe(programs, program)?
        .attach(symbol, 0)
        .map_err(|err| explain(&err, program, symbol).into())
}

/// Why attaching failed, in words a kernel developer can act on.
fn explain(err: &ProgramError, program: &str, symbol: &str) -> ProbeError {
    let stage = Stage::AttachKprobe {
        rust_symbol: symbol.starts_with("_R"),
    };
    let cause = Cause::of(stage, crate::kernel::error::os_error(err))
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
