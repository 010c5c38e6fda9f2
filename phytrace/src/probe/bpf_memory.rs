//! Kernel memory read through BPF: the `kernel_read` program (phytrace-ebpf's
//! `probes::kernel_read`), a kprobe on the `getppid` system call, copies what this process asks
//! for into a map that it maps. It needs `CAP_BPF` and `CAP_PERFMON`, where `/proc/kcore` needs
//! `CAP_SYS_RAWIO`.
//!
//! The thread that asks calls `getppid` with a token as its first argument, which the system
//! call ignores: the program answers only the call that carries the request's token, and other
//! calls cost it a lookup. The threads of a process that read at once (the call sites' and the
//! MDIO accessors' searches) share one program, loaded by the first and detached after the
//! last.

use std::{
    collections::hash_map::RandomState,
    hash::BuildHasher as _,
    io,
    os::fd::AsFd as _,
    ptr::NonNull,
    sync::{Arc, Mutex, PoisonError, Weak},
};

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    maps::{Array, Map, MapData},
};
use phytrace_common::{KERNEL_READ_CHUNK, KernelOffsets, KernelReadAnswer, KernelReadRequest};

use super::{attach::attach, loader};
use crate::kernel::code::text::KernelMemory;

/// The program.
const PROGRAM: &str = "kernel_read";
/// Its maps: the request, and the answer it writes.
const REQUEST: &str = "KERNEL_READ_REQUEST";
const ANSWER: &str = "KERNEL_READ_ANSWER";

/// The system call entry the program is attached to: `getppid`'s on this architecture (the
/// binary's, so the kernel's). No other thread of phytrace makes that call, few programs make it
/// often, and the C library makes it each time (it does not keep the answer).
const TRIGGER: &str = if cfg!(target_arch = "aarch64") {
    "__arm64_sys_getppid"
} else {
    "__x64_sys_getppid"
};

/// Smallest ring buffer the object's event ring can have on any page size (unused here).
const RING_SIZE: u32 = 1 << 16;

/// One request to the program and its answer: the program's, or a stand-in in tests.
trait Exchange {
    /// Asks for `len` (at most [`KERNEL_READ_CHUNK`]) bytes at `address` as request `seq`.
    fn ask(&mut self, seq: u64, address: u64, len: u32) -> io::Result<Answer<'_>>;
}

/// The program's answer as it stands after a request.
struct Answer<'a> {
    /// The request it answers (an earlier one's if it did not run).
    seq: u64,
    /// `bpf_probe_read_kernel`'s result: 0, or a negative error number.
    error: i64,
    /// The bytes asked for.
    bytes: &'a [u8],
}

/// Kernel memory through an [`Exchange`], a range at most [`KERNEL_READ_CHUNK`] at a time.
struct Chunked<E> {
    exchange: E,
    /// The last request's number.
    seq: u64,
}

impl<E: Exchange> KernelMemory for Chunked<E> {
    fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        if address.checked_add(len as u64).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{address:#x}+{len:#x} is past the end of the address space"),
            ));
        }
        let mut bytes = Vec::with_capacity(len);
        while bytes.len() < len {
            let at = address + bytes.len() as u64;
            let chunk = (len - bytes.len()).min(KERNEL_READ_CHUNK);
            self.seq += 1;
            let answer = self.exchange.ask(self.seq, at, chunk as u32)?;
            check(self.seq, &answer, at, chunk)?;
            bytes.extend_from_slice(&answer.bytes[..chunk]);
        }
        Ok(bytes)
    }
}

/// An error unless `answer` answers request `seq` for `len` bytes at `address` with them.
fn check(seq: u64, answer: &Answer<'_>, address: u64, len: usize) -> io::Result<()> {
    if answer.seq != seq {
        return Err(io::Error::other(format!(
            "the kernel reader did not answer (its kprobe on {TRIGGER} did not run for this \
             thread's getppid)"
        )));
    }
    if answer.error != 0 {
        let errno = i32::try_from(-answer.error).unwrap_or(libc::EINVAL);
        let err = io::Error::from_raw_os_error(errno);
        return Err(io::Error::new(
            err.kind(),
            format!("bpf_probe_read_kernel of {address:#x}+{len:#x}: {err}"),
        ));
    }
    if answer.bytes.len() < len {
        return Err(io::Error::other(format!(
            "the kernel reader answered {} bytes of {len}",
            answer.bytes.len()
        )));
    }
    Ok(())
}

/// A reader of the process, shared.
type Shared = Arc<Mutex<Chunked<Program>>>;

