//! The running kernel's code, read from `/proc/kcore` (an ELF core file whose segments map
//! kernel virtual addresses): the text as it runs, with alternatives, retpolines and static
//! calls already patched.

use std::{fs::File, io, os::unix::fs::FileExt as _, path::Path};

use object::{
    Endianness,
    elf::{FileHeader64, PT_LOAD},
    read::elf::{FileHeader as _, ProgramHeader as _},
};

/// Where the kernel's memory is read from.
pub const KCORE: &str = "/proc/kcore";

/// Reads kernel memory.
pub trait KernelMemory {
    /// `len` bytes at kernel address `address`.
    fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>>;
}

/// A loaded segment of kcore: kernel addresses `[address, address + len)` at `offset`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    address: u64,
    len: u64,
    offset: u64,
}

/// `/proc/kcore`, opened.
pub struct Kcore {
    file: File,
    segments: Vec<Segment>,
}

/// How much of kcore's start holds its headers (a few dozen segments at most).
const HEADER_BYTES: usize = 64 * 1024;

impl Kcore {
    /// Opens `path` (normally [`KCORE`]): needs CAP_SYS_RAWIO and a kernel without lockdown
    /// of its memory.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let mut header = vec![0; HEADER_BYTES];
        let len = file.read_at(&mut header, 0)?;
        header.truncate(len);
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        let elf = FileHeader64::<Endianness>::parse(&*header)
            .map_err(|_| invalid("not an ELF core file"))?;
        let endian = elf.endian().map_err(|_| invalid("unknown byte order"))?;
        let headers = elf
            .program_headers(endian, &*header)
            .map_err(|_| invalid("truncated program headers"))?;
        let segments = headers
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| Segment {
                address: ph.p_vaddr(endian),
                len: ph.p_memsz(endian),
                offset: ph.p_offset(endian),
            })
            .collect();
        Ok(Self { file, segments })
    }
}

impl KernelMemory for Kcore {
    fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        let segment = self
            .segments
            .iter()
            .find(|s| address >= s.address && address + len as u64 <= s.address + s.len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{KCORE} does not map {address:#x}+{len:#x}"),
                )
            })?;
        let mut bytes = vec![0; len];
        self.file
            .read_exact_at(&mut bytes, segment.offset + (address - segment.address))?;
        Ok(bytes)
    }
}
