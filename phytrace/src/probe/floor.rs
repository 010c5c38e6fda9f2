//! The same-fields floor of `cargo xtask bench` (P1): the eBPF object's `floor_*` programs on
//! the clause-22 MDIO accessors (the clock read on entry and on return, one ring record per
//! access, nothing else), their records drained as a session drains its own. The bench runs
//! it through `phytrace/examples/mdio_floor.rs`; phytrace itself never attaches them.

use std::future::Future;

use anyhow::{Context as _, Result};
use aya::maps::RingBuf;
use phytrace_common::KernelOffsets;
use tokio::io::{Interest, unix::AsyncFd};

use super::{
    loader::{DEFAULT_RING_SIZE, LoadOptions, load},
    mdio_probes::attach_pair,
};
use crate::kernel::btf::KernelBtf;

/// The accessors the floor probes, with the stems of its programs.
const FLOORED: [(&str, &str); 2] = [
    ("__mdiobus_read", "floor_read"),
    ("__mdiobus_write", "floor_write"),
];

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
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(records),
            guard = ring.readable_mut() => {
                let mut guard = guard.context("waiting on the ring buffer")?;
                while guard.get_inner_mut().next().is_some() {
                    records += 1;
                }
                guard.clear_ready();
            }
        }
    }
}