/// The reader of this process while some [`BpfMemory`] holds it.
static READER: Mutex<Weak<Mutex<Chunked<Program>>>> = Mutex::new(Weak::new());

/// Kernel memory read by the `kernel_read` program: it stays attached while a reader lives.
pub struct BpfMemory(Shared);

impl BpfMemory {
    /// The process's reader: the one in use, or the program loaded and attached to
    /// [`TRIGGER`]; errors say what refused it and the fix.
    pub fn open() -> Result<Self> {
        // Held while loading: a thread that comes meanwhile waits for that reader.
        let mut reader = READER.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = reader.upgrade() {
            return Ok(Self(shared));
        }
        let shared = Arc::new(Mutex::new(Chunked {
            exchange: Program::load()?,
            seq: 0,
        }));
        *reader = Arc::downgrade(&shared);
        Ok(Self(shared))
    }

    /// [`Self::open`], as the kernel room's searches take a reader
    /// ([`crate::kernel::code::text::BpfReader`]).
    pub fn reader() -> Result<Box<dyn KernelMemory>> {
        Ok(Box::new(Self::open()?))
    }
}

impl KernelMemory for BpfMemory {
    fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .read(address, len)
    }
}

/// The program, attached, with its request map and its answer mapped.
struct Program {
    requests: Array<MapData, KernelReadRequest>,
    answer: Mapping,
    /// What this reader's `getppid` calls carry: random, never 0.
    token: u64,
    /// The object: while it lives, the program stays attached.
    _ebpf: Ebpf,
}

impl Program {
    fn load() -> Result<Self> {
        let mut ebpf = loader::load(&loader::LoadOptions::new(
            RING_SIZE,
            KernelOffsets::default(),
        ))?;
        attach(&mut ebpf, PROGRAM, TRIGGER)?;
        let requests = Array::try_from(
            ebpf.take_map(REQUEST)
                .with_context(|| format!("the eBPF object has no map {REQUEST}"))?,
        )?;
        let answer = match ebpf.take_map(ANSWER) {
            Some(Map::Array(data)) => Mapping::of(&data)?,
            _ => anyhow::bail!("the eBPF object has no array map {ANSWER}"),
        };
        Ok(Self {
            requests,
            answer,
            // A hash of nothing under the process's random keys.
            token: RandomState::new().hash_one(()) | 1,
            _ebpf: ebpf,
        })
    }
}

impl Exchange for Program {
    fn ask(&mut self, seq: u64, address: u64, len: u32) -> io::Result<Answer<'_>> {
        let request = KernelReadRequest {
            seq,
            address,
            token: self.token,
            len,
            _pad: 0,
        };
        self.requests
            .set(0, request, 0)
            .map_err(|err| io::Error::other(format!("writing the request: {err}")))?;
        // SAFETY: getppid takes no argument and ignores the one given (the token, for the
        // program, which runs at its entry, on this thread, before it returns); it cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid, self.token) };
        Ok(self.answer.read(len as usize))
    }
}

