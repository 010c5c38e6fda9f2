//! The same-fields floor of `cargo xtask bench` (P1): fentry and fexit on the clause-22 MDIO
//! accessors that read the clock on entry and on return and commit one record of the
//! accessor's fields to the event ring, and do nothing else: no per-thread state, no PHY
//! lookup, no latency. What phytrace's MDIO programs cost above it is the cost of what they
//! add. phytrace never attaches them; `phytrace::probe::floor` does, for the bench.

use aya_ebpf::{
    macros::{fentry, fexit},
    programs::{FEntryContext, FExitContext},
};
use phytrace_common::RawKind;

use super::ring::{ktime_ns, reserve};

/// An accessor returned: one record of its bus, address, register, value and result.
#[inline(always)]
fn floor_end(ctx: &FExitContext, kind: RawKind, write: bool) -> u32 {
    let Some(mut entry) = reserve(kind) else {
        return 0;
    };
    // SAFETY: `reserve` initialised the entry.
    let event = unsafe { entry.assume_init_mut() };
    event.bus = ctx.arg::<u64>(0);
    event.addr = ctx.arg::<u64>(1) as u8;
    event.regnum = ctx.arg::<u64>(2) as u16;
    if write {
        event.value = ctx.arg::<u64>(3) as u16;
    }
    event.ret = ctx.arg::<u64>(3 + usize::from(write)) as i32;
    entry.submit(0);
    0
}

#[fentry(function = "__mdiobus_read")]
pub fn floor_read_enter(_ctx: FEntryContext) -> u32 {
    ktime_ns();
    0
}

#[fexit(function = "__mdiobus_read")]
pub fn floor_read_exit(ctx: FExitContext) -> u32 {
    floor_end(&ctx, RawKind::MdioRead, false)
}

#[fentry(function = "__mdiobus_write")]
pub fn floor_write_enter(_ctx: FEntryContext) -> u32 {
    ktime_ns();
    0
}

#[fexit(function = "__mdiobus_write")]
pub fn floor_write_exit(ctx: FExitContext) -> u32 {
    floor_end(&ctx, RawKind::MdioWrite, true)
}
