//! The probes on the MDIO bus accessors: fentry/fexit programs on BPF trampolines where the
//! kernel has them, kprobe/kretprobe programs where it does not (or when asked).
//!
//! The accessors are C functions with an ftrace site and BTF, so a trampoline can attach: it
//! costs about half of a kprobe pair and gives the programs the arguments on entry and return.
//! The driver's Rust callbacks have neither (no ftrace site, no BTF for Rust modules in 6.12):
//! they stay on kprobes (see `driver_probes`).

use anyhow::Result;
use aya::programs::{FEntry, FExit};

use super::{
    attach::{Programs, attach},
    driver_probes::DriverProbes,
    loader::explain_refusal,
    preload::{self, Planned},
};
use crate::kernel::{btf::KernelBtf, error::Stage, mdio::ACCESSORS};
use crate::records::session::MdioProbes;

/// How the MDIO accessors are to be probed (`--mdio-probes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MdioChoice {
    /// fentry/fexit where the kernel allows it, else kprobes (said in a note).
    #[default]
    Auto,
    /// fentry/fexit only: fail if the kernel refuses them.
    Fentry,
    /// kprobe/kretprobe.
    Kprobe,
}

/// The programs [`attach_all`] attaches for `choice` (the trampolines, for `Auto`: the
/// kprobe twins are loaded only if they fail), accessor by accessor as it attaches them, the
/// costlier return program first.
pub fn planned(choice: MdioChoice, btf: &KernelBtf) -> Vec<Planned> {
    let mut planned = Vec::new();
    for (function, stem, _) in ACCESSORS {
        for end in ["exit", "enter"] {
            let name = format!("{stem}_{end}");
            match (choice, btf.function_id(function)) {
                (MdioChoice::Kprobe, _) => {
                    planned.push(Planned::program(&format!("{name}_kprobe")))
                }
                (_, Ok(id)) => planned.push(Planned::trampoline(name, id)),
                // Attaching says why.
                (_, Err(_)) => {}
            }
        }
    }
    planned
}

/// Attaches the MDIO probes as `choice` says and returns which kind ran; what the user should
/// know (a fallback, a missing optional accessor) goes to `notes`. `btf` is the kernel's BTF,
/// where the trampolines find the accessors' ids. Where phylib is a module not loaded yet,
/// `pending` holds its name and the trace events its accessors' kprobes are defined in, which
/// the kernel places as it loads.
pub fn attach_all(
    ebpf: &mut impl Programs,
    choice: MdioChoice,
    btf: &KernelBtf,
    pending: Option<(&str, &mut DriverProbes)>,
    notes: &mut Vec<String>,
) -> Result<MdioProbes> {
    if let Some((module, probes)) = pending {
        notes.push(format!(
            "phylib ({module}) is not loaded: the MDIO accessors are probed with kprobes the \
             kernel places as it loads, at about twice the cost of fentry/fexit (which need \
             its BTF, loaded with it)"
        ));
        each_accessor(notes, |function, stem| {
            let mut arm = |end: &str, on_return| {
                let program = format!("{stem}_{end}_kprobe");
                probes.arm_function(ebpf, Some(module), function, &program, on_return)
            };
            arm("enter", false).and_then(|()| arm("exit", true))
        })?;
        return Ok(MdioProbes::Kprobe);
    }
    if choice != MdioChoice::Kprobe {
        match attach_trampolines(ebpf, btf, notes) {
            Ok(()) => return Ok(MdioProbes::Fentry),
            Err(err) if choice == MdioChoice::Fentry => return Err(err),
            Err(err) => notes.push(format!(
                "MDIO accesses are probed with kprobes, at about twice the cost: fentry/fexit \
                 could not attach ({err:#})"
            )),
        }
    }
    each_accessor(notes, |function, stem| {
        attach(ebpf, &format!("{stem}_enter_kprobe"), function)
            .and_then(|_| attach(ebpf, &format!("{stem}_exit_kprobe"), function))
            .map(drop)
    })?;
    Ok(MdioProbes::Kprobe)
}