/// The answer map, mapped read-only into this process.
struct Mapping {
    at: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory, valid until dropped, that any thread may read; its
// owner reads it only through `&mut self`.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `map` (a one-value `BPF_F_MMAPABLE` array of a [`KernelReadAnswer`]).
    fn of(map: &MapData) -> Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .context("the page size")?;
        let len = size_of::<KernelReadAnswer>().next_multiple_of(page);
        // SAFETY: a new shared read-only mapping of the map's fd, whose value is `len` bytes
        // rounded to pages as the kernel maps it; nothing else is at the address it returns.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&map.fd().as_fd()),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).context(format!("mapping the map {ANSWER}"));
        }
        let at = NonNull::new(at.cast::<u8>()).context("mmap returned a null mapping")?;
        Ok(Self { at, len })
    }

    /// The answer, with its first `len` bytes (at most [`KERNEL_READ_CHUNK`]).
    fn read(&mut self, len: usize) -> Answer<'_> {
        let answer = self.at.as_ptr().cast::<KernelReadAnswer>();
        // SAFETY: the mapping holds a `KernelReadAnswer` (page-aligned, so aligned), valid
        // while `self` lives; the program wrote it during this thread's getppid, which has
        // returned, and writes it again only in a later one (volatile: it changes behind the
        // compiler's back).
        unsafe {
            Answer {
                seq: std::ptr::read_volatile(&raw const (*answer).seq),
                error: std::ptr::read_volatile(&raw const (*answer).error),
                bytes: std::slice::from_raw_parts(
                    (&raw const (*answer).bytes).cast::<u8>(),
                    len.min(KERNEL_READ_CHUNK),
                ),
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `of`, of `len` bytes, unmapped once; no `Answer`
        // borrowing it outlives `self`.
        unsafe { libc::munmap(self.at.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the program over `memory` (at `base`): it answers as the program does,
    /// and keeps the requests.
    struct Fake {
        base: u64,
        memory: Vec<u8>,
        asked: Vec<(u64, u64, u32)>,
        answer: Vec<u8>,
        /// Request numbers to leave unanswered (the probe did not run).
        unanswered: Vec<u64>,
        last_answered: u64,
    }

    impl Fake {
        fn over(base: u64, memory: Vec<u8>) -> Self {
            Self {
                base,
                memory,
                asked: Vec::new(),
                answer: Vec::new(),
                unanswered: Vec::new(),
                last_answered: 0,
            }
        }
    }

    impl Exchange for Fake {
        fn ask(&mut self, seq: u64, address: u64, len: u32) -> io::Result<Answer<'_>> {
            self.asked.push((seq, address, len));
            if self.unanswered.contains(&seq) {
                return Ok(Answer {
                    seq: self.last_answered,
                    error: 0,
                    bytes: &self.answer,
                });
            }
            self.last_answered = seq;
            let from = address.checked_sub(self.base).map(|at| at as usize);
            let range = from.and_then(|from| self.memory.get(from..from + len as usize));
            let error = match range {
                Some(bytes) => {
                    self.answer = bytes.to_vec();
                    0
                }
                None => {
                    self.answer = vec![0; len as usize];
                    -i64::from(libc::EFAULT)
                }
            };
            Ok(Answer {
                seq,
                error,
                bytes: &self.answer,
            })
        }
    }

    const BASE: u64 = 0xffff_ffff_8100_0000;

    fn memory(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn a_long_range_is_read_in_chunks_in_order() {
        let len = 2 * KERNEL_READ_CHUNK + 100;
        let memory = memory(len + 10);
        let mut reader = Chunked {
            exchange: Fake::over(BASE, memory.clone()),
            seq: 0,
        };
        assert_eq!(reader.read(BASE + 5, len).unwrap(), memory[5..5 + len]);
        let chunk = KERNEL_READ_CHUNK as u32;
        assert_eq!(
            reader.exchange.asked,
            [
                (1, BASE + 5, chunk),
                (2, BASE + 5 + u64::from(chunk), chunk),
                (3, BASE + 5 + 2 * u64::from(chunk), 100)
            ]
        );
        assert_eq!(reader.read(BASE, 3).unwrap(), memory[..3]);
        assert_eq!(reader.exchange.asked.last(), Some(&(4, BASE, 3)));
        assert!(reader.read(BASE, 0).unwrap().is_empty());
        assert_eq!(reader.exchange.asked.len(), 4);
    }

    #[test]
    fn the_helpers_error_is_returned_with_the_range() {
        let mut reader = Chunked {
            exchange: Fake::over(BASE, memory(KERNEL_READ_CHUNK + 8)),
            seq: 0,
        };
        // The second chunk runs past the memory: the helper faults there.
        let err = reader.read(BASE, KERNEL_READ_CHUNK + 16).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "bpf_probe_read_kernel of {:#x}+0x10: {}",
                BASE + KERNEL_READ_CHUNK as u64,
                io::Error::from_raw_os_error(libc::EFAULT)
            )
        );
        assert_eq!(reader.exchange.asked.len(), 2);
    }

    #[test]
    fn a_request_left_unanswered_is_an_error_not_stale_bytes() {
        let mut reader = Chunked {
            exchange: Fake::over(BASE, memory(64)),
            seq: 0,
        };
        assert_eq!(reader.read(BASE, 8).unwrap(), memory(8));
        reader.exchange.unanswered.push(2);
        let err = reader.read(BASE + 8, 8).unwrap_err();
        assert!(err.to_string().contains("did not answer"), "{err}");
        assert!(err.to_string().contains(TRIGGER), "{err}");
    }

    #[test]
    fn a_range_past_the_address_space_is_refused_unasked() {
        let mut reader = Chunked {
            exchange: Fake::over(BASE, memory(8)),
            seq: 0,
        };
        let err = reader.read(u64::MAX - 2, 8).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(reader.exchange.asked.is_empty());
    }

    #[test]
    fn a_short_answer_is_an_error() {
        let answer = Answer {
            seq: 1,
            error: 0,
            bytes: &[0; 4],
        };
        assert!(check(1, &answer, BASE, 8).is_err());
        assert!(check(1, &answer, BASE, 4).is_ok());
    }
}
