//! Kprobe events defined in tracefs, with a BPF program attached to each through perf.
//!
//! A kprobe event `p:GROUP/NAME MODULE:SYMBOL` may name a module that is not loaded yet: the
//! kernel keeps it and arms it from its module notifier as the module comes in, before the
//! module's init runs, and again on every later load, until the event is removed. A BPF
//! program attached to the event (perf_event_open of the event's tracepoint id, then a perf
//! link carrying a cookie) therefore sees a driver from its first callback on, however often it
//! is reloaded. The cookie tells the program which callback fired without knowing its address,
//! which a module not loaded yet does not have.

use std::{
    fs,
    io::{self, Write as _},
    os::fd::{AsFd, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
    path::{Path, PathBuf},
};

use thiserror::Error;

use crate::kernel::tracefs::{TracefsError, tracefs};

/// Event group prefix: groups are `phytrace_PID`, so that a session's leftovers (after a
/// SIGKILL) are told by a process that no longer exists.
const GROUP_PREFIX: &str = "phytrace_";

/// Longest event name tracefs accepts (`MAX_EVENT_NAME_LEN - 1`).
const MAX_NAME: usize = 63;

/// What went wrong with a trace event.
#[derive(Debug, Error)]
pub enum TraceEventError {
    #[error(transparent)]
    Tracefs(#[from] TracefsError),
    #[error("this kernel has no kprobe events ({0} is missing): it needs CONFIG_KPROBE_EVENTS=y")]
    NoKprobeEvents(PathBuf),
    #[error("defining the kprobe event `{definition}` in {file} failed: {source}")]
    Define {
        definition: String,
        file: PathBuf,
        source: io::Error,
    },
    #[error("reading the id of trace event {path}: {source}")]
    Id { path: PathBuf, source: io::Error },
    #[error("opening a perf event on trace event {event}: {source}")]
    PerfOpen { event: String, source: io::Error },
    #[error("attaching the BPF program to trace event {event}: {source}")]
    Link { event: String, source: io::Error },
}

impl TraceEventError {
    /// The OS error code, if the kernel refused something.
    pub fn os_error(&self) -> Option<i32> {
        match self {
            Self::Define { source, .. }
            | Self::Id { source, .. }
            | Self::PerfOpen { source, .. }
            | Self::Link { source, .. } => source.raw_os_error(),
            Self::Tracefs(err) => err.os_error(),
            Self::NoKprobeEvents(_) => None,
        }
    }
}

/// Which end of a function an event fires at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// On entry (`p:`).
    Entry,
    /// On return (`rN:`), with room for this many calls in flight at once.
    Return { max_active: u32 },
}

/// This session's kprobe events in tracefs.
pub struct EventGroup {
    kprobe_events: PathBuf,
    kprobe_profile: PathBuf,
    events_dir: PathBuf,
    group: String,
    defined: Vec<String>,
    /// The return events among them.
    returns: Vec<String>,
    /// Misses of return events removed since (a module unloaded).
    retired_misses: u64,
}

impl EventGroup {
    /// The group of this process, after removing groups left by phytrace processes that are
    /// gone (a SIGKILL leaves its events defined).
    pub fn open() -> Result<Self, TraceEventError> {
        let root = tracefs()?;
        let kprobe_events = root.join("kprobe_events");
        if !kprobe_events.exists() {
            return Err(TraceEventError::NoKprobeEvents(kprobe_events));
        }
        let group = EventGroup {
            events_dir: root.join("events"),
            kprobe_profile: root.join("kprobe_profile"),
            kprobe_events,
            group: format!("{GROUP_PREFIX}{}", std::process::id()),
            defined: Vec::new(),
            returns: Vec::new(),
            retired_misses: 0,
        };
        group.remove_stale();
        Ok(group)
    }

    /// Defines the event `name` on `module:symbol` (the module need not be loaded; `None`:
    /// a symbol of vmlinux or of a built-in module) and returns its tracepoint id.
    pub fn define(
        &mut self,
        name: &str,
        probe: Probe,
        module: Option<&str>,
        symbol: &str,
    ) -> Result<u64, TraceEventError> {
        let name = event_name(name);
        let kind = match probe {
            Probe::Entry => "p".to_owned(),
            Probe::Return { max_active } => format!("r{max_active}"),
        };
        let place = match module {
            Some(module) => format!("{module}:{symbol}"),
            None => symbol.to_owned(),
        };
        let definition = format!("{kind}:{}/{name} {place}", self.group);
        self.command(&definition)
            .map_err(|source| TraceEventError::Define {
                definition: definition.clone(),
                file: self.kprobe_events.clone(),
                source,
            })?;
        self.defined.push(name.clone());
        if matches!(probe, Probe::Return { .. }) {
            self.returns.push(name.clone());
        }
        let path = self.events_dir.join(&self.group).join(&name).join("id");
        fs::read_to_string(&path)
            .and_then(|text| {
                text.trim()
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not a number"))
            })
            .map_err(|source| TraceEventError::Id { path, source })
    }

    /// Removes one event of this group (its links must be closed first).
    pub fn remove(&mut self, name: &str) {
        let name = event_name(name);
        if self.returns.contains(&name)
            && let Ok(text) = fs::read_to_string(&self.kprobe_profile)
        {
            self.retired_misses += profile_misses(&text, std::slice::from_ref(&name));
        }
        let _ = self.command(&format!("-:{}/{name}", self.group));
        self.defined.retain(|n| *n != name);
        self.returns.retain(|n| *n != name);
    }

    /// Calls whose return the kernel could not report to this group's return events
    /// (`kprobe_profile`'s misses: no free kretprobe instance), since they were defined.
    pub fn missed_returns(&self) -> io::Result<u64> {
        let text = fs::read_to_string(&self.kprobe_profile)?;
        Ok(self.retired_misses + profile_misses(&text, &self.returns))
    }

    fn command(&self, line: &str) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&self.kprobe_events)?;
        file.write_all(format!("{line}\n").as_bytes())
    }

    /// Removes the events of `phytrace_PID` groups whose process is gone.
    fn remove_stale(&self) {
        let Ok(text) = fs::read_to_string(&self.kprobe_events) else {
            return;
        };
        for (group, name) in stale_events(&text, |pid| Path::new(&format!("/proc/{pid}")).exists())
        {
            let _ = self.command(&format!("-:{group}/{name}"));
        }
    }
}

