//! The driver's callbacks at phylib's call sites of `phy_driver` operations: a kprobe on the
//! call (`call_site_enter`), one on the instruction it returns to (`call_site_exit`), or a
//! kretprobe on a function that tail-calls the operation (`call_site_tail_exit`).

use aya_ebpf::{
    macros::{kprobe, kretprobe, map},
    maps::Array,
    programs::{ProbeContext, RetProbeContext},
};
use phytrace_common::{
    CallSite, MAX_CALL_SITES, SITE_CHECK_BOUND_DRIVER, SITE_DISABLED, SITE_TARGET_IN_MEMORY,
    call_site_key,
};

use super::{Unmatched, enter_callback, exit_callback};
use crate::probes::{
    context::{Registers, attach_cookie, entry_sp, return_register, return_sp},
    kernel::{offsets, read_at},
    phy::{PhyView, VIEW_CALLBACK},
};

/// The call sites of `phy_driver` operations, indexed by the cookie their probes carry; filled
/// by the loader.
#[map]
static CALL_SITES: Array<CallSite> = Array::with_max_entries(MAX_CALL_SITES, 0);

/// phylib is about to call a driver operation at a call site (the cookie): checks that the
/// target is what the PHY's driver (or the `phy_driver` the op was loaded from) holds for the
/// op, then enters the callback it names.
#[kprobe]
pub fn call_site_enter(ctx: ProbeContext) -> u32 {
    let index = attach_cookie(&ctx) as u32;
    let Some(site) = CALL_SITES.get_ptr_mut(index) else {
        return 0;
    };
    // SAFETY: an element of an array map, valid for the program's run; a racing update of
    // the flags from another CPU only disables the site twice.
    let site = unsafe { &mut *site };
    if site.flags & SITE_DISABLED != 0 {
        return 0;
    }
    let (Some(phydev), Some(regs)) = (ctx.arg::<u64>(0), Registers::of(&ctx)) else {
        return 0;
    };
    let target = if site.flags & SITE_TARGET_IN_MEMORY != 0 {
        read_at::<u64>(regs.get(site.base_reg), site.op_offset)
    } else {
        regs.get(site.target_reg)
    };
    // Read for its bound driver; named once the site passes the check (a misread site's
    // first argument may be no PHY).
    let Some(view) = PhyView::read(phydev, offsets(), VIEW_CALLBACK) else {
        return 0;
    };
    let driver = if site.flags & SITE_CHECK_BOUND_DRIVER != 0 {
        view.driver()
    } else {
        regs.get(site.base_reg)
    };
    if target == 0 || driver == 0 || read_at::<u64>(driver, site.op_offset) != target {
        site.mismatches += 1;
        site.flags |= SITE_DISABLED;
        return 0;
    }
    let _ = view.name(phydev);
    enter_callback(entry_sp(&ctx), phydev, call_site_key(site.op, target), view);
    0
}

/// The instruction after a call site ran: the return of the call entered at this stack
/// pointer, if there was one (the code also gets here without the call).
#[kprobe]
pub fn call_site_exit(ctx: ProbeContext) -> u32 {
    exit_callback(entry_sp(&ctx), return_register(&ctx), Unmatched::Expected);
    0
}

/// A function that tail-calls a driver operation returned: the operation's return, if it was
/// called (its frame is at the function's entry stack pointer).
#[kretprobe]
pub fn call_site_tail_exit(ctx: RetProbeContext) -> u32 {
    exit_callback(return_sp(&ctx), ctx.ret::<i32>(), Unmatched::Expected);
    0
}
