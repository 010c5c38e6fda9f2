//! `cargo xtask test`: shellcheck, formatting, lints, host tests, the KTAP check, the alert
//! rules' unit tests (`prometheus.rs`), then the VM suite, with one summary.
//!
//! The VM suite boots the test kernel once and runs `tests/vm/run.sh`, which runs every
//! `tests/vm/NN-*.sh` in turn as root and ends with an `N passed, N failed` line. The stock
//! kernel stage boots Debian's unmodified 7.3 (`stock.rs`) and runs `tests/stock/run.sh`: doctor,
//! the dongle scenario recorded and checked against the kernel's own records and the shipped
//! specs, the dongle unplugged and plugged in again under `record` and the TUI, and phytrace's
//! amd64 package, installed with apt into a Debian root (`debian_root.rs`), run from it. When
//! both ran, the kernel twin compares the dongle scenario's captures of both kernels on the host
//! (`twin::compare_kernels`). The no-BTF stage boots the test kernel built without BTF
//! (`kernel_no_btf.rs`) and runs the VM suite's tests that record ([`NO_BTF_TESTS`]), traced with
//! the BTF file pahole made for it. With `--kernel 7.3`, the VM suite also runs on 7.3 built
//! from source (not by default: its kernel build takes about 9 minutes), and its dongle scenario
//! is compared with the stock kernel's the same way. The arm64 test then records the same
//! scenario with the static `dist` binaries in an x86_64 and an arm64 guest and compares the
//! captures on the host (`twin.rs`).

use std::{
    process::{Command, ExitCode},
    time::SystemTime,
};

use anyhow::{Context as _, Result};

use crate::{
    arch::Arch, deb, debian_root, dist, kernel, modules, paths, run, setup, shellcheck, twin, vm,
};

