//! The probe programs and their maps.
//!
//! Helpers are `#[inline(always)]` where LLVM would keep them out of line: a call to a static
//! subprogram saves no verification (the verifier walks it again at each call) and costs the
//! load a JIT pass and a copy into executable memory. The two slow paths that are calls,
//! [`mdio_device_lookup`] and [`send_phy_identity`], are global functions: the verifier checks
//! a global function once per program on its own, not once per path of the caller reaching it.

use aya_ebpf::{
    EbpfContext,
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns,
        bpf_probe_read_kernel, bpf_probe_read_kernel_buf, bpf_probe_read_kernel_str_bytes,
        generated::{bpf_get_attach_cookie, bpf_get_func_ip},
    },
    macros::{fentry, fexit, kprobe, kretprobe, map, raw_tracepoint},
    maps::{Array, LruHashMap, PerCpuArray, RingBuf},
    programs::{FEntryContext, FExitContext, ProbeContext, RawTracePointContext, RetProbeContext},
};
use aya_log_ebpf::info;
use phytrace_common::{
    CallSite, DROP_COUNTERS, DropCause, KernelOffsets, MAC_RX_PAUSE, MAC_TX_PAUSE, MAX_CALL_SITES,
    MAX_CALLBACK_DEPTH, MAX_MAC_SITES, RawEvent, RawIdentity, RawKind, RawNamed,
    SITE_CHECK_BOUND_DRIVER, SITE_CHECK_HOLDER, SITE_DISABLED, SITE_TAIL_CALL,
    SITE_TARGET_IN_MEMORY, call_site_key,
};

/// Struct offsets, overridden by the loader from vmlinux BTF.
#[unsafe(no_mangle)]
static OFFSETS: KernelOffsets = KernelOffsets {
    phy_bus: 0,
    phy_addr: 0,
    phy_id: 0,
    phy_drv: 0,
    phy_state: 0,
    phy_speed: 0,
    phy_duplex: 0,
    phy_link_byte: 0,
    phy_link_bit: 0,
    drv_name: 0,
    bus_id: 0,
    bus_mdio_map: 0,
    mdio_flags: 0,
    module_name: 0,
    netdev_name: 0,
    netdev_phydev: 0,
};

/// Callbacks kept open per thread (1..=MAX_CALLBACK_DEPTH), set by the loader.
#[unsafe(no_mangle)]
static CALLBACK_DEPTH: u32 = MAX_CALLBACK_DEPTH as u32;

/// Process whose calls the self-test probe reports (set by `phytrace doctor`).
#[unsafe(no_mangle)]
static SELFTEST_TGID: u32 = 0;

/// `MDIO_DEVICE_FLAG_PHY` from `include/linux/mdio.h`.
const MDIO_DEVICE_FLAG_PHY: u32 = 1;

/// The event stream. Its size is set by the loader (`--ring-size`).
#[map]
static EVENTS: RingBuf = RingBuf::with_byte_size(1 << 20, 0);

/// Records lost, per CPU, by cause (see `phytrace_common::DropCause`).
#[map]
static DROPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(DROP_COUNTERS, 0);

/// A callback that has been entered and not yet returned.
#[derive(Clone, Copy)]
struct Frame {
    /// The callback's probe key.
    key: u64,
    phydev: u64,
    ts_ns: u64,
    /// Stack pointer at entry: a frame at or below a later entry's is not its caller, and a
    /// return matches the frame entered at its own stack pointer.
    sp: u64,
    state_before: u32,
    _pad: u32,
}

/// What one thread is in: its open callbacks (innermost last) and its MDIO access.
#[derive(Clone, Copy)]
struct ThreadState {
    depth: u32,
    /// Callbacks entered on a full stack, not yet returned.
    too_deep: u32,
    frames: [Frame; MAX_CALLBACK_DEPTH],
    /// Stack pointers of the first of those (a call site's return is told by it).
    deep_sps: [u64; MAX_CALLBACK_DEPTH],
    /// The MDIO access in flight (entry time 0: none).
    mdio_ts: u64,
    mdio_bus: u64,
    mdio_addr: u32,
    mdio_regnum: u16,
    mdio_value: u16,
    mdio_devad: u32,
    /// The thread's id, read once (0: not yet).
    tid: u32,
    /// Where a typed pointer is stored to be read back as a plain number (see [`Self::plain`]).
    scratch: u64,
}

impl ThreadState {
    /// This thread's id.
    fn tid(&mut self) -> u32 {
        if self.tid == 0 {
            self.tid = tid();
        }
        self.tid
    }

    /// `value` as a plain number to the verifier: a trampoline's pointer arguments are typed
    /// pointers, on which it refuses arithmetic such as a hash. Stored to the map value and
    /// read back, a pointer becomes a number (privileged programs may do that), without the
    /// helper call [`untyped`] costs.
    fn plain(&mut self, value: u64) -> u64 {
        // SAFETY: a field of this thread's value; volatile so that the round trip stays.
        unsafe {
            core::ptr::write_volatile(&raw mut self.scratch, value);
            core::ptr::read_volatile(&raw const self.scratch)
        }
    }
}

/// A BPF task-local storage map (`BPF_MAP_TYPE_TASK_STORAGE`), described in BTF as the kernel
/// requires: a value of `T` per task, created on first use, freed with the task. aya-ebpf 0.2
/// has no such map; the layout is the one its `btf_map_def!` produces for the others.
#[repr(C)]
struct TaskStorage<T> {
    r#type: *const [i32; aya_ebpf::bindings::bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE as usize],
    key: *const i32,
    value: *const T,
    max_entries: *const [i32; 0],
    map_flags: *const [i32; aya_ebpf::bindings::BPF_F_NO_PREALLOC as usize],
}

// SAFETY: the fields are placeholders the loader reads from BTF; they are never dereferenced.
unsafe impl<T> Sync for TaskStorage<T> {}

impl<T> TaskStorage<T> {
    const fn new() -> Self {
        Self {
            r#type: core::ptr::null(),
            key: core::ptr::null(),
            value: core::ptr::null(),
            max_entries: core::ptr::null(),
            map_flags: core::ptr::null(),
        }
    }

    /// The current task's value, created (zeroed) if it has none; `None` if the kernel could
    /// not allocate it (or the storage is busy on this CPU, in a nested program).
    fn current(&self) -> Option<*mut T> {
        // SAFETY: `bpf_get_current_task_btf` returns the running task, trusted by the
        // verifier; the helper returns this task's value or null.
        let value = unsafe {
            aya_ebpf::helpers::generated::bpf_task_storage_get(
                core::ptr::from_ref(self).cast_mut().cast(),
                aya_ebpf::helpers::generated::bpf_get_current_task_btf(),
                core::ptr::null_mut(),
                aya_ebpf::bindings::BPF_LOCAL_STORAGE_GET_F_CREATE.into(),
            )
        };
        let value = value.cast::<T>();
        (!value.is_null()).then_some(value)
    }
}

