//! `phytrace doctor`'s checks: can this machine trace its PHY drivers, C or Rust, the way a
//! default session does? Each check says what it found and, when it does not pass, what is
//! lost and how to fix it; one whose prerequisite failed is skipped.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::drivers::{self, DriverOps};
use super::survey;
use crate::kernel::{
    btf,
    code::{Discovery, Layout, OPS, cache, mdio_inlining, phy_sites},
    driver_tables::DriverLayout,
    error::{Cause, ProbeError},
    module_files::ModuleTree,
    modules, privileges,
    snapshot::Snapshot,
    support, symbols, tracefs,
};
use crate::probe::{
    attach,
    bpf_memory::BpfMemory,
    loader,
    mdio_probes::{self, MdioChoice},
    phy_site_probes, selftest,
};

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Tracing can do what this checks.
    Ok,
    /// It can, with less.
    Warn,
    /// It cannot.
    Fail,
    /// Not run: a check it needs failed.
    Skipped,
}

/// One check: what it found and, if it did not pass, how to fix it.
#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// What it found, item by item (a missing capability and what is lost without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
}

impl Check {
    fn new(name: &'static str, status: Status, detail: String, fix: Option<String>) -> Self {
        Self {
            name,
            status,
            detail,
            fix,
            items: Vec::new(),
        }
    }

    fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Ok, detail.into(), None)
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(name, Status::Fail, detail.into(), Some(fix.into()))
    }

    fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(name, Status::Warn, detail.into(), Some(fix.into()))
    }

    fn skipped(name: &'static str, why: &str) -> Self {
        Self::new(name, Status::Skipped, format!("skipped: {why}"), None)
    }

    fn with_items(mut self, items: Vec<String>) -> Self {
        self.items = items;
        self
    }
}

/// A PHY on an MDIO bus, its driver, and how that driver's ops are traced.
#[derive(Debug, Serialize)]
pub struct PhyReport {
    /// The PHY's device name (`bus:addr`).
    pub name: String,
    pub phy_id: String,
    /// The bound driver's name, `(none)` when unbound.
    pub driver: String,
    /// The driver's module, `built-in` for vmlinux's.
    pub module: String,
    /// The driver's ops and their call sites, when its module file could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced: Option<DriverOps>,
    /// Why its ops are not listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// Everything `doctor` found: the checks, in order, and the PHYs present.
#[derive(Debug, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    pub phys: Vec<PhyReport>,
}

impl Report {
    /// Whether a default session can trace here: no check failed.
    pub fn can_trace(&self) -> bool {
        self.checks.iter().all(|check| check.status != Status::Fail)
    }
}

/// What `doctor` is asked about.
pub struct Options {
    /// A driver module to check, C or Rust.
    pub module: Option<String>,
    /// The module tree its file is read from.
    pub module_tree: PathBuf,
    /// Where the kernel's types come from.
    pub btf: btf::BtfSource,
}

