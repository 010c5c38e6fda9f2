//! When each MDIO access through a trampoline began, kept in its bus's slot: the accessors'
//! callers hold the bus's `mdio_lock`, so a bus has one access in flight at a time, whichever
//! thread and CPU it sleeps and wakes on. An array element, which the verifier looks up
//! inline, where the thread's task-local storage costs a helper call and a lookup of its own.
//! Two buses share a slot (direct-mapped by address): an access that finds it held by the
//! other bus's access in flight keeps its start in the thread's state instead. Two accesses of
//! two such buses that begin at the same instant on two CPUs may both take the free slot: one
//! then finds no start (its latency is not reported), or the other's, from that same instant.

use aya_ebpf::{
    macros::map,
    maps::{Array, PerCpuArray},
};

/// Slots (a power of two).
const SLOTS: u32 = 256;

/// The access of `bus` in flight (0: none) and when it began.
#[derive(Clone, Copy)]
struct BusSlot {
    bus: u64,
    ts: u64,
}

#[map]
static BUS_SLOTS: Array<BusSlot> = Array::with_max_entries(SLOTS, 0);

/// Where a trampoline's typed pointer is stored and read back as a plain number.
#[map]
static PLAIN: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// `value` as a plain number to the verifier: a trampoline's pointer arguments are typed
/// pointers, on which it refuses arithmetic such as a hash. Stored to a map value and read
/// back, a pointer becomes a number (privileged programs may do that). The trampolines' MDIO
/// programs, its only users, do not run in interrupts: nothing on this CPU writes the value
/// between the store and the load.
pub(super) fn plain(value: u64) -> Option<u64> {
    let scratch = PLAIN.get_ptr_mut(0)?;
    // SAFETY: this CPU's element of a per-CPU array; volatile so that the round trip stays.
    unsafe {
        core::ptr::write_volatile(scratch, value);
        Some(core::ptr::read_volatile(scratch))
    }
}

/// `bus`'s slot (`bus` a plain number).
fn slot(bus: u64) -> Option<&'static mut BusSlot> {
    let index = ((bus >> 6) ^ (bus >> 14)) as u32 & (SLOTS - 1);
    // SAFETY: an element of a global array, written only by the accesses of the buses mapped
    // to it, one at a time per bus (see the module's comment).
    BUS_SLOTS
        .get_ptr_mut(index)
        .map(|slot| unsafe { &mut *slot })
}

/// An access of `bus` began at `ts`: kept in its slot. False if another bus's access in
/// flight holds the slot.
pub(super) fn begin(bus: u64, ts: u64) -> bool {
    let Some(slot) = slot(bus) else {
        return false;
    };
    if slot.bus != 0 && slot.bus != bus {
        return false;
    }
    slot.ts = ts;
    slot.bus = bus;
    true
}

/// The access of `bus` returned: when it began, if its slot holds it (the slot is freed).
pub(super) fn end(bus: u64) -> Option<u64> {
    let slot = slot(bus)?;
    if slot.bus != bus {
        return None;
    }
    slot.bus = 0;
    Some(slot.ts)
}
