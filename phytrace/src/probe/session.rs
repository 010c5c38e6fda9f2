//! A live tracing session as a capture describes it: the clocks read at its start and the
//! header naming this host, the probes attached and the kernel's `phy_state` names.

use super::tracer::{Tracer, monotonic_ns};
use crate::capture::format::{ArmingEntry, CallSiteEntry, ClockRef, Header, ProbeEntry};

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

/// The capture header of a live session: this host, the probes attached, the kernel's states.
pub fn session_header(tracer: &Tracer, clock: ClockRef) -> Header {
    let probes: Vec<ProbeEntry> = tracer
        .probe_table()
        .into_iter()
        .map(|s| ProbeEntry {
            module: s.module,
            driver_type: s.driver_type,
            callback: s.callback,
            address: s.address,
            symbol: s.demangled,
        })
        .collect();
    let mut header = Header::for_this_host(clock, probes, tracer.phy_states().to_list());
    header.mdio_probes = Some(tracer.mdio_probes());
    header.kmsg = Some(tracer.kmsg_header());
    header.callback_probes = tracer
        .callback_probes()
        .map(|probes| probes.name().to_owned());
    header.call_sites = tracer.call_sites().map_or_else(Vec::new, |sites| {
        sites
            .sites()
            .iter()
            .map(|site| CallSiteEntry {
                call: site.place(),
                op: site.op().to_owned(),
                ret: site.return_place(),
            })
            .collect()
    });
    header.arming = tracer
        .arming()
        .into_iter()
        .map(|a| ArmingEntry {
            module: a.module,
            guarantee: a.guarantee,
            source: a.source,
        })
        .collect();
    header
}
