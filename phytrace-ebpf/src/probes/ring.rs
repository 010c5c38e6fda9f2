//! The event stream: records reserved in the ring buffer, zeroed and stamped, and the
//! per-CPU counts of those lost.

use aya_ebpf::{
    helpers::{bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{PerCpuArray, RingBuf, ring_buf::RingBufEntry},
};
use phytrace_common::{DROP_COUNTERS, DropCause, RawEvent, RawKind, RawNamed};

use super::thread::tid;

/// The event stream. Its size is set by the loader (`--ring-size`).
#[map]
static EVENTS: RingBuf = RingBuf::with_byte_size(1 << 20, 0);

/// Records lost, per CPU, by cause (see `phytrace_common::DropCause`).
#[map]
static DROPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(DROP_COUNTERS, 0);

/// Counts a record lost for `cause` on this CPU.
pub(super) fn count_drop(cause: DropCause) {
    if let Some(counter) = DROPS.get_ptr_mut(cause as u32) {
        // SAFETY: the pointer comes from the per-CPU array of this CPU; nothing else writes it
        // while this program runs on this CPU.
        unsafe { *counter += 1 };
    }
}

/// Stamps a reserved record of thread `tid`.
fn stamp(event: &mut RawEvent, kind: RawKind, tid: u32) {
    event.kind = kind as u8;
    event.ts_ns = ktime_ns();
    event.tid = tid;
    // SAFETY: a helper without preconditions.
    event.cpu = unsafe { bpf_get_smp_processor_id() } as u16;
}

/// Reserves an event in the ring buffer, zeroed and stamped; counts a drop if it is full.
pub(super) fn reserve(kind: RawKind) -> Option<RingBufEntry<RawEvent>> {
    reserve_for(kind, tid())
}

/// [`reserve`] for thread `tid`.
pub(super) fn reserve_for(kind: RawKind, tid: u32) -> Option<RingBufEntry<RawEvent>> {
    let Some(mut entry) = reserve_zeroed::<RawEvent>() else {
        count_drop(DropCause::RingFull);
        return None;
    };
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawEvent`).
    stamp(unsafe { entry.assume_init_mut() }, kind, tid);
    Some(entry)
}

/// Reserves a named event, zeroed and stamped; counts a drop if the ring is full.
pub(super) fn reserve_named(kind: RawKind) -> Option<RingBufEntry<RawNamed>> {
    let Some(mut entry) = reserve_zeroed::<RawNamed>() else {
        count_drop(DropCause::RingFull);
        return None;
    };
    // SAFETY: as in `reserve_for`.
    stamp(&mut unsafe { entry.assume_init_mut() }.event, kind, tid());
    Some(entry)
}

/// Reserves a `T` in the ring and zeroes it a word at a time: the struct assignment of zeros
/// it replaces compiles to a call of a `memset` that stores one byte per loop.
pub(super) fn reserve_zeroed<T>() -> Option<RingBufEntry<T>> {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<T>() <= 8) };
    let mut entry = EVENTS.reserve::<T>(0)?;
    let words = entry.as_mut_ptr().cast::<u64>();
    for word in 0..size_of::<T>() / 8 {
        // SAFETY: within the reserved record, which the ring aligns to 8 bytes; volatile so
        // that the stores are not folded back into a `memset` call.
        unsafe { core::ptr::write_volatile(words.add(word), 0) };
    }
    Some(entry)
}

/// `CLOCK_MONOTONIC`: the clock of the events' timestamps, which a capture's header pairs with
/// the wall clock.
pub(super) fn ktime_ns() -> u64 {
    // SAFETY: a helper without preconditions.
    unsafe { bpf_ktime_get_ns() }
}
