//! The probes at phylib's call sites of driver operations ([`crate::kernel::code`]): one kprobe on
//! each call instruction, one on the instruction it returns to (or a return probe on the
//! function, for a tail call), all in C code with an ftrace site, so that kernels refusing
//! kprobes in Rust code take them, and armed before any PHY driver loads.
//!
//! A hit names its callback by op and called address (`phytrace_common::call_site_key`);
//! the address is named here, through kallsyms, the first time it is seen.

use std::{os::fd::AsFd as _, sync::Arc};

use anyhow::Result;
use phytrace_common::{
    CallSite as SiteRecord, MAX_CALL_SITES, RawKind, SITE_CHECK_BOUND_DRIVER,
    SITE_TARGET_IN_MEMORY, split_call_site_key,
};

use super::{
    attach::{Programs, loaded_kprobe},
    bpf_memory::BpfMemory,
    driver_probes::DriverProbes,
    site_table::{self, SiteTable},
    trace_events::{self, EventLink},
};
use crate::event::Callback;
use crate::kernel::{
    code::{self, CallSite, Return, Target, phy_sites::Found, text_symbols::TextSymbols},
    snapshot::Snapshot,
    symbols,
};
use crate::records::{decode::Decoder, raw::Record};

/// How driver callbacks are to be probed (`--callback-probes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CallbackChoice {
    /// Call sites; the Rust symbols where no call site can be armed.
    #[default]
    Auto,
    /// At phylib's call sites: every driver, C or Rust.
    Callsite,
    /// On the Rust drivers' `Adapter<T>::*_callback` symbols.
    Symbol,
}

/// Which callback probes a session runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallbackProbes {
    Callsite,
    Symbol,
}

impl CallbackProbes {
    /// The name `record`, `probes` and the capture use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Callsite => "callsite",
            Self::Symbol => "symbol",
        }
    }
}

/// The programs: the call's entry, the return after it, a tail call's return.
pub const PROGRAMS: [&str; 3] = ["call_site_enter", "call_site_exit", "call_site_tail_exit"];

/// The call sites armed in this session.
pub struct CallSiteProbes {
    table: SiteTable,
    /// The kernel's functions, to name what a site called.
    symbols: Arc<TextSymbols>,
    /// Whether `symbols` were read since the last module loaded (not when the sites came
    /// from the cache).
    symbols_current: bool,
    /// The kprobes on the calls and return sites (the kprobe PMU's: dropped, they are gone).
    links: Vec<EventLink>,
    /// The module the sites are in, if it was not loaded when they were armed.
    pending: Option<String>,
    /// The return probes of the sites whose call the kernel refused, until
    /// [`Self::close_stranded`].
    stranded: Vec<EventLink>,
}

impl CallSiteProbes {
    /// Fills the programs' site table (`records`, [`site_table::records`] of `CALL_SITES`) and
    /// arms every site of `discovery` (at most [`MAX_CALL_SITES`]; more are reported in
    /// `notes`) with `programs`.
    pub fn arm(
        programs: &mut impl Programs,
        probes: &mut DriverProbes,
        records: site_table::Records,
        (discovery, symbols): Found,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        notes.extend(discovery.cache_damage.clone());
        let pending = discovery.pending.clone();
        if let Some(module) = &pending {
            notes.push(format!(
                "phylib's call sites were read from the file of {module}, which is not loaded: \
                 they are armed as the kernel loads it, before its first call"
            ));
        }
        if !discovery.rewritten.is_empty() {
            notes.push(format!(
                "kprobes of another tracer rewrote {} of the functions searched for call sites \
                 ({}): a call site there may be missing; start phytrace before other tracers",
                discovery.rewritten.len(),
                discovery.rewritten.join(", ")
            ));
        }
        let mut table = SiteTable::fill(
            records,
            discovery.sites,
            MAX_CALL_SITES,
            "PHY op",
            notes,
            record,
        )?;
        let (mut links, mut stranded) = (Vec::new(), Vec::new());
        // The kernel refuses some places (a kprobe blacklist, an instruction it cannot
        // single-step): the site's calls are not traced, the others are.
        let refused = table.arm(|cookie, site| match pending.as_deref() {
            Some(module) => arm_pending_site(programs, probes, site, module, cookie),
            None => arm_site(programs, probes, &mut links, &mut stranded, site, cookie),
        });
        notes.extend(
            refused.iter().map(|(site, err)| {
                format!("the call site {} is not traced: {err:#}", site.label())
            }),
        );
        Ok(Self {
            table,
            symbols_current: !symbols.is_empty(),
            symbols,
            links,
            stranded,
            pending,
        })
    }

