//! The same-fields floor of `cargo xtask bench` (P1): the eBPF object's `floor_*` programs on
//! the clause-22 MDIO accessors (the clock read on entry and on return, one ring record per
//! access, nothing else), their records drained as a session drains its own (the same waits between reads, see
//! [`super::ring_wait`]). The bench runs
//! it through `phytrace/examples/mdio_floor.rs`; phytrace itself never attaches them.

use std::{future::Future, time::Duration};

use anyhow::{Context as _, Result};
use aya::maps::RingBuf;
use phytrace_common::KernelOffsets;
use tokio::io::{Interest, unix::AsyncFd};

use super::{
    loader::{DEFAULT_RING_SIZE, LoadOptions, load},
    mdio_probes::attach_pair,
    ring_wait::{self, MAX_BATCH, Read},
};
use crate::kernel::btf::KernelBtf;

/// The accessors the floor probes, with the stems of its programs.
const FLOORED: [(&str, &str); 2] = [
    ("__mdiobus_read", "floor_read"),
    ("__mdiobus_write", "floor_write"),
];

/// Longest wait after a read that found nothing.
const IDLE_WAIT: Duration = Duration::from_millis(200);

/// Attaches the floor, calls `attached`, then drains the ring until `stop` completes; returns
/// the records drained.
pub async fn run(attached: impl FnOnce(), stop: impl Future<Output = ()>) -> Result<u64> {
    let btf = KernelBtf::running()?;
    let mut ebpf = load(&LoadOptions::new(
        DEFAULT_RING_SIZE,
        KernelOffsets::default(),
    ))?;
    let mut links = Vec::new();
    for (function, stem) in FLOORED {
        attach_pair(&mut ebpf, &btf, function, stem, &mut links)?;
    }
    let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
    // SAFETY: the ring buffer owns its map fd, which stays open and unchanged for as long as
    // the `AsyncFd` owns the ring buffer.
    let mut ring = unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }
        .context("watching the ring buffer")?;
    attached();
    let mut records = 0;
    let mut last = Read::Nothing;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(records),
            waited = ring_wait::wait(&mut ring, last, IDLE_WAIT) => {
                waited.context("waiting on the ring buffer")?;
                let ring = ring.get_mut();
                let mut read = 0;
                while read < MAX_BATCH && ring.next().is_some() {
                    read += 1;
                }
                records += read as u64;
                last = Read::after(read, MAX_BATCH);
            }
        }
    }
}
