//! The running kernel's code, read from `/proc/kcore` (an ELF core file whose segments map
//! kernel virtual addresses): the text as it runs, with alternatives, retpolines and static
//! calls already patched; or, where kcore is refused for want of privileges, by a BPF
//! program the probe side loads.

use std::{fs::File, io, os::unix::fs::FileExt as _, path::Path};

use anyhow::Result;

use crate::kernel::{error::ProbeError, support};

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

/// How the kernel's code is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextReader {
    /// From [`KCORE`] (`CAP_SYS_RAWIO`).
    Kcore,
    /// By a BPF program (`CAP_BPF` and `CAP_PERFMON`).
    Bpf,
    /// From a module's file, before the module loads.
    ModuleFile,
}

impl TextReader {
    /// The name `record --status` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Kcore => "kcore",
            Self::Bpf => "bpf",
            Self::ModuleFile => "module-file",
        }
    }
}

/// The running kernel's code, through the reader [`open`] chose.
pub enum KernelText {
    Kcore(Kcore),
    Bpf(Box<dyn KernelMemory>),
}

/// Opens a BPF program's reader of kernel memory, which the probe side loads: the reader of
/// the kernel's code where [`KCORE`] is refused for want of privileges.
pub type BpfReader = fn() -> Result<Box<dyn KernelMemory>>;

impl KernelText {
    /// Which reader it is.
    pub const fn reader(&self) -> TextReader {
        match self {
            Self::Kcore(_) => TextReader::Kcore,
            Self::Bpf(_) => TextReader::Bpf,
        }
    }
}

impl KernelMemory for KernelText {
    fn read(&mut self, address: u64, len: usize) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Kcore(kcore) => kcore.read(address, len),
            Self::Bpf(bpf) => bpf.read(address, len),
        }
    }
}

/// The running kernel's code: [`KCORE`], or where that is refused for want of privileges
/// (`CAP_SYS_RAWIO`), a BPF program's reads (`bpf`); else an error naming why neither can
/// read it and the fix. The one place that chooses.
pub fn open(bpf: BpfReader) -> Result<KernelText> {
    let refused = match Kcore::open(Path::new(KCORE)) {
        Ok(kcore) => return Ok(KernelText::Kcore(kcore)),
        Err(err) => err,
    };
    match kcore_refusal(&refused, support::refused_by_lockdown()) {
        KcoreRefusal::Privileges => bpf()
            .map(KernelText::Bpf)
            .map_err(|bpf| both_refused(&refused, &bpf)),
        KcoreRefusal::Final(why) => Err(ProbeError::unavailable(why).into()),
    }
}

/// What a refused [`KCORE`] leaves.
#[derive(Debug, PartialEq, Eq)]
enum KcoreRefusal {
    /// Refused for want of `CAP_SYS_RAWIO`: BPF may read the code.
    Privileges,
    /// Nothing else can read it, for this reason.
    Final(String),
}

/// Why [`KCORE`] could not be opened (`err`), under the refusing lockdown
/// `lockdown` if any (which refuses it with EPERM too, and every other read of kernel memory).
fn kcore_refusal(err: &std::io::Error, lockdown: Option<String>) -> KcoreRefusal {
    let kcore = KCORE;
    match (err.raw_os_error(), lockdown) {
        (Some(libc::EPERM | libc::EACCES), Some(lockdown)) => KcoreRefusal::Final(lockdown),
        (Some(libc::EPERM | libc::EACCES), None) => KcoreRefusal::Privileges,
        (Some(libc::ENOENT), _) => KcoreRefusal::Final(format!(
            "{kcore} is missing: the kernel was built without CONFIG_PROC_KCORE"
        )),
        _ => KcoreRefusal::Final(format!("reading {kcore}: {err}")),
    }
}

/// Neither reader can read the kernel's code: kcore refused for want of privileges (`kcore`),
/// the BPF reader for `bpf`.
fn both_refused(kcore: &std::io::Error, bpf: &anyhow::Error) -> anyhow::Error {
    let message = format!(
        "reading the kernel's code: {}: {kcore} (it needs CAP_SYS_RAWIO), and through BPF: \
         {bpf:#}",
        KCORE
    );
    match bpf.downcast_ref::<ProbeError>() {
        Some(refusal) => ProbeError::refused(refusal.cause, message),
        None => ProbeError::unavailable(message),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kcore_refused_for_privileges_turns_to_bpf() {
        let err = std::io::Error::from_raw_os_error;
        for code in [libc::EPERM, libc::EACCES] {
            assert_eq!(kcore_refusal(&err(code), None), KcoreRefusal::Privileges);
        }
        // Confidentiality refuses kcore with EPERM, and BPF's reads too: the lockdown is named.
        let locked = "the kernel is locked down".to_owned();
        assert_eq!(
            kcore_refusal(&err(libc::EPERM), Some(locked.clone())),
            KcoreRefusal::Final(locked)
        );
        let KcoreRefusal::Final(missing) = kcore_refusal(&err(libc::ENOENT), None) else {
            panic!("a missing kcore turned to BPF");
        };
        assert!(missing.contains("CONFIG_PROC_KCORE"), "{missing}");
        assert!(matches!(
            kcore_refusal(&err(libc::EIO), None),
            KcoreRefusal::Final(_)
        ));
    }

    #[test]
    fn both_refusals_are_named_with_the_bpf_readers_cause() {
        let bpf = anyhow::Error::from(ProbeError::refused(
            Some(crate::kernel::error::Cause::NotPermitted),
            "attaching `kernel_read` to __x64_sys_getppid failed",
        ));
        let err = both_refused(&std::io::Error::from_raw_os_error(libc::EPERM), &bpf);
        let refusal = err.downcast_ref::<ProbeError>().unwrap();
        assert_eq!(
            refusal.cause,
            Some(crate::kernel::error::Cause::NotPermitted)
        );
        assert!(refusal.message.contains("CAP_SYS_RAWIO"), "{err}");
        assert!(
            refusal
                .message
                .ends_with("through BPF: attaching `kernel_read` to __x64_sys_getppid failed"),
            "{err}"
        );
        let other = both_refused(
            &std::io::Error::from_raw_os_error(libc::EACCES),
            &anyhow::anyhow!("no map"),
        );
        assert_eq!(other.downcast_ref::<ProbeError>().unwrap().cause, None);
    }
}
