//! The probes at phylib's call sites of driver operations ([`super::callsites`]): one kprobe on
//! each call instruction, one on the instruction it returns to (or a return probe on the
//! function, for a tail call), all in C code with an ftrace site, so that kernels refusing
//! kprobes in Rust code take them, and armed before any PHY driver loads.
//!
//! A hit names its callback by op and called address (`phytrace_common::call_site_key`);
//! the address is named here, through kallsyms, the first time it is seen.

use std::{
    fs,
    os::fd::AsFd as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use phytrace_common::{
    CallSite as SiteRecord, MAX_CALL_SITES, RawKind, SITE_CHECK_BOUND_DRIVER,
    SITE_TARGET_IN_MEMORY, split_call_site_key,
};

use super::{
    attach::{Programs, loaded_kprobe},
    bpf_memory::BpfMemory,
    callsites::{
        self, CallSite, Discovery, Isa, Layout, Return, Target, cache,
        kallsyms::TextSymbols,
        text::{Kcore, KernelMemory},
    },
    driver_probes::DriverProbes,
    error::ProbeError,
    site_table::{self, SiteTable},
    support,
    symbols::{self, KALLSYMS},
    trace_events::{self, EventLink},
};
use crate::event::Callback;
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

/// The call sites found, with the text symbols that name what they call.
pub type Found = (Discovery, TextSymbols);

/// Finds the running kernel's call sites of the ops at `layout` (kallsyms and the kernel's
/// code), or takes them from `cache` (a directory, see [`callsites::cache`]) where this boot's
/// were kept; keeps them there. Returns the reader of the kernel's code, `None` if they came
/// from the cache.
pub fn find(layout: &Layout, cache: Option<&Path>) -> Result<(Found, Option<TextReader>)> {
    find_with(layout, cache, None)
}

/// [`find`], with kallsyms if already read (`kallsyms`, for a search: not read again). The
/// sites taken from the cache come without symbols: they are named when a callback is first
/// seen (`CallSiteProbes::teach` reads kallsyms then).
pub fn find_with(
    layout: &Layout,
    cache: Option<&Path>,
    kallsyms: Option<&str>,
) -> Result<(Found, Option<TextReader>)> {
    let key = cache.and_then(|_| cache::Key::running(layout));
    let lookup = match (cache, &key) {
        (Some(dir), Some(key)) => cache::load(dir, key, layout),
        _ => cache::Lookup::Miss,
    };
    if let cache::Lookup::Hit(discovery) = lookup {
        return Ok(((discovery, TextSymbols::default()), None));
    }
    let read;
    let kallsyms = match kallsyms {
        Some(kallsyms) => kallsyms,
        None => {
            read = fs::read_to_string(KALLSYMS).with_context(|| format!("reading {KALLSYMS}"))?;
            &read
        }
    };
    let (mut found, reader) = discover(layout, kallsyms)?;
    found.0.cache_damage = lookup.damage_note();
    if let (Some(dir), Some(key)) = (cache, &key) {
        // A cache that cannot be written costs the next session the search, nothing else.
        let _ = cache::store(dir, key, &found.0);
    }
    Ok((found, Some(reader)))
}

/// Where the kernel lists its kprobes (debugfs).
const KPROBES_LIST: &str = "/sys/kernel/debug/kprobes/list";

/// The addresses of the kprobes in `list` (the format of [`KPROBES_LIST`]) that rewrote an
/// instruction a call site may be made of: not those on ftrace, disabled (their instruction
/// restored), or at a function's entry, whose first instruction is its ftrace site (a nop;
/// arm64 probes it with a breakpoint, phytrace's own entry and return probes included).
fn rewritten_addresses(list: &str) -> Vec<u64> {
    list.lines()
        .filter(|line| !line.contains("[FTRACE]") && !line.contains("[DISABLED]"))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let place = fields.nth(1)?;
            (!place.ends_with("+0x0")).then_some(address)
        })
        .collect()
}