impl Drop for EventGroup {
    fn drop(&mut self) {
        for name in std::mem::take(&mut self.defined) {
            let _ = self.command(&format!("-:{}/{name}", self.group));
        }
    }
}

/// `name` made a valid event name: letters, digits and `_`, at most [`MAX_NAME`] bytes.
fn event_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(MAX_NAME)
        .collect()
}

/// The misses `kprobe_profile` (lines `NAME HITS MISSES`; the name has no group) counts for
/// the events `names`.
fn profile_misses(text: &str, names: &[String]) -> u64 {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?;
            let misses: u64 = fields.nth(1)?.parse().ok()?;
            names.iter().any(|n| n == name).then_some(misses)
        })
        .sum()
}

/// (group, event) of the lines of `kprobe_events` that belong to a phytrace process for
/// which `alive` is false.
fn stale_events(text: &str, alive: impl Fn(u32) -> bool) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(':')?;
            let (event, _) = rest.split_once(' ')?;
            let (group, name) = event.split_once('/')?;
            let pid: u32 = group.strip_prefix(GROUP_PREFIX)?.parse().ok()?;
            (!alive(pid)).then(|| (group.to_owned(), name.to_owned()))
        })
        .collect()
}

/// A BPF program attached to a trace event; detached when dropped.
pub struct EventLink {
    // Declared first: the link goes before the perf event it holds.
    _link: OwnedFd,
    _perf: OwnedFd,
}

