//! The arm64 test: the static `dist` binaries record the same scenario (`tests/arm64/scenario.sh`)
//! with the Rust driver and one simulated AX88772A in an x86_64 guest and in an arm64 guest;
//! then the host build's `check`, `dump` and `diff` must tell the same story of both captures.
//!
//! "The same story": the check verdicts are equal rule by rule; the decoded events are equal
//! once timing is taken out (timestamps, latencies, CPUs and thread ids) and so are the reads
//! and `read_status` polls, whose number depends on how fast the guest runs, and the kernel's
//! messages, whose place among the callbacks depends on it too; `diff
//! --ignore-reads` finds the MDIO sequences equal. In each guest a second `record` probes the
//! callbacks at phylib's call sites: its callbacks must equal, in each thread's order and with
//! their return values, the kernel's own kprobe events on the driver's callbacks of that run.
//!
//! The arm64 guest then plugs in the emulated AX88772A dongle (`tests/arm64/dongle.sh`, the
//! emulator's static aarch64 build on raw-gadget): `record` with its defaults from before the
//! plug-in through link up, a cable flap and link down; its callbacks must equal the kernel's
//! own events on the driver's callbacks in the same way, and its MAC side asix's
//! `mac_link_up`/`mac_link_down` as the kernel's kprobes saw them (count, speed, duplex). The
//! x86_64 guest's VM suite covers the dongle there (tests/vm/18, 19, 41, 42).
//!
//! The kernel twin ([`compare_kernels`]) compares the dongle scenario recorded on two kernels
//! in the same way.
//!
//! This runs the twins; [`captures`] compares two captures, [`truth`] a capture with the
//! kernel's kprobes.

mod captures;
mod truth;

use std::path::{Path, PathBuf};

use anyhow::{Result, ensure};

use crate::{arch::Arch, dist, kernel, modules, paths, run, vm};

/// The scenario both guests run.
const SCENARIO: &str = "tests/arm64/scenario.sh";
/// The dongle scenario the arm64 guest runs next.
const DONGLE: &str = "tests/arm64/dongle.sh";
/// The emulator the arm64 guest runs.
const EMULATOR: &str = "ax88772a-emulator";
/// The spec the captures are checked against.
const SPEC: &str = "specs/ax88796b.spec";

/// The capture the scenario leaves for `arch`.
pub fn capture(arch: Arch) -> PathBuf {
    paths::vm_out().join(format!("twin-{arch}.ptrace"))
}

/// Builds what the test needs, records the scenario in both guests (one after the other) and
/// compares the captures with `host_phytrace`.
pub fn run(options: &vm::VmOptions, host_phytrace: &Path) -> Result<()> {
    dist::build_all(&Arch::ALL)?;
    build_emulator(Arch::Aarch64)?;
    let mut kernels = Vec::new();
    for arch in Arch::ALL {
        let kernel = kernel::run(&kernel::KernelArgs {
            force: false,
            arch,
            source: Default::default(),
        })?;
        modules::build(&kernel)?;
        kernels.push(kernel);
    }
    let script = |path: &str| paths::workspace().join(path).display().to_string();
    for kernel in &kernels {
        let arch = kernel.arch;
        let command = match arch {
            Arch::Aarch64 => vec![
                "sh".to_owned(),
                "-c".to_owned(),
                format!("sh {} && sh {}", script(SCENARIO), script(DONGLE)),
            ],
            _ => vec!["sh".to_owned(), script(SCENARIO)],
        };
        let started = run::step(&format!("arm64 test: the scenario in the {arch} guest"));
        let mut options = options.clone();
        options.bin = Some(dist::binary(arch));
        let _ = std::fs::remove_file(capture(arch));
        let code = vm::boot(kernel, &options, &command)?;
        ensure!(
            code == 0,
            "the scenario failed in the {arch} guest (exit status {code})"
        );
        run::done(&format!("{arch} guest"), started);
    }
    let (a, b) = (capture(Arch::X86_64), capture(Arch::Aarch64));
    let spec = paths::workspace().join(SPEC);
    captures::same_verdicts(host_phytrace, (&a, &spec), (&b, &spec))?;
    captures::agree_across_arches(host_phytrace, &a, &b)?;
    for arch in Arch::ALL {
        let capture = paths::vm_out().join(format!("twin-{arch}-callsite.ptrace"));
        truth::compare_call_sites(host_phytrace, &capture, &arch.to_string())?;
    }
    let dongle = paths::vm_out().join(format!("dongle-{}.ptrace", Arch::Aarch64));
    let json = truth::compare_call_sites(host_phytrace, &dongle, "aarch64 dongle")?;
    truth::compare_mac(&json, &dongle)?;
    truth::mac_calls_at_sites(&dongle)
}

/// Builds the dongle emulator for `arch`'s musl target (static, as `dist` builds phytrace).
fn build_emulator(arch: Arch) -> Result<()> {
    let started = run::step(&format!("arm64 test: building the emulator for {arch}"));
    dist::build_static(EMULATOR, arch)?;
    run::done(&format!("{arch} emulator"), started);
    Ok(())
}

/// The dongle scenario every kernel records (`dongle_scenario` in `tests/vm/dongle_lib.sh`):
/// the capture a guest of `kernel` (`ours`, `stock`) leaves, beside the specs it scoped to the
/// dongle's PHY (`CAPTURE.SPEC.spec`).
pub fn dongle_capture(kernel: &str) -> PathBuf {
    paths::vm_out().join(format!("twin-dongle-{kernel}.ptrace"))
}

/// The specs the dongle twin is checked against (each guest scopes them to its dongle's PHY).
const DONGLE_SPECS: [&str; 2] = ["ax88796b", "dongle"];

/// The cross-kernel twin: the dongle scenario recorded on two kernels (`(name, capture)`),
/// compared as the arm64 test compares its guests: the verdicts of the shipped specs rule by
/// rule, then what their dumps tell ([`captures::agree_across_kernels`]).
pub fn compare_kernels(phytrace: &Path, a: (&str, &Path), b: (&str, &Path)) -> Result<()> {
    let with =
        |capture: &Path, suffix: &str| PathBuf::from(format!("{}{suffix}", capture.display()));
    for spec in DONGLE_SPECS {
        let suffix = format!(".{spec}.spec");
        captures::same_verdicts(
            phytrace,
            (a.1, &with(a.1, &suffix)),
            (b.1, &with(b.1, &suffix)),
        )?;
    }
    captures::agree_across_kernels(phytrace, a, b)
}
