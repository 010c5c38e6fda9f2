//! The clock records are stamped with (`CLOCK_MONOTONIC`), and its place on the wall clock.

use serde::{Deserialize, Serialize};

/// A `CLOCK_MONOTONIC` time and the wall-clock time taken at the same moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockRef {
    /// `CLOCK_MONOTONIC`, nanoseconds (the clock of [`Event::ts_ns`](crate::event::Event::ts_ns)); `boot_ns` before
    /// version 3, which held the same clock under a wrong name.
    #[serde(alias = "boot_ns")]
    pub mono_ns: u64,
    /// `CLOCK_REALTIME`, nanoseconds since the Unix epoch.
    pub unix_ns: u64,
}

/// `CLOCK_MONOTONIC` now, the clock the eBPF programs stamp events with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The monotonic clock and the wall clock, read back to back.
pub fn clock_now() -> ClockRef {
    let unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    ClockRef {
        mono_ns: monotonic_ns(),
        unix_ns,
    }
}
