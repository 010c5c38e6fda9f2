//! What a probe finds in its context: the cookie it was attached with, and the probed
//! function's registers, stack pointer and arguments (x86-64 or arm64 `pt_regs`).

use aya_ebpf::{
    EbpfContext,
    helpers::generated::bpf_get_attach_cookie,
    programs::{ProbeContext, RetProbeContext},
};

use super::kernel::{read_at, untyped};

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

/// Byte offset of the first argument register in `struct pt_regs` (`di`; arm64: `regs[0]`).
#[cfg(bpf_target_arch = "x86_64")]
pub(super) const ARG0_REG: u32 = 112;
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) const ARG0_REG: u32 = 0;
/// Byte offset of the return value register in `struct pt_regs` (`ax`; arm64: `regs[0]`).
#[cfg(bpf_target_arch = "x86_64")]
pub(super) const RETURN_REG: u32 = 80;
#[cfg(not(bpf_target_arch = "x86_64"))]
pub(super) const RETURN_REG: u32 = 0;

/// A probe's `pt_regs` as a plain address: the verifier forbids arithmetic on the context
/// pointer, and the registers a call site names are known only at run time.
pub(super) fn regs_address(regs: *const core::ffi::c_void) -> u64 {
    untyped(regs as u64)
}

/// The register at byte offset `reg` of the `pt_regs` at `regs` (see [`regs_address`]).
pub(super) fn register(regs: u64, reg: u32) -> u64 {
    read_at::<u64>(regs, reg & 0xff8)
}