/// Per-thread state: task-local storage, one lookup without hashing per access, freed when the
/// thread exits (no thread id reuse to guard against, no capacity to fill).
#[unsafe(link_section = ".maps")]
#[unsafe(export_name = "THREADS")]
static THREADS: TaskStorage<ThreadState> = TaskStorage::new();

/// A PHY whose identity this CPU has sent, as it was then.
#[derive(Clone, Copy)]
struct SentPhy {
    phydev: u64,
    bus: u64,
    drv: u64,
    epoch: u64,
    phy_id: u32,
    addr: u32,
}

/// A bus whose name this CPU has sent.
#[derive(Clone, Copy)]
struct SentBus {
    bus: u64,
    epoch: u64,
}

/// Slots of the per-CPU caches of identities sent (direct-mapped by address).
const SENT_SLOTS: u32 = 64;

#[map]
static SENT_PHYS: PerCpuArray<SentPhy> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

#[map]
static SENT_BUSES: PerCpuArray<SentBus> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

/// Bumped when a PHY or bus is removed or a PHY's driver changes (see [`device_changed`]).
#[map]
static EPOCH: Array<u64> = Array::with_max_entries(1, 0);

#[map]
static SELFTEST_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(64, 0);

/// The PHY each MAC's `phylink_config` was last told about by `mac_link_up`: `mac_link_down`
/// only gets the config.
#[map]
static MAC_PHY: LruHashMap<u64, u64> = LruHashMap::with_max_entries(256, 0);

/// A `phylink_resolve` running on a thread: when it started, and the PHY of the MAC calls it
/// made so far.
#[derive(Clone, Copy)]
struct PendingResolve {
    ts_ns: u64,
    phydev: u64,
}

#[map]
static PENDING_RESOLVE: LruHashMap<u32, PendingResolve> = LruHashMap::with_max_entries(256, 0);

fn offsets() -> &'static KernelOffsets {
    // SAFETY: `OFFSETS` is a plain global the loader rewrites before load; hiding the pointer
    // from the optimizer keeps it from folding the initial zeros into the code, while each
    // field is still read where it is used (no copy of the whole struct on the stack).
    unsafe { &*core::hint::black_box(&raw const OFFSETS) }
}

/// BTF id of `struct phy_device` in the kernel's BTF, set by the loader.
#[unsafe(no_mangle)]
static PHY_DEVICE_TYPE: u32 = 0;

fn phy_device_type() -> u32 {
    // SAFETY: as in `offsets`.
    unsafe { core::ptr::read_volatile(&PHY_DEVICE_TYPE) }
}

/// `bpf_rdonly_cast(address, type)`: `address` as a pointer to the kernel struct of BTF id
/// `type` (a constant), through which loads compile to checked direct loads instead of helper
/// calls. The call is a kfunc call the loader completes with the kfunc's BTF id
/// (`phytrace_common::KFUNC_CALL_PLACEHOLDER`); the verifier then replaces it by a move.
fn kernel_struct(address: u64, r#type: u32) -> *const u8 {
    let cast: u64;
    // SAFETY: the instruction is a call with the BPF calling convention: arguments in r1 and
    // r2, the result in r0, r1–r5 clobbered; it touches no memory of this program.
    unsafe {
        core::arch::asm!(
            ".quad {call}",
            call = const phytrace_common::KFUNC_CALL_PLACEHOLDER,
            inout("r1") address => _,
            inout("r2") r#type as u64 => _,
            lateout("r0") cast,
            lateout("r3") _,
            lateout("r4") _,
            lateout("r5") _,
            options(nostack, pure, nomem),
        )
    };
    cast as *const u8
}

fn callback_depth() -> usize {
    // SAFETY: as in `offsets`.
    let depth = unsafe { core::ptr::read_volatile(&CALLBACK_DEPTH) } as usize;
    if depth == 0 || depth > MAX_CALLBACK_DEPTH {
        MAX_CALLBACK_DEPTH
    } else {
        depth
    }
}

/// `index` masked into the frame array. The verifier needs a bound on the very register used
/// for the access; `black_box` keeps LLVM from dropping the mask as redundant with the caller's
/// range check and folding `depth - 1` into the address. MAX_CALLBACK_DEPTH is a power of two.
fn frame_index(index: usize) -> usize {
    core::hint::black_box(index) & (MAX_CALLBACK_DEPTH - 1)
}

fn tid() -> u32 {
    bpf_get_current_pid_tgid() as u32
}

fn count_drop(cause: DropCause) {
    if let Some(counter) = DROPS.get_ptr_mut(cause as u32) {
        // SAFETY: the pointer comes from the per-CPU array of this CPU; nothing else writes it
        // while this program runs on this CPU.
        unsafe { *counter += 1 };
    }
}

/// Reads a `T` at `base + offset` in kernel memory, or zero if the read faults.
fn read_at<T: Copy + Default>(base: u64, offset: u32) -> T {
    // SAFETY: `bpf_probe_read_kernel` checks the address and fails cleanly on a bad pointer.
    unsafe { bpf_probe_read_kernel((base + offset as u64) as *const T) }.unwrap_or_default()
}

/// Bytes of a `phy_device` read with one helper call: from its lowest field phytrace reads
/// (rounded down to 8) on; the loader checks that the highest one ends within.
const VIEW: usize = 320;

/// Slots of [`VIEWS`]: one per kind of program, since a MAC-side probe may interrupt an MDIO
/// one on the same CPU.
const VIEW_MDIO: u32 = 0;
const VIEW_CALLBACK: u32 = 1;
const VIEW_MAC: u32 = 2;

/// Per-CPU buffers a [`PhyView`] is read into (too big for the 512-byte BPF stack).
#[map]
static VIEWS: PerCpuArray<[u64; VIEW / 8]> = PerCpuArray::with_max_entries(3, 0);

/// The field at `field` of a struct read from `start` on into the `len` bytes at `base`: a
/// naturally aligned field of `size` bytes inside the buffer (clamped, for the verifier).
fn field_at(base: *const u8, len: usize, start: u32, field: u32, size: usize) -> *const u8 {
    let at = field.wrapping_sub(start) as usize;
    let at = if at > len - size { len - size } else { at };
    // SAFETY: `at + size` is within the buffer.
    unsafe { base.add(at) }
}

/// The lowest of `fields`, rounded down to 8: where a read of them starts.
fn window_start(fields: &[u32]) -> u32 {
    let mut start = u32::MAX;
    for &field in fields {
        start = start.min(field);
    }
    start & !7
}

/// What changes of a PHY from one event to the next: its state and its link.
#[derive(Clone, Copy)]
struct PhyStatus {
    state: u32,
    speed: i32,
    duplex: u32,
    link: u8,
}

impl PhyStatus {
    const ZERO: Self = Self {
        state: 0,
        speed: 0,
        duplex: 0,
        link: 0,
    };

