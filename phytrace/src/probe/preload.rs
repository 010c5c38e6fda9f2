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
    sync::{Mutex, PoisonError, mpsc},
};

use aya::{
    Ebpf,
    programs::{Program, ProgramError},
};

use super::attach::Programs;

/// Most threads loading at once (one per CPU up to this).
const MAX_THREADS: usize = 4;

/// A program a session attaches: its name and, for a trampoline, the BTF id of its function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub name: String,
    pub btf_id: Option<u32>,
}

impl Planned {
    /// A kprobe or tracepoint program.
    pub fn program(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            btf_id: None,
        }
    }

    /// A trampoline program for the function of BTF id `btf_id`.
    pub fn trampoline(name: String, btf_id: u32) -> Self {
        Self {
            name,
            btf_id: Some(btf_id),
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
    let queue: Vec<(&str, &mut Program, Option<u32>)> = planned
        .iter()
        .filter_map(|p| {
            let (name, program) = programs.remove_entry(p.name.as_str())?;
            Some((name, program, p.btf_id))
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
                while let Some((name, program, btf_id)) = next() {
                    let _ = load_one(program, btf_id);
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

fn load_one(program: &mut Program, btf_id: Option<u32>) -> Result<(), ProgramError> {
    if program.fd().is_ok() {
        return Ok(());
    }
    match (program, btf_id) {
        (Program::FEntry(program), Some(id)) => program.load_by_id(id),
        (Program::FExit(program), Some(id)) => program.load_by_id(id),
        (Program::KProbe(program), None) => program.load(),
        (Program::RawTracePoint(program), None) => program.load(),
        _ => Ok(()),
    }
}