/// Why the checks that need every one of `needed` are skipped: the first of them that failed.
fn blocker(needed: &[(&Check, &'static str)]) -> Option<&'static str> {
    needed
        .iter()
        .find(|(check, _)| check.status == Status::Fail)
        .map(|(_, why)| *why)
}

/// The check `name` run by `check`, or skipped because of `blocked`.
fn unless(
    blocked: Option<&'static str>,
    name: &'static str,
    check: impl FnOnce() -> Check,
) -> Check {
    blocked.map_or_else(check, |why| Check::skipped(name, why))
}

/// The fix for a failed probe operation: the one its cause calls for, or `otherwise`.
fn fix_for(err: &anyhow::Error, otherwise: &str) -> String {
    err.downcast_ref::<ProbeError>()
        .and_then(|err| err.cause)
        .map_or_else(|| otherwise.to_owned(), Cause::fix)
}

/// What to do when a failure names no cause.
const REPORT: &str = "run with RUST_LOG=debug and report the output";

/// The oldest kernel phytrace's programs load on: they read PHYs through the kfunc
/// `bpf_rdonly_cast`, which Linux 6.2 added.
pub const MIN_KERNEL: (u32, u32) = (6, 2);

/// Runs every check, in the order they are shown.
pub fn run_all(options: &Options) -> Report {
    let caps = privileges::effective().unwrap_or(0);
    let privileged = privileges(caps);
    let perf = perf_events(caps, privileges::perf_event_paranoid());
    let bpf = bpf_syscall();
    let kprobes = kprobe_pmu();
    // What the checks read of the kernel, read once.
    let kernel = Snapshot::new(BpfMemory::reader);
    let events = bpf_events_check(kernel.kallsyms());
    let load_blocked = blocker(&[
        (&privileged, "needs privileges"),
        (&bpf, "no bpf() system call"),
    ]);
    let kprobe_blocked = load_blocked.or(blocker(&[
        (&perf, "perf events refused"),
        (&kprobes, "no kprobes"),
        (&events, "no BPF on kprobes"),
    ]));
    // As a session reads it: with phylib a module, its BTF on top.
    let btf = options
        .btf
        .load()
        .and_then(|vmlinux| Ok(vmlinux.phylib()?.unwrap_or(vmlinux)));
    let mut checks = vec![
        kernel_release(),
        lockdown(),
        privileged,
        perf,
        bpf,
        btf_check(&options.btf, &btf),
        tracefs(),
        kprobes,
        events,
    ];
    let btf = btf.ok();
    let discovery = find_call_sites(btf.as_ref(), &kernel);
    checks.push(match kprobe_blocked {
        Some(why) => Check::skipped(CALLBACKS, why),
        None => callbacks(&discovery, btf.as_ref(), &kernel),
    });
    checks.push(unless(load_blocked, MDIO_PROBES, || {
        if modules::phylib_pending(&options.module_tree) {
            return Check::warn(
                MDIO_PROBES,
                format!(
                    "phylib is the module {}, not loaded yet: a session probes its accessors \
                     with kprobes the kernel places as it loads, at about twice the cost of \
                     fentry/fexit",
                    modules::PHYLIB
                ),
                format!(
                    "`modprobe {}` before phytrace starts: fentry/fexit then attach through \
                     its BTF",
                    modules::PHYLIB
                ),
            );
        }
        mdio_attach(btf.as_ref(), &kernel)
    }));
    let layout = btf
        .as_ref()
        .map(DriverLayout::from_btf)
        .transpose()
        .ok()
        .flatten();
    let tree = ModuleTree::read(&options.module_tree);
    let sites = discovery.as_ref().ok();
    let phys = phy_reports(&tree, &options.module_tree, layout.as_ref(), sites);
    checks.push(phys_check(&phys));
    if let Some(module) = &options.module {
        checks.push(driver_module(
            module,
            &tree,
            &options.module_tree,
            layout.as_ref(),
            sites,
        ));
    }
    checks.push(unless(kprobe_blocked, PIPELINE, pipeline));
    Report { checks, phys }
}

/// `major.minor` of a kernel release (`6.12.118-1-amd64` → `(6, 12)`).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn kernel_release() -> Check {
    const NAME: &str = "kernel";
    let release = match fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(release) => release.trim().to_owned(),
        Err(err) => return Check::warn(NAME, format!("unknown ({err})"), "is /proc mounted?"),
    };
    version_check(&release)
}

/// The version check of kernel `release`.
fn version_check(release: &str) -> Check {
    const NAME: &str = "kernel";
    let (major, minor) = MIN_KERNEL;
    match kernel_version(release) {
        Some(version) if version >= MIN_KERNEL => Check::ok(NAME, release.to_owned()),
        Some(_) => Check::fail(
            NAME,
            format!(
                "{release} is older than {major}.{minor}: phytrace's programs read PHYs through \
                 the kfunc bpf_rdonly_cast, which Linux {major}.{minor} added"
            ),
            format!("boot Linux {major}.{minor} or later"),
        ),
        None => Check::warn(
            NAME,
            format!("{release}: not a version phytrace can read"),
            format!("phytrace needs Linux {major}.{minor} or later"),
        ),
    }
}

fn lockdown() -> Check {
    if !support::securityfs_mounted() {
        return Check::warn(
            "lockdown",
            "unknown: securityfs is not mounted, where the kernel says its lockdown mode",
            "mount -t securityfs securityfs /sys/kernel/security (systemd does at boot)",
        );
    }
    lockdown_check(fs::read_to_string(support::LOCKDOWN).ok().as_deref())
}

/// The lockdown check, from the text of [`support::LOCKDOWN`] (`None`: no lockdown LSM).
fn lockdown_check(text: Option<&str>) -> Check {
    const NAME: &str = "lockdown";
    match text.map(support::lockdown_mode) {
        None => Check::ok(NAME, "none (no lockdown LSM)"),
        Some(None) => Check::warn(NAME, "unknown", "is securityfs mounted?"),
        Some(Some(mode)) if !support::lockdown_refuses(mode) => Check::ok(NAME, mode),
        Some(Some(mode)) => Check::fail(
            NAME,
            format!(
                "{mode}: the kernel refuses every read of its memory (/proc/kcore, BPF's \
                 bpf_probe_read_kernel) and tracefs, so phytrace cannot trace"
            ),
            "boot with lockdown=integrity (or none): integrity, which Secure Boot sets on \
             Debian, lets phytrace trace",
        ),
    }
}

fn privileges(caps: u64) -> Check {
    const NAME: &str = "privileges";
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let missing = privileges::missing(caps);
    if missing.is_empty() {
        return Check::ok(NAME, format!("uid {euid}, {}", privileges::names()));
    }
    let names: Vec<&str> = missing.iter().map(|cap| cap.name).collect();
    let items = missing
        .iter()
        .map(|cap| {
            format!(
                "without {}: {} (phytrace uses it to {})",
                cap.name, cap.lost_without, cap.used_for
            )
        })
        .collect();
    // Without these nothing is traced or record stops; without the others the callbacks
    // fall back to the Rust drivers' symbols.
    let essential = missing
        .iter()
        .any(|cap| matches!(cap.name, "CAP_BPF" | "CAP_PERFMON" | "CAP_DAC_OVERRIDE"));
    let detail = format!("uid {euid} lacks {}", privileges::in_words(&names));
    let check = if essential {
        Check::fail(NAME, detail, privileges::fix())
    } else {
        Check::warn(NAME, detail, privileges::fix())
    };
    check.with_items(items)
}

/// Whether this process may open perf events, which every kprobe is attached through.
fn perf_events(caps: u64, paranoid: Option<i32>) -> Check {
    const NAME: &str = "perf events";
    let level = paranoid.map_or_else(|| "unknown".to_owned(), |level| level.to_string());
    if privileges::paranoid_refuses(caps, paranoid) {
        return Check::fail(
            NAME,
            format!(
                "kernel.perf_event_paranoid is {level}: this kernel refuses perf_event_open, so \
                 every kprobe, to a process without CAP_SYS_ADMIN"
            ),
            privileges::paranoid_fix(),
        );
    }
    Check::ok(NAME, format!("kernel.perf_event_paranoid {level}"))
}
/// Where the kernel's types come from (`source`, read into `btf`) and what they give.
fn btf_check(source: &btf::BtfSource, btf: &Result<btf::KernelBtf>) -> Check {
    const NAME: &str = "BTF (struct layouts)";
    let kernel_has_btf = Path::new(btf::VMLINUX_BTF).exists();
    if *source == btf::BtfSource::Kernel && !kernel_has_btf {
        return Check::fail(
            NAME,
            btf::NO_KERNEL_BTF.to_owned(),
            "pass --btf FILE, made with `pahole --btf_encode_detached=FILE vmlinux` from this \
             kernel's vmlinux",
        );
    }
    let read = btf
        .as_ref()
        .map_err(|err| anyhow::anyhow!("{err:#}"))
        .and_then(|btf| Ok((btf.offsets()?, btf.phy_states()?)));
    let (offsets, states) = match read {
        Ok(read) => read,
        Err(err) => {
            return Check::fail(
                NAME,
                format!("{err:#}"),
                "phytrace needs the types of a kernel with CONFIG_PHYLIB",
            );
        }
    };
    let layout = format!(
        "phy_device.state at +{}, mdio.addr at +{}; {} phy_state values",
        offsets.phy_state,
        offsets.phy_addr,
        states.names.len()
    );
    match source {
        btf::BtfSource::Kernel => Check::ok(NAME, format!("{}: {layout}", btf::VMLINUX_BTF)),
        btf::BtfSource::File(path) if kernel_has_btf => Check::warn(
            NAME,
            format!(
                "{}: {layout}; this kernel has BTF of its own, which gives the MDIO accessors \
                 trampolines and PHY reads without helper calls",
                path.display()
            ),
            "leave out --btf",
        ),
        btf::BtfSource::File(path) => Check::ok(
            NAME,
            format!(
                "{}: {layout} (this kernel has no BTF of its own: PHYs are read with helper \
                 calls and MDIO accesses with kprobes)",
                path.display()
            ),
        ),
    }
}

fn tracefs() -> Check {
    const NAME: &str = "tracefs";
    if let Ok(dir) = tracefs::tracefs()
        && dir.join("kprobe_events").exists()
    {
        return Check::ok(NAME, format!("{} (kprobe_events present)", dir.display()));
    }
    Check::fail(
        NAME,
        "no kprobe_events under /sys/kernel/tracing",
        "mount -t tracefs nodev /sys/kernel/tracing (phytrace arms driver callbacks as kprobe events there, before their module loads) and check CONFIG_KPROBE_EVENTS=y",
    )
}

fn kprobe_pmu() -> Check {
    const NAME: &str = "kprobes";
    if Path::new(attach::KPROBE_PMU).exists() {
        Check::ok(NAME, "kprobe PMU present")
    } else {
        Check::fail(
            NAME,
            format!("this kernel has no kprobe PMU ({})", attach::KPROBE_PMU),
            Cause::NoKprobes.fix(),
        )
    }
}

fn bpf_syscall() -> Check {
    bpf_syscall_check(support::bpf_syscall_answer())
}

/// The `bpf()` check, from what the system call answered an unknown command.
fn bpf_syscall_check(answer: Option<i32>) -> Check {
    const NAME: &str = "bpf() system call";
    if support::has_bpf_syscall(answer) {
        Check::ok(NAME, "present (CONFIG_BPF_SYSCALL)")
    } else {
        Check::fail(
            NAME,
            "this kernel has no bpf() system call (ENOSYS)",
            Cause::NoBpfSyscall.fix(),
        )
    }
}

/// The check for BPF programs on kprobes, from the text of kallsyms.
fn bpf_events_check(kallsyms: Result<&str>) -> Check {
    const NAME: &str = "BPF on kprobes";
    match kallsyms {
        Ok(text) if support::defines(text, support::BPF_EVENTS_SYMBOL) => Check::ok(
            NAME,
            format!(
                "present (CONFIG_BPF_EVENTS: {} in {})",
                support::BPF_EVENTS_SYMBOL,
                symbols::KALLSYMS
            ),
        ),
        Ok(_) => Check::fail(
            NAME,
            format!(
                "this kernel cannot run BPF programs on kprobes (no {} in {})",
                support::BPF_EVENTS_SYMBOL,
                symbols::KALLSYMS
            ),
            Cause::NoBpfEvents.fix(),
        ),
        Err(err) => Check::warn(NAME, format!("unknown ({err:#})"), "is /proc mounted?"),
    }
}

/// A Rust function of the kernel crate in `kernel`, to try a kprobe on.
fn any_rust_symbol(kernel: &Snapshot) -> Option<String> {
    symbols::first_rust_function(kernel.kallsyms().ok()?.as_bytes())
        .ok()
        .flatten()
}

/// Name of the check of how driver callbacks are traced.
const CALLBACKS: &str = "callbacks";
/// Name of the check of the MDIO accessors' attach.
const MDIO_PROBES: &str = "MDIO probes";
/// Name of the check that runs a probe end to end.
const PIPELINE: &str = "pipeline self-test";

/// phylib's call sites of the driver ops, as a session finds them (this boot's cache first).
fn find_call_sites(btf: Option<&btf::KernelBtf>, kernel: &Snapshot) -> Result<Discovery> {
    let btf = btf.context("the kernel's BTF cannot be read")?;
    let layout = Layout::from_btf(btf)?;
    let ((discovery, _), _) =
        phy_sites::find(&layout, cache::default_dir().ok().as_deref(), kernel)?;
    Ok(discovery)
}

/// How callbacks are traced: at phylib's call sites (every driver), else on the Rust drivers'
/// symbols (those only), else not at all; `btf`: the kernel's, which found `discovery`.
fn callbacks(
    discovery: &Result<Discovery>,
    btf: Option<&btf::KernelBtf>,
    kernel: &Snapshot,
) -> Check {
    if let Ok(Discovery {
        pending: Some(module),
        sites,
        ..
    }) = discovery
    {
        return Check::ok(
            CALLBACKS,
            format!(
                "every driver's, C or Rust: {} call sites in the file of phylib's module \
                 {module}, not loaded yet; a session arms them as the kernel loads it, before \
                 its first call",
                sites.len()
            ),
        );
    }
    let at_sites = discovery
        .as_ref()
        .map_err(|err| anyhow::anyhow!("{err:#}"))
        .and_then(|found| {
            let first = found.sites.first().context("no call site")?;
            let offsets = btf.context("the kernel's BTF cannot be read")?.offsets()?;
            let mut ebpf = loader::load(&loader::LoadOptions::new(4096, offsets))?;
            attach::loaded_kprobe(&mut ebpf, phy_site_probes::PROGRAMS[0])?
                .attach(&first.function, u64::from(first.found.offset))
                .with_context(|| format!("attaching a kprobe at {}", first.place()))?;
            Ok(found)
        });
    let sites_err = match at_sites {
        Ok(found) => {
            let missing = found.ops_without_sites(&OPS);
            return Check::ok(
                CALLBACKS,
                format!(
                    "every driver's, C or Rust: {} call sites of {} ops in phylib's code, \
                     kprobes accepted",
                    found.sites.len(),
                    OPS.len() - missing.len()
                ),
            )
            .with_items(if missing.is_empty() {
                Vec::new()
            } else {
                vec![format!("no call site for {}", missing.join(", "))]
            });
        }
        Err(err) => err,
    };
    let fix = fix_for(
        &sites_err,
        "`phytrace probes` says why the call sites cannot be found",
    );
    let Some(symbol) = any_rust_symbol(kernel) else {
        return Check::fail(
            CALLBACKS,
            format!(
                "none can be traced: phylib's call sites: {sites_err:#}; no Rust driver symbols either"
            ),
            fix,
        );
    };
    let outcome = loader::load(&loader::LoadOptions::new(4096, Default::default()))
        .and_then(|mut ebpf| attach::attach(&mut ebpf, "callback_enter", &symbol).map(|_| ()));
    match outcome {
        Ok(()) => Check::warn(
            CALLBACKS,
            format!(
                "Rust drivers' only, on their symbols (a kprobe on {:#} was accepted): \
                 phylib's call sites: {sites_err:#}",
                rustc_demangle::demangle(&symbol)
            ),
            fix,
        ),
        Err(err) => Check::fail(
            CALLBACKS,
            format!(
                "none can be traced: phylib's call sites: {sites_err:#}; Rust drivers' \
                 symbols: {err:#}"
            ),
            fix,
        ),
    }
}

/// Which attach the MDIO accessors get: fentry/fexit, or the kprobe fallback and why; `btf`:
/// the kernel's types, as a session reads them.
fn mdio_attach(btf: Option<&btf::KernelBtf>, kernel: &Snapshot) -> Check {
    let mut notes = Vec::new();
    let outcome = btf
        .context("the kernel's types cannot be read")
        .and_then(|btf| {
            let mut ebpf = loader::load(&loader::LoadOptions {
                types: btf.types()?,
                ..loader::LoadOptions::new(4096, btf.offsets()?)
            })?;
            mdio_probes::attach_all(&mut ebpf, MdioChoice::Fentry, btf, None, &mut notes)
        });
    match outcome {
        Ok(probes) => {
            let detail = format!(
                "{} (BPF trampolines) on the MDIO accessors{}",
                probes.name(),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!("; {}", notes.join("; "))
                }
            );
            let survey = btf
                .context("the kernel's types cannot be read")
                .and_then(|btf| mdio_inlining::survey(btf, kernel));
            match survey {
                Ok((inlined, sites)) if !sites.is_empty() => Check::ok(
                    MDIO_PROBES,
                    format!(
                        "{detail}; this kernel's compiler inlined {} accessor(s) into {}: \
                         `record` probes their {} bus-op calls there (kprobes)",
                        inlined.len(),
                        mdio_inlining::functions(&sites),
                        sites.len()
                    ),
                ),
                Ok((inlined, _)) if !inlined.is_empty() => Check::warn(
                    MDIO_PROBES,
                    format!(
                        "{detail}, but {}",
                        mdio_inlining::describe(&inlined).unwrap_or_default()
                    ),
                    "none of the inlined copies' bus-op calls was found: accesses made through \
                     them are missed",
                ),
                Ok(_) => Check::ok(MDIO_PROBES, detail),
                Err(err) => Check::warn(
                    MDIO_PROBES,
                    format!("{detail}; {}", mdio_inlining::unchecked(&err)),
                    "run as root to check (and to trace such copies)",
                ),
            }
        }
        Err(err) => Check::warn(
            MDIO_PROBES,
            format!("kprobe fallback, at about twice the cost per access: {err:#}"),
            "a kernel with CONFIG_DEBUG_INFO_BTF, CONFIG_FUNCTION_TRACER and CONFIG_BPF_JIT gets fentry/fexit",
        ),
    }
}

