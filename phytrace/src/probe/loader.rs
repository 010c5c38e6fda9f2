//! Loading phytrace's eBPF object into the kernel.

use aya::{Ebpf, EbpfLoader};
use phytrace_common::{KernelOffsets, MAX_CALLBACK_DEPTH};

use super::kfunc_calls;
use crate::kernel::{
    btf::KernelTypes,
    error::{Cause, ProbeError, Stage},
};

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
    /// BTF ids (zeros: the kernel has no BTF of its own; the programs read with helpers).
    pub types: KernelTypes,
    /// Process the self-test probe reports on (0: none).
    pub selftest_tgid: u32,
    /// Callbacks kept open per thread, 1..=`MAX_CALLBACK_DEPTH` (deeper ones are counted).
    pub callback_depth: u32,
}

impl LoadOptions {
    /// Options with the defaults for what is not given.
    pub fn new(ring_size: u32, offsets: KernelOffsets) -> Self {
        Self {
            ring_size,
            offsets,
            types: KernelTypes::default(),
            selftest_tgid: 0,
            callback_depth: MAX_CALLBACK_DEPTH as u32,
        }
    }
}

/// Threads whose state the programs keep at once where the kernel has no BTF (a hash by
/// thread id, the least recently used evicted), far more than phylib's workers and the MDIO
/// users of any board.
const THREADS_WITHOUT_BTF: u32 = 8192;

/// Bytes the eBPF programs read at once from a `phy_device`: all they read of it (`VIEW` in
/// phytrace-ebpf).
const WINDOW: u32 = 320;

/// Whether `fields` (offset, size) of one struct fit a one-read `window` (from the lowest,
/// rounded down to 8, to the end of the highest, each naturally aligned).
fn fits_window(fields: &[(u32, u32)], window: u32) -> bool {
    let start = fields.iter().map(|(at, _)| at).min().copied().unwrap_or(0) & !7;
    fields
        .iter()
        .all(|(at, size)| at + size - start <= window && (at - start) % size == 0)
}

/// Loads the eBPF object with `options`; errors say what is missing and how to fix it.
pub fn load(options: &LoadOptions) -> anyhow::Result<Ebpf> {
    if EBPF_OBJECT.is_empty() {
        return Err(ProbeError::unavailable("this phytrace was built with AYA_BUILD_SKIP=1 and has no eBPF programs: rebuild without it",
        )
        .into());
    }
    if !options.ring_size.is_power_of_two() || options.ring_size < 4096 {
        return Err(ProbeError::bad_option(format!(
            "ring size {} is not a power of two of at least 4096 bytes",
            options.ring_size
        ))
        .into());
    }
    if !(1..=MAX_CALLBACK_DEPTH as u32).contains(&options.callback_depth) {
        return Err(ProbeError::bad_option(format!(
            "callback depth {} is not between 1 and {MAX_CALLBACK_DEPTH}",
            options.callback_depth
        ))
        .into());
    }
    let o = &options.offsets;
    let read = [
        (o.phy_bus, 8),
        (o.phy_drv, 8),
        (o.phy_id, 4),
        (o.phy_addr, 4),
        (o.mdio_flags, 4),
        (o.phy_state, 4),
        (o.phy_speed, 4),
        (o.phy_duplex, 4),
        (o.phy_link_byte, 1),
    ];
    if options.offsets != KernelOffsets::default() && !fits_window(&read, WINDOW) {
        return Err(ProbeError::unavailable(format!(
            "this kernel's struct phy_device has its fields further apart than phytrace \
                 reads at once ({WINDOW} bytes): {o:?}"
        ))
        .into());
    }
    let kernel_btf = options.types != KernelTypes::default();
    let (object, _) =
        kfunc_calls::complete(EBPF_OBJECT, kernel_btf.then_some(options.types.rdonly_cast))?;
    EbpfLoader::new()
        .override_global("OFFSETS", &options.offsets, true)
        .override_global("PHY_DEVICE_TYPE", &options.types.phy_device, true)
        .override_global("SELFTEST_TGID", &options.selftest_tgid, true)
        .override_global("CALLBACK_DEPTH", &options.callback_depth, true)
        .map_max_entries("EVENTS", options.ring_size)
        // Thread state by thread id, where task-local storage is not there for want of BTF.
        .map_max_entries(
            "THREADS_BY_TID",
            if kernel_btf { 1 } else { THREADS_WITHOUT_BTF },
        )
        // The per-thread state is task-local storage, a map type aya 0.14 creates but does
        // not wrap (the programs alone use it).
        .allow_unsupported_maps()
        .load(object.bytes())
        .map_err(|err| explain_refusal("loading the eBPF programs", Stage::Load, &err).into())
}

/// A refusal by the kernel (`what`, at `stage`, failed with `err`), with the fix its cause
/// calls for.
pub fn explain_refusal(
    what: &str,
    stage: Stage,
    err: &(dyn std::error::Error + 'static),
) -> ProbeError {
    let text = format!("{err}");
    // aya words some refusals without keeping the error number.
    let worded_as_permission =
        text.contains("Operation not permitted") || text.contains("Permission denied");
    let cause = Cause::of(stage, crate::kernel::error::os_error(err))
        .or(worded_as_permission.then_some(Cause::NotPermitted));
    let message = match cause {
        Some(cause) => format!("{what} was refused ({text}): {}", cause.fix()),
        None => format!("{what} failed: {text} (run `phytrace doctor`)"),
    };
    ProbeError::refused(cause, message)
}