    fn fields(off: &KernelOffsets) -> [u32; 4] {
        [
            off.phy_state,
            off.phy_speed,
            off.phy_duplex,
            off.phy_link_byte,
        ]
    }

    /// Reads `phydev`'s status with direct loads (zeroes where they fault).
    fn read(phydev: u64, off: &KernelOffsets) -> Self {
        let device = kernel_struct(phydev, phy_device_type());
        // SAFETY: `kernel_struct` makes the loads ones the kernel checks: each is at a member
        // of `struct phy_device` of its size (the verifier checks that against BTF), and one
        // that faults reads zero.
        unsafe {
            let at = |field: u32| device.add(field as usize);
            Self {
                state: core::ptr::read_volatile(at(off.phy_state).cast::<u32>()),
                speed: core::ptr::read_volatile(at(off.phy_speed).cast::<i32>()),
                duplex: core::ptr::read_volatile(at(off.phy_duplex).cast::<u32>()),
                link: (core::ptr::read_volatile(at(off.phy_link_byte)) >> (off.phy_link_bit & 7))
                    & 1,
            }
        }
    }

    /// The status out of `len` bytes at `base`, read from `start` on.
    fn pick(base: *const u8, len: usize, start: u32, off: &KernelOffsets) -> Self {
        let at = |field, size| field_at(base, len, start, field, size);
        // SAFETY: each read is within the buffer, at an offset aligned for its type (the
        // buffer is 8-aligned, `start` a multiple of 8, the fields naturally aligned).
        unsafe {
            Self {
                state: *at(off.phy_state, 4).cast::<u32>(),
                speed: *at(off.phy_speed, 4).cast::<i32>(),
                duplex: *at(off.phy_duplex, 4).cast::<u32>(),
                link: (*at(off.phy_link_byte, 1) >> (off.phy_link_bit & 7)) & 1,
            }
        }
    }

    /// Fills the state (as `state_after`) and the link into `event`.
    fn fill(&self, event: &mut RawEvent) {
        event.state_after = self.state as u8;
        event.speed = self.speed;
        event.duplex = self.duplex as u8;
        event.link = self.link;
    }
}

/// What phytrace reads of a `phy_device`: its identity and its status.
struct PhyView {
    bus: u64,
    drv: u64,
    phy_id: u32,
    addr: u32,
    flags: u32,
    status: PhyStatus,
}

impl PhyView {
    /// Reads `phydev` into the buffer `slot` of this CPU and picks the fields out.
    #[inline(always)]
    fn read(phydev: u64, off: &KernelOffsets, slot: u32) -> Option<Self> {
        let status = PhyStatus::fields(off);
        let start = window_start(&[
            off.phy_bus,
            off.phy_addr,
            off.mdio_flags,
            off.phy_drv,
            off.phy_id,
            status[0],
            status[1],
            status[2],
            status[3],
        ]);
        let buffer = VIEWS.get_ptr_mut(slot)?;
        // SAFETY: the helper writes at most the buffer's size from kernel memory it checks
        // (zeroes on a faulting read).
        unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_kernel(
                buffer.cast(),
                VIEW as u32,
                (phydev + start as u64) as *const core::ffi::c_void,
            )
        };
        let base = buffer.cast::<u8>();
        let at = |field, size| field_at(base, VIEW, start, field, size);
        // SAFETY: as in `PhyStatus::pick`.
        unsafe {
            Some(Self {
                bus: *at(off.phy_bus, 8).cast::<u64>(),
                drv: *at(off.phy_drv, 8).cast::<u64>(),
                phy_id: *at(off.phy_id, 4).cast::<u32>(),
                addr: *at(off.phy_addr, 4).cast::<u32>(),
                flags: *at(off.mdio_flags, 4).cast::<u32>(),
                status: PhyStatus::pick(base, VIEW, start, off),
            })
        }
    }

    fn fill(&self, event: &mut RawEvent) {
        self.status.fill(event);
    }
}

fn epoch() -> u64 {
    EPOCH.get(0).copied().unwrap_or(0)
}

fn sent_slot(address: u64) -> u32 {
    ((address >> 11) ^ (address >> 17)) as u32 & (SENT_SLOTS - 1)
}

/// Sends `phydev`'s identity unless this CPU already sent it as it is now; false if there was
/// no room for it.
#[inline(always)]
fn name_phy(phydev: u64, identity: &PhyView) -> bool {
    send_phy_identity(
        phydev,
        identity.bus,
        identity.drv,
        identity.phy_id as u64,
        identity.addr as u64,
    ) != 0
}

/// [`name_phy`] as a global function (plain numbers in and out): the verifier checks it once
/// per program, not once for each path of the caller that reaches it. 1: sent or already sent.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn send_phy_identity(
    phydev: u64,
    bus: u64,
    drv: u64,
    phy_id: u64,
    addr: u64,
) -> u64 {
    let (phy_id, addr) = (phy_id as u32, addr as u32);
    let epoch = epoch();
    let Some(slot) = SENT_PHYS.get_ptr_mut(sent_slot(phydev)) else {
        return 0;
    };
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let sent = unsafe { &mut *slot };
    if sent.phydev == phydev
        && sent.bus == bus
        && sent.drv == drv
        && sent.phy_id == phy_id
        && sent.addr == addr
        && sent.epoch == epoch
    {
        return 1;
    }
    // A full ring: the event that needs the name will not fit either and counts the loss
    // (an identity is not an event); not marked sent, it is tried again.
    let Some(mut entry) = reserve_zeroed::<RawIdentity>() else {
        return 0;
    };
    let off = offsets();
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawIdentity`).
    let record = unsafe { entry.assume_init_mut() };
    record.kind = RawKind::Identity as u8;
    record.phydev = phydev;
    record.bus = bus;
    record.addr = addr as u8;
    record.phy_id = phy_id;
    read_bus_id(off, bus, &mut record.bus_id);
    if drv != 0 {
        let name: u64 = read_at(drv, off.drv_name);
        // SAFETY: a NUL-terminated kernel string read with a bounded, checked helper.
        let _ = unsafe { bpf_probe_read_kernel_str_bytes(name as *const u8, &mut record.driver) };
    }
    entry.submit(0);
    *sent = SentPhy {
        phydev,
        bus,
        drv,
        epoch,
        phy_id,
        addr,
    };
    1
}

/// `value` as a plain number to the verifier (a trampoline's pointer arguments are typed
/// pointers, on which it refuses arithmetic such as a hash).
fn untyped(value: u64) -> u64 {
    read_at(&raw const value as u64, 0)
}

/// Sends the name of `bus` (a plain number: see [`untyped`]; for accesses to an address
/// without a PHY) unless this CPU did; false if there was no room for it.
fn name_bus(off: &KernelOffsets, bus: u64) -> bool {
    let epoch = epoch();
    let Some(slot) = SENT_BUSES.get_ptr_mut(sent_slot(bus)) else {
        return false;
    };
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let sent = unsafe { &mut *slot };
    if sent.bus == bus && sent.epoch == epoch {
        return true;
    }
    // A full ring: the event that needs the name will not fit either and counts the loss
    // (an identity is not an event); not marked sent, it is tried again.
    let Some(mut entry) = reserve_zeroed::<RawIdentity>() else {
        return false;
    };
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawIdentity`).
    let record = unsafe { entry.assume_init_mut() };
    record.kind = RawKind::Identity as u8;
    record.bus = bus;
    read_bus_id(off, bus, &mut record.bus_id);
    entry.submit(0);
    *sent = SentBus { bus, epoch };
    true
}

