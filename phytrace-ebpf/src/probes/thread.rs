//! What each thread is in: its open callbacks and its MDIO access, in task-local storage (or,
//! where the kernel has no BTF, in a hash by thread id).

use aya_ebpf::{
    bindings::BPF_NOEXIST,
    helpers::bpf_get_current_pid_tgid,
    macros::map,
    maps::{Array, LruHashMap},
};
use phytrace_common::MAX_CALLBACK_DEPTH;

use super::{callbacks::Frame, kernel::phy_device_type, task_storage::TaskStorage};

/// What one thread is in: its open callbacks (innermost last) and its MDIO access.
#[derive(Clone, Copy)]
pub(super) struct ThreadState {
    pub(super) depth: u32,
    /// Callbacks entered on a full stack, not yet returned.
    pub(super) too_deep: u32,
    pub(super) frames: [Frame; MAX_CALLBACK_DEPTH],
    /// Stack pointers of the first of those (a call site's return is told by it).
    pub(super) deep_sps: [u64; MAX_CALLBACK_DEPTH],
    /// The MDIO access in flight (entry time 0: none).
    pub(super) mdio_ts: u64,
    pub(super) mdio_bus: u64,
    pub(super) mdio_addr: u32,
    pub(super) mdio_regnum: u16,
    pub(super) mdio_value: u16,
    pub(super) mdio_devad: u32,
    /// The MAC op phylink called at a checked call site (0: none) and the stack pointer it
    /// enters at: its by-name probe, finding both, knows the call is reported.
    pub(super) mac_call_target: u64,
    pub(super) mac_call_sp: u64,
    /// The thread's id, read once (0: not yet).
    tid: u32,
    /// Where a typed pointer is stored to be read back as a plain number (see [`Self::plain`]).
    scratch: u64,
}

impl ThreadState {
    /// This thread's id.
    pub(super) fn tid(&mut self) -> u32 {
        if self.tid == 0 {
            self.tid = tid();
        }
        self.tid
    }

    /// `value` as a plain number to the verifier: a trampoline's pointer arguments are typed
    /// pointers, on which it refuses arithmetic such as a hash. Stored to the map value and
    /// read back, a pointer becomes a number (privileged programs may do that), without the
    /// helper call [`untyped`](super::kernel::untyped) costs.
    pub(super) fn plain(&mut self, value: u64) -> u64 {
        // SAFETY: a field of this thread's value; volatile so that the round trip stays.
        unsafe {
            core::ptr::write_volatile(&raw mut self.scratch, value);
            core::ptr::read_volatile(&raw const self.scratch)
        }
    }
}

/// Per-thread state: task-local storage, one lookup without hashing per access, freed when the
/// thread exits (no thread id reuse to guard against, no capacity to fill).
#[unsafe(link_section = ".maps")]
#[unsafe(export_name = "THREADS")]
static THREADS: TaskStorage<ThreadState> = TaskStorage::new();

/// Per-thread state where the kernel has no BTF, whose task-local storage the verifier cannot
/// check: a hash by thread id, sized by the loader, the least recently used thread evicted.
/// An entry outlives its thread until evicted; a thread that reuses its id finds that
/// thread's state, whose frames its own returns do not match (they are told by stack pointer).
#[map]
static THREADS_BY_TID: LruHashMap<u32, ThreadState> = LruHashMap::with_max_entries(1, 0);

/// The zeroed state a thread's entry in [`THREADS_BY_TID`] starts from (never written).
#[map]
static ZERO_THREAD: Array<ThreadState> = Array::with_max_entries(1, 0);

/// This thread's state (created zeroed on first use).
pub(super) fn thread_state() -> Option<&'static mut ThreadState> {
    let state = match phy_device_type() {
        Some(_) => THREADS.current()?,
        None => by_tid()?,
    };
    // SAFETY: the value is this thread's, which only this thread touches (programs of one
    // thread do not run concurrently with each other), and lives as long as the thread (task
    // storage) or until evicted (the hash, whose entries are preallocated: an evicted one is
    // reused, never freed).
    Some(unsafe { &mut *state })
}

/// This thread's entry in [`THREADS_BY_TID`], made from [`ZERO_THREAD`] on first use.
fn by_tid() -> Option<*mut ThreadState> {
    let tid = tid();
    if let Some(state) = THREADS_BY_TID.get_ptr_mut(tid) {
        return Some(state);
    }
    let zero = ZERO_THREAD.get(0)?;
    THREADS_BY_TID.insert(tid, zero, BPF_NOEXIST.into()).ok()?;
    THREADS_BY_TID.get_ptr_mut(tid)
}

/// `index` masked into the frame array. The verifier needs a bound on the very register used
/// for the access; `black_box` keeps LLVM from dropping the mask as redundant with the caller's
/// range check and folding `depth - 1` into the address. MAX_CALLBACK_DEPTH is a power of two.
pub(super) fn frame_index(index: usize) -> usize {
    core::hint::black_box(index) & (MAX_CALLBACK_DEPTH - 1)
}

/// The current thread's id.
pub(super) fn tid() -> u32 {
    bpf_get_current_pid_tgid() as u32
}
