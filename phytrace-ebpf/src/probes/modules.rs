//! Module life-cycle: raw tracepoints report each module that goes live or away, by name.

use aya_ebpf::{
    helpers::bpf_probe_read_kernel_str_bytes, macros::raw_tracepoint,
    programs::RawTracePointContext,
};
use phytrace_common::RawKind;

use super::{kernel::offsets, ring::reserve_named};

/// Reports a module going live or away, with its name, stamped in the kernel's order of
/// things: `module_load` fires after the kernel armed the module's pending probes and before
/// its init runs; `module_free` after its exit ran.
fn module_event(ctx: &RawTracePointContext, kind: RawKind) -> u32 {
    // Both tracepoints pass `struct module *` as their only argument.
    let module: u64 = ctx.arg(0);
    if module == 0 {
        return 0;
    }
    let off = offsets();
    if let Some(mut entry) = reserve_named(kind) {
        // SAFETY: `reserve_named` initialised the entry.
        let record = unsafe { entry.assume_init_mut() };
        // SAFETY: `module.name` is a NUL-terminated array inside the struct; the helper bounds
        // the copy and fails cleanly on a bad pointer.
        let _ = unsafe {
            bpf_probe_read_kernel_str_bytes(
                (module + off.module_name as u64) as *const u8,
                &mut record.name,
            )
        };
        entry.submit(0);
    }
    0
}

#[raw_tracepoint(tracepoint = "module_load")]
pub fn module_load(ctx: RawTracePointContext) -> u32 {
    module_event(&ctx, RawKind::ModuleLoad)
}

#[raw_tracepoint(tracepoint = "module_free")]
pub fn module_free(ctx: RawTracePointContext) -> u32 {
    module_event(&ctx, RawKind::ModuleFree)
}
