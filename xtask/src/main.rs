//! `cargo xtask`: set-up, test kernel, modules, VM, tests and demo for phytrace.

mod arch;
mod bench;
mod btf_fixture;
mod deb;
mod debian_root;
mod demo;
mod dist;
mod fuzz;
mod kernel;
mod kernel73;
mod kernel_no_btf;
mod ktap;
mod modules;
mod paths;
mod prometheus;
mod release_contents;
mod run;
mod setup;
mod shellcheck;
mod soak;
mod stock;
mod test;
mod twin;
mod vm;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// phytrace's developer tasks. Each one installs or builds what it needs first.
#[derive(Parser)]
#[command(name = "cargo xtask", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install everything the build and the tests need (apt packages, toolchains, bpf-linker,
    /// bindgen, Debian's stock kernel, a Debian trixie root for the package). Idempotent: a
    /// second run only checks.
    ///
    /// Example: `cargo xtask setup`
    Setup,
    /// Build the test kernel (Debian's linux-source-6.12 + kernel/phytrace.config), cached in
    /// $XDG_CACHE_HOME/phytrace; `--arch aarch64` cross-builds the arm64 one (+
    /// kernel/phytrace-arm64.config).
    ///
    /// Example: `cargo xtask kernel` (or `cargo xtask kernel --arch aarch64`)
    Kernel(kernel::KernelArgs),
    /// Fetch Debian's kernels, unmodified, into the cache: 7.3 (`linux-image-7.3.4+deb13-amd64`),
    /// Debian 13's 6.12 and Debian 14's 7.2; each's vmlinuz, modules (depmod'ed), config and
    /// BTF. `cargo xtask vm --kernel stock|debian13|debian14` boots one. `--btf-fixture`
    /// rewrites the BTF reader's test fixture from the 7.3.
    ///
    /// Example: `cargo xtask stock`
    Stock(stock::StockArgs),
    /// Build the static release binaries for x86_64 and aarch64 and release them with the man
    /// pages, the completions, the README, docs, specs and contrib (alert rules, dashboard): as
    /// target/dist/phytrace-VERSION-ARCH.tar.gz (+ .sha256) and as the Debian packages
    /// target/dist/phytrace_VERSION_{amd64,arm64}.deb (checked with lintian).
    ///
    /// Example: `cargo xtask dist` (or `cargo xtask dist --arch aarch64`)
    Dist(dist::DistArgs),
    /// Build the out-of-tree modules (driver/*) against the test kernel into target/modules.
    ///
    /// Example: `cargo xtask modules` (or `cargo xtask modules --arch aarch64`)
    Modules(modules::ModulesArgs),
    /// Boot the test kernel in QEMU and run COMMAND as root in the guest.
    ///
    /// The host's root file system is the guest's (read-only); $PHYTRACE_OUT (target/vm-out) is
    /// writable. The arm64 guest (`--arch aarch64`) runs static arm64 binaries only: busybox's
    /// applets and `cargo xtask dist`'s phytrace. Example: `cargo xtask vm -- uname -r`
    Vm(vm::VmArgs),
    /// The demo: the VM with the simulated PHYs and the Rust driver, traced live in the TUI
    /// while a scenario plugs and unplugs the cable.
    ///
    /// Example: `cargo xtask demo` (or `cargo xtask demo --headless`)
    Demo(demo::DemoArgs),
    /// Benchmarks in the VM: phytrace vs bpftrace vs no tracing, written to docs/benchmarks.md.
    ///
    /// Example: `cargo xtask bench` (or `cargo xtask bench --repeats 3`)
    Bench(bench::BenchArgs),
    /// Run every test: shellcheck, formatting, clippy, host tests, then the VM suites.
    ///
    /// Example: `cargo xtask test` (or `cargo xtask test --host-only`)
    Test(test::TestArgs),
    /// Fuzz the capture reader and the spec parser with libFuzzer (cargo-fuzz, installed if
    /// missing), from the seeds in fuzz/seeds; fails on a crash or a short run.
    ///
    /// Example: `cargo xtask fuzz` (or `cargo xtask fuzz --runs 100000 --target spec_parser`)
    Fuzz(fuzz::FuzzArgs),
    /// The long reliability runs: fuzzing (10^6 inputs per target), then in one VM boot 100
    /// driver reloads while recording, 20 SIGKILLs, 30 s of MDIO overload, a full disk, the
    /// privilege checks and an hour of link flapping with `record` and the TUI. Writes the
    /// figures to docs/reliability.md and docs/reliability.json.
    ///
    /// Example: `cargo xtask soak` (or `cargo xtask soak --minutes 10 --fuzz-runs 0`)
    Soak(soak::SoakArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Setup => setup::run().map(|()| ExitCode::SUCCESS),
        Command::Kernel(args) => kernel::run(&args).map(|_| ExitCode::SUCCESS),
        Command::Dist(args) => dist::run(&args).map(|_| ExitCode::SUCCESS),
        Command::Stock(args) => stock::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Modules(args) => modules::run(&args).map(|_| ExitCode::SUCCESS),
        Command::Vm(args) => vm::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Fuzz(args) => fuzz::run(&args).map(|_| ExitCode::SUCCESS),
        Command::Soak(args) => soak::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