/// The PHYs on MDIO buses, each with its driver's ops and their call sites where the
/// driver's module file can be read.
fn phy_reports(
    tree: &ModuleTree,
    tree_dir: &Path,
    layout: Option<&DriverLayout>,
    discovery: Option<&Discovery>,
) -> Vec<PhyReport> {
    survey::bound_phys()
        .into_iter()
        .map(|phy| {
            let traced = (phy.driver != survey::UNBOUND)
                .then(|| driver_of(&phy.module, &phy.driver, tree, tree_dir, layout, discovery))
                .transpose();
            let (traced, unread) = match traced {
                Ok(traced) => (traced, None),
                Err(err) => (None, Some(format!("{err:#}"))),
            };
            PhyReport {
                name: phy.name,
                phy_id: phy.phy_id,
                driver: phy.driver,
                module: phy.module,
                traced,
                unread,
            }
        })
        .collect()
}

/// The ops of driver `driver` of module `module`, from its file.
fn driver_of(
    module: &str,
    driver: &str,
    tree: &ModuleTree,
    tree_dir: &Path,
    layout: Option<&DriverLayout>,
    discovery: Option<&Discovery>,
) -> Result<DriverOps> {
    let layout = layout.context("no struct phy_driver in the kernel's BTF")?;
    let path = drivers::module_file(module, tree, tree_dir)?;
    let table = drivers::tables(path, layout)?
        .into_iter()
        .find(|table| table.name == driver)
        .with_context(|| format!("{} defines no driver named {driver:?}", path.display()))?;
    Ok(DriverOps::new(table, discovery))
}

