//! MDIO accesses: an accessor's entry notes when (from a trampoline in its bus's slot,
//! [`bus_slots`]; from a kprobe in the thread's state, with its arguments); its return reports the access with the PHY at the address, the callback open on the thread (the
//! one that made it) and its latency. The programs are fentry/fexit on BPF trampolines
//! ([`trampolines`]), or their kprobe twins ([`kprobes`]): where the kernel has no trampolines
//! or when asked, and at the bus-op calls in the copies of the accessors a compiler inlined.

mod bus_slots;
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

/// An MDIO accessor was entered through a kprobe: notes when, and the arguments its
/// kretprobe will lack, in the thread's state.
fn mdio_begin(call: &MdioCall) -> u32 {
    if let Some(state) = thread_state() {
        state.mdio_ts = ktime_ns();
        state.mdio_bus = call.bus;
        state.mdio_addr = call.addr;
        state.mdio_devad = call.devad;
        state.mdio_regnum = call.regnum as u16;
        state.mdio_value = call.value;
    }
    0
}

/// An MDIO accessor of `bus` (a trampoline's typed pointer) was entered through its
/// trampoline: notes when, in the bus's slot, or where another bus holds it, in the thread's
/// state (its fexit has the arguments).
fn mdio_begin_on_bus(bus: u64) -> u32 {
    let Some(bus) = bus_slots::plain(bus) else {
        return 0;
    };
    let ts = ktime_ns();
    if !bus_slots::begin(bus, ts)
        && let Some(state) = thread_state()
    {
        state.mdio_ts = ts;
        state.mdio_bus = bus;
    }
    0
}

/// An MDIO accessor returned `ret`: reports the access with its PHY, the callback that made
/// it and its latency. `call` is `None` from a kretprobe (its arguments come from the entry).
/// The thread's access is taken either way: where a kprobe and a trampoline both saw the
/// access (while the accessors move from one to the other), the fexit, which runs first,
/// reports it and the kretprobe finds none.
#[inline(always)]
fn mdio_end(kind: RawKind, call: Option<MdioCall>, ret: i32) -> u32 {
    let mut call = call;
    let (mut start, mut key, mut depth) = (0, 0, 0);
    let tid;
    let bus = match thread_state() {
        Some(state) => {
            let entered = core::mem::take(&mut state.mdio_ts);
            tid = state.tid();
            let open = state.depth as usize;
            if open > 0 && open <= MAX_CALLBACK_DEPTH {
                key = state.frames[frame_index(open - 1)].key;
                depth = open as u8;
            }
            match &call {
                Some(call) => {
                    let bus = state.plain(call.bus);
                    start = bus_slots::end(bus)
                        .or((entered != 0 && state.mdio_bus == bus).then_some(entered))
                        .unwrap_or(0);
                    Some(bus)
                }
                None if entered != 0 => {
                    start = entered;
                    call = Some(MdioCall {
                        bus: state.mdio_bus,
                        addr: state.mdio_addr,
                        devad: state.mdio_devad,
                        regnum: state.mdio_regnum as u32,
                        value: state.mdio_value,
                    });
                    Some(state.mdio_bus)
                }
                None => None,
            }
        }
        None => {
            tid = self::tid();
            call.as_ref().map(|call| {
                let bus = untyped(call.bus);
                start = bus_slots::end(bus).unwrap_or(0);
                bus
            })
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