    /// Detaches every site's probes (the tail calls' return probes go with `probes`).
    pub fn disarm(&mut self) {
        self.links.clear();
        self.stranded.clear();
    }

    /// Removes, on another thread, the return probes of the sites whose call the kernel
    /// refused: left until the session has started, as removing a kprobe waits for an RCU
    /// grace period (tens of milliseconds in a slow guest) and meanwhile holds back the
    /// kprobes and trace events being placed. They report nothing meanwhile: no call enters.
    pub fn close_stranded(&mut self) {
        let stranded = std::mem::take(&mut self.stranded);
        if stranded.is_empty() {
            return;
        }
        // With no thread to close them on, they close here.
        let _ = std::thread::Builder::new()
            .name("phytrace-close".into())
            .spawn(move || drop(stranded));
    }

    /// The module the sites are in, if it was not loaded when they were armed (they were
    /// armed as trace events the kernel places as it loads it).
    pub fn pending(&self) -> Option<&str> {
        self.pending.as_deref()
    }

    /// The sites armed.
    pub fn sites(&self) -> impl Iterator<Item = &CallSite> {
        self.table.armed()
    }

    /// How many sites found the kernel refused to probe.
    pub fn refused(&self) -> usize {
        self.table.refused()
    }

    /// Teaches `decoder` the callback of `record`'s call-site key, if it is new: the op and
    /// the function at the called address.
    pub fn teach(&mut self, decoder: &mut Decoder, record: &Record<'_>) {
        let Record::Event(raw) = record else {
            return;
        };
        if !matches!(
            RawKind::from_u8(raw.kind),
            Some(RawKind::CallbackEnter | RawKind::CallbackExit)
        ) || decoder.knows(raw.key)
        {
            return;
        }
        let Some((op, target)) = split_call_site_key(raw.key) else {
            return;
        };
        if self.symbols.function_at(target).is_none()
            && !self.symbols_current
            && let Ok(functions) = Snapshot::new(BpfMemory::reader).functions()
        {
            self.symbols = functions;
            self.symbols_current = true;
        }
        let op = code::OPS.get(usize::from(op)).copied().unwrap_or("unknown");
        decoder.add_callback(
            raw.key,
            callback(op, self.symbols.function_at(target), target),
        );
    }

    /// A module loaded: the functions a site calls may be new, read once when one is named.
    pub fn module_loaded(&mut self) {
        self.symbols_current = false;
    }

    /// Says, once per site, which sites the programs disabled since the last call because a
    /// hit failed the check (its called address was not the PHY's driver's op): their calls
    /// are not traced from then on.
    pub fn newly_disabled(&mut self) -> Result<Vec<String>> {
        self.table
            .newly_disabled("call site", |op| format!("the PHY's driver's {op}"))
    }
}

/// Arms `site`'s return probe, then its entry probe (carrying `cookie`, its index in the site
/// table): a return armed without its entry finds no frame and reports nothing. An entry the
/// kernel refuses takes its return probe away again (to `stranded`, see
/// [`CallSiteProbes::close_stranded`]): alone, it would only cost each pass. The kprobes are
/// the kprobe PMU's (added to `links`); a tail call's return probe is a tracefs event of
/// `probes`, which can give it room for more calls in flight and counts its misses.
fn arm_site(
    programs: &mut impl Programs,
    probes: &mut DriverProbes,
    links: &mut Vec<EventLink>,
    stranded: &mut Vec<EventLink>,
    site: &CallSite,
    cookie: u64,
) -> Result<()> {
    let returns_armed = links.len();
    let mut kprobe = |programs: &mut _, program: &str, offset: u32| -> Result<()> {
        let fd = loaded_kprobe(programs, program)?.fd()?.try_clone()?;
        let link =
            trace_events::attach_kprobe(fd.as_fd(), &site.function, u64::from(offset), cookie)?;
        links.push(link);
        Ok(())
    };
    match site.found.ret {
        Return::After(offset) => kprobe(programs, PROGRAMS[1], offset)?,
        Return::Tail => {
            let name = format!("site_{}", site.op());
            probes.arm_site(
                programs,
                PROGRAMS[2],
                &name,
                true,
                (None, &site.function),
                cookie,
            )?;
        }
    }
    kprobe(programs, PROGRAMS[0], site.found.offset).inspect_err(|_| {
        stranded.extend(links.drain(returns_armed..));
        if site.found.ret == Return::Tail {
            probes.disarm_last_site();
        }
    })
}

