//! MDIO accesses: an accessor's entry notes when (and, from a kprobe, its arguments); its
//! return reports the access with the PHY at the address, the callback open on the thread (the
//! one that made it) and its latency. The programs are fentry/fexit on BPF trampolines
//! ([`trampolines`]), or their kprobe twins ([`kprobes`]): where the kernel has no trampolines
//! or when asked, and at the bus-op calls in the copies of the accessors a compiler inlined.

mod devices;
mod kprobes;
mod trampolines;

use phytrace_common::{MAX_CALLBACK_DEPTH, RawKind};

use self::devices::mdio_phy;
use super::{
    kernel::{offsets, untyped},
    phy::PhyStatus,
    ring::{ktime_ns, reserve_for},
    thread::{frame_index, thread_state, tid},
};

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

/// An MDIO accessor returned `ret`: reports the access with its PHY, the callback that made
/// it and its latency. `call` is `None` from a kretprobe (its arguments come from the entry).
/// The thread's access is taken either way: where a kprobe and a trampoline both saw it (while
/// the accessors move from one to the other), the fexit, which runs first, reports it and the
/// kretprobe finds none.
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