/// The addresses where running kprobes rewrote the kernel's code; none where the kernel does
/// not list them (no debugfs: other tracers' kprobes are not known, nor said).
pub fn probed_addresses() -> Vec<u64> {
    fs::read_to_string(KPROBES_LIST)
        .map(|list| rewritten_addresses(&list))
        .unwrap_or_default()
}

/// [`find`] on the call sites in kallsyms text `kallsyms`, with the reader of the kernel's
/// code.
fn discover(layout: &Layout, kallsyms: &str) -> Result<(Found, TextReader)> {
    let symbols = TextSymbols::parse(kallsyms);
    let mut text = open_kernel_text()?;
    let probed = probed_addresses();
    let discovery = callsites::discover(&symbols, &mut text, layout, Isa::native(), &probed)
        .map_err(|err| ProbeError::unavailable(format!("finding phylib's call sites: {err:#}")))?;
    if discovery.sites.is_empty() && !discovery.rewritten.is_empty() {
        return Err(ProbeError::unavailable(format!(
            "no call site of a phy_driver operation found: kprobes of a running tracer (another \
             phytrace session?) rewrote the code of {} of the {} functions decoded ({}), where \
             the sites are; try again when it stops",
            discovery.rewritten.len(),
            discovery.functions_decoded,
            discovery.rewritten.join(", ")
        ))
        .into());
    }
    if discovery.sites.is_empty() {
        return Err(ProbeError::unavailable(format!(
            "no call site of a phy_driver operation found in {} bytes of kernel text \
             ({} functions decoded): is phylib built in (CONFIG_PHYLIB=y)?",
            discovery.text_bytes, discovery.functions_decoded
        ))
        .into());
    }
    Ok(((discovery, symbols), text.reader()))
}

/// Call sites being found on another thread (reading the kernel text takes about as long as
/// loading the programs in a slow guest).
pub struct Finding(std::thread::JoinHandle<Result<(Found, Sourcing)>>);

/// How a session had its call sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sourcing {
    /// Finding them (or reading them from the cache) took this long.
    pub took: Duration,
    /// They were this boot's, kept in the cache by an earlier session.
    pub cached: bool,
    /// Otherwise, the reader of the kernel's code they were found in.
    pub reader: Option<TextReader>,
}

impl Finding {
    /// The call sites, and how they were had.
    pub fn join(self) -> Result<(Found, Sourcing)> {
        self.0
            .join()
            .map_err(|_| anyhow::anyhow!("the call-site reader stopped"))?
    }
}

/// Starts [`find`] on another thread, for the ops at `layout`, with the cache in `cache` (an
/// error in it is returned by [`Finding::join`]).
pub fn find_meanwhile(layout: Result<Layout>, cache: Option<PathBuf>) -> Result<Finding> {
    std::thread::Builder::new()
        .name("phytrace-sites".into())
        .spawn(move || {
            let started = Instant::now();
            let (found, reader) = find(&layout?, cache.as_deref())?;
            let took = started.elapsed();
            let cached = reader.is_none();
            Ok((
                found,
                Sourcing {
                    took,
                    cached,
                    reader,
                },
            ))
        })
        .map(Finding)
        .context("starting a thread")
}

/// How the kernel's code is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextReader {
    /// From [`callsites::text::KCORE`] (`CAP_SYS_RAWIO`).
    Kcore,
    /// By a BPF program ([`BpfMemory`]: `CAP_BPF` and `CAP_PERFMON`).
    Bpf,
}

impl TextReader {
    /// The name `record --status` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Kcore => "kcore",
            Self::Bpf => "bpf",
        }
    }
}

/// The running kernel's code, through the reader [`open_kernel_text`] chose.
pub enum KernelText {
    Kcore(Kcore),
    Bpf(Box<BpfMemory>),
}

