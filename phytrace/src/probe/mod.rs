//! Loading phytrace's eBPF programs and attaching them: the loader, the programs' kfunc calls,
//! the probes on the MDIO accessors, on driver callbacks (by symbol, through tracefs) and on
//! the call sites the kernel room found (phylib's, phylink's, the inlined MDIO copies'), the
//! programs' site table, and the self-test of the whole pipeline.

pub(crate) mod attach;
pub(crate) mod bpf_memory;
pub(crate) mod driver_probes;
pub mod floor;
pub(crate) mod kfunc_calls;
pub(crate) mod loader;
pub(crate) mod mac_site_probes;
pub(crate) mod mdio_copy_probes;
pub(crate) mod mdio_probes;
pub(crate) mod phy_site_probes;
pub(crate) mod preload;
pub(crate) mod ring_wait;
pub(crate) mod selftest;
pub(crate) mod site_table;
pub(crate) mod trace_events;