fn read_bus_id(off: &KernelOffsets, bus: u64, out: &mut [u8]) {
    if bus != 0 {
        // SAFETY: `mii_bus.id` is a 61-byte array inside the struct, longer than the copy.
        let _ = unsafe { bpf_probe_read_kernel_buf((bus + off.bus_id as u64) as *const u8, out) };
    }
}

/// Reads `phydev` (into buffer `slot`) and names it if needed.
#[inline(always)]
fn view_and_name(off: &KernelOffsets, phydev: u64, slot: u32) -> Option<PhyView> {
    let view = PhyView::read(phydev, off, slot)?;
    let _ = name_phy(phydev, &view);
    Some(view)
}

/// Stamps a reserved record of thread `tid`.
fn stamp(event: &mut RawEvent, kind: RawKind, tid: u32) {
    event.kind = kind as u8;
    event.ts_ns = ktime_ns();
    event.tid = tid;
    // SAFETY: a helper without preconditions.
    event.cpu = unsafe { bpf_get_smp_processor_id() } as u16;
}

/// Reserves an event in the ring buffer, zeroed and stamped; counts a drop if it is full.
fn reserve(kind: RawKind) -> Option<aya_ebpf::maps::ring_buf::RingBufEntry<RawEvent>> {
    reserve_for(kind, tid())
}

/// [`reserve`] for thread `tid`.
fn reserve_for(
    kind: RawKind,
    tid: u32,
) -> Option<aya_ebpf::maps::ring_buf::RingBufEntry<RawEvent>> {
    let Some(mut entry) = reserve_zeroed::<RawEvent>() else {
        count_drop(DropCause::RingFull);
        return None;
    };
    // SAFETY: `reserve_zeroed` initialised the entry (all-zero is a valid `RawEvent`).
    stamp(unsafe { entry.assume_init_mut() }, kind, tid);
    Some(entry)
}

/// Reserves a named event, zeroed and stamped; counts a drop if the ring is full.
fn reserve_named(kind: RawKind) -> Option<aya_ebpf::maps::ring_buf::RingBufEntry<RawNamed>> {
    let Some(mut entry) = reserve_zeroed::<RawNamed>() else {
        count_drop(DropCause::RingFull);
        return None;
    };
    // SAFETY: as in `reserve_for`.
    stamp(&mut unsafe { entry.assume_init_mut() }.event, kind, tid());
    Some(entry)
}

/// Reserves a `T` in the ring and zeroes it a word at a time: the struct assignment of zeros
/// it replaces compiles to a call of a `memset` that stores one byte per loop.
fn reserve_zeroed<T>() -> Option<aya_ebpf::maps::ring_buf::RingBufEntry<T>> {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<T>() <= 8) };
    let mut entry = EVENTS.reserve::<T>(0)?;
    let words = entry.as_mut_ptr().cast::<u64>();
    for word in 0..size_of::<T>() / 8 {
        // SAFETY: within the reserved record, which the ring aligns to 8 bytes; volatile so
        // that the stores are not folded back into a `memset` call.
        unsafe { core::ptr::write_volatile(words.add(word), 0) };
    }
    Some(entry)
}

/// `CLOCK_MONOTONIC`: the clock of the events' timestamps, which a capture's header pairs with
/// the wall clock.
fn ktime_ns() -> u64 {
    // SAFETY: a helper without preconditions.
    unsafe { bpf_ktime_get_ns() }
}

/// The key userspace attached this probe with (one per callback, the same for its return).
fn attach_cookie<C: EbpfContext>(ctx: &C) -> u64 {
    // SAFETY: kprobe programs attached through a perf link may call `bpf_get_attach_cookie`
    // (Linux ≥ 5.15) with their context.
    unsafe { bpf_get_attach_cookie(ctx.as_ptr()) }
}

/// This thread's state (created zeroed on first use).
fn thread_state() -> Option<&'static mut ThreadState> {
    // SAFETY: the value is this task's, which only this task touches (programs of one task do
    // not run concurrently with each other), and lives as long as the task.
    THREADS.current().map(|state| unsafe { &mut *state })
}

/// Stack pointer of a function just entered, as the kprobe saw it.
#[cfg(bpf_target_arch = "x86_64")]
fn entry_sp(ctx: &ProbeContext) -> u64 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).rsp }
}

/// The stack pointer its function had at entry, seen from a kretprobe: the return popped the
/// return address.
#[cfg(bpf_target_arch = "x86_64")]
fn return_sp(ctx: &RetProbeContext) -> u64 {
    // SAFETY: a kretprobe's context is the probed task's `pt_regs` at the return.
    unsafe { (*ctx.regs).rsp }.wrapping_sub(8)
}

/// Stack pointer of a function just entered, as the kprobe saw it.
#[cfg(not(bpf_target_arch = "x86_64"))]
fn entry_sp(ctx: &ProbeContext) -> u64 {
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    unsafe { (*ctx.regs).sp }
}

/// The stack pointer its function had at entry, seen from a kretprobe (arm64 returns through
/// the link register: the stack pointer is the entry's).
#[cfg(not(bpf_target_arch = "x86_64"))]
fn return_sp(ctx: &RetProbeContext) -> u64 {
    // SAFETY: a kretprobe's context is the probed task's `pt_regs` at the return.
    unsafe { (*ctx.regs).sp }
}

/// Drops the innermost frames entered at or below `sp` (`at_or_below`) or strictly below it:
/// they cannot be running any more, their returns were missed. Returns how many were dropped.
fn drop_stale(state: &mut ThreadState, sp: u64, at_or_below: bool) -> u32 {
    let mut depth = (state.depth as usize).min(MAX_CALLBACK_DEPTH);
    let mut dropped = 0;
    for _ in 0..MAX_CALLBACK_DEPTH {
        if depth == 0 {
            break;
        }
        let frame_sp = state.frames[frame_index(depth - 1)].sp;
        if frame_sp > sp || (!at_or_below && frame_sp == sp) {
            break;
        }
        depth -= 1;
        dropped += 1;
    }
    state.depth = depth as u32;
    dropped
}

