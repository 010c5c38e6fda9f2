//! Loading a session's programs several at once, while the first ones are being attached.
//!
//! The kernel verifies each program as it is loaded, and in a slow guest that is most of the
//! start-up (tens of milliseconds for the larger programs); it verifies the programs of a
//! privileged loader in parallel. So the programs are loaded on a few threads, in the order
//! they are attached in, and each is handed to the attaching thread as soon as it is loaded:
//! attaching the first ones (a trampoline costs milliseconds of its own) overlaps with the
//! verification of the others.

use std::{
    collections::HashMap,
    os::fd::OwnedFd,
    sync::{Mutex, PoisonError, mpsc},
};

use aya::{
    Ebpf,
    programs::{Program, ProgramError},
};

use super::attach::Programs;
use crate::kernel::btf::{self, FunctionId};

/// Most threads loading at once (one per CPU up to this).
const MAX_THREADS: usize = 4;

/// A program a session attaches: its name and, for a trampoline, the BTF id of its function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub name: String,
    pub function: Option<FunctionId>,
}

impl Planned {
    /// A kprobe or tracepoint program.
    pub fn program(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            function: None,
        }
    }

    /// A trampoline program for `function`.
    pub fn trampoline(name: String, function: FunctionId) -> Self {
        Self {
            name,
            function: Some(function),
        }
    }
}

/// Loads the `planned` programs of `ebpf`, in that order, on up to one thread per CPU, and
/// meanwhile runs `work` on this thread with the programs as they arrive. A program the kernel
/// refuses is handed over unloaded: attaching it loads it again and reports the refusal where
/// its consequences are known (a fallback, a note, an error).
pub fn load_while<R>(
    ebpf: &mut Ebpf,
    planned: &[Planned],
    work: impl FnOnce(&mut Arriving<'_>) -> R,
) -> R {
    let mut programs: HashMap<&str, &mut Program> = ebpf.programs_mut().collect();
    let queue: Vec<(&str, &mut Program, Option<&FunctionId>)> = planned
        .iter()
        .filter_map(|p| {
            let (name, program) = programs.remove_entry(p.name.as_str())?;
            Some((name, program, p.function.as_ref()))
        })
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_THREADS)
        .min(queue.len());
    let queue = Mutex::new(queue.into_iter());
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    let (loaded, incoming) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let loaded = loaded.clone();
            scope.spawn(move || {
                while let Some((name, program, function)) = next() {
                    let _ = load_one(program, function);
                    // Fails only once `work` has returned: it needs no more programs.
                    let _ = loaded.send((name, program));
                }
            });
        }
        drop(loaded);
        work(&mut Arriving {
            have: programs,
            incoming,
        })
    })
}

/// The programs of an object while planned ones are still being loaded: one of those is found
/// once its loader has tried it (waiting for it if need be), any other at once.
pub struct Arriving<'a> {
    have: HashMap<&'a str, &'a mut Program>,
    incoming: mpsc::Receiver<(&'a str, &'a mut Program)>,
}

impl Programs for Arriving<'_> {
    fn program_mut(&mut self, name: &str) -> Option<&mut Program> {
        while !self.have.contains_key(name) {
            // Every loader has finished and the program never came: the object has none.
            let (arrived, program) = self.incoming.recv().ok()?;
            self.have.insert(arrived, program);
        }
        self.have.get_mut(name).map(|program| &mut **program)
    }
}

fn load_one(program: &mut Program, function: Option<&FunctionId>) -> Result<(), ProgramError> {
    if program.fd().is_ok() {
        return Ok(());
    }
    match (program, function) {
        (Program::FEntry(program), Some(function)) => {
            program.load_by_id(function.id, btf_object(function)?)
        }
        (Program::FExit(program), Some(function)) => {
            program.load_by_id(function.id, btf_object(function)?)
        }
        (Program::KProbe(program), None) => program.load(),
        (Program::RawTracePoint(program), None) => program.load(),
        _ => Ok(()),
    }
}

/// The BTF object a trampoline on `function` names beside its id: its module's, if it is a
/// module's function (vmlinux's is implied).
pub(super) fn btf_object(function: &FunctionId) -> Result<Option<OwnedFd>, ProgramError> {
    function
        .module
        .as_deref()
        .map(btf::module_object)
        .transpose()
        .map_err(ProgramError::IOError)
}
