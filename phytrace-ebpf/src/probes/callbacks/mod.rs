//! The driver's callbacks: each entry pushes a frame on its thread's stack of open callbacks
//! and is reported with the PHY's state; each return pops the frame it matches (by stack
//! pointer) and is reported with its latency. By symbol here (`callback_enter`,
//! `callback_exit`); at phylib's call sites of driver operations in [`call_sites`].

mod call_sites;

use aya_ebpf::{
    macros::{kprobe, kretprobe},
    programs::{ProbeContext, RetProbeContext},
};
use phytrace_common::{DropCause, MAX_CALLBACK_DEPTH, RawEvent, RawKind};

use super::{
    context::{attach_cookie, entry_sp, return_sp},
    kernel::offsets,
    phy::{PhyView, VIEW_CALLBACK, view_and_name},
    ring::{count_drop, ktime_ns, reserve_for},
    thread::{ThreadState, frame_index, thread_state, tid},
};

/// A callback that has been entered and not yet returned.
#[derive(Clone, Copy)]
pub(super) struct Frame {
    /// The callback's probe key.
    pub(super) key: u64,
    phydev: u64,
    ts_ns: u64,
    /// Stack pointer at entry: a frame at or below a later entry's is not its caller, and a
    /// return matches the frame entered at its own stack pointer.
    sp: u64,
    state_before: u32,
    _pad: u32,
}

/// Callbacks kept open per thread (1..=MAX_CALLBACK_DEPTH), set by the loader.
#[unsafe(no_mangle)]
static CALLBACK_DEPTH: u32 = MAX_CALLBACK_DEPTH as u32;

/// How many callbacks a thread keeps open.
fn callback_depth() -> usize {
    // SAFETY: as in `kernel::offsets`.
    let depth = unsafe { core::ptr::read_volatile(&CALLBACK_DEPTH) } as usize;
    if depth == 0 || depth > MAX_CALLBACK_DEPTH {
        MAX_CALLBACK_DEPTH
    } else {
        depth
    }
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

/// A driver callback was entered (kprobe on its symbol; the cookie is its probe key).
#[kprobe]
pub fn callback_enter(ctx: ProbeContext) -> u32 {
    let Some(phydev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    let Some(view) = view_and_name(offsets(), phydev, VIEW_CALLBACK) else {
        return 0;
    };
    enter_callback(entry_sp(&ctx), phydev, attach_cookie(&ctx), view);
    0
}

/// A driver callback returned (kretprobe on its symbol).
#[kretprobe]
pub fn callback_exit(ctx: RetProbeContext) -> u32 {
    exit_callback(return_sp(&ctx), ctx.ret::<i32>(), Unmatched::Lost);
    0
}

/// A callback entered at stack pointer `sp` on `phydev` (read as `view`), named by `key`:
/// pushes its frame and records the entry.
#[inline(always)]
fn enter_callback(sp: u64, phydev: u64, key: u64, view: PhyView) {
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