#[kprobe]
pub fn callback_enter(ctx: ProbeContext) -> u32 {
    let Some(phydev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    enter_callback(entry_sp(&ctx), phydev, attach_cookie(&ctx));
    0
}

#[kretprobe]
pub fn callback_exit(ctx: RetProbeContext) -> u32 {
    exit_callback(return_sp(&ctx), ctx.ret::<i32>(), Unmatched::Lost);
    0
}

/// A callback entered at stack pointer `sp` on `phydev`, named by `key`: pushes its frame and
/// records the entry.
fn enter_callback(sp: u64, phydev: u64, key: u64) {
    // No room for this thread: its return, finding nothing, counts the loss.
    let tid = tid();
    let Some(state) = thread_state() else {
        return;
    };
    // Frames at or below this entry's stack pointer are not its callers: stale.
    if drop_stale(state, sp, true) > 0 {
        state.too_deep = 0;
    }
    let depth = state.depth as usize;
    if depth >= callback_depth() {
        if (state.too_deep as usize) < MAX_CALLBACK_DEPTH {
            state.deep_sps[frame_index(state.too_deep as usize)] = sp;
        }
        state.too_deep += 1;
        count_drop(DropCause::TooDeep);
        return;
    }
    let off = offsets();
    let Some(view) = view_and_name(off, phydev, VIEW_CALLBACK) else {
        return;
    };
    let mut event = RawEvent::ZERO;
    view.fill(&mut event);
    let now = ktime_ns();
    // Pushed whether or not the ring has room for the entry: the return is still recorded.
    state.frames[frame_index(depth)] = Frame {
        key,
        phydev,
        ts_ns: now,
        sp,
        state_before: event.state_after as u32,
        _pad: 0,
    };
    state.depth += 1;
    let Some(mut entry) = reserve_for(RawKind::CallbackEnter, tid) else {
        return;
    };
    // SAFETY: `reserve` initialised the entry.
    let record = unsafe { entry.assume_init_mut() };
    record.key = key;
    record.phydev = phydev;
    record.depth = (depth + 1) as u8;
    record.state_before = event.state_after;
    record.link = event.link;
    record.speed = event.speed;
    record.duplex = event.duplex;
    entry.submit(0);
}

/// What a return that matches no open frame means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unmatched {
    /// A function's return: every return seen had its entry seen, so a return without a frame
    /// lost it (or was entered on a full stack).
    Lost,
    /// An instruction after a call site, which the code also reaches without the call: only
    /// a return at the very stack pointer of a call entered on a full stack is one.
    Expected,
}

/// A callback returned `ret` at stack pointer `sp` (the one its entry saw): pops its frame and
/// records the return.
fn exit_callback(sp: u64, ret: i32, unmatched: Unmatched) {
    let tid = tid();
    let Some(state) = thread_state() else {
        // No room for its thread's state: the frame is lost.
        if unmatched == Unmatched::Lost {
            count_drop(DropCause::MapFull);
        }
        return;
    };
    // Frames entered below this return's entry returned unseen.
    drop_stale(state, sp, false);
    let depth = state.depth as usize;
    if depth == 0 || depth > MAX_CALLBACK_DEPTH || state.frames[frame_index(depth - 1)].sp != sp {
        // Not a frame of the stack: the return of a call entered on a full stack, or one whose
        // frame was lost with its thread's entry (evicted, re-created since). The entry
        // probe is armed before the return probe: every return seen had its entry seen.
        let deep = state.too_deep as usize;
        match unmatched {
            Unmatched::Lost if deep > 0 => state.too_deep -= 1,
            Unmatched::Lost => count_drop(DropCause::MapFull),
            Unmatched::Expected
                if deep > 0
                    && deep <= MAX_CALLBACK_DEPTH
                    && state.deep_sps[frame_index(deep - 1)] == sp =>
            {
                state.too_deep -= 1
            }
            Unmatched::Expected => {}
        }
        return;
    }
    let frame = state.frames[frame_index(depth - 1)];
    state.depth -= 1;
    state.too_deep = 0;

    let off = offsets();
    let view = view_and_name(off, frame.phydev, VIEW_CALLBACK);
    if let Some(mut entry) = reserve_for(RawKind::CallbackExit, tid) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.key = frame.key;
        event.phydev = frame.phydev;
        event.latency_ns = event.ts_ns.saturating_sub(frame.ts_ns);
        event.ret = ret;
        event.state_before = frame.state_before as u8;
        event.depth = depth as u8;
        if let Some(view) = view {
            view.fill(event);
        }
        entry.submit(0);
    }
}

/// The call sites of `phy_driver` operations, indexed by the cookie their probes carry; filled
/// by the loader.
#[map]
static CALL_SITES: Array<CallSite> = Array::with_max_entries(MAX_CALL_SITES, 0);

/// Byte offset of the first argument register in `struct pt_regs` (`di`; arm64: `regs[0]`).
#[cfg(bpf_target_arch = "x86_64")]
const ARG0_REG: u32 = 112;
#[cfg(not(bpf_target_arch = "x86_64"))]
const ARG0_REG: u32 = 0;
/// Byte offset of the return value register in `struct pt_regs` (`ax`; arm64: `regs[0]`).
#[cfg(bpf_target_arch = "x86_64")]
const RETURN_REG: u32 = 80;
#[cfg(not(bpf_target_arch = "x86_64"))]
const RETURN_REG: u32 = 0;

/// A probe's `pt_regs` as a plain address: the verifier forbids arithmetic on the context
/// pointer, and the registers a call site names are known only at run time.
fn regs_address(regs: *const core::ffi::c_void) -> u64 {
    untyped(regs as u64)
}

/// The register at byte offset `reg` of the `pt_regs` at `regs` (see [`regs_address`]).
fn register(regs: u64, reg: u32) -> u64 {
    read_at::<u64>(regs, reg & 0xff8)
}

/// phylib is about to call a driver operation at a call site (the cookie): checks that the
/// target is what the PHY's driver (or the `phy_driver` the op was loaded from) holds for the
/// op, then enters the callback it names.
#[kprobe]
pub fn call_site_enter(ctx: ProbeContext) -> u32 {
    let index = attach_cookie(&ctx) as u32;
    let Some(site) = CALL_SITES.get_ptr_mut(index) else {
        return 0;
    };
    // SAFETY: an element of an array map, valid for the program's run; a racing update of
    // the flags from another CPU only disables the site twice.
    let site = unsafe { &mut *site };
    if site.flags & SITE_DISABLED != 0 {
        return 0;
    }
    let regs = regs_address(ctx.regs.cast());
    let phydev = register(regs, ARG0_REG);
    let target = if site.flags & SITE_TARGET_IN_MEMORY != 0 {
        read_at::<u64>(register(regs, site.base_reg), site.op_offset)
    } else {
        register(regs, site.target_reg)
    };
    let driver = if site.flags & SITE_CHECK_BOUND_DRIVER != 0 {
        read_at::<u64>(phydev, offsets().phy_drv)
    } else {
        register(regs, site.base_reg)
    };
    if target == 0 || driver == 0 || read_at::<u64>(driver, site.op_offset) != target {
        site.mismatches += 1;
        site.flags |= SITE_DISABLED;
        return 0;
    }
    enter_callback(entry_sp(&ctx), phydev, call_site_key(site.op, target));
    0
}