impl KernelText {
    /// Which reader it is.
    pub const fn reader(&self) -> TextReader {
        match self {
            Self::Kcore(_) => TextReader::Kcore,
            Self::Bpf(_) => TextReader::Bpf,
        }
    }
}

impl KernelMemory for KernelText {
    fn read(&mut self, address: u64, len: usize) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Kcore(kcore) => kcore.read(address, len),
            Self::Bpf(bpf) => bpf.read(address, len),
        }
    }
}

/// The running kernel's code: [`callsites::text::KCORE`], or where that is refused for want of
/// privileges (`CAP_SYS_RAWIO`), a BPF program's reads; else an error naming why neither can
/// read it and the fix. The one place that chooses.
pub fn open_kernel_text() -> Result<KernelText> {
    let refused = match Kcore::open(Path::new(callsites::text::KCORE)) {
        Ok(kcore) => return Ok(KernelText::Kcore(kcore)),
        Err(err) => err,
    };
    match kcore_refusal(&refused, support::refused_by_lockdown()) {
        KcoreRefusal::Privileges => BpfMemory::open()
            .map(|bpf| KernelText::Bpf(Box::new(bpf)))
            .map_err(|bpf| both_refused(&refused, &bpf)),
        KcoreRefusal::Final(why) => Err(ProbeError::unavailable(why).into()),
    }
}

/// What a refused [`callsites::text::KCORE`] leaves.
#[derive(Debug, PartialEq, Eq)]
enum KcoreRefusal {
    /// Refused for want of `CAP_SYS_RAWIO`: BPF may read the code.
    Privileges,
    /// Nothing else can read it, for this reason.
    Final(String),
}

/// Why [`callsites::text::KCORE`] could not be opened (`err`), under the refusing lockdown
/// `lockdown` if any (which refuses it with EPERM too, and every other read of kernel memory).
fn kcore_refusal(err: &std::io::Error, lockdown: Option<String>) -> KcoreRefusal {
    let kcore = callsites::text::KCORE;
    match (err.raw_os_error(), lockdown) {
        (Some(libc::EPERM | libc::EACCES), Some(lockdown)) => KcoreRefusal::Final(lockdown),
        (Some(libc::EPERM | libc::EACCES), None) => KcoreRefusal::Privileges,
        (Some(libc::ENOENT), _) => KcoreRefusal::Final(format!(
            "{kcore} is missing: the kernel was built without CONFIG_PROC_KCORE"
        )),
        _ => KcoreRefusal::Final(format!("reading {kcore}: {err}")),
    }
}

/// Neither reader can read the kernel's code: kcore refused for want of privileges (`kcore`),
/// the BPF reader for `bpf`.
fn both_refused(kcore: &std::io::Error, bpf: &anyhow::Error) -> anyhow::Error {
    let message = format!(
        "reading the kernel's code: {}: {kcore} (it needs CAP_SYS_RAWIO), and through BPF: \
         {bpf:#}",
        callsites::text::KCORE
    );
    match bpf.downcast_ref::<ProbeError>() {
        Some(refusal) => ProbeError::refused(refusal.cause, message),
        None => ProbeError::unavailable(message),
    }
    .into()
}

