//! The MAC side of a link: a phylink MAC's `mac_link_up` and `mac_link_down` (any MAC's at
//! phylink's call sites in [`sites`]; asix's by name here, for the calls no site reported),
//! carrier changes ([`carrier`]) and `phylink_resolve` ([`resolve`]), each reported with the
//! PHY it concerns when one is known.

mod carrier;
mod resolve;
mod sites;

use aya_ebpf::{
    EbpfContext,
    helpers::generated::bpf_get_func_ip,
    macros::{kprobe, map},
    maps::LruHashMap,
    programs::ProbeContext,
};
use phytrace_common::{KernelOffsets, MAC_RX_PAUSE, MAC_TX_PAUSE, RawEvent, RawKind};

use self::resolve::note_resolve_phy;
use super::{
    context::{call_stack_arg, entry_sp, stack_arg},
    kernel::offsets,
    phy::{PhyView, VIEW_MAC, view_and_name},
    ring::reserve,
    thread::{thread_state, tid},
};

/// The PHY each MAC's `phylink_config` was last told about by `mac_link_up`: `mac_link_down`
/// only gets the config.
#[map]
static MAC_PHY: LruHashMap<u64, u64> = LruHashMap::with_max_entries(256, 0);

/// Reads and names the PHY of a MAC-side event (0: none known).
#[inline(always)]
fn mac_phy(off: &KernelOffsets, phydev: u64) -> Option<(u64, PhyView)> {
    if phydev == 0 {
        return None;
    }
    note_resolve_phy(tid(), phydev);
    Some((phydev, view_and_name(off, phydev, VIEW_MAC)?))
}

/// Fills the PHY of a MAC-side event and its link.
fn fill_mac_phy(event: &mut RawEvent, phy: Option<(u64, PhyView)>) {
    if let Some((phydev, view)) = phy {
        event.phydev = phydev;
        view.fill(event);
    }
}

/// Reports a MAC-side event of `kind` for `phydev` (0: none known).
fn mac_event(kind: RawKind, phydev: u64, fill: impl FnOnce(&mut RawEvent)) {
    let phy = mac_phy(offsets(), phydev);
    if let Some(mut entry) = reserve(kind) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        fill_mac_phy(event, phy);
        fill(event);
        entry.submit(0);
    }
}

/// Where a MAC op's arguments are: at its entry (the by-name probes), or at phylink's call
/// (a call site: the arguments passed on the stack are below the return address still to be
/// pushed; a tail call's, above the caller's).
#[derive(Clone, Copy)]
enum ArgsAt {
    Entry,
    Call,
}

/// Argument `n` (0-based, ≥ 6 on x86-64) of a MAC op about to be called or just entered.
#[inline(always)]
fn mac_stack_arg(ctx: &ProbeContext, at: ArgsAt, n: u64) -> u64 {
    match at {
        ArgsAt::Entry => stack_arg(ctx, n),
        ArgsAt::Call => call_stack_arg(ctx, n),
    }
}

/// `mac_link_up(config, phy, mode, interface, speed, duplex, tx_pause, rx_pause)` of a
/// phylink MAC, its arguments `at`.
#[inline(always)]
fn link_up(ctx: &ProbeContext, at: ArgsAt) {
    let (Some(config), Some(phydev), Some(speed), Some(duplex)) = (
        ctx.arg::<u64>(0),
        ctx.arg::<u64>(1),
        ctx.arg::<i32>(4),
        ctx.arg::<i32>(5),
    ) else {
        return;
    };
    let _ = MAC_PHY.insert(config, phydev, 0);
    let tx_pause = mac_stack_arg(ctx, at, 6) & 1 != 0;
    let rx_pause = mac_stack_arg(ctx, at, 7) & 1 != 0;
    mac_event(RawKind::MacLinkUp, phydev, |event| {
        event.speed = speed;
        event.duplex = duplex as u8;
        event.value =
            if tx_pause { MAC_TX_PAUSE } else { 0 } | if rx_pause { MAC_RX_PAUSE } else { 0 };
    });
}

/// `mac_link_down(config, mode, interface)` of a phylink MAC.
#[inline(always)]
fn link_down(ctx: &ProbeContext) {
    let Some(config) = ctx.arg::<u64>(0) else {
        return;
    };
    // SAFETY: the value is copied out at once.
    let phydev = unsafe { MAC_PHY.get(config) }.copied().unwrap_or(0);
    mac_event(RawKind::MacLinkDown, phydev, |_| {});
}

/// Whether the MAC op just entered (by-name probe) was called at a phylink call site that
/// reported it: the site left this function and this entry's stack pointer (taken, so that
/// it is found once).
fn reported_at_call_site(ctx: &ProbeContext) -> bool {
    let Some(state) = thread_state() else {
        return false;
    };
    // SAFETY: the program is a kprobe on a function's entry, for which the helper answers the
    // function's address (Linux ≥ 5.15).
    let function = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
    let reported = state.mac_call_target != 0
        && state.mac_call_target == function
        && state.mac_call_sp == entry_sp(ctx);
    if reported {
        state.mac_call_target = 0;
    }
    reported
}

/// The AX88772's `ax88772_mac_link_up`, by name (unless a call site reported the call).
#[kprobe]
pub fn mac_link_up(ctx: ProbeContext) -> u32 {
    if !reported_at_call_site(&ctx) {
        link_up(&ctx, ArgsAt::Entry);
    }
    0
}

/// The AX88772's `ax88772_mac_link_down`, by name (unless a call site reported the call).
#[kprobe]
pub fn mac_link_down(ctx: ProbeContext) -> u32 {
    if !reported_at_call_site(&ctx) {
        link_down(&ctx);
    }
    0
}
