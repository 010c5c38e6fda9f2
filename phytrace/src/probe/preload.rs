//! Loading a session's programs before they are attached, several at once.
//!
//! The kernel verifies each program as it is loaded, and in a slow guest that is most of the
//! start-up (tens of milliseconds for the larger programs); it verifies the programs of a
//! privileged loader in parallel. So the programs are loaded on a few threads first, the
//! costliest first, and attached afterwards.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use aya::{
    Ebpf,
    programs::{Program, ProgramError},
};

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

/// Loads the `planned` programs of `ebpf`, costliest first, on up to one thread per CPU. A
/// program the kernel refuses is left unloaded: attaching it loads it again and reports the
/// refusal where its consequences are known (a fallback, a note, an error).
pub fn load(ebpf: &mut Ebpf, planned: &[Planned]) {
    let mut programs: HashMap<&str, &mut Program> = ebpf.programs_mut().collect();
    let queue: Vec<(&mut Program, Option<u32>)> = planned
        .iter()
        .filter_map(|p| Some((programs.remove(p.name.as_str())?, p.btf_id)))
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_THREADS)
        .min(queue.len());
    let queue = Mutex::new(queue.into_iter());
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some((program, btf_id)) = next() {
                    let _ = load_one(program, btf_id);
                }
            });
        }
    });
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