#[derive(clap::Args)]
pub struct TestArgs {
    /// Only shellcheck, formatting, lints and host tests (no kernel or VM).
    #[arg(long, conflicts_with = "vm_only")]
    pub host_only: bool,
    /// Only the VM suite.
    #[arg(long)]
    pub vm_only: bool,
    /// Run only the VM tests whose file name matches this extended regular expression
    /// (e.g. `kill9|churn`).
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// The VM tests of these architectures only (default: both, or x86_64 with --kernel): x86_64 is the VM suite,
    /// aarch64 the arm64 test (the same scenario recorded in an arm64 and an x86_64 guest, with
    /// the static `dist` binaries; not run with --filter).
    #[arg(long = "arch", value_enum, value_name = "ARCH")]
    pub arches: Vec<Arch>,
    /// The x86_64 kernels to run VM tests on (default: ours, stock, debian13 and no-btf, or only
    /// ours with --filter): ours (6.12) and 7.3 (built from source, docs/kernels.md) run
    /// tests/vm, stock (Debian's 7.3) and debian13 (Debian 13's 6.12, unmodified) run
    /// tests/stock, no-btf (ours built without BTF) the tests of tests/vm that record, with the
    /// BTF file pahole made for it.
    #[arg(long = "kernel", value_enum, value_name = "KERNEL")]
    pub kernels: Vec<vm::KernelChoice>,
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

struct Outcome {
    name: &'static str,
    passed: bool,
}

pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let started = SystemTime::now();
    let mut outcomes = Vec::new();
    if !args.vm_only {
        // The host suites need the eBPF toolchain too (phytrace/build.rs builds the programs).
        setup::run()?;
        outcomes.push(check("shellcheck", shellcheck::run()));
        outcomes.push(check("cargo fmt", cargo(&["fmt", "--all", "--check"])));
        outcomes.push(check(
            "cargo clippy",
            cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        ));
        outcomes.push(check("eBPF clippy", ebpf_clippy()));
        outcomes.push(check("host tests", cargo(&["test", "--workspace"])));
        outcomes.push(check("KTAP", crate::ktap::run()));
        outcomes.push(check("alert rules", crate::prometheus::run()));
    }
    if !args.host_only {
        if args.vm_only {
            setup::run()?;
        }
        let all = args.arches.is_empty();
        let x86 = all || args.arches.contains(&Arch::X86_64);
        // 7.3 from source only when asked: its kernel build takes about 9 minutes.
        let kernel = |choice| {
            args.kernels.contains(&choice)
                || (args.kernels.is_empty()
                    && (choice == vm::KernelChoice::Ours
                        || (matches!(
                            choice,
                            vm::KernelChoice::Stock
                                | vm::KernelChoice::Debian13
                                | vm::KernelChoice::NoBtf
                        ) && args.filter.is_none())))
        };
        if x86 && kernel(vm::KernelChoice::Ours) {
            outcomes.push(check("VM suite", vm_suite(args)));
        }
        if x86 && kernel(vm::KernelChoice::Stock) {
            outcomes.push(check("stock kernel", stock_suite(args)));
        }
        if x86 && kernel(vm::KernelChoice::Debian13) {
            let suite = debian_suite(args, crate::stock::DEBIAN_13, "Debian 13 kernel");
            outcomes.push(check("Debian 13 kernel", suite));
        }
        if x86 && kernel(vm::KernelChoice::Debian14) {
            let suite = debian_suite(args, crate::stock::DEBIAN_14, "Debian 14 kernel");
            outcomes.push(check("Debian 14 kernel", suite));
        }
        if x86 && kernel(vm::KernelChoice::NoBtf) {
            outcomes.push(check("no-BTF kernel", no_btf_suite(args)));
        }
        if x86 && kernel(vm::KernelChoice::Source73) {
            outcomes.push(check("7.3 kernel", source73_suite(args)));
        } else if x86 {
            eprintln!(
                "7.3 kernel: not run (its build takes about 9 minutes): \
                 `cargo xtask test --vm-only --kernel 7.3` runs the VM suite on it"
            );
        }
        if x86 && kernel(vm::KernelChoice::Stock) {
            for ours in [vm::KernelChoice::Ours, vm::KernelChoice::Source73] {
                if kernel(ours) {
                    let name = match ours {
                        vm::KernelChoice::Source73 => "7.3 twin",
                        _ => "kernel twin",
                    };
                    outcomes.push(check(
                        name,
                        kernel_twin(ours, started, args.filter.is_some()),
                    ));
                }
            }
        }
        // `--kernel` alone picks x86_64 kernels: no arm64 test then.
        if (args.arches.contains(&Arch::Aarch64) || (all && args.kernels.is_empty()))
            && args.filter.is_none()
        {
            outcomes.push(check("arm64 test", arm64_test(args)));
        }
    }
    eprintln!();
    for outcome in &outcomes {
        eprintln!(
            "{:<14} {}",
            outcome.name,
            if outcome.passed { "ok" } else { "FAILED" }
        );
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn check(name: &'static str, result: Result<()>) -> Outcome {
    if let Err(err) = &result {
        eprintln!("xtask test: {name}: {err:#}");
    }
    Outcome {
        name,
        passed: result.is_ok(),
    }
}

/// Lints the eBPF crate as it is built: for the bpf target (with each architecture's
/// registers), with the pinned nightly (`cargo clippy --workspace` only type-checks its host
/// stub).
fn ebpf_clippy() -> Result<()> {
    let toolchain = setup::ebpf_toolchain()?;
    for arch in ["x86_64", "aarch64"] {
        run::status(
            Command::new("rustup")
                .args(["run", &toolchain, "cargo", "clippy", "--quiet", "--release"])
                .args(["-Z", "build-std=core", "--target", "bpfel-unknown-none"])
                .arg("--target-dir")
                .arg(paths::target().join("ebpf-clippy"))
                .args(["--", "-D", "warnings"])
                .env("RUSTFLAGS", format!("--cfg bpf_target_arch=\"{arch}\""))
                .env_remove("RUSTC")
                .env_remove("RUSTC_WRAPPER")
                .env_remove("CARGO")
                .current_dir(paths::workspace().join("phytrace-ebpf")),
        )?;
    }
    Ok(())
}

fn cargo(args: &[&str]) -> Result<()> {
    run::status(
        Command::new(env!("CARGO"))
            .args(args)
            .current_dir(paths::workspace()),
    )
}

fn arm64_test(args: &TestArgs) -> Result<()> {
    let started = run::step("arm64 test");
    // The host build reads the captures (as in the VM suite).
    cargo(&["build", "--package", "phytrace"])?;
    // One test: the same scenario in both guests, and their captures agree.
    let result = twin::run(&args.vm, &paths::target().join("debug/phytrace"));
    let passed = usize::from(result.is_ok());
    eprintln!("arm64: {passed} passed, {} failed", 1 - passed);
    result?;
    run::done("arm64 test", started);
    Ok(())
}

/// The cross-kernel twin: the dongle scenario the VM suite (`tests/vm/42-dongle-twin.sh`) on
/// `ours` (6.12 or 7.3 built from source) and the stock stage
/// (`tests/stock/51-dongle-record.sh`) recorded in this run, compared on the host
/// (`twin::compare_kernels`); ours also against Debian 13's and 14's, where their stages
/// recorded it in this run. With `--filter`, only if it let ours and the stock one run.
fn kernel_twin(ours: vm::KernelChoice, started: SystemTime, filtered: bool) -> Result<()> {
    let (name, what) = match ours {
        vm::KernelChoice::Source73 => ("7.3", "7.3 built from source"),
        _ => ("ours", "ours (6.12)"),
    };
    let step = run::step(&format!(
        "kernel twin: the dongle scenario on {what} and Debian's kernels"
    ));
    let mut captures = Vec::new();
    for (kernel, test) in [
        (name, "tests/vm/42-dongle-twin.sh"),
        ("stock", "tests/stock/51-dongle-record.sh"),
    ] {
        let capture = twin::dongle_capture(kernel);
        let modified = std::fs::metadata(&capture).and_then(|meta| meta.modified());
        if filtered && !modified.as_ref().is_ok_and(|time| *time >= started) {
            eprintln!("    skipped: --filter left out {test}");
            return Ok(());
        }
        let modified =
            modified.with_context(|| format!("{}: {test} left no capture", capture.display()))?;
        anyhow::ensure!(
            modified >= started,
            "{}: not from this run ({test} did not record it)",
            capture.display()
        );
        captures.push((kernel, capture));
    }
    let phytrace = paths::target().join("debug/phytrace");
    let ours = (captures[0].0, captures[0].1.as_path());
    twin::compare_kernels(&phytrace, ours, (captures[1].0, &captures[1].1))?;
    for kernel in ["debian13", "debian14"] {
        let capture = twin::dongle_capture(kernel);
        let modified = std::fs::metadata(&capture).and_then(|meta| meta.modified());
        if modified.is_ok_and(|time| time >= started) {
            twin::compare_kernels(&phytrace, ours, (kernel, &capture))?;
        }
    }
    run::done("kernel twin", step);
    Ok(())
}

/// Debian's stock 7.3 (fetched into the cache once): `tests/stock/run.sh` in one boot. First
/// the amd64 package of `cargo xtask dist` is installed into the Debian root the guest runs it
/// from (`debian_root.rs`, tests/stock/54-package.sh).
fn stock_suite(args: &TestArgs) -> Result<()> {
    dist::build_all(&[Arch::X86_64])?;
    debian_root::install(&deb::file(Arch::X86_64))?;
    let kernel = kernel::Kernel::stock(crate::stock::DEBIAN_73)?;
    boot_suite(
        &kernel,
        &args.vm,
        args.filter.as_deref(),
        "tests/stock/run.sh",
        "stock kernel",
        "booting Debian's 7.3.4 (unmodified)",
    )?;
    // The lockdown test once more, in a boot under the mode that refuses tracing.
    if args
        .filter
        .as_deref()
        .is_none_or(|filter| filter.contains(LOCKDOWN_TEST))
    {
        let confidential = kernel::Kernel {
            lockdown: Some("confidentiality"),
            ..kernel
        };
        boot_suite(
            &confidential,
            &args.vm,
            Some(LOCKDOWN_TEST),
            "tests/stock/run.sh",
            "stock kernel, lockdown=confidentiality",
            "booting Debian's 7.3.4 with lockdown=confidentiality",
        )?;
    }
    Ok(())
}

/// Debian's kernel `release` (fetched into the cache once): `tests/stock/run.sh` in one boot,
/// which runs the tests made for it (`kernel_only`).
fn debian_suite(args: &TestArgs, release: crate::stock::Release, name: &str) -> Result<()> {
    boot_suite(
        &kernel::Kernel::stock(release)?,
        &args.vm,
        args.filter.as_deref(),
        "tests/stock/run.sh",
        name,
        &format!("booting {} (unmodified)", release.name),
    )
}

/// The stock test that checks the boot's lockdown mode (`tests/stock/99-lockdown.sh`).
const LOCKDOWN_TEST: &str = "lockdown";

/// The VM suite on 7.3 built from source (built and cached on first use).
fn source73_suite(args: &TestArgs) -> Result<()> {
    let kernel = crate::kernel73::run(false)?;
    modules::build(&kernel)?;
    boot_suite(
        &kernel,
        &args.vm,
        args.filter.as_deref(),
        "tests/vm/run.sh",
        "7.3 kernel",
        "booting 7.3 built from source",
    )
}

/// The VM suite's tests the kernel without BTF runs (with `--filter`, those it picks): the BTF
/// file's own, then recording the simulated PHYs and the dongle, each checked against the
/// simulator, the emulator and the kernel's records as on the other kernels.
const NO_BTF_TESTS: &str =
    "btf-file|record-plug-unplug|record-c-driver|record-callsite|dongle-record";

/// Tests of the VM suite on the kernel without BTF (built and cached on first use), traced with
/// the BTF file made for it (`kernel_no_btf.rs`).
fn no_btf_suite(args: &TestArgs) -> Result<()> {
    let kernel = crate::kernel_no_btf::run(false)?;
    modules::build(&kernel)?;
    boot_suite(
        &kernel,
        &args.vm,
        Some(args.filter.as_deref().unwrap_or(NO_BTF_TESTS)),
        "tests/vm/run.sh",
        "no-BTF kernel",
        "booting the test kernel built without BTF",
    )
}

fn vm_suite(args: &TestArgs) -> Result<()> {
    let kernel = kernel::run(&kernel::KernelArgs {
        force: false,
        arch: crate::arch::Arch::X86_64,
        source: Default::default(),
    })?;
    modules::build(&kernel)?;
    boot_suite(
        &kernel,
        &args.vm,
        args.filter.as_deref(),
        "tests/vm/run.sh",
        "VM suite",
        "booting the test kernel",
    )
}

/// Builds what the suites run (target/debug/phytrace and target/debug/ax88772a-emulator), then
/// boots `kernel` on the suite runner `runner` (with `filter`, `--filter`'s argument or the
/// stage's own); `name` the stage.
fn boot_suite(
    kernel: &kernel::Kernel,
    vm: &vm::VmOptions,
    filter: Option<&str>,
    runner: &str,
    name: &str,
    booting: &str,
) -> Result<()> {
    cargo(&[
        "build",
        "--package",
        "phytrace",
        "--package",
        "ax88772a-emulator",
    ])?;
    let runner = paths::workspace().join(runner);
    let mut command = vec!["/bin/bash".to_owned(), runner.display().to_string()];
    command.extend(filter.map(str::to_owned));
    let started = run::step(&format!("{name}: {booting}"));
    let code = vm::boot(kernel, vm, &command)?;
    run::done(name, started);
    anyhow::ensure!(code == 0, "the {name} failed (exit status {code})");
    Ok(())
}
