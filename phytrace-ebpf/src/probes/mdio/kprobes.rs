//! Kprobe twins of the trampoline programs: for kernels without BPF trampolines (or when asked),
//! and for the bus-op calls in the accessors' inlined copies, where the op's arguments and
//! return value are the accessor's. The entry keeps the arguments for the return.

use aya_ebpf::{
    macros::{kprobe, kretprobe},
    programs::{ProbeContext, RetProbeContext},
};
use phytrace_common::RawKind;

use super::{MdioCall, accessor_call, mdio_begin, mdio_end};

/// The arguments of an MDIO accessor at a kprobe.
fn kprobe_call(ctx: &ProbeContext, c45: bool, write: bool) -> MdioCall {
    accessor_call(|n| ctx.arg::<u64>(n).unwrap_or(0), c45, write)
}

#[kprobe]
pub fn mdio_read_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, false, false)))
}

#[kretprobe]
pub fn mdio_read_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioRead, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_write_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, false, true)))
}

#[kretprobe]
pub fn mdio_write_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioWrite, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_c45_read_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, true, false)))
}

#[kretprobe]
pub fn mdio_c45_read_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioC45Read, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_c45_write_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, true, true)))
}

#[kretprobe]
pub fn mdio_c45_write_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioC45Write, None, ctx.ret::<i32>())
}
