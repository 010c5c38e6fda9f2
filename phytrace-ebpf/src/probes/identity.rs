//! Identities: a PHY's (bus, address, PHY id, driver) or a bus's name, sent to the ring the
//! first time an event needs them. Per-CPU caches remember what was sent, as of an epoch that
//! `device_changed` (a kretprobe on the functions that remove or rebind a device) bumps.

use aya_ebpf::{
    helpers::{bpf_probe_read_kernel_buf, bpf_probe_read_kernel_str_bytes},
    macros::{kretprobe, map},
    maps::{Array, PerCpuArray},
    programs::RetProbeContext,
};
use phytrace_common::{KernelOffsets, RawIdentity, RawKind};

use super::{
    kernel::{offsets, read_at},
    ring::reserve_zeroed,
};

/// A PHY whose identity this CPU has sent, as it was then.
#[derive(Clone, Copy)]
struct SentPhy {
    phydev: u64,
    bus: u64,
    drv: u64,
    epoch: u64,
    phy_id: u32,
    addr: u32,
}

/// A bus whose name this CPU has sent.
#[derive(Clone, Copy)]
struct SentBus {
    bus: u64,
    epoch: u64,
}

/// Slots of the per-CPU caches of identities sent (direct-mapped by address).
pub(super) const SENT_SLOTS: u32 = 64;

#[map]
static SENT_PHYS: PerCpuArray<SentPhy> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

#[map]
static SENT_BUSES: PerCpuArray<SentBus> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

/// Bumped when a PHY or bus is removed or a PHY's driver changes (see [`device_changed`]).
#[map]
static EPOCH: Array<u64> = Array::with_max_entries(1, 0);

/// The current epoch: what is cached as of another is stale.
pub(super) fn epoch() -> u64 {
    EPOCH.get(0).copied().unwrap_or(0)
}

/// The slot of a per-CPU cache for the device or bus at `address`.
pub(super) fn sent_slot(address: u64) -> u32 {
    ((address >> 11) ^ (address >> 17)) as u32 & (SENT_SLOTS - 1)
}

/// [`PhyView::name`](super::phy::PhyView::name) as a global function (plain numbers in and
/// out): the verifier checks it once per program, not once for each path of the caller that
/// reaches it. 1: sent or already sent.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn send_phy_identity(
    phydev: u64,
    bus: u64,
    drv: u64,
    phy_id: u64,
    addr: u64,
) -> u64 {
    let (phy_id, addr) = (phy_id as u32, addr as u32);
    let epoch = epoch();
    let Some(slot) = SENT_PHYS.get_ptr_mut(sent_slot(phydev)) else {
        return 0;
    };
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let sent = unsafe { &mut *slot };
    if sent.phydev == phydev
        && sent.bus == bus
        && sent.drv == drv
        && sent.phy_id == phy_id
        && sent.addr == addr
        && sent.epoch == epoch
    {
        return 1;
    }
    // A full ring: the event that needs the name will not fit either and counts the loss
    // (an identity is not an event); not marked sent, it is tried again.
    let Some(mut entry) = reserve_zeroed::<RawIdentity>() else {
        return 0;
    };
    let off = offsets();
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawIdentity`).
    let record = unsafe { entry.assume_init_mut() };
    record.kind = RawKind::Identity as u8;
    record.phydev = phydev;
    record.bus = bus;
    record.addr = addr as u8;
    record.phy_id = phy_id;
    read_bus_id(off, bus, &mut record.bus_id);
    if drv != 0 {
        let name: u64 = read_at(drv, off.drv_name);
        // SAFETY: a NUL-terminated kernel string read with a bounded, checked helper.
        let _ = unsafe { bpf_probe_read_kernel_str_bytes(name as *const u8, &mut record.driver) };
    }
    entry.submit(0);
    *sent = SentPhy {
        phydev,
        bus,
        drv,
        epoch,
        phy_id,
        addr,
    };
    1
}

/// Sends the name of `bus` (a plain number: see [`untyped`]; for accesses to an address
/// without a PHY) unless this CPU did; false if there was no room for it.
pub(super) fn name_bus(off: &KernelOffsets, bus: u64) -> bool {
    let epoch = epoch();
    let Some(slot) = SENT_BUSES.get_ptr_mut(sent_slot(bus)) else {
        return false;
    };
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let sent = unsafe { &mut *slot };
    if sent.bus == bus && sent.epoch == epoch {
        return true;
    }
    // A full ring: the event that needs the name will not fit either and counts the loss
    // (an identity is not an event); not marked sent, it is tried again.
    let Some(mut entry) = reserve_zeroed::<RawIdentity>() else {
        return false;
    };
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawIdentity`).
    let record = unsafe { entry.assume_init_mut() };
    record.kind = RawKind::Identity as u8;
    record.bus = bus;
    read_bus_id(off, bus, &mut record.bus_id);
    entry.submit(0);
    *sent = SentBus { bus, epoch };
    true
}

fn read_bus_id(off: &KernelOffsets, bus: u64, out: &mut [u8]) {
    if bus != 0 {
        // SAFETY: `mii_bus.id` is a 61-byte array inside the struct, longer than the copy.
        let _ = unsafe { bpf_probe_read_kernel_buf((bus + off.bus_id as u64) as *const u8, out) };
    }
}

/// A PHY or bus went away (`phy_device_remove`, `mdiobus_unregister`), or a PHY's driver was
/// bound or unbound (`phy_probe`, `phy_remove`): whatever is at its address is looked up and
/// named anew. On return, when the change is made: a lookup after it finds the new epoch.
#[kretprobe]
pub fn device_changed(_ctx: RetProbeContext) -> u32 {
    if let Some(epoch) = EPOCH.get_ptr_mut(0) {
        // SAFETY: the map's only entry; a lost increment from a concurrent removal still
        // changes the epoch, which is all that matters.
        unsafe { *epoch += 1 };
    }
    0
}
