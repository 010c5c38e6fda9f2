//! `phylink_resolve`, the phylink work that calls a MAC's link ops: reported on return, with its
//! latency and the PHY of the MAC calls it made.

use aya_ebpf::{
    macros::{kprobe, kretprobe, map},
    maps::LruHashMap,
    programs::{ProbeContext, RetProbeContext},
};
use phytrace_common::RawKind;

use super::fill_mac_phy;
use crate::probes::{
    kernel::offsets,
    phy::{VIEW_MAC, view_and_name},
    ring::{ktime_ns, reserve},
    thread::tid,
};

/// A `phylink_resolve` running on a thread: when it started, and the PHY of the MAC calls it
/// made so far.
#[derive(Clone, Copy)]
struct PendingResolve {
    ts_ns: u64,
    phydev: u64,
}

/// The `phylink_resolve` running on each thread.
#[map]
static PENDING_RESOLVE: LruHashMap<u32, PendingResolve> = LruHashMap::with_max_entries(256, 0);

/// Notes `phydev` as the PHY of the `phylink_resolve` running on this thread, if one is.
pub(super) fn note_resolve_phy(tid: u32, phydev: u64) {
    if let Some(pending) = PENDING_RESOLVE.get_ptr_mut(tid) {
        // SAFETY: the pointer is this thread's map entry; only this thread touches it.
        unsafe { (*pending).phydev = phydev };
    }
}

#[kprobe]
pub fn phylink_resolve_enter(_ctx: ProbeContext) -> u32 {
    let pending = PendingResolve {
        ts_ns: ktime_ns(),
        phydev: 0,
    };
    let _ = PENDING_RESOLVE.insert(tid(), pending, 0);
    0
}

#[kretprobe]
pub fn phylink_resolve_exit(_ctx: RetProbeContext) -> u32 {
    let tid = tid();
    // SAFETY: the value is copied out before the entry is removed.
    let Some(pending) = (unsafe { PENDING_RESOLVE.get(tid) }).copied() else {
        return 0;
    };
    let _ = PENDING_RESOLVE.remove(tid);
    let phy = match pending.phydev {
        0 => None,
        phydev => view_and_name(offsets(), phydev, VIEW_MAC).map(|view| (phydev, view)),
    };
    if let Some(mut entry) = reserve(RawKind::PhylinkResolve) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.latency_ns = event.ts_ns.saturating_sub(pending.ts_ns);
        fill_mac_phy(event, phy);
        entry.submit(0);
    }
    0
}