/// The call sites armed in this session.
pub struct CallSiteProbes {
    table: SiteTable,
    /// The kernel's functions, to name what a site called.
    symbols: TextSymbols,
    /// Whether `symbols` were read since the last module loaded (not when the sites came
    /// from the cache).
    symbols_current: bool,
    /// The kprobes on the calls and return sites (the kprobe PMU's: dropped, they are gone).
    links: Vec<EventLink>,
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
        let refused = table.arm(|cookie, site| {
            arm_site(programs, probes, &mut links, &mut stranded, site, cookie)
        });
        notes.extend(refused.iter().map(|(site, err)| {
            format!(
                "the call site {} is not traced: {}",
                site.label(),
                site_table::refusal(site, err)
            )
        }));
        Ok(Self {
            table,
            symbols_current: !symbols.is_empty(),
            symbols,
            links,
            stranded,
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
            && let Ok(text) = fs::read_to_string(KALLSYMS)
        {
            self.symbols = TextSymbols::parse(&text);
            self.symbols_current = true;
        }
        let op = callsites::OPS
            .get(usize::from(op))
            .copied()
            .unwrap_or("unknown");
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
            probes.arm_site(programs, PROGRAMS[2], &name, true, &site.function, cookie)?;
        }
    }
    kprobe(programs, PROGRAMS[0], site.found.offset).inspect_err(|_| {
        stranded.extend(links.drain(returns_armed..));
        if site.found.ret == Return::Tail {
            probes.disarm_last_site();
        }
    })
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
    fn only_kcore_refused_for_privileges_turns_to_bpf() {
        let err = std::io::Error::from_raw_os_error;
        for code in [libc::EPERM, libc::EACCES] {
            assert_eq!(kcore_refusal(&err(code), None), KcoreRefusal::Privileges);
        }
        // Confidentiality refuses kcore with EPERM, and BPF's reads too: the lockdown is named.
        let locked = "the kernel is locked down".to_owned();
        assert_eq!(
            kcore_refusal(&err(libc::EPERM), Some(locked.clone())),
            KcoreRefusal::Final(locked)
        );
        let KcoreRefusal::Final(missing) = kcore_refusal(&err(libc::ENOENT), None) else {
            panic!("a missing kcore turned to BPF");
        };
        assert!(missing.contains("CONFIG_PROC_KCORE"), "{missing}");
        assert!(matches!(
            kcore_refusal(&err(libc::EIO), None),
            KcoreRefusal::Final(_)
        ));
    }

    #[test]
    fn both_refusals_are_named_with_the_bpf_readers_cause() {
        let bpf = anyhow::Error::from(ProbeError::refused(
            Some(crate::probe::error::Cause::NotPermitted),
            "attaching `kernel_read` to __x64_sys_getppid failed",
        ));
        let err = both_refused(&std::io::Error::from_raw_os_error(libc::EPERM), &bpf);
        let refusal = err.downcast_ref::<ProbeError>().unwrap();
        assert_eq!(
            refusal.cause,
            Some(crate::probe::error::Cause::NotPermitted)
        );
        assert!(refusal.message.contains("CAP_SYS_RAWIO"), "{err}");
        assert!(
            refusal
                .message
                .ends_with("through BPF: attaching `kernel_read` to __x64_sys_getppid failed"),
            "{err}"
        );
        let other = both_refused(
            &std::io::Error::from_raw_os_error(libc::EACCES),
            &anyhow::anyhow!("no map"),
        );
        assert_eq!(other.downcast_ref::<ProbeError>().unwrap().cause, None);
    }

    #[test]
    fn only_kprobes_that_rewrote_an_instruction_count() {
        let list = "ffffffff81320df5  k  phy_remove+0x45    \n\
                    ffffffff813196d1  k  phy_request_interrupt+0xa1    [OPTIMIZED]\n\
                    ffffffff81319600  r  phy_disable_interrupts+0x0    [DISABLED][FTRACE]\n\
                    ffffffff81318ec0  r  phy_config_aneg+0x0    [FTRACE]\n\
                    ffffffff8131cff0  k  phy_save_page+0x10    [DISABLED]\n\
                    ffff800080a1c9a4  r  phy_probe+0x0    \n";
        assert_eq!(
            rewritten_addresses(list),
            [0xffff_ffff_8132_0df5, 0xffff_ffff_8131_96d1]
        );
    }

    #[test]
    fn a_site_is_checked_against_the_bound_driver() {
        let site = CallSite {
            function: "phy_init_hw".to_owned(),
            found: callsites::Found {
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
            found: callsites::Found {
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