/// `PERF_TYPE_TRACEPOINT`.
const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_EVENT_IOC_ENABLE`.
const PERF_EVENT_IOC_ENABLE: libc::Ioctl = 0x2400;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `BPF_LINK_CREATE`.
const BPF_LINK_CREATE: libc::c_long = 28;
/// `BPF_PERF_EVENT`.
const BPF_PERF_EVENT: u32 = 41;

/// The first `PERF_ATTR_SIZE_VER1` bytes of `struct perf_event_attr`.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    /// `kprobe_func` for the kprobe PMU.
    config1: u64,
    /// `probe_offset` for the kprobe PMU.
    config2: u64,
}

/// The `link_create` member of `union bpf_attr`, for a perf event with a cookie.
#[repr(C)]
struct LinkCreatePerfEvent {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    bpf_cookie: u64,
}

/// Attaches `program` (a kprobe program) to the trace event with tracepoint id `id`,
/// handing it `cookie` on every hit (`bpf_get_attach_cookie`).
pub fn attach(
    program: BorrowedFd<'_>,
    id: u64,
    cookie: u64,
    event: &str,
) -> Result<EventLink, TraceEventError> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        config: id,
        ..PerfEventAttr::default()
    };
    link(program, open_perf(attr, event)?, cookie, event)
}

/// Attaches `program` (a kprobe program) to a kprobe of the kprobe PMU at `offset` into
/// `function` of vmlinux (no tracefs event: nothing is left behind by a killed process, and
/// nothing is created in tracefs), handing it `cookie` on every hit.
pub fn attach_kprobe(
    program: BorrowedFd<'_>,
    function: &str,
    offset: u64,
    cookie: u64,
) -> Result<EventLink, TraceEventError> {
    let event = format!("{function}+{offset:#x}");
    let pmu_error = |source| TraceEventError::PerfOpen {
        event: event.clone(),
        source,
    };
    let kind = fs::read_to_string(Path::new(super::attach::KPROBE_PMU).join("type"))
        .and_then(|text| {
            text.trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not a number"))
        })
        .map_err(pmu_error)?;
    let name = std::ffi::CString::new(function).map_err(|_| {
        pmu_error(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL in the name",
        ))
    })?;
    let attr = PerfEventAttr {
        kind,
        config1: name.as_ptr() as u64,
        config2: offset,
        ..PerfEventAttr::default()
    };
    let perf = open_perf(attr, &event)?;
    // The kernel copied the name in the call: `name` lived until it returned.
    drop(name);
    link(program, perf, cookie, &event)
}

/// Opens a system-wide perf event of `attr` (sampling every hit), named `event` in errors.
fn open_perf(attr: PerfEventAttr, event: &str) -> Result<OwnedFd, TraceEventError> {
    let attr = PerfEventAttr {
        size: size_of::<PerfEventAttr>() as u32,
        sample_period: 1,
        wakeup_events: 1,
        ..attr
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares (its pointers, if any,
    // valid for the call); pid -1 with cpu 0 opens a system-wide event (the program runs on
    // every CPU); the returned descriptor is checked and then owned.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1,
            0,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        );
        if fd < 0 {
            return Err(TraceEventError::PerfOpen {
                event: event.to_owned(),
                source: io::Error::last_os_error(),
            });
        }
        Ok(OwnedFd::from_raw_fd(fd as i32))
    }
}

/// Links `program` to the perf event `perf` with `cookie` and enables the event.
fn link(
    program: BorrowedFd<'_>,
    perf: OwnedFd,
    cookie: u64,
    event: &str,
) -> Result<EventLink, TraceEventError> {
    let link_attr = LinkCreatePerfEvent {
        prog_fd: program.as_raw_fd() as u32,
        target_fd: perf.as_raw_fd() as u32,
        attach_type: BPF_PERF_EVENT,
        flags: 0,
        bpf_cookie: cookie,
    };
    let link_error = |source| TraceEventError::Link {
        event: event.to_owned(),
        source,
    };
    // SAFETY: `link_attr` is the `link_create` prefix of `union bpf_attr` with the size
    // passed; the kernel zero-fills the rest. The returned descriptor is checked and owned.
    let link = unsafe {
        let fd = libc::syscall(
            libc::SYS_bpf,
            BPF_LINK_CREATE,
            &link_attr as *const LinkCreatePerfEvent,
            size_of::<LinkCreatePerfEvent>() as u32,
        );
        if fd < 0 {
            return Err(link_error(io::Error::last_os_error()));
        }
        OwnedFd::from_raw_fd(fd as i32)
    };
    // SAFETY: an ioctl without argument on the perf event descriptor we own.
    if unsafe { libc::ioctl(perf.as_fd().as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) } < 0 {
        return Err(TraceEventError::PerfOpen {
            event: event.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(EventLink {
        _link: link,
        _perf: perf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_made_valid_and_bounded() {
        assert_eq!(
            event_name("ax88796b_rust:read-status"),
            "ax88796b_rust_read_status"
        );
        assert_eq!(event_name(&"x".repeat(100)).len(), MAX_NAME);
    }

    #[test]
    fn misses_are_summed_over_this_groups_return_events() {
        let profile = "  ax88796b_rust_read_status_ret              120               3\n  \
                       ax88796b_rust_read_status                  123               0\n  \
                       other_ret                                   10               7\n";
        let names = ["ax88796b_rust_read_status_ret".to_owned()];
        assert_eq!(profile_misses(profile, &names), 3);
        assert_eq!(profile_misses("garbage\n\n", &names), 0);
    }

    #[test]
    fn only_groups_of_dead_phytrace_processes_are_stale() {
        let text = "p:phytrace_12/c1e ax88796b_rust:_RNvXs\n\
                    r16:phytrace_34/c1r ax88796b_rust:_RNvXs\n\
                    p:mine/probe do_sys_openat2\n\
                    p:phytrace_x/odd vfs_read\n";
        let stale = stale_events(text, |pid| pid == 12);
        assert_eq!(stale, [("phytrace_34".to_owned(), "c1r".to_owned())]);
    }

    #[test]
    fn perf_attr_is_the_second_abi_version() {
        // PERF_ATTR_SIZE_VER1: config2, the kprobe PMU's offset.
        assert_eq!(size_of::<PerfEventAttr>(), 72);
    }
}
