//! Any MAC's link changes, at phylink's call sites of `mac_ops->mac_link_up/down`: each hit is
//! checked against the `struct phylink` it comes from before it is reported.

use aya_ebpf::{
    macros::{kprobe, map},
    maps::Array,
    programs::ProbeContext,
};
use phytrace_common::{
    CallSite, MAX_MAC_SITES, SITE_CHECK_HOLDER, SITE_DISABLED, SITE_TAIL_CALL,
    SITE_TARGET_IN_MEMORY,
};

use super::{ArgsAt, link_down, link_up};
use crate::probes::{
    context::{Registers, attach_cookie, callee_entry_sp},
    kernel::read_at,
    thread::thread_state,
};

/// phylink's call sites of MAC ops, indexed by the cookie their probes carry; filled by the
/// loader when phylink is live.
#[map]
static MAC_SITES: Array<CallSite> = Array::with_max_entries(MAX_MAC_SITES, 0);

/// phylink is about to call a MAC op at a call site (the cookie): whether the target is what
/// the `struct phylink` in the site's holder register holds for the op, and that phylink's
/// `config` the first argument. A site failing the check is counted and disabled. A checked
/// call is counted and left for the op's by-name probe to find (`mac_call_target`, at
/// `mac_call_sp`): it is reported here, not twice.
#[inline(always)]
fn mac_site_checked(ctx: &ProbeContext) -> Option<ArgsAt> {
    let site = MAC_SITES.get_ptr_mut(attach_cookie(ctx) as u32)?;
    // SAFETY: an element of an array map, valid for the program's run; a racing update of
    // the flags from another CPU only disables the site twice.
    let site = unsafe { &mut *site };
    if site.flags & SITE_DISABLED != 0 || site.flags & SITE_CHECK_HOLDER == 0 {
        return None;
    }
    let regs = Registers::of(ctx)?;
    let target = if site.flags & SITE_TARGET_IN_MEMORY != 0 {
        read_at::<u64>(regs.get(site.target_reg), site.op_offset)
    } else {
        regs.get(site.target_reg)
    };
    let holder = regs.get(site.base_reg);
    let at = |displacement: i32| holder.wrapping_add(displacement as i64 as u64);
    let ops = read_at::<u64>(at(site.holder_displacement), 0);
    let config = read_at::<u64>(at(site.arg0_displacement), 0);
    let checked = target != 0
        && ops != 0
        && read_at::<u64>(ops, site.op_offset) == target
        && Some(config) == ctx.arg::<u64>(0);
    let tail_call = site.flags & SITE_TAIL_CALL != 0;
    if let Some(state) = thread_state() {
        (state.mac_call_target, state.mac_call_sp) = if checked {
            (target, callee_entry_sp(ctx, tail_call))
        } else {
            (0, 0)
        };
    }
    if !checked {
        site.mismatches += 1;
        site.flags |= SITE_DISABLED;
        return None;
    }
    // SAFETY: an atomic add (BPF_ATOMIC | BPF_ADD; core has no `fetch_add` for BPF) to an
    // aligned field of the map element, which other CPUs may count too.
    unsafe {
        core::arch::asm!(
            "lock *(u64 *)({counter} + 0) += {one}",
            counter = in(reg) &raw mut site.hits,
            one = in(reg) 1u64,
            options(nostack),
        )
    };
    Some(if tail_call {
        ArgsAt::Entry
    } else {
        ArgsAt::Call
    })
}

/// phylink calls a MAC's `mac_link_up` at a call site.
#[kprobe]
pub fn mac_site_link_up(ctx: ProbeContext) -> u32 {
    if let Some(at) = mac_site_checked(&ctx) {
        link_up(&ctx, at);
    }
    0
}

/// phylink calls a MAC's `mac_link_down` at a call site.
#[kprobe]
pub fn mac_site_link_down(ctx: ProbeContext) -> u32 {
    if mac_site_checked(&ctx).is_some() {
        link_down(&ctx);
    }
    0
}