/// Arms `site` of `module`, which is not loaded yet, as trace events the kernel places as the
/// module loads (`MODULE:FUNCTION+0xOFF`, in `probes`): its return first, then its entry; an
/// entry refused takes its return away again.
fn arm_pending_site(
    programs: &mut impl Programs,
    probes: &mut DriverProbes,
    site: &CallSite,
    module: &str,
    cookie: u64,
) -> Result<()> {
    let name = format!("site_{}", site.op());
    let (program, on_return, place) = match site.return_place() {
        Some(place) => (PROGRAMS[1], false, place),
        None => (PROGRAMS[2], true, site.function.clone()),
    };
    probes.arm_site(
        programs,
        program,
        &name,
        on_return,
        (Some(module), &place),
        cookie,
    )?;
    let entry = site.place();
    probes
        .arm_site(
            programs,
            PROGRAMS[0],
            &name,
            false,
            (Some(module), &entry),
            cookie,
        )
        .inspect_err(|_| probes.disarm_last_site())
}

/// The programs' record of `site`.
fn record(site: &CallSite) -> SiteRecord {
    let (flags, target_reg, base_reg) = match site.found.target {
        Target::Register(reg) => (SITE_CHECK_BOUND_DRIVER, reg, 0),
        Target::Memory(base) => (SITE_CHECK_BOUND_DRIVER | SITE_TARGET_IN_MEMORY, 0, base),
    };
    SiteRecord {
        op: site.found.op,
        flags,
        op_offset: site.op_offset,
        target_reg,
        base_reg,
        mismatches: 0,
        holder_displacement: 0,
        arg0_displacement: 0,
        _pad: 0,
        hits: 0,
    }
}

/// The callback `op` implemented by `function` (at `target`): a Rust driver's adapter is named
/// by its driver type, as the symbol probes name it; a C function by its name.
fn callback(op: &str, function: Option<(&str, Option<&str>)>, target: u64) -> Callback {
    let implementation = match function {
        Some((name, module)) => symbols::callback_symbol(name, module.unwrap_or("vmlinux"), target)
            .map_or_else(|| name.to_owned(), |symbol| symbol.driver_type),
        None => format!("{target:#x}"),
    };
    Callback {
        name: op.into(),
        driver_type: implementation.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_adapter_is_named_by_its_driver_type_a_c_function_by_itself() {
        let rust = "_RNvMs_NtNtCs1234567890a_6kernel3net3phyINtB4_7AdapterNtCs0987654321b_13ax88796b_rust11PhyAX88772AE20read_status_callback";
        let named = callback("read_status", Some((rust, Some("ax88796b_rust"))), 1);
        assert_eq!(&*named.name, "read_status");
        assert_eq!(&*named.driver_type, "ax88796b_rust::PhyAX88772A");
        let named = callback("soft_reset", Some(("asix_soft_reset", Some("ax88796b"))), 1);
        assert_eq!(&*named.driver_type, "asix_soft_reset");
        let named = callback("suspend", None, 0xffff_ffff_a000_0010);
        assert_eq!(&*named.driver_type, "0xffffffffa0000010");
    }

    #[test]
    fn a_site_is_checked_against_the_bound_driver() {
        let site = CallSite {
            function: "phy_init_hw".to_owned(),
            found: code::Found {
                offset: 0x2f,
                op: 2,
                target: Target::Register(80),
                ret: Return::After(0x31),
                owner: None,
            },
            op_offset: 0xd0,
            op_name: "soft_reset",
        };
        let record = record(&site);
        assert_eq!(
            (record.flags, record.target_reg, record.op_offset),
            (SITE_CHECK_BOUND_DRIVER, 80, 0xd0)
        );
        let in_memory = CallSite {
            found: code::Found {
                target: Target::Memory(24),
                ..site.found
            },
            ..site
        };
        let record = super::record(&in_memory);
        assert_eq!(
            (record.flags, record.base_reg),
            (SITE_CHECK_BOUND_DRIVER | SITE_TARGET_IN_MEMORY, 24)
        );
    }
}
