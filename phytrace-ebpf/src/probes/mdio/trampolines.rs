//! fentry/fexit programs on the MDIO accessors: a BPF trampoline gives the programs the
//! arguments on entry and on return.

use aya_ebpf::{
    macros::{fentry, fexit},
    programs::{FEntryContext, FExitContext},
};
use phytrace_common::RawKind;

use super::{accessor_call, mdio_begin, mdio_end};

/// An accessor returned, seen from its trampoline: the arguments, then the return value in
/// the slot after the last one.
#[inline(always)]
fn fexit_end(ctx: &FExitContext, kind: RawKind, c45: bool, write: bool) -> u32 {
    let call = accessor_call(|n| ctx.arg::<u64>(n), c45, write);
    let ret_slot = if c45 { 4 } else { 3 } + usize::from(write);
    mdio_end(kind, Some(call), ctx.arg::<u64>(ret_slot) as i32)
}

/// `__mdiobus_read(bus, addr, regnum)` through a BPF trampoline.
#[fentry(function = "__mdiobus_read")]
pub fn mdio_read_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_read")]
pub fn mdio_read_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioRead, false, false)
}

/// `__mdiobus_write(bus, addr, regnum, val)` through a BPF trampoline.
#[fentry(function = "__mdiobus_write")]
pub fn mdio_write_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_write")]
pub fn mdio_write_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioWrite, false, true)
}

/// `__mdiobus_c45_read(bus, addr, devad, regnum)` through a BPF trampoline.
#[fentry(function = "__mdiobus_c45_read")]
pub fn mdio_c45_read_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_c45_read")]
pub fn mdio_c45_read_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioC45Read, true, false)
}

/// `__mdiobus_c45_write(bus, addr, devad, regnum, val)` through a BPF trampoline.
#[fentry(function = "__mdiobus_c45_write")]
pub fn mdio_c45_write_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_c45_write")]
pub fn mdio_c45_write_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioC45Write, true, true)
}
