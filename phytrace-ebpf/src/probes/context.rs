//! What a probe finds in its context: the cookie it was attached with, and the probed
//! function's registers, stack pointer and arguments (x86-64 or arm64 `pt_regs`).

use aya_ebpf::{
    EbpfContext,
    helpers::generated::bpf_get_attach_cookie,
    macros::map,
    maps::PerCpuArray,
    programs::{ProbeContext, RetProbeContext},
};

#[cfg(bpf_target_arch = "x86_64")]
use super::kernel::read_at;

/// The key userspace attached this probe with (one per callback, the same for its return).
pub(super) fn attach_cookie<C: EbpfContext>(ctx: &C) -> u64 {
    // SAFETY: kprobe programs attached through a perf link may call `bpf_get_attach_cookie`
    // (Linux ≥ 5.15) with their context.
    unsafe { bpf_get_attach_cookie(ctx.as_ptr()) }
}

/// Stack pointer of a function just entered, as the kprobe saw it.
#[cfg(bpf_target_arch = "x86_64")]
pub(super) fn entry_sp(ctx: &ProbeContext) -> u64 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).rsp }
}

/// The stack pointer its function had at entry, seen from a kretprobe: the return popped the
/// return address.
#[cfg(bpf_target_arch = "x86_64")]
pub(super) fn return_sp(ctx: &RetProbeContext) -> u64 {
    // SAFETY: a kretprobe's context is the probed task's `pt_regs` at the return.
    unsafe { (*ctx.regs).rsp }.wrapping_sub(8)
}

/// Stack pointer of a function just entered, as the kprobe saw it.
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) fn entry_sp(ctx: &ProbeContext) -> u64 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).sp }
}

/// The stack pointer its function had at entry, seen from a kretprobe (arm64 returns through
/// the link register: the stack pointer is the entry's).
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) fn return_sp(ctx: &RetProbeContext) -> u64 {
    // SAFETY: a kretprobe's context is the probed task's `pt_regs` at the return.
    unsafe { (*ctx.regs).sp }
}

/// The stack pointer the function called at a call site (or jumped to by a tail call,
/// `tail_call`) will have at its entry: x86-64's call pushes the return address, arm64's
/// keeps it in the link register.
pub(super) fn callee_entry_sp(ctx: &ProbeContext, tail_call: bool) -> u64 {
    let sp = entry_sp(ctx);
    if cfg!(bpf_target_arch = "x86_64") && !tail_call {
        sp - 8
    } else {
        sp
    }
}

/// Argument `n` (0-based, ≥ 6) of a function just entered: on x86-64 the seventh argument on
/// is on the stack, after the return address.
#[cfg(bpf_target_arch = "x86_64")]
pub(super) fn stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    read_at(entry_sp(ctx) + 8 * (n - 5), 0)
}

/// Argument `n` (0-based, < 8) of a function just entered: arm64 passes eight in registers.
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) fn stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    ctx.arg::<u64>(n as usize).unwrap_or(0)
}

/// Argument `n` (0-based, ≥ 6) of a function about to be called, at the call: on x86-64 the
/// arguments passed on the stack are below the return address the call is still to push.
#[cfg(bpf_target_arch = "x86_64")]
pub(super) fn call_stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    read_at(entry_sp(ctx) + 8 * (n - 6), 0)
}

/// Argument `n` (0-based, < 8) of a function about to be called, at the call: arm64 passes
/// eight in registers.
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) fn call_stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    stack_arg(ctx, n)
}

/// The value in the return register (`ax`; arm64: `x0`) where a kprobe stopped, as the `int`
/// a function just returned.
#[cfg(bpf_target_arch = "x86_64")]
pub(super) fn return_register(ctx: &ProbeContext) -> i32 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).rax as i32 }
}

/// The value in the return register (`ax`; arm64: `x0`) where a kprobe stopped, as the `int`
/// a function just returned.
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) fn return_register(ctx: &ProbeContext) -> i32 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).regs[0] as i32 }
}

/// The words of `struct pt_regs` a register offset can name: x86-64's 21 (`r15` … `ss`),
/// arm64's 34 (`regs[31]`, `sp`, `pc`, `pstate`).
#[cfg(bpf_target_arch = "x86_64")]
const REGISTER_WORDS: usize = 21;
#[cfg(not(bpf_target_arch = "x86_64"))]
const REGISTER_WORDS: usize = 34;

/// One CPU's copy of a probe's registers (kprobe programs do not nest on a CPU).
#[map]
static REGISTERS: PerCpuArray<[u64; REGISTER_WORDS]> = PerCpuArray::with_max_entries(1, 0);

/// A kprobe's registers, copied with one helper call: a call site names its registers at run
/// time, and the verifier lets a program load from its context only at constant offsets.
pub(super) struct Registers(*const [u64; REGISTER_WORDS]);

impl Registers {
    /// Copies `ctx`'s `pt_regs`.
    pub(super) fn of(ctx: &ProbeContext) -> Option<Self> {
        let copy = REGISTERS.get_ptr_mut(0)?;
        // SAFETY: the helper writes exactly the copy's size, from the context's `pt_regs`
        // (whose first `REGISTER_WORDS` words are the registers), zeroes on a fault; the copy is
        // this CPU's, which no other program uses while this one runs.
        unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_kernel(
                copy.cast(),
                core::mem::size_of::<[u64; REGISTER_WORDS]>() as u32,
                ctx.regs.cast::<core::ffi::c_void>(),
            );
        }
        Some(Self(copy))
    }

    /// The register at byte offset `reg` of `struct pt_regs` (0 for one past its registers).
    pub(super) fn get(&self, reg: u32) -> u64 {
        // The verifier bounds the very register the load uses: the byte offset, aligned, then
        // compared (`black_box` keeps LLVM from comparing the unaligned one instead).
        let at = core::hint::black_box((reg & !7) as usize);
        if at > (REGISTER_WORDS - 1) * 8 {
            return 0;
        }
        // SAFETY: `at` is the offset of one of the copy's words, a map element valid for the
        // program's run.
        unsafe { *self.0.cast::<u8>().add(at).cast::<u64>() }
    }
}
