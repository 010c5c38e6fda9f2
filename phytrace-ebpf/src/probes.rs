//! The probe programs and their maps.

use aya_ebpf::{
    EbpfContext,
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns,
        bpf_probe_read_kernel, bpf_probe_read_kernel_buf, bpf_probe_read_kernel_str_bytes,
        generated::{bpf_get_attach_cookie, bpf_get_func_ip},
    },
    macros::{kprobe, kretprobe, map, raw_tracepoint},
    maps::{HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{ProbeContext, RawTracePointContext, RetProbeContext},
};
use aya_log_ebpf::info;
use phytrace_common::{
    DROP_COUNTERS, DROP_RING_FULL, DROP_STACK_OVERFLOW, KernelOffsets, MAC_RX_PAUSE, MAC_TX_PAUSE,
    MAX_CALLBACK_DEPTH, RawEvent, RawKind,
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

/// Process whose calls the self-test probe reports (set by `phytrace doctor`).
#[unsafe(no_mangle)]
static SELFTEST_TGID: u32 = 0;

/// `MDIO_DEVICE_FLAG_PHY` from `include/linux/mdio.h`.
const MDIO_DEVICE_FLAG_PHY: u32 = 1;

/// The event stream. Its size is set by the loader (`--ring-size`).
#[map]
static EVENTS: RingBuf = RingBuf::with_byte_size(1 << 20, 0);

/// Events lost, per CPU, by cause (see `phytrace_common::DROP_*`).
#[map]
static DROPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(DROP_COUNTERS, 0);

/// A callback that has been entered and not yet returned.
#[derive(Clone, Copy)]
struct Frame {
    /// The callback's probe key.
    key: u64,
    phydev: u64,
    ts_ns: u64,
    state_before: u32,
    _pad: u32,
}

/// The callbacks open on one thread, innermost last.
#[derive(Clone, Copy)]
struct CallStack {
    depth: u32,
    _pad: u32,
    frames: [Frame; MAX_CALLBACK_DEPTH],
}

/// An MDIO access that has been entered and not yet returned.
#[derive(Clone, Copy)]
struct PendingMdio {
    ts_ns: u64,
    bus: u64,
    addr: u32,
    regnum: u16,
    value: u16,
}

#[map]
static CALL_STACKS: HashMap<u32, CallStack> = HashMap::with_max_entries(4096, 0);

#[map]
static PENDING_MDIO: HashMap<u32, PendingMdio> = HashMap::with_max_entries(4096, 0);

#[map]
static SELFTEST_START: HashMap<u32, u64> = HashMap::with_max_entries(64, 0);

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

fn offsets() -> KernelOffsets {
    // SAFETY: `OFFSETS` is a plain global the loader rewrites before load; a volatile read keeps
    // the compiler from folding its initial zeros into the code.
    unsafe { core::ptr::read_volatile(&OFFSETS) }
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

fn count_drop(cause: u32) {
    if let Some(counter) = DROPS.get_ptr_mut(cause) {
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

/// Fills the identity of `phydev` (bus id, address, PHY ID, bound driver) into `event`.
fn fill_phy(event: &mut RawEvent, off: &KernelOffsets, phydev: u64) {
    event.phydev = phydev;
    event.phy_id = read_at(phydev, off.phy_id);
    event.mdio_addr = read_at::<u32>(phydev, off.phy_addr) as u8;
    let bus: u64 = read_at(phydev, off.phy_bus);
    fill_bus_id(event, off, bus);
    let drv: u64 = read_at(phydev, off.phy_drv);
    if drv != 0 {
        let name: u64 = read_at(drv, off.drv_name);
        // SAFETY: a NUL-terminated kernel string read with a bounded, checked helper.
        let _ = unsafe { bpf_probe_read_kernel_str_bytes(name as *const u8, &mut event.driver) };
    }
}

fn fill_bus_id(event: &mut RawEvent, off: &KernelOffsets, bus: u64) {
    if bus != 0 {
        // SAFETY: `mii_bus.id` is a 61-byte array inside the struct, longer than the copy.
        let _ = unsafe {
            bpf_probe_read_kernel_buf((bus + off.bus_id as u64) as *const u8, &mut event.bus_id)
        };
    }
}

/// Fills the link state `read_status` leaves in `phydev`.
fn fill_link(event: &mut RawEvent, off: &KernelOffsets, phydev: u64) {
    event.state_after = read_at(phydev, off.phy_state);
    event.speed = read_at(phydev, off.phy_speed);
    event.duplex = read_at::<u32>(phydev, off.phy_duplex) as u8;
    let link_byte: u8 = read_at(phydev, off.phy_link_byte);
    event.link = (link_byte >> (off.phy_link_bit & 7)) & 1;
}

/// Reserves an event in the ring buffer, zeroed and stamped; counts a drop if it is full.
fn reserve(kind: RawKind) -> Option<aya_ebpf::maps::ring_buf::RingBufEntry<RawEvent>> {
    let Some(mut entry) = EVENTS.reserve::<RawEvent>(0) else {
        count_drop(DROP_RING_FULL);
        return None;
    };
    let event = entry.write(RawEvent::ZERO);
    event.kind = kind as u8;
    event.ts_ns = ktime_ns();
    event.tid = tid();
    // SAFETY: a helper without preconditions.
    event.cpu = unsafe { bpf_get_smp_processor_id() };
    Some(entry)
}

/// `CLOCK_MONOTONIC` (`bpf_ktime_get_boot_ns` was seen to tick in jiffies in kworker context
/// under QEMU TCG, while this clock keeps nanosecond resolution there).
fn ktime_ns() -> u64 {
    // SAFETY: a helper without preconditions.
    unsafe { bpf_ktime_get_ns() }
}

fn func_ip<C: EbpfContext>(ctx: &C) -> u64 {
    // SAFETY: kprobe programs may call `bpf_get_func_ip` (Linux ≥ 5.15) with their context.
    unsafe { bpf_get_func_ip(ctx.as_ptr()) }
}

/// The key userspace attached this probe with (one per callback, the same for its return).
fn attach_cookie<C: EbpfContext>(ctx: &C) -> u64 {
    // SAFETY: kprobe programs attached through a perf link may call `bpf_get_attach_cookie`
    // (Linux ≥ 5.15) with their context.
    unsafe { bpf_get_attach_cookie(ctx.as_ptr()) }
}

#[kprobe]
pub fn callback_enter(ctx: ProbeContext) -> u32 {
    let Some(phydev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    let off = offsets();
    let key = attach_cookie(&ctx);
    let now = ktime_ns();
    let state_before: u32 = read_at(phydev, off.phy_state);
    let tid = tid();

    let empty = CallStack {
        depth: 0,
        _pad: 0,
        frames: [Frame {
            key: 0,
            phydev: 0,
            ts_ns: 0,
            state_before: 0,
            _pad: 0,
        }; MAX_CALLBACK_DEPTH],
    };
    if CALL_STACKS.get_ptr(tid).is_none() && CALL_STACKS.insert(tid, empty, 0).is_err() {
        count_drop(DROP_STACK_OVERFLOW);
        return 0;
    }
    let Some(stack) = CALL_STACKS.get_ptr_mut(tid) else {
        return 0;
    };
    // SAFETY: the pointer is this thread's map entry; only this thread touches it.
    let stack = unsafe { &mut *stack };
    let depth = stack.depth as usize;
    if depth >= MAX_CALLBACK_DEPTH {
        count_drop(DROP_STACK_OVERFLOW);
        return 0;
    }
    stack.frames[frame_index(depth)] = Frame {
        key,
        phydev,
        ts_ns: now,
        state_before,
        _pad: 0,
    };
    stack.depth += 1;

    if let Some(mut entry) = reserve(RawKind::CallbackEnter) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.func_ip = key;
        event.state_before = state_before;
        event.depth = (depth + 1) as u8;
        fill_phy(event, &off, phydev);
        entry.submit(0);
    }
    0
}

#[kretprobe]
pub fn callback_exit(ctx: RetProbeContext) -> u32 {
    let tid = tid();
    let Some(stack) = CALL_STACKS.get_ptr_mut(tid) else {
        return 0;
    };
    // SAFETY: the pointer is this thread's map entry; only this thread touches it.
    let stack = unsafe { &mut *stack };
    if stack.depth == 0 {
        return 0;
    }
    stack.depth -= 1;
    let depth = stack.depth as usize;
    if depth >= MAX_CALLBACK_DEPTH {
        return 0;
    }
    let frame = stack.frames[frame_index(depth)];
    if depth == 0 {
        let _ = CALL_STACKS.remove(tid);
    }

    let off = offsets();
    let ret: i64 = ctx.ret::<i32>() as i64;
    if let Some(mut entry) = reserve(RawKind::CallbackExit) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.func_ip = frame.key;
        event.latency_ns = event.ts_ns.saturating_sub(frame.ts_ns);
        event.ret = ret;
        event.state_before = frame.state_before;
        event.depth = (depth + 1) as u8;
        fill_phy(event, &off, frame.phydev);
        fill_link(event, &off, frame.phydev);
        entry.submit(0);
    }
    0
}

fn mdio_enter(ctx: &ProbeContext, value: u16) -> u32 {
    let (Some(bus), Some(addr), Some(regnum)) =
        (ctx.arg::<u64>(0), ctx.arg::<u32>(1), ctx.arg::<u32>(2))
    else {
        return 0;
    };
    let pending = PendingMdio {
        ts_ns: ktime_ns(),
        bus,
        addr,
        regnum: regnum as u16,
        value,
    };
    if PENDING_MDIO.insert(tid(), pending, 0).is_err() {
        count_drop(DROP_STACK_OVERFLOW);
    }
    0
}

fn mdio_exit(ctx: &RetProbeContext, kind: RawKind) -> u32 {
    let tid = tid();
    // SAFETY: the value is copied out before the entry is removed.
    let Some(pending) = (unsafe { PENDING_MDIO.get(tid) }).copied() else {
        return 0;
    };
    let _ = PENDING_MDIO.remove(tid);
    let ret: i64 = ctx.ret::<i32>() as i64;
    let off = offsets();

    let Some(mut entry) = reserve(kind) else {
        return 0;
    };
    // SAFETY: `reserve` initialised the entry.
    let event = unsafe { entry.assume_init_mut() };
    event.func_ip = func_ip(ctx);
    event.latency_ns = event.ts_ns.saturating_sub(pending.ts_ns);
    event.ret = ret;
    event.regnum = pending.regnum;
    event.mdio_addr = pending.addr as u8;
    event.value = match kind {
        RawKind::MdioRead if ret >= 0 => ret as u16,
        RawKind::MdioRead => 0,
        _ => pending.value,
    };
    if let Some(stack) = CALL_STACKS.get_ptr(tid) {
        // SAFETY: the pointer is this thread's map entry; only this thread touches it.
        let stack = unsafe { &*stack };
        let depth = stack.depth as usize;
        if depth > 0 && depth <= MAX_CALLBACK_DEPTH {
            event.caller_ip = stack.frames[frame_index(depth - 1)].key;
            event.depth = depth as u8;
        }
    }
    let slot = pending.bus + off.bus_mdio_map as u64 + (pending.addr as u64 & 31) * 8;
    let mdiodev: u64 = read_at(slot, 0);
    if mdiodev != 0 && read_at::<u32>(mdiodev, off.mdio_flags) & MDIO_DEVICE_FLAG_PHY != 0 {
        // `struct phy_device` starts with its `struct mdio_device`.
        fill_phy(event, &off, mdiodev);
        event.state_before = read_at(mdiodev, off.phy_state);
    } else {
        fill_bus_id(event, &off, pending.bus);
    }
    event.mdio_addr = pending.addr as u8;
    entry.submit(0);
    0
}

#[kprobe]
pub fn mdio_read_enter(ctx: ProbeContext) -> u32 {
    mdio_enter(&ctx, 0)
}

#[kretprobe]
pub fn mdio_read_exit(ctx: RetProbeContext) -> u32 {
    mdio_exit(&ctx, RawKind::MdioRead)
}

#[kprobe]
pub fn mdio_write_enter(ctx: ProbeContext) -> u32 {
    let value = ctx.arg::<u32>(3).unwrap_or(0) as u16;
    mdio_enter(&ctx, value)
}

#[kretprobe]
pub fn mdio_write_exit(ctx: RetProbeContext) -> u32 {
    mdio_exit(&ctx, RawKind::MdioWrite)
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
    if let Some(mut entry) = reserve(kind) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        // SAFETY: `module.name` is a NUL-terminated array inside the struct; the helper bounds
        // the copy and fails cleanly on a bad pointer.
        let _ = unsafe {
            bpf_probe_read_kernel_str_bytes(
                (module + off.module_name as u64) as *const u8,
                &mut event.driver,
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
    let regs = ctx.as_ptr() as *const aya_ebpf::bindings::pt_regs;
    // SAFETY: a kprobe's context is the probed task's `pt_regs`.
    let sp = unsafe { (*regs).rsp };
    read_at(sp + 8 * (n - 5), 0)
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

/// Reports a MAC-side event of `kind` for `phydev` (0: none known).
fn mac_event(kind: RawKind, phydev: u64, fill: impl FnOnce(&mut RawEvent)) {
    let off = offsets();
    if phydev != 0 {
        note_resolve_phy(tid(), phydev);
    }
    if let Some(mut entry) = reserve(kind) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        if phydev != 0 {
            fill_phy(event, &off, phydev);
            fill_link(event, &off, phydev);
        }
        fill(event);
        entry.submit(0);
    }
}

/// `mac_link_up(config, phy, mode, interface, speed, duplex, tx_pause, rx_pause)` of a
/// phylink MAC (the AX88772's `ax88772_mac_link_up`).
#[kprobe]
pub fn mac_link_up(ctx: ProbeContext) -> u32 {
    let (Some(config), Some(phydev), Some(speed), Some(duplex)) = (
        ctx.arg::<u64>(0),
        ctx.arg::<u64>(1),
        ctx.arg::<i32>(4),
        ctx.arg::<i32>(5),
    ) else {
        return 0;
    };
    let _ = MAC_PHY.insert(config, phydev, 0);
    let tx_pause = stack_arg(&ctx, 6) & 1 != 0;
    let rx_pause = stack_arg(&ctx, 7) & 1 != 0;
    mac_event(RawKind::MacLinkUp, phydev, |event| {
        event.speed = speed;
        event.duplex = duplex as u8;
        event.value =
            if tx_pause { MAC_TX_PAUSE } else { 0 } | if rx_pause { MAC_RX_PAUSE } else { 0 };
    });
    0
}

/// `mac_link_down(config, mode, interface)` of a phylink MAC.
#[kprobe]
pub fn mac_link_down(ctx: ProbeContext) -> u32 {
    let Some(config) = ctx.arg::<u64>(0) else {
        return 0;
    };
    // SAFETY: the value is copied out at once.
    let phydev = unsafe { MAC_PHY.get(config) }.copied().unwrap_or(0);
    mac_event(RawKind::MacLinkDown, phydev, |_| {});
    0
}

fn carrier(ctx: &ProbeContext, kind: RawKind) -> u32 {
    let Some(netdev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    let off = offsets();
    let phydev: u64 = read_at(netdev, off.netdev_phydev);
    mac_event(kind, phydev, |event| {
        // SAFETY: `net_device.name` is an IFNAMSIZ array inside the struct; the helper bounds
        // the copy and fails cleanly on a bad pointer.
        let _ = unsafe {
            bpf_probe_read_kernel_str_bytes(
                (netdev + off.netdev_name as u64) as *const u8,
                &mut event.netdev,
            )
        };
    });
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
    let off = offsets();
    if let Some(mut entry) = reserve(RawKind::PhylinkResolve) {
        // SAFETY: `reserve` initialised the entry.
        let event = unsafe { entry.assume_init_mut() };
        event.latency_ns = event.ts_ns.saturating_sub(pending.ts_ns);
        if pending.phydev != 0 {
            fill_phy(event, &off, pending.phydev);
            fill_link(event, &off, pending.phydev);
        }
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
        event.func_ip = func_ip(&ctx);
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
        event.ret = ctx.ret::<i64>();
        event.latency_ns = event.ts_ns.saturating_sub(start);
        entry.submit(0);
    }
    0
}
