//! `phytrace doctor`'s checks: can this machine trace a Rust PHY driver? Each check says what
//! it found and, when it fails, how to fix it; one whose prerequisite failed is skipped.

use std::{fs, path::Path};

use anyhow::Context as _;

use crate::probe::{
    attach, btf, call_site_probes,
    callsites::Layout,
    error::{Cause, ProbeError},
    loader, mdio_inlining,
    mdio_probes::{self, MdioChoice},
    privileges, selftest, support, symbols,
};

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn skipped(name: &'static str, why: &str) -> Self {
        Self {
            name,
            status: Status::Skipped,
            detail: format!("skipped: {why}"),
            fix: None,
        }
    }
}

/// Why the checks that need every one of `needed` are skipped: the first of them that failed.
fn blocker(needed: &[(&Check, &'static str)]) -> Option<&'static str> {
    needed
        .iter()
        .find(|(check, _)| check.status == Status::Fail)
        .map(|(_, why)| *why)
}

/// The check `name` run by `check`, or skipped because of `blocked`.
fn unless(blocked: Option<&'static str>, name: &'static str, check: fn() -> Check) -> Check {
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

/// Runs every check, in the order they are shown; `module` is the driver module to trace.
pub fn run_all(module: &str) -> Vec<Check> {
    let privileged = privileges();
    let bpf = bpf_syscall();
    let kprobes = kprobe_pmu();
    let events = bpf_events();
    let load_blocked = blocker(&[
        (&privileged, "needs privileges"),
        (&bpf, "no bpf() system call"),
    ]);
    let kprobe_blocked = load_blocked.or(blocker(&[
        (&kprobes, "no kprobes"),
        (&events, "no BPF on kprobes"),
    ]));
    let mut checks = vec![
        kernel_release(),
        privileged,
        bpf,
        btf_check(),
        tracefs(),
        kprobes,
        events,
    ];
    let call_sites = unless(kprobe_blocked, CALL_SITES, call_site_kprobe);
    checks.push(callbacks_either_way(
        unless(kprobe_blocked, RUST_KPROBE, rust_kprobe),
        &call_sites,
    ));
    checks.push(call_sites);
    checks.push(unless(load_blocked, MDIO_PROBES, mdio_attach));
    checks.push(driver_module(module));
    checks.push(unless(kprobe_blocked, PIPELINE, pipeline));
    checks
}

fn kernel_release() -> Check {
    match fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(release) => Check::ok("kernel", release.trim().to_owned()),
        Err(err) => Check::warn("kernel", format!("unknown ({err})"), "is /proc mounted?"),
    }
}

fn privileges() -> Check {
    const NAME: &str = "privileges";
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let missing = privileges::missing(privileges::effective().unwrap_or(0));
    if missing.is_empty() {
        return Check::ok(NAME, format!("uid {euid}, {}", privileges::NEEDED_NAMES));
    }
    Check::fail(
        NAME,
        format!("uid {euid} lacks {}", privileges::in_words(&missing)),
        format!(
            "run as root (sudo phytrace …) or `sudo {}`",
            privileges::SETCAP
        ),
    )
}

fn btf_check() -> Check {
    const NAME: &str = "BTF (struct layouts)";
    let path = Path::new(btf::VMLINUX_BTF);
    if !path.exists() {
        return Check::fail(
            NAME,
            format!("{} is missing", path.display()),
            "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y",
        );
    }
    let result = btf::KernelBtf::open(path).and_then(|btf| Ok((btf.offsets()?, btf.phy_states()?)));
    match result {
        Ok((offsets, states)) => Check::ok(
            NAME,
            format!(
                "phy_device.state at +{}, mdio.addr at +{}; {} phy_state values",
                offsets.phy_state,
                offsets.phy_addr,
                states.names.len()
            ),
        ),
        Err(err) => Check::fail(
            NAME,
            format!("{err:#}"),
            "phytrace needs a kernel with CONFIG_PHYLIB=y and BTF",
        ),
    }
}

fn tracefs() -> Check {
    const NAME: &str = "tracefs";
    for dir in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(dir).join("kprobe_events").exists() {
            return Check::ok(NAME, format!("{dir} (kprobe_events present)"));
        }
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

fn bpf_events() -> Check {
    bpf_events_check(fs::read_to_string(symbols::KALLSYMS))
}

/// The check for BPF programs on kprobes, from the text of kallsyms.
fn bpf_events_check(kallsyms: std::io::Result<String>) -> Check {
    const NAME: &str = "BPF on kprobes";
    match kallsyms {
        Ok(text) if support::defines(&text, support::BPF_EVENTS_SYMBOL) => Check::ok(
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
        Err(err) => Check::warn(
            NAME,
            format!("unknown (reading {}: {err})", symbols::KALLSYMS),
            "is /proc mounted?",
        ),
    }
}

/// A Rust function of the kernel crate, to try a kprobe on.
fn any_rust_symbol() -> Option<String> {
    let file = fs::File::open(symbols::KALLSYMS).ok()?;
    symbols::first_rust_function(std::io::BufReader::new(file))
        .ok()
        .flatten()
}

/// Name of the check that attaches a kprobe to a Rust function.
const RUST_KPROBE: &str = "kprobe on a Rust symbol";
/// Name of the check of the MDIO accessors' attach.
const MDIO_PROBES: &str = "MDIO probes";
/// Name of the check that runs a probe end to end.
const PIPELINE: &str = "pipeline self-test";

fn rust_kprobe() -> Check {
    let Some(symbol) = any_rust_symbol() else {
        return Check::warn(
            RUST_KPROBE,
            "no Rust symbol in /proc/kallsyms",
            "is the kernel built with CONFIG_RUST=y?",
        );
    };
    let outcome = loader::load(&loader::LoadOptions::new(4096, Default::default()))
        .and_then(|mut ebpf| attach::attach(&mut ebpf, "callback_enter", &symbol).map(|_| ()));
    let shown = rustc_demangle::demangle(&symbol).to_string();
    match outcome {
        Ok(()) => Check::ok(RUST_KPROBE, format!("attached to {shown:#}")),
        Err(err) => Check::fail(RUST_KPROBE, format!("{err:#}"), fix_for(&err, REPORT)),
    }
}

/// Name of the check that attaches a kprobe at a call site of a driver op.
const CALL_SITES: &str = "call-site probes";

/// Finds phylib's call sites of the driver ops and attaches the entry program to the first.
fn call_site_kprobe() -> Check {
    let outcome = fs::read_to_string(symbols::KALLSYMS)
        .map_err(anyhow::Error::from)
        .and_then(|kallsyms| {
            let btf = btf::KernelBtf::running()?;
            let (discovery, _) = call_site_probes::discover(&Layout::from_btf(&btf)?, &kallsyms)?;
            let first = discovery.sites.first().context("no call site")?;
            let mut ebpf = loader::load(&loader::LoadOptions::new(4096, btf.offsets()?))?;
            attach::loaded_kprobe(&mut ebpf, call_site_probes::PROGRAMS[0])?
                .attach(&first.function, u64::from(first.found.offset))
                .with_context(|| format!("attaching a kprobe at {}", first.place()))?;
            Ok(discovery)
        });
    match outcome {
        Ok(discovery) => {
            let missing = discovery.ops_without_sites(&crate::probe::callsites::OPS);
            Check::ok(
                CALL_SITES,
                format!(
                    "{} call sites of driver ops in phylib's code, kprobes accepted{}",
                    discovery.sites.len(),
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (no site for {})", missing.join(", "))
                    }
                ),
            )
        }
        Err(err) => Check::warn(
            CALL_SITES,
            format!("{err:#}"),
            "callbacks are traced on the Rust drivers' symbols only (`phytrace probes` lists the sites)",
        ),
    }
}

/// A refused kprobe in Rust code is no failure where the call sites trace the callbacks.
fn callbacks_either_way(rust: Check, call_sites: &Check) -> Check {
    if rust.status != Status::Fail || call_sites.status != Status::Ok {
        return rust;
    }
    Check::warn(
        RUST_KPROBE,
        format!(
            "{}; callbacks are traced at phylib's call sites instead",
            rust.detail
        ),
        rust.fix.unwrap_or_default(),
    )
}

/// Which attach the MDIO accessors get: fentry/fexit, or the kprobe fallback and why.
fn mdio_attach() -> Check {
    let mut notes = Vec::new();
    let outcome = btf::KernelBtf::open(Path::new(btf::VMLINUX_BTF)).and_then(|btf| {
        let mut ebpf = loader::load(&loader::LoadOptions {
            types: btf.types()?,
            ..loader::LoadOptions::new(4096, btf.offsets()?)
        })?;
        mdio_probes::attach_all(&mut ebpf, MdioChoice::Fentry, &btf, &mut notes)
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
            let survey = btf::KernelBtf::open(Path::new(btf::VMLINUX_BTF))
                .and_then(|btf| mdio_inlining::survey(&btf));
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

fn driver_module(module: &str) -> Check {
    const NAME: &str = "driver module";
    if !Path::new("/sys/module").join(module).exists() {
        return Check::warn(
            NAME,
            format!("{module} is not loaded"),
            format!("`modprobe {module}` (record and tui wait for it and attach when it loads)"),
        );
    }
    match symbols::read_kallsyms(Path::new(symbols::KALLSYMS)) {
        Ok(found) => {
            let count = found.iter().filter(|s| s.module == module).count();
            if count == 0 {
                Check::fail(
                    NAME,
                    format!(
                        "{module} is loaded but has no kernel::net::phy::Adapter callbacks in /proc/kallsyms"
                    ),
                    "is it a Rust PHY driver built on kernel::net::phy?",
                )
            } else {
                Check::ok(NAME, format!("{module} loaded, {count} callbacks found"))
            }
        }
        Err(err) => Check::fail(
            NAME,
            format!("reading {}: {err}", symbols::KALLSYMS),
            "is /proc mounted?",
        ),
    }
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
        let skipped = unless(Some("c"), RUST_KPROBE, || panic!("ran a blocked check"));
        assert!(skipped.status == Status::Skipped && skipped.detail == "skipped: c");
    }

    #[test]
    fn the_fix_follows_the_cause() {
        let refused = |cause| anyhow::Error::from(ProbeError::refused(cause, "refused"));
        for (cause, option) in [
            (Cause::NoBpfSyscall, "CONFIG_BPF_SYSCALL=y"),
            (Cause::NoBpfEvents, "CONFIG_BPF_EVENTS=y"),
            (Cause::NotraceKprobe, "CONFIG_KPROBE_EVENTS_ON_NOTRACE=y"),
            (Cause::NotPermitted, privileges::NEEDED_NAMES),
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
        let with = "ffffffff81123c10 T trace_call_bpf\n".to_owned();
        assert!(bpf_events_check(Ok(with)).status == Status::Ok);
        let without = bpf_events_check(Ok("ffffffff81123c10 T other\n".to_owned()));
        assert!(without.status == Status::Fail);
        assert!(without.fix.unwrap().contains("CONFIG_BPF_EVENTS=y"));
        let unread = bpf_events_check(Err(std::io::ErrorKind::NotFound.into()));
        assert!(unread.status == Status::Warn);
    }
}
