//! The pipeline self-test of `phytrace doctor`: a kprobe and a kretprobe on a kernel function
//! the doctor's own process calls, reported through the ring buffer and aya-log.

use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_get_current_pid_tgid, generated::bpf_get_func_ip},
    macros::{kprobe, kretprobe, map},
    maps::LruHashMap,
    programs::{ProbeContext, RetProbeContext},
};
use aya_log_ebpf::info;
use phytrace_common::RawKind;

use super::{
    ring::{ktime_ns, reserve},
    thread::tid,
};

/// Process whose calls the self-test probe reports (set by `phytrace doctor`).
#[unsafe(no_mangle)]
static SELFTEST_TGID: u32 = 0;

/// When each thread entered the probed function.
#[map]
static SELFTEST_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(64, 0);

/// Whether the running process is the one under test.
fn is_selftest_process() -> bool {
    // SAFETY: a plain global set by the loader; see `kernel::offsets`.
    let wanted = unsafe { core::ptr::read_volatile(&SELFTEST_TGID) };
    wanted != 0 && (bpf_get_current_pid_tgid() >> 32) as u32 == wanted
}

#[kprobe]
pub fn selftest_enter(ctx: ProbeContext) -> u32 {
    if !is_selftest_process() {
        return 0;
    }
    let _ = SELFTEST_START.insert(tid(), ktime_ns(), 0);
    info!(&ctx, "self-test kprobe fired in tgid {}", ctx.tgid());
    if let Some(mut entry) = reserve(RawKind::SelfTestEnter) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        // SAFETY: kprobe programs may call `bpf_get_func_ip` (Linux ≥ 5.15) with their context.
        event.key = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
        entry.submit(0);
    }
    0
}

#[kretprobe]
pub fn selftest_exit(ctx: RetProbeContext) -> u32 {
    if !is_selftest_process() {
        return 0;
    }
    let tid = tid();
    // SAFETY: the value is copied out before the entry is removed.
    let start = unsafe { SELFTEST_START.get(tid) }.copied().unwrap_or(0);
    let _ = SELFTEST_START.remove(tid);
    if let Some(mut entry) = reserve(RawKind::SelfTestExit) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.ret = ctx.ret::<i32>();
        event.latency_ns = event.ts_ns.saturating_sub(start);
        entry.submit(0);
    }
    0
}