/// The instruction after a call site ran: the return of the call entered at this stack
/// pointer, if there was one (the code also gets here without the call).
#[kprobe]
pub fn call_site_exit(ctx: ProbeContext) -> u32 {
    let ret = register(regs_address(ctx.regs.cast()), RETURN_REG) as i32;
    exit_callback(entry_sp(&ctx), ret, Unmatched::Expected);
    0
}

/// A function that tail-calls a driver operation returned: the operation's return, if it was
/// called (its frame is at the function's entry stack pointer).
#[kretprobe]
pub fn call_site_tail_exit(ctx: RetProbeContext) -> u32 {
    exit_callback(return_sp(&ctx), ctx.ret::<i32>(), Unmatched::Expected);
    0
}

/// An MDIO access as its accessor was called.
struct MdioCall {
    bus: u64,
    addr: u32,
    devad: u32,
    regnum: u32,
    /// The value written (writes).
    value: u16,
}

/// An MDIO accessor was entered: notes when, and the arguments a kretprobe will lack (`call`;
/// a trampoline's return has them itself).
fn mdio_begin(call: Option<&MdioCall>) -> u32 {
    if let Some(state) = thread_state() {
        state.mdio_ts = ktime_ns();
        if let Some(call) = call {
            state.mdio_bus = call.bus;
            state.mdio_addr = call.addr;
            state.mdio_devad = call.devad;
            state.mdio_regnum = call.regnum as u16;
            state.mdio_value = call.value;
        }
    }
    0
}

/// The device at an MDIO address, as this CPU last found and named it.
#[derive(Clone, Copy)]
struct KnownDevice {
    /// The bus (a plain number); 0: the slot is empty.
    bus: u64,
    /// The `struct phy_device *` at the address; 0: the device there is not a PHY.
    phydev: u64,
    /// [`EPOCH`] when it was found: any other, and it is looked up again.
    epoch: u64,
    addr: u32,
    _pad: u32,
}

/// The devices MDIO accesses went to, per CPU, direct-mapped by bus and address: an access
/// to a known device reads only its status, not its identity and the bus's device table.
#[map]
static DEVICES: PerCpuArray<KnownDevice> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

/// This CPU's slot in [`DEVICES`] for `addr` of `bus`.
fn device_slot(bus: u64, addr: u32) -> Option<*mut KnownDevice> {
    DEVICES.get_ptr_mut((sent_slot(bus) ^ addr) & (SENT_SLOTS - 1))
}

/// The PHY at `addr` of `bus` (a plain number), named, with its status now put in `status`;
/// 0 if there is none (its bus is named then). A PHY this CPU knows has only its status read;
/// one it does not is looked up by [`mdio_device_lookup`].
#[inline(always)]
fn mdio_phy(off: &KernelOffsets, bus: u64, addr: u32, status: &mut PhyStatus) -> u64 {
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let known = device_slot(bus, addr).map(|slot| unsafe { &*slot });
    let phydev = match known {
        Some(known) if known.bus == bus && known.addr == addr && known.epoch == epoch() => {
            known.phydev
        }
        _ => mdio_device_lookup(bus, addr as u64),
    };
    if phydev != 0 {
        *status = PhyStatus::read(phydev, off);
    }
    phydev
}

/// The device at `addr` of `bus` (plain numbers) looked up and named (a PHY's identity, else
/// the bus's), and kept in this CPU's [`DEVICES`] slot once named: its `struct phy_device *`,
/// or 0 if no PHY is there.
///
/// A global function: the verifier checks it once per program, whatever the caller's state,
/// instead of once for each path of the caller that reaches it.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn mdio_device_lookup(bus: u64, addr: u64) -> u64 {
    let off = offsets();
    let addr = (addr & 31) as u32;
    let mdiodev: u64 = read_at(bus + off.bus_mdio_map as u64 + addr as u64 * 8, 0);
    let view = if mdiodev != 0 {
        PhyView::read(mdiodev, off, VIEW_MDIO).filter(|v| v.flags & MDIO_DEVICE_FLAG_PHY != 0)
    } else {
        None
    };
    let (phydev, named) = match &view {
        Some(view) => (mdiodev, name_phy(mdiodev, view)),
        None => (0, name_bus(off, bus)),
    };
    // No device there is not kept: one may be registered without a change of epoch.
    if let (Some(slot), true, true) = (device_slot(bus, addr), named, mdiodev != 0) {
        let known = KnownDevice {
            bus,
            phydev,
            epoch: epoch(),
            addr,
            _pad: 0,
        };
        // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
        unsafe { *slot = known };
    }
    phydev
}

/// An MDIO accessor returned `ret`: reports the access with its PHY, the callback that made
/// it and its latency. `call` is `None` from a kretprobe (its arguments come from the entry).
#[inline(always)]
fn mdio_end(kind: RawKind, call: Option<MdioCall>, ret: i32) -> u32 {
    let mut call = call;
    let (mut start, mut key, mut depth) = (0, 0, 0);
    let tid;
    let bus = match thread_state() {
        Some(state) => {
            start = state.mdio_ts;
            state.mdio_ts = 0;
            tid = state.tid();
            let open = state.depth as usize;
            if open > 0 && open <= MAX_CALLBACK_DEPTH {
                key = state.frames[frame_index(open - 1)].key;
                depth = open as u8;
            }
            if call.is_none() && start != 0 {
                call = Some(MdioCall {
                    bus: state.mdio_bus,
                    addr: state.mdio_addr,
                    devad: state.mdio_devad,
                    regnum: state.mdio_regnum as u32,
                    value: state.mdio_value,
                });
            }
            call.as_ref().map(|call| state.plain(call.bus))
        }
        None => {
            tid = self::tid();
            call.as_ref().map(|call| untyped(call.bus))
        }
    };
    let (Some(call), Some(bus)) = (call, bus) else {
        return 0;
    };
    let off = offsets();
    let mut status = PhyStatus::ZERO;
    let phydev = mdio_phy(off, bus, call.addr, &mut status);
    let Some(mut entry) = reserve_for(kind, tid) else {
        return 0;
    };
    // SAFETY: `reserve_for` initialised the entry.
    let event = unsafe { entry.assume_init_mut() };
    if start != 0 {
        event.latency_ns = event.ts_ns.saturating_sub(start);
    }
    event.key = key;
    event.depth = depth;
    event.ret = ret;
    event.bus = bus;
    event.addr = call.addr as u8;
    event.devad = call.devad as u8;
    event.regnum = call.regnum as u16;
    event.value = match kind {
        RawKind::MdioRead | RawKind::MdioC45Read if ret >= 0 => ret as u16,
        RawKind::MdioRead | RawKind::MdioC45Read => 0,
        _ => call.value,
    };
    if phydev != 0 {
        event.phydev = phydev;
        status.fill(event);
        event.state_before = event.state_after;
        event.state_after = 0;
    }
    entry.submit(0);
    0
}

