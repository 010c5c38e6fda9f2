//! Completing the eBPF object's kfunc calls for the running kernel.
//!
//! A kfunc is called by its BTF id in the kernel's BTF, which differs from build to build.
//! aya 0.14 cannot link calls to kfuncs, so the programs are built with a placeholder call
//! instruction (`phytrace_common::KFUNC_CALL_PLACEHOLDER`) and the loader writes the id into
//! a copy of the object before aya reads it. A kernel without BTF has no kfuncs at all: there
//! the call becomes the move the verifier itself would make of `bpf_rdonly_cast`, and the
//! programs read through helpers instead (`KernelTypes`).

use anyhow::{Context as _, Result, bail};
use object::{Object as _, ObjectSection as _, SectionKind};
use phytrace_common::KFUNC_CALL_PLACEHOLDER;

/// Size of one BPF instruction.
const INSN: usize = 8;

/// `r0 = r1` (BPF_ALU64 | BPF_MOV | BPF_X, dst r0, src r1): `bpf_rdonly_cast`'s result.
const MOVE_R1_TO_R0: [u8; INSN] = [0xbf, 0x10, 0, 0, 0, 0, 0, 0];

/// An ELF object in memory aligned for parsing (aya reads its headers in place).
pub struct AlignedObject {
    words: Vec<u64>,
    len: usize,
}

impl AlignedObject {
    fn copy_of(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut le = [0u8; 8];
            le[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
        Self {
            words,
            len: bytes.len(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes (`len` ≤ 8 × its length), u8
        // has no alignment requirement, and the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

/// `object` with every placeholder kfunc call made a call to `bpf_rdonly_cast`, of BTF id
/// `rdonly_cast` in the kernel's BTF, or (`None`: the kernel has no BTF) a move of its first
/// argument to its result. Returns the copy and how many calls it completed.
pub fn complete(object: &[u8], rdonly_cast: Option<u32>) -> Result<(AlignedObject, usize)> {
    let mut code = Vec::new();
    {
        let elf = object::File::parse(object).context("reading phytrace's eBPF object")?;
        for section in elf.sections() {
            if section.kind() == SectionKind::Text
                && let Some((start, size)) = section.file_range()
            {
                code.push((start as usize, size as usize));
            }
        }
    }
    let mut copy = AlignedObject::copy_of(object);
    let bytes = copy.bytes_mut();
    let placeholder = KFUNC_CALL_PLACEHOLDER.to_le_bytes();
    let mut completed = 0;
    for (start, size) in code {
        let Some(section) = bytes.get_mut(start..start + size) else {
            bail!("phytrace's eBPF object has a code section past its end");
        };
        for insn in section.chunks_exact_mut(INSN) {
            if *insn == placeholder {
                match rdonly_cast {
                    Some(id) => insn[4..].copy_from_slice(&id.to_le_bytes()),
                    None => insn.copy_from_slice(&MOVE_R1_TO_R0),
                }
                completed += 1;
            }
        }
    }
    Ok((copy, completed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eBPF object phytrace ships (empty when built with `AYA_BUILD_SKIP`).
    static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/phytrace"));

    #[test]
    fn every_placeholder_call_gets_the_kfunc_id_and_nothing_else_changes() {
        if OBJECT.is_empty() {
            return;
        }
        let (copy, completed) = complete(OBJECT, Some(0x1234_5678)).unwrap();
        assert!(completed > 0, "the object makes no kfunc call");
        let placeholder = KFUNC_CALL_PLACEHOLDER.to_le_bytes();
        let mut changed = 0;
        for (at, (old, new)) in OBJECT
            .chunks(INSN)
            .zip(copy.bytes().chunks(INSN))
            .enumerate()
        {
            if old != new {
                assert_eq!(old, placeholder, "instruction {at} changed");
                assert_eq!(&new[..4], &placeholder[..4]);
                assert_eq!(new[4..], 0x1234_5678u32.to_le_bytes());
                changed += 1;
            }
        }
        assert_eq!(changed, completed);
        assert!(object::File::parse(copy.bytes()).is_ok());
    }

    #[test]
    fn without_kernel_btf_each_placeholder_call_becomes_a_move() {
        if OBJECT.is_empty() {
            return;
        }
        let (copy, completed) = complete(OBJECT, None).unwrap();
        assert!(completed > 0, "the object makes no kfunc call");
        let placeholder = KFUNC_CALL_PLACEHOLDER.to_le_bytes();
        let moved = OBJECT
            .chunks(INSN)
            .zip(copy.bytes().chunks(INSN))
            .filter(|(old, new)| old != new)
            .inspect(|(old, new)| {
                assert_eq!(*old, placeholder);
                assert_eq!(*new, MOVE_R1_TO_R0);
            })
            .count();
        assert_eq!(moved, completed);
    }
}
