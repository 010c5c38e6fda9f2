//! The kernel reader: `kernel_read`, a kprobe on a system call phytrace makes itself
//! (`getppid`), copies the range of kernel memory one of phytrace's threads asked for in
//! `KERNEL_READ_REQUEST` into `KERNEL_READ_ANSWER`, which phytrace maps into its memory. It
//! reads the kernel's code with `CAP_BPF` and `CAP_PERFMON` where `/proc/kcore` needs
//! `CAP_SYS_RAWIO`.

use aya_ebpf::{
    bindings::{BPF_F_MMAPABLE, bpf_pidns_info},
    helpers::{
        bpf_get_current_pid_tgid,
        generated::{bpf_get_ns_current_pid_tgid, bpf_probe_read_kernel},
    },
    macros::{kprobe, map},
    maps::Array,
    programs::ProbeContext,
};
use phytrace_common::{KERNEL_READ_CHUNK, KernelReadAnswer, KernelReadRequest};

/// `EINVAL`: the answer to a request longer than the answer holds.
const EINVAL: i64 = 22;

/// The request, written by phytrace before each system call.
#[map]
static KERNEL_READ_REQUEST: Array<KernelReadRequest> = Array::with_max_entries(1, 0);

/// The answer, read by phytrace through its mapping of the map.
#[map]
static KERNEL_READ_ANSWER: Array<KernelReadAnswer> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// Whether the running thread is the one that made `request`: its id in the request's PID
/// namespace (the helper fails for a thread of another namespace), or in the only one where
/// the kernel has none (no namespace named: inode 0).
fn is_requester(request: &KernelReadRequest) -> bool {
    if request.pidns_ino == 0 {
        return request.tid != 0 && bpf_get_current_pid_tgid() as u32 == request.tid;
    }
    let mut ids = bpf_pidns_info { pid: 0, tgid: 0 };
    // SAFETY: the helper writes exactly `ids`' size into it.
    let found = unsafe {
        bpf_get_ns_current_pid_tgid(
            request.pidns_dev,
            request.pidns_ino,
            &raw mut ids,
            size_of::<bpf_pidns_info>() as u32,
        )
    };
    found == 0 && request.tid != 0 && ids.pid == request.tid
}

#[kprobe]
pub fn kernel_read(_ctx: ProbeContext) -> u32 {
    let Some(request) = KERNEL_READ_REQUEST.get(0) else {
        return 0;
    };
    if !is_requester(request) {
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
        // this program, for the thread that asked, which waits in the system call meanwhile.
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
