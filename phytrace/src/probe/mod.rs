//! The kernel side: finding what to probe, loading and attaching the eBPF programs, and
//! turning their records into events.

pub mod attach;
pub mod bpf_memory;
pub mod btf;
pub mod call_site_probes;
pub mod callsites;
pub mod driver_probes;
pub mod driver_tables;
pub mod error;
pub mod kallsyms;
pub mod kfunc_calls;
pub mod kmsg;
pub mod loader;
pub mod mac_sites;
pub mod mdio_inlining;
pub mod mdio_probes;
pub mod module_files;
pub mod modules;
pub mod preload;
pub mod privileges;
pub mod selftest;
pub mod session;
pub mod site_table;
pub mod support;
pub mod symbols;
pub mod trace_events;
pub mod tracer;

/// The OS error code somewhere in `err`'s chain of causes, if any.
pub fn os_error(err: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cause = Some(err);
    while let Some(current) = cause {
        if let Some(code) = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(code);
        }
        cause = current.source();
    }
    None
}
