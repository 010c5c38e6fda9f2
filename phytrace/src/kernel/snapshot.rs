//! What the searches read from the running kernel, read once and shared by every search of
//! one state of it: kallsyms, as text and as functions, the addresses other tracers' kprobes
//! rewrote, and the reader of its code. A module that loads later is a new state: its search
//! takes a new snapshot.

use std::{
    fs,
    sync::{Arc, OnceLock},
};

use anyhow::{Result, anyhow};

use super::{
    code::{
        text::{self, BpfReader, KernelText},
        text_symbols::TextSymbols,
    },
    kprobes,
    symbols::KALLSYMS,
};

/// One state of the running kernel, read as the searches first ask.
pub struct Snapshot {
    kallsyms: OnceLock<Result<String, String>>,
    functions: OnceLock<Result<Arc<TextSymbols>, String>>,
    probed: OnceLock<Vec<u64>>,
    /// Where kcore is refused for want of privileges, the BPF reader of its code.
    bpf: BpfReader,
}

impl Snapshot {
    /// The kernel as it is now, its code read through kcore or `bpf`.
    pub fn new(bpf: BpfReader) -> Self {
        Self {
            kallsyms: OnceLock::new(),
            functions: OnceLock::new(),
            probed: OnceLock::new(),
            bpf,
        }
    }

    /// [`Self::new`], with kallsyms as the caller read it.
    #[cfg(test)]
    pub fn with_kallsyms(kallsyms: String, bpf: BpfReader) -> Self {
        let snapshot = Self::new(bpf);
        let _ = snapshot.kallsyms.set(Ok(kallsyms));
        snapshot
    }

    /// The text of `/proc/kallsyms`.
    pub fn kallsyms(&self) -> Result<&str> {
        self.kallsyms
            .get_or_init(|| {
                fs::read_to_string(KALLSYMS).map_err(|err| format!("reading {KALLSYMS}: {err}"))
            })
            .as_deref()
            .map_err(|err| anyhow!("{err}"))
    }

    /// The kernel's functions and retpoline thunks, vmlinux's and the live modules'.
    pub fn functions(&self) -> Result<Arc<TextSymbols>> {
        self.functions
            .get_or_init(|| {
                let kallsyms = self.kallsyms().map_err(|err| format!("{err:#}"))?;
                Ok(Arc::new(TextSymbols::parse(kallsyms)))
            })
            .clone()
            .map_err(|err| anyhow!("{err}"))
    }

    /// The addresses where running kprobes rewrote the kernel's code.
    pub fn probed(&self) -> &[u64] {
        self.probed.get_or_init(kprobes::probed_addresses)
    }

    /// A reader of the kernel's code: kcore, or the BPF reader where kcore is refused for want
    /// of privileges.
    pub fn text(&self) -> Result<KernelText> {
        text::open(self.bpf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_bpf() -> Result<Box<dyn text::KernelMemory>> {
        Err(anyhow!("no BPF here"))
    }

    #[test]
    fn kallsyms_given_are_parsed_once_and_shared() {
        let kallsyms = "ffffffff81000000 T _stext\nffffffff81001000 T phy_probe\n\
                        ffffffff81002000 T _etext\n";
        let snapshot = Snapshot::with_kallsyms(kallsyms.to_owned(), no_bpf);
        assert_eq!(snapshot.kallsyms().unwrap(), kallsyms);
        let functions = snapshot.functions().unwrap();
        assert!(Arc::ptr_eq(&functions, &snapshot.functions().unwrap()));
        assert!(functions.function("phy_probe").is_some());
    }
}