fn phys_check(phys: &[PhyReport]) -> Check {
    const NAME: &str = "PHYs";
    if phys.is_empty() {
        return Check::ok(
            NAME,
            format!(
                "none on an MDIO bus yet ({}): a session traces each from its first callback",
                survey::MDIO_BUS_DEVICES
            ),
        );
    }
    let mut items = Vec::new();
    for phy in phys {
        items.push(format!(
            "{} {} {} ({})",
            phy.name, phy.phy_id, phy.driver, phy.module
        ));
        match (&phy.traced, &phy.unread) {
            (Some(traced), _) => items.extend(traced.lines()),
            (None, Some(why)) => items.push(format!("  ops not listed: {why}")),
            (None, None) => {}
        }
    }
    Check::ok(NAME, format!("{} on MDIO buses", phys.len())).with_items(items)
}

/// `--module`: the drivers module `module` defines, C or Rust, their ops and the call sites
/// that trace them.
fn driver_module(
    module: &str,
    tree: &ModuleTree,
    tree_dir: &Path,
    layout: Option<&DriverLayout>,
    discovery: Option<&Discovery>,
) -> Check {
    const NAME: &str = "driver module";
    let loaded = Path::new("/sys/module").join(module).exists();
    let found = layout
        .context("no struct phy_driver in the kernel's BTF")
        .and_then(|layout| {
            let path = drivers::module_file(module, tree, tree_dir)?;
            Ok((path, drivers::tables(path, layout)?))
        });
    let (path, tables) = match found {
        Ok(found) => found,
        Err(err) => {
            return Check::fail(
                NAME,
                format!("{err:#}"),
                format!("check the name: `modinfo {module}`"),
            );
        }
    };
    if tables.is_empty() {
        return Check::fail(
            NAME,
            format!(
                "{module} ({}) defines no struct phy_driver: it is not a PHY driver",
                path.display()
            ),
            format!("`modinfo {module}` shows what it is; phytrace traces PHY drivers"),
        );
    }
    let drivers: Vec<DriverOps> = tables
        .into_iter()
        .map(|table| DriverOps::new(table, discovery))
        .collect();
    let mut items = Vec::new();
    for driver in &drivers {
        items.push(format!("{} (PHY ID {:08x})", driver.name, driver.phy_id));
        items.extend(driver.lines());
    }
    let untraced: Vec<&str> = drivers.iter().flat_map(DriverOps::untraced).collect();
    let state = if loaded {
        "loaded"
    } else {
        "not loaded: its calls are traced from the first, phylib's call sites are armed before it loads"
    };
    let detail = format!(
        "{module} ({}), {state}: {} driver(s)",
        path.display(),
        drivers.len()
    );
    let check = if discovery.is_none() {
        Check::warn(
            NAME,
            format!(
                "{detail}; phylib's call sites are not known, so none of its ops is traced there"
            ),
            "the callbacks check above says why; so does `phytrace probes`",
        )
    } else if untraced.is_empty() {
        Check::ok(NAME, detail)
    } else {
        let mut names = untraced.clone();
        names.sort_unstable();
        names.dedup();
        Check::warn(
            NAME,
            format!(
                "{detail}; no call site on this kernel for {}",
                names.join(", ")
            ),
            format!("{module}'s other ops are traced; `phytrace probes` lists the sites"),
        )
    };
    check.with_items(items)
}