/// The arguments of an MDIO accessor, `arg(n)` being its n-th: `c45` ones have a devad
/// before regnum, writes a value after it.
fn accessor_call(arg: impl Fn(usize) -> u64, c45: bool, write: bool) -> MdioCall {
    let regnum = if c45 { 3 } else { 2 };
    MdioCall {
        bus: arg(0),
        addr: arg(1) as u32,
        devad: if c45 { arg(2) as u32 } else { 0 },
        regnum: arg(regnum) as u32,
        value: if write { arg(regnum + 1) as u16 } else { 0 },
    }
}

/// An accessor returned, seen from its trampoline: the arguments, then the return value in
/// the slot after the last one.
#[inline(always)]
fn fexit_end(ctx: &FExitContext, kind: RawKind, c45: bool, write: bool) -> u32 {
    let call = accessor_call(|n| ctx.arg::<u64>(n), c45, write);
    let ret_slot = if c45 { 4 } else { 3 } + usize::from(write);
    mdio_end(kind, Some(call), ctx.arg::<u64>(ret_slot) as i32)
}

/// `__mdiobus_read(bus, addr, regnum)` through a BPF trampoline.
#[fentry(function = "__mdiobus_read")]
pub fn mdio_read_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_read")]
pub fn mdio_read_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioRead, false, false)
}

/// `__mdiobus_write(bus, addr, regnum, val)` through a BPF trampoline.
#[fentry(function = "__mdiobus_write")]
pub fn mdio_write_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_write")]
pub fn mdio_write_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioWrite, false, true)
}

/// `__mdiobus_c45_read(bus, addr, devad, regnum)` through a BPF trampoline.
#[fentry(function = "__mdiobus_c45_read")]
pub fn mdio_c45_read_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_c45_read")]
pub fn mdio_c45_read_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioC45Read, true, false)
}

/// `__mdiobus_c45_write(bus, addr, devad, regnum, val)` through a BPF trampoline.
#[fentry(function = "__mdiobus_c45_write")]
pub fn mdio_c45_write_enter(_ctx: FEntryContext) -> u32 {
    mdio_begin(None)
}

#[fexit(function = "__mdiobus_c45_write")]
pub fn mdio_c45_write_exit(ctx: FExitContext) -> u32 {
    fexit_end(&ctx, RawKind::MdioC45Write, true, true)
}

/// The arguments of an MDIO accessor at a kprobe.
fn kprobe_call(ctx: &ProbeContext, c45: bool, write: bool) -> MdioCall {
    accessor_call(|n| ctx.arg::<u64>(n).unwrap_or(0), c45, write)
}

/// Kprobe twins of the trampoline programs, for kernels without BPF trampolines.
#[kprobe]
pub fn mdio_read_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, false, false)))
}

#[kretprobe]
pub fn mdio_read_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioRead, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_write_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, false, true)))
}

#[kretprobe]
pub fn mdio_write_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioWrite, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_c45_read_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, true, false)))
}

#[kretprobe]
pub fn mdio_c45_read_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioC45Read, None, ctx.ret::<i32>())
}

#[kprobe]
pub fn mdio_c45_write_enter_kprobe(ctx: ProbeContext) -> u32 {
    mdio_begin(Some(&kprobe_call(&ctx, true, true)))
}

#[kretprobe]
pub fn mdio_c45_write_exit_kprobe(ctx: RetProbeContext) -> u32 {
    mdio_end(RawKind::MdioC45Write, None, ctx.ret::<i32>())
}

/// A PHY or bus went away (`phy_device_remove`, `mdiobus_unregister`), or a PHY's driver was
/// bound or unbound (`phy_probe`, `phy_remove`): whatever is at its address is looked up and
/// named anew. On return, when the change is made: a lookup after it finds the new epoch.
#[kretprobe]
pub fn device_changed(_ctx: RetProbeContext) -> u32 {
    if let Some(epoch) = EPOCH.get_ptr_mut(0) {
        // SAFETY: the map's only entry; a lost increment from a concurrent removal still
        // changes the epoch, which is all that matters.
        unsafe { *epoch += 1 };
    }
    0
}

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

/// Argument `n` (0-based, ≥ 6) of a function just entered: on x86-64 the seventh argument on
/// is on the stack, after the return address.
#[cfg(bpf_target_arch = "x86_64")]
fn stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    read_at(entry_sp(ctx) + 8 * (n - 5), 0)
}

/// Argument `n` (0-based, < 8) of a function just entered: arm64 passes eight in registers.
#[cfg(not(bpf_target_arch = "x86_64"))]
fn stack_arg(ctx: &ProbeContext, n: u64) -> u64 {
    ctx.arg::<u64>(n as usize).unwrap_or(0)
}

/// Notes `phydev` as the PHY of the `phylink_resolve` running on this thread, if one is.
fn note_resolve_phy(tid: u32, phydev: u64) {
    if let Some(pending) = PENDING_RESOLVE.get_ptr_mut(tid) {
        // SAFETY: the pointer is this thread's map entry; only this thread touches it.
        unsafe { (*pending).phydev = phydev };
    }
}

/// Reads and names the PHY of a MAC-side event (0: none known).
#[inline(always)]
fn mac_phy(off: &KernelOffsets, phydev: u64) -> Option<(u64, PhyView)> {
    if phydev == 0 {
        return None;
    }
    note_resolve_phy(tid(), phydev);
    Some((phydev, view_and_name(off, phydev, VIEW_MAC)?))
}

/// Fills the PHY of a MAC-side event and its link.
fn fill_mac_phy(event: &mut RawEvent, phy: Option<(u64, PhyView)>) {
    if let Some((phydev, view)) = phy {
        event.phydev = phydev;
        view.fill(event);
    }
}

/// Reports a MAC-side event of `kind` for `phydev` (0: none known).
fn mac_event(kind: RawKind, phydev: u64, fill: impl FnOnce(&mut RawEvent)) {
    let phy = mac_phy(offsets(), phydev);
    if let Some(mut entry) = reserve(kind) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        fill_mac_phy(event, phy);
        fill(event);
        entry.submit(0);
    }
}

/// Where a MAC op's arguments are: at its entry (the by-name probes), or at phylink's call
/// (a call site: the arguments passed on the stack are below the return address still to be
/// pushed; a tail call's, above the caller's).
#[derive(Clone, Copy)]
enum ArgsAt {
    Entry,
    Call,
}

/// Argument `n` (0-based, ≥ 6 on x86-64) of a MAC op about to be called or just entered.
#[inline(always)]
fn mac_stack_arg(ctx: &ProbeContext, at: ArgsAt, n: u64) -> u64 {
    match at {
        ArgsAt::Entry => stack_arg(ctx, n),
        #[cfg(bpf_target_arch = "x86_64")]
        ArgsAt::Call => read_at(entry_sp(ctx) + 8 * (n - 6), 0),
        #[cfg(not(bpf_target_arch = "x86_64"))]
        ArgsAt::Call => stack_arg(ctx, n),
    }
}

