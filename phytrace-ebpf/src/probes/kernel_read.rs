//! The kernel reader: `kernel_read`, a kprobe on a system call phytrace makes itself
//! (`getppid`), copies the range of kernel memory one of phytrace's threads asked for in
//! `KERNEL_READ_REQUEST` into `KERNEL_READ_ANSWER`, which phytrace maps into its memory, when
//! that thread's call carries the request's token. It reads the kernel's code with `CAP_BPF`
//! and `CAP_PERFMON` where `/proc/kcore` needs `CAP_SYS_RAWIO`.

use aya_ebpf::{
    bindings::{BPF_F_MMAPABLE, pt_regs},
    helpers::generated::bpf_probe_read_kernel,
    macros::{kprobe, map},
    maps::Array,
    programs::ProbeContext,
};
use phytrace_common::{KERNEL_READ_CHUNK, KernelReadAnswer, KernelReadRequest};

use super::kernel::read_at;

/// `EINVAL`: the answer to a request longer than the answer holds.
const EINVAL: i64 = 22;

/// The request, written by phytrace before each system call.
#[map]
static KERNEL_READ_REQUEST: Array<KernelReadRequest> = Array::with_max_entries(1, 0);

/// The answer, read by phytrace through its mapping of the map.
#[map]
static KERNEL_READ_ANSWER: Array<KernelReadAnswer> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// Where the system call's first argument is in the caller's registers (`rdi`; arm64: `x0`).
#[cfg(bpf_target_arch = "x86_64")]
const FIRST_ARGUMENT: u32 = core::mem::offset_of!(pt_regs, rdi) as u32;
#[cfg(not(bpf_target_arch = "x86_64"))]
const FIRST_ARGUMENT: u32 = core::mem::offset_of!(pt_regs, regs) as u32;

/// Whether this `getppid` call is the one `request` is for: its first argument, which the
/// system call ignores, is the request's token. The probed entry, `__x64_sys_getppid` or
/// `__arm64_sys_getppid`, is given the caller's registers.
fn is_requested(ctx: &ProbeContext, request: &KernelReadRequest) -> bool {
    let Some(caller) = ctx.arg::<u64>(0) else {
        return false;
    };
    // 0 where the read faults: no token.
    request.token != 0 && read_at::<u64>(caller, FIRST_ARGUMENT) == request.token
}

#[kprobe]
pub fn kernel_read(ctx: ProbeContext) -> u32 {
    let Some(request) = KERNEL_READ_REQUEST.get(0) else {
        return 0;
    };
    if !is_requested(&ctx, request) {
        return 0;
    }
    let Some(answer) = KERNEL_READ_ANSWER.get_ptr_mut(0) else {
        return 0;
    };
    // The verifier bounds the very register the helper takes: `black_box` keeps LLVM from
    // comparing a copy of it.
    let len = core::hint::black_box(request.len);
    let error = if len as usize > KERNEL_READ_CHUNK {
        -EINVAL
    } else {
        // SAFETY: the helper writes `len` bytes, at most the answer's `bytes`, from kernel
        // memory it checks (zeroes and an error on a fault); the answer is written only by
        // this program, for the call that asked, whose thread waits in it meanwhile.
        unsafe {
            bpf_probe_read_kernel(
                (&raw mut (*answer).bytes).cast(),
                len,
                request.address as *const core::ffi::c_void,
            )
        }
    };
    // SAFETY: as above; `seq` last, once the bytes and the error are in place.
    unsafe {
        (*answer).error = error;
        (*answer).seq = request.seq;
    }
    0
}