/// Moves the MDIO accessors of `module`, probed with the kprobes [`attach_all`] armed before it
/// loaded, to fentry/fexit now that it is live with its BTF (in `btf`): attaches the
/// trampolines, then removes the kprobes. Meanwhile both run: the fexit of an access whose
/// entry its trampoline saw runs before the kretprobe and takes the thread's access from it,
/// so that each access is reported once, and one that began before the trampolines attached is
/// reported by its kretprobe. On an error the kprobes stay.
pub fn move_to_trampolines(
    ebpf: &mut impl Programs,
    btf: &KernelBtf,
    probes: &mut DriverProbes,
    notes: &mut Vec<String>,
) -> Result<()> {
    attach_trampolines(ebpf, btf, notes)?;
    for (_, stem, _) in ACCESSORS {
        for end in ["enter", "exit"] {
            probes.disarm_function(&format!("{stem}_{end}_kprobe"));
        }
    }
    Ok(())
}

/// Probes each accessor with `probe` (given its function and its programs' stem): a required
/// one that fails fails all, an optional one is said in `notes`.
fn each_accessor(
    notes: &mut Vec<String>,
    mut probe: impl FnMut(&str, &str) -> Result<()>,
) -> Result<()> {
    for (function, stem, required) in ACCESSORS {
        match probe(function, stem) {
            Ok(()) => {}
            Err(err) if *required => return Err(err),
            Err(err) => notes.push(format!("{function} is not traced: {err:#}")),
        }
    }
    Ok(())
}

/// Attaches the fentry/fexit pair of every accessor; on a failure with a required one,
/// detaches what it attached (a session probes all accessors one way). The required ones come
/// first: an optional one that fails after them is not in this kernel, or not traceable.
fn attach_trampolines(
    ebpf: &mut impl Programs,
    btf: &KernelBtf,
    notes: &mut Vec<String>,
) -> Result<()> {
    let mut attached: Vec<(String, TrampolineLink)> = Vec::new();
    for (function, stem, required) in ACCESSORS {
        let mut pair = Vec::new();
        let result = attach_pair(ebpf, btf, function, stem, &mut pair);
        let failed = result.is_err();
        if failed {
            for (name, link) in pair.drain(..) {
                link.detach(ebpf, &name);
            }
        }
        attached.append(&mut pair);
        match result {
            Ok(()) => {}
            Err(err) if *required => {
                for (name, link) in attached {
                    link.detach(ebpf, &name);
                }
                return Err(err);
            }
            Err(err) => notes.push(format!("{function} is not traced: {err:#}")),
        }
    }
    Ok(())
}

/// Loads and attaches `stem`'s fentry and fexit programs to `function`, pushing each link.
pub(super) fn attach_pair(
    ebpf: &mut impl Programs,
    btf: &KernelBtf,
    function: &str,
    stem: &str,
    links: &mut Vec<(String, TrampolineLink)>,
) -> Result<()> {
    let refused = |what: &str, stage, name: &str, err: &aya::programs::ProgramError| {
        explain_refusal(&format!("{what} `{name}` on {function}"), stage, err)
    };
    let id = btf.function_id(function)?;
    let entry = format!("{stem}_enter");
    let fentry: &mut FEntry = ebpf.typed(&entry)?;
    if fentry.fd().is_err() {
        preload::btf_object(&id)
            .and_then(|object| fentry.load_by_id(id.id, object))
            .map_err(|err| refused("loading", Stage::Load, &entry, &err))?;
    }
    let link = fentry
        .attach()
        .map_err(|err| refused("attaching", Stage::Attach, &entry, &err))?;
    links.push((entry, TrampolineLink::Entry(link)));
    let exit = format!("{stem}_exit");
    let fexit: &mut FExit = ebpf.typed(&exit)?;
    if fexit.fd().is_err() {
        preload::btf_object(&id)
            .and_then(|object| fexit.load_by_id(id.id, object))
            .map_err(|err| refused("loading", Stage::Load, &exit, &err))?;
    }
    let link = fexit
        .attach()
        .map_err(|err| refused("attaching", Stage::Attach, &exit, &err))?;
    links.push((exit, TrampolineLink::Exit(link)));
    Ok(())
}

/// A trampoline program attached, to detach on a failed attempt.
pub(super) enum TrampolineLink {
    Entry(aya::programs::fentry::FEntryLinkId),
    Exit(aya::programs::fexit::FExitLinkId),
}

impl TrampolineLink {
    fn detach(self, ebpf: &mut impl Programs, name: &str) {
        match self {
            Self::Entry(link) => {
                if let Ok(program) = ebpf.typed::<FEntry>(name) {
                    let _ = program.detach(link);
                }
            }
            Self::Exit(link) => {
                if let Ok(program) = ebpf.typed::<FExit>(name) {
                    let _ = program.detach(link);
                }
            }
        }
    }
}