/// `mac_link_up(config, phy, mode, interface, speed, duplex, tx_pause, rx_pause)` of a
/// phylink MAC, its arguments `at`.
#[inline(always)]
fn link_up(ctx: &ProbeContext, at: ArgsAt) {
    let (Some(config), Some(phydev), Some(speed), Some(duplex)) = (
        ctx.arg::<u64>(0),
        ctx.arg::<u64>(1),
        ctx.arg::<i32>(4),
        ctx.arg::<i32>(5),
    ) else {
        return;
    };
    let _ = MAC_PHY.insert(config, phydev, 0);
    let tx_pause = mac_stack_arg(ctx, at, 6) & 1 != 0;
    let rx_pause = mac_stack_arg(ctx, at, 7) & 1 != 0;
    mac_event(RawKind::MacLinkUp, phydev, |event| {
        event.speed = speed;
        event.duplex = duplex as u8;
        event.value =
            if tx_pause { MAC_TX_PAUSE } else { 0 } | if rx_pause { MAC_RX_PAUSE } else { 0 };
    });
}

/// `mac_link_down(config, mode, interface)` of a phylink MAC.
#[inline(always)]
fn link_down(ctx: &ProbeContext) {
    let Some(config) = ctx.arg::<u64>(0) else {
        return;
    };
    // SAFETY: the value is copied out at once.
    let phydev = unsafe { MAC_PHY.get(config) }.copied().unwrap_or(0);
    mac_event(RawKind::MacLinkDown, phydev, |_| {});
}

/// The AX88772's `ax88772_mac_link_up`, by name.
#[kprobe]
pub fn mac_link_up(ctx: ProbeContext) -> u32 {
    link_up(&ctx, ArgsAt::Entry);
    0
}

/// The AX88772's `ax88772_mac_link_down`, by name.
#[kprobe]
pub fn mac_link_down(ctx: ProbeContext) -> u32 {
    link_down(&ctx);
    0
}

/// phylink's call sites of MAC ops, indexed by the cookie their probes carry; filled by the
/// loader when phylink is live.
#[map]
static MAC_SITES: Array<CallSite> = Array::with_max_entries(MAX_MAC_SITES, 0);

/// phylink is about to call a MAC op at a call site (the cookie): whether the target is what
/// the `struct phylink` in the site's holder register holds for the op, and that phylink's
/// `config` the first argument. A site failing the check is counted and disabled.
#[inline(always)]
fn mac_site_checked(ctx: &ProbeContext) -> Option<ArgsAt> {
    let site = MAC_SITES.get_ptr_mut(attach_cookie(ctx) as u32)?;
    // SAFETY: an element of an array map, valid for the program's run; a racing update of
    // the flags from another CPU only disables the site twice.
    let site = unsafe { &mut *site };
    if site.flags & SITE_DISABLED != 0 || site.flags & SITE_CHECK_HOLDER == 0 {
        return None;
    }
    let regs = regs_address(ctx.regs.cast());
    let target = if site.flags & SITE_TARGET_IN_MEMORY != 0 {
        read_at::<u64>(register(regs, site.target_reg), site.op_offset)
    } else {
        register(regs, site.target_reg)
    };
    let holder = register(regs, site.base_reg);
    let at = |displacement: i32| holder.wrapping_add(displacement as i64 as u64);
    let ops = read_at::<u64>(at(site.holder_displacement), 0);
    let config = read_at::<u64>(at(site.arg0_displacement), 0);
    if target == 0
        || ops == 0
        || read_at::<u64>(ops, site.op_offset) != target
        || config != register(regs, ARG0_REG)
    {
        site.mismatches += 1;
        site.flags |= SITE_DISABLED;
        return None;
    }
    Some(if site.flags & SITE_TAIL_CALL != 0 {
        ArgsAt::Entry
    } else {
        ArgsAt::Call
    })
}

/// phylink calls a MAC's `mac_link_up` at a call site.
#[kprobe]
pub fn mac_site_link_up(ctx: ProbeContext) -> u32 {
    if let Some(at) = mac_site_checked(&ctx) {
        link_up(&ctx, at);
    }
    0
}

/// phylink calls a MAC's `mac_link_down` at a call site.
#[kprobe]
pub fn mac_site_link_down(ctx: ProbeContext) -> u32 {
    if mac_site_checked(&ctx).is_some() {
        link_down(&ctx);
    }
    0
}

#[inline(always)]
fn carrier(ctx: &ProbeContext, kind: RawKind) -> u32 {
    let Some(netdev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    let off = offsets();
    let phy = mac_phy(off, read_at(netdev, off.netdev_phydev));
    if let Some(mut entry) = reserve_named(kind) {
        // SAFETY: `reserve_named` initialised the entry.
        let record = unsafe { entry.assume_init_mut() };
        fill_mac_phy(&mut record.event, phy);
        // SAFETY: `net_device.name` is an IFNAMSIZ array inside the struct; the helper bounds
        // the copy and fails cleanly on a bad pointer.
        let _ = unsafe {
            bpf_probe_read_kernel_str_bytes(
                (netdev + off.netdev_name as u64) as *const u8,
                &mut record.name[..16],
            )
        };
        entry.submit(0);
    }
    0
}

#[kprobe]
pub fn carrier_on(ctx: ProbeContext) -> u32 {
    carrier(&ctx, RawKind::CarrierOn)
}

#[kprobe]
pub fn carrier_off(ctx: ProbeContext) -> u32 {
    carrier(&ctx, RawKind::CarrierOff)
}

#[kprobe]
pub fn phylink_resolve_enter(_ctx: ProbeContext) -> u32 {
    let pending = PendingResolve {
        ts_ns: ktime_ns(),
        phydev: 0,
    };
    let _ = PENDING_RESOLVE.insert(tid(), pending, 0);
    0
}

#[kretprobe]
pub fn phylink_resolve_exit(_ctx: RetProbeContext) -> u32 {
    let tid = tid();
    // SAFETY: the value is copied out before the entry is removed.
    let Some(pending) = (unsafe { PENDING_RESOLVE.get(tid) }).copied() else {
        return 0;
    };
    let _ = PENDING_RESOLVE.remove(tid);
    let phy = match pending.phydev {
        0 => None,
        phydev => view_and_name(offsets(), phydev, VIEW_MAC).map(|view| (phydev, view)),
    };
    if let Some(mut entry) = reserve(RawKind::PhylinkResolve) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.latency_ns = event.ts_ns.saturating_sub(pending.ts_ns);
        fill_mac_phy(event, phy);
        entry.submit(0);
    }
    0
}

fn is_selftest_process() -> bool {
    // SAFETY: a plain global set by the loader; see `offsets`.
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
