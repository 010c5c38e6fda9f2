//! `phytrace doctor`: can this machine trace a Rust PHY driver? Each check says what it found
//! and, when it fails, how to fix it.

use std::fmt::Write as _;
use std::{fs, path::Path, process::ExitCode};

use crate::{
    exit::FailureKind,
    output,
    probe::{
        attach, btf, loader,
        mdio_probes::{self, MdioChoice},
        privileges, selftest, symbols,
    },
};

/// Arguments of `phytrace doctor`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  sudo phytrace doctor\n  sudo phytrace doctor --module ax88796b_rust"
)]
pub struct DoctorArgs {
    /// The driver module you want to trace.
    #[arg(long, default_value = "ax88796b_rust")]
    pub module: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warn,
    Fail,
    Skipped,
}

struct Check {
    name: &'static str,
    status: Status,
    detail: String,
    fix: Option<String>,
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

/// Runs every check, prints them, and exits 0 if tracing can work, 3 if not.
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut checks = vec![kernel_release()];
    let privileged = privileges();
    let can_load = privileged.status == Status::Ok;
    checks.push(privileged);
    checks.push(btf_check());
    checks.push(tracefs());
    let kprobes = kprobe_pmu();
    let have_kprobes = kprobes.status == Status::Ok;
    checks.push(kprobes);
    let ready = can_load && have_kprobes;
    let why = if !can_load {
        "needs privileges"
    } else {
        "no kprobes"
    };
    checks.push(if ready {
        rust_kprobe()
    } else {
        Check::skipped("kprobe on a Rust symbol", why)
    });
    checks.push(if can_load {
        mdio_attach()
    } else {
        Check::skipped("MDIO probes", why)
    });
    checks.push(driver_module(&args.module));
    checks.push(if ready {
        pipeline()
    } else {
        Check::skipped("pipeline self-test", why)
    });

    let mut out = String::new();
    for check in &checks {
        let mark = match check.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skipped => "skip",
        };
        writeln!(out, "[{mark}] {:<26} {}", check.name, check.detail)?;
        if let Some(fix) = &check.fix {
            writeln!(out, "       {:<26} fix: {fix}", "")?;
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        writeln!(out, "phytrace can trace on this machine.")?;
    } else {
        writeln!(
            out,
            "phytrace cannot trace on this machine: {failed} check(s) failed."
        )?;
    }
    output::print(out.as_bytes())?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FailureKind::TracingUnavailable.code())
    })
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
    let pmu = Path::new("/sys/bus/event_source/devices/kprobe");
    if pmu.exists() {
        Check::ok(NAME, "kprobe PMU present")
    } else {
        Check::fail(
            NAME,
            "this kernel has no kprobe PMU (/sys/bus/event_source/devices/kprobe)",
            "use a kernel built with CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y (cargo xtask kernel builds one)",
        )
    }
}

/// A Rust function of the kernel crate or a Rust module, to try a kprobe on.
fn any_rust_symbol() -> Option<String> {
    let text = fs::read_to_string(symbols::KALLSYMS).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (_, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
        (kind.eq_ignore_ascii_case("t") && name.starts_with("_R")).then(|| name.to_owned())
    })
}

fn rust_kprobe() -> Check {
    const NAME: &str = "kprobe on a Rust symbol";
    let Some(symbol) = any_rust_symbol() else {
        return Check::warn(
            NAME,
            "no Rust symbol in /proc/kallsyms",
            "is the kernel built with CONFIG_RUST=y?",
        );
    };
    let outcome = loader::load(&loader::LoadOptions::new(4096, Default::default()))
        .and_then(|mut ebpf| attach::attach(&mut ebpf, "callback_enter", &symbol).map(|_| ()));
    let shown = rustc_demangle::demangle(&symbol).to_string();
    match outcome {
        Ok(()) => Check::ok(NAME, format!("attached to {shown:#}")),
        Err(err) => Check::fail(
            NAME,
            format!("{err:#}"),
            "rebuild the kernel with CONFIG_KPROBE_EVENTS_ON_NOTRACE=y (Rust functions have no ftrace site)",
        ),
    }
}

/// Which attach the MDIO accessors get: fentry/fexit, or the kprobe fallback and why.
fn mdio_attach() -> Check {
    const NAME: &str = "MDIO probes";
    let mut notes = Vec::new();
    let outcome = btf::KernelBtf::open(Path::new(btf::VMLINUX_BTF)).and_then(|btf| {
        let mut ebpf = loader::load(&loader::LoadOptions::new(4096, Default::default()))?;
        mdio_probes::attach_all(&mut ebpf, MdioChoice::Fentry, &btf, &mut notes)
    });
    match outcome {
        Ok(probes) => Check::ok(
            NAME,
            format!(
                "{} (BPF trampolines) on the MDIO accessors{}",
                probes.name(),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!("; {}", notes.join("; "))
                }
            ),
        ),
        Err(err) => Check::warn(
            NAME,
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
    const NAME: &str = "pipeline self-test";
    match selftest::run() {
        Ok(report) => Check::ok(
            NAME,
            format!(
                "kprobe+kretprobe on {} → ring buffer → userspace in {:.0} ms (call took {} ns, returned {}); aya-log: \"{}\"",
                report.target,
                report.elapsed.as_secs_f64() * 1000.0,
                report.latency_ns,
                report.returned,
                report.log_lines.first().map_or("", String::as_str)
            ),
        ),
        Err(err) => Check::fail(
            NAME,
            format!("{err:#}"),
            "run with RUST_LOG=debug and report the output",
        ),
    }
}
