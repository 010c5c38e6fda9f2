//! Loading phytrace's eBPF object into the kernel.

use aya::{Ebpf, EbpfLoader};
use phytrace_common::KernelOffsets;

use crate::exit::{Failure, FailureKind};

/// The eBPF object built by `build.rs` from phytrace-ebpf.
static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/phytrace"));

/// Default size of the event ring buffer in bytes (must be a power of two, ≥ one page).
pub const DEFAULT_RING_SIZE: u32 = 4 << 20;

/// What the programs need to know before they are loaded.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Size of the event ring buffer in bytes.
    pub ring_size: u32,
    /// Struct offsets from BTF.
    pub offsets: KernelOffsets,
    /// Process the self-test probe reports on (0: none).
    pub selftest_tgid: u32,
}

/// Loads the eBPF object with `options`; errors say what is missing and how to fix it.
pub fn load(options: &LoadOptions) -> anyhow::Result<Ebpf> {
    if EBPF_OBJECT.is_empty() {
        return Err(Failure::new(
            FailureKind::TracingUnavailable,
            "this phytrace was built with AYA_BUILD_SKIP=1 and has no eBPF programs: rebuild without it",
        )
        .into());
    }
    if !options.ring_size.is_power_of_two() || options.ring_size < 4096 {
        return Err(Failure::new(
            FailureKind::BadInput,
            format!(
                "ring size {} is not a power of two of at least 4096 bytes",
                options.ring_size
            ),
        )
        .into());
    }
    EbpfLoader::new()
        .override_global("OFFSETS", &options.offsets, true)
        .override_global("SELFTEST_TGID", &options.selftest_tgid, true)
        .map_max_entries("EVENTS", options.ring_size)
        .load(EBPF_OBJECT)
        .map_err(|err| explain_refusal("loading the eBPF programs", &err).into())
}

/// A refusal by the kernel (`what` failed with `err`), with the fix when it is a matter of
/// privileges.
pub fn explain_refusal(what: &str, err: &(dyn std::error::Error + 'static)) -> Failure {
    let text = format!("{err}");
    let permission = matches!(super::os_error(err), Some(libc::EPERM | libc::EACCES))
        || text.contains("Operation not permitted")
        || text.contains("Permission denied");
    let message = if permission {
        format!(
            "{what} was refused ({text}): run as root, or give phytrace CAP_BPF and CAP_PERFMON \
             (`setcap cap_bpf,cap_perfmon+ep $(command -v phytrace)`)"
        )
    } else {
        format!("{what} failed: {text} (run `phytrace doctor`)")
    };
    Failure::new(FailureKind::TracingUnavailable, message)
}