fn pipeline() -> Check {
    match selftest::run() {
        Ok(report) => Check::ok(
            PIPELINE,
            format!(
                "kprobe+kretprobe on {} → ring buffer → userspace in {:.0} ms (call took {} ns, returned {}); aya-log: \"{}\"",
                report.target,
                report.elapsed.as_secs_f64() * 1000.0,
                report.latency_ns,
                report.returned,
                report.log_lines.first().map_or("", String::as_str)
            ),
        ),
        Err(err) => Check::fail(PIPELINE, format!("{err:#}"), fix_for(&err, REPORT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_prerequisite_skips_what_needs_it() {
        let ok = Check::ok("a", "");
        let warned = Check::warn("b", "", "");
        let failed = Check::fail("c", "", "");
        assert_eq!(blocker(&[(&ok, "a"), (&warned, "b")]), None);
        assert_eq!(
            blocker(&[(&ok, "a"), (&failed, "c"), (&failed, "d")]),
            Some("c")
        );
        let skipped = unless(Some("c"), PIPELINE, || panic!("ran a blocked check"));
        assert!(skipped.status == Status::Skipped && skipped.detail == "skipped: c");
    }

    #[test]
    fn the_fix_follows_the_cause() {
        let refused = |cause| anyhow::Error::from(ProbeError::refused(cause, "refused"));
        for (cause, option) in [
            (Cause::NoBpfSyscall, "CONFIG_BPF_SYSCALL=y"),
            (Cause::NoBpfEvents, "CONFIG_BPF_EVENTS=y"),
            (Cause::NotraceKprobe, "CONFIG_KPROBE_EVENTS_ON_NOTRACE=y"),
            (Cause::NotPermitted, "CAP_SYSLOG"),
        ] {
            let fix = fix_for(&refused(Some(cause)), REPORT);
            assert!(fix.contains(option), "{cause:?}: {fix}");
            let wrapped = refused(Some(cause)).context("attaching");
            assert_eq!(fix_for(&wrapped, REPORT), fix);
        }
        assert_eq!(fix_for(&refused(None), REPORT), REPORT);
        assert_eq!(fix_for(&anyhow::anyhow!("other"), REPORT), REPORT);
    }

    #[test]
    fn kernels_before_6_2_are_refused_with_the_reason() {
        assert_eq!(kernel_version("6.12.118-1-amd64"), Some((6, 12)));
        assert_eq!(kernel_version("7.3.4+deb13-amd64"), Some((7, 3)));
        assert!(version_check("6.2.0").status == Status::Ok);
        assert!(version_check("7.3.4+deb13-amd64").status == Status::Ok);
        let old = version_check("6.1.158-1");
        assert!(old.status == Status::Fail);
        assert!(old.detail.contains("bpf_rdonly_cast"), "{}", old.detail);
        assert!(version_check("custom").status == Status::Warn);
    }

    #[test]
    fn lockdown_confidentiality_is_named_integrity_passes() {
        assert!(lockdown_check(None).status == Status::Ok);
        for text in [
            "[none] integrity confidentiality\n",
            "none [integrity] confidentiality\n",
        ] {
            assert!(lockdown_check(Some(text)).status == Status::Ok, "{text}");
        }
        let locked = lockdown_check(Some("none integrity [confidentiality]\n"));
        assert!(locked.status == Status::Fail);
        assert!(
            locked.detail.starts_with("confidentiality"),
            "{}",
            locked.detail
        );
        assert!(locked.fix.unwrap().contains("lockdown=integrity"));
    }

    #[test]
    fn each_missing_capability_says_what_is_lost() {
        let all = privileges(u64::MAX);
        assert!(all.status == Status::Ok && all.items.is_empty());
        let nobody = privileges(0);
        assert!(nobody.status == Status::Fail);
        assert_eq!(nobody.items.len(), privileges::DEFAULT.len());
        // Without kallsyms' addresses, callbacks degrade: a warning, named.
        let without_symbols = privileges(!(1 << 34));
        assert!(without_symbols.status == Status::Warn);
        assert_eq!(without_symbols.items.len(), 1);
        assert!(without_symbols.items[0].starts_with("without CAP_SYSLOG: "));
        assert!(without_symbols.items[0].ends_with(
            "(phytrace uses it to read kallsyms' addresses: the functions to decode and the \
             drivers' names)"
        ));
        assert!(
            without_symbols
                .fix
                .unwrap()
                .contains(&privileges::setcap_text())
        );
        // Without CAP_SYS_RAWIO nothing is lost: BPF reads the kernel's code.
        let without_rawio = privileges(!(1 << 17));
        assert!(without_rawio.status == Status::Ok && without_rawio.items.is_empty());
    }

    #[test]
    fn paranoid_three_fails_without_sys_admin() {
        let perfmon = 1 << 38;
        assert!(perf_events(perfmon, Some(2)).status == Status::Ok);
        let refused = perf_events(perfmon, Some(3));
        assert!(refused.status == Status::Fail);
        assert!(refused.fix.unwrap().contains("perf_event_paranoid=2"));
        assert!(perf_events(1 << privileges::CAP_SYS_ADMIN, Some(3)).status == Status::Ok);
    }

    #[test]
    fn no_bpf_syscall_is_enosys_only() {
        let missing = bpf_syscall_check(Some(libc::ENOSYS));
        assert!(missing.status == Status::Fail);
        assert!(missing.fix.unwrap().contains("CONFIG_BPF_SYSCALL=y"));
        for answer in [Some(libc::EINVAL), Some(libc::EPERM)] {
            assert!(bpf_syscall_check(answer).status == Status::Ok);
        }
    }

    #[test]
    fn bpf_on_kprobes_is_read_from_kallsyms() {
        let with = "ffffffff81123c10 T trace_call_bpf\n";
        assert!(bpf_events_check(Ok(with)).status == Status::Ok);
        let without = bpf_events_check(Ok("ffffffff81123c10 T other\n"));
        assert!(without.status == Status::Fail);
        assert!(without.fix.unwrap().contains("CONFIG_BPF_EVENTS=y"));
        let unread = bpf_events_check(Err(anyhow::anyhow!("reading /proc/kallsyms: gone")));
        assert!(unread.status == Status::Warn);
    }
}
