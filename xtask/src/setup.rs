//! `cargo xtask setup`: installs what the build and the tests need, idempotently.
//!
//! Each step checks first and installs only what is missing, so a second run only checks.

use std::{fs, path::Path, process::Command};

use anyhow::{Context as _, Result, bail};

use crate::{paths, run};

/// Debian packages from bookworm: kernel build, VM rig, guest tools, tracer to compare against,
/// the package's lint and the Debian root it is installed into (`debian_root.rs`), the
/// Prometheus server and promtool (the alert rules' tests, VM test 27).
const APT_PACKAGES: &[&str] = &[
    "linux-source-6.12",
    "bc",
    "flex",
    "bison",
    "libelf-dev",
    "libssl-dev",
    "dwarves",
    "cpio",
    "busybox-static",
    "rsync",
    "kmod",
    "zstd",
    "libclang-19-dev",
    "clang-19",
    "lld-19",
    "llvm-19",
    "bpftrace",
    "bpftool",
    "linux-perf",
    "iproute2",
    "ethtool",
    "tmux",
    "shellcheck",
    "lintian",
    "mmdebstrap",
    "prometheus",
];

/// Packages taken from bookworm-backports (bookworm's own QEMU clashes with the image's
/// newer qemu-utils).
const BACKPORTS_PACKAGES: &[&str] = &["qemu-system-x86", "qemu-system-arm"];

const BACKPORTS_SOURCE: &str = "/etc/apt/sources.list.d/phytrace-backports.sources";
const BACKPORTS_ENTRY: &str = "Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

/// Tools installed with `cargo install`: (binary, crate, version).
const CARGO_TOOLS: &[(&str, &str, &str)] = &[
    ("bindgen", "bindgen-cli", "0.69.5"),
    ("bpf-linker", "bpf-linker", "0.10.4"),
];

/// libclang for bindgen (the kernel's Rust bindings).
pub const LIBCLANG_PATH: &str = "/usr/lib/llvm-19/lib";

pub fn run() -> Result<()> {
    let started = run::step("setup: checking what is installed");
    apt()?;
    toolchains()?;
    rust_targets()?;
    cargo_tools()?;
    bindgen_for_7_3()?;
    guest_busybox()?;
    stock_kernel()?;
    crate::debian_root::USER_MACHINE.prepare()?;
    crate::debian_root::BPFTRACE.prepare()?;
    fs::create_dir_all(paths::cache())
        .with_context(|| format!("creating the cache {}", paths::cache().display()))?;
    module_tree_mount_point()?;
    run::done("setup", started);
    Ok(())
}

/// Debian's kernels in the cache (`stock.rs`): those of `tests/stock`, and the BTF the
/// reader's host tests compare their fixture with.
fn stock_kernel() -> Result<()> {
    for release in crate::stock::RELEASES {
        crate::stock::prepare(release)?;
        eprintln!("    {} ({}): present", release.name, release.release);
    }
    Ok(())
}

/// The guest sees this machine's root file system read-only and mounts its own module tree
/// over `/lib/modules`: that directory must exist here (a machine without loadable modules,
/// such as a container, has none).
fn module_tree_mount_point() -> Result<()> {
    let dir = Path::new(MODULES_DIR);
    if dir.is_dir() {
        return Ok(());
    }
    require_root("creating /lib/modules (where the VM mounts its module tree)")?;
    eprintln!("    creating {MODULES_DIR} (the VM mounts its module tree there)");
    fs::create_dir_all(dir).with_context(|| format!("creating {MODULES_DIR}"))
}

/// Where the VM mounts its module tree.
const MODULES_DIR: &str = "/lib/modules";

pub fn require_root(what: &str) -> Result<()> {
    if run::probe("id", ["-u"]).as_deref() != Some("0") {
        bail!("{what} needs root: run `sudo cargo xtask setup` (or as root)");
    }
    Ok(())
}

fn missing_packages(packages: &[&str]) -> Vec<String> {
    let listed = run::probe(
        "dpkg-query",
        std::iter::once("-Wf=${Package} ${db:Status-Status}\n").chain(packages.iter().copied()),
    );
    // dpkg-query fails when one package is unknown; then ask one by one.
    let installed = |name: &str| match &listed {
        Some(text) => text.lines().any(|line| line == format!("{name} installed")),
        None => {
            run::probe("dpkg-query", ["-Wf=${db:Status-Status}", name]).as_deref()
                == Some("installed")
        }
    };
    packages
        .iter()
        .filter(|name| !installed(name))
        .map(|name| name.to_string())
        .collect()
}

fn apt() -> Result<()> {
    let missing = missing_packages(APT_PACKAGES);
    let missing_backports = missing_packages(BACKPORTS_PACKAGES);
    let needs_source = !Path::new(BACKPORTS_SOURCE).exists();
    if missing.is_empty() && missing_backports.is_empty() {
        eprintln!(
            "    apt packages: all {} present",
            APT_PACKAGES.len() + BACKPORTS_PACKAGES.len()
        );
        return Ok(());
    }
    require_root("installing Debian packages")?;
    if needs_source {
        eprintln!("    adding the bookworm-backports source ({BACKPORTS_SOURCE})");
        fs::write(BACKPORTS_SOURCE, BACKPORTS_ENTRY)
            .with_context(|| format!("writing {BACKPORTS_SOURCE}"))?;
    }
    eprintln!("    apt-get update");
    run::status(Command::new("apt-get").args(["update", "-q"]))?;
    let install = |packages: &[String], extra: &[&str]| -> Result<()> {
        if packages.is_empty() {
            return Ok(());
        }
        eprintln!("    apt-get install {}", packages.join(" "));
        run::status(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-q", "--no-install-recommends"])
                .args(extra)
                .args(packages),
        )
        .context("a package could not be installed: check that apt can reach the Debian mirror and that `apt-cache policy <package>` lists a candidate")
    };
    install(&missing, &[])?;
    install(&missing_backports, &["-t", "bookworm-backports"])
}

/// The `channel = "…"` of a rust-toolchain.toml.
pub fn toolchain_channel(file: &Path) -> Result<String> {
    let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("channel"))
        .and_then(|rest| rest.split('"').nth(1))
        .map(str::to_owned)
        .with_context(|| format!("{} has no `channel = \"…\"`", file.display()))
}

/// The workspace's toolchain (also used for the kernel's Rust code).
pub fn workspace_toolchain() -> Result<String> {
    toolchain_channel(&paths::workspace().join("rust-toolchain.toml"))
}

/// The nightly that builds the eBPF programs.
pub fn ebpf_toolchain() -> Result<String> {
    toolchain_channel(&paths::workspace().join("phytrace-ebpf/rust-toolchain.toml"))
}

/// Installs the workspace's toolchain and the eBPF nightly, with their components, if missing.
pub fn toolchains() -> Result<()> {
    for (toolchain, components) in [
        (
            workspace_toolchain()?,
            &["rust-src", "clippy", "rustfmt"][..],
        ),
        (ebpf_toolchain()?, &["rust-src", "clippy"][..]),
    ] {
        let installed = run::probe(
            "rustup",
            [
                "component",
                "list",
                "--installed",
                "--toolchain",
                &toolchain,
            ],
        )
        .unwrap_or_default();
        let missing: Vec<_> = components
            .iter()
            .filter(|c| !installed.lines().any(|line| line.starts_with(*c)))
            .collect();
        if missing.is_empty() {
            eprintln!(
                "    toolchain {toolchain}: present with {}",
                components.join(", ")
            );
            continue;
        }
        eprintln!(
            "    installing toolchain {toolchain} with {}",
            components.join(", ")
        );
        let mut cmd = Command::new("rustup");
        cmd.args(["toolchain", "install", &toolchain, "--profile", "minimal"]);
        for component in components {
            cmd.args(["-c", component]);
        }
        run::status(&mut cmd).context(
            "rustup could not install the toolchain: is the Rust toolchain server reachable?",
        )?;
    }
    Ok(())
}

/// The static (musl) targets `cargo xtask dist` builds for, on the workspace's toolchain. Their
/// rust-std brings musl's C runtime; clang/lld from the apt packages link them.
const RUST_TARGETS: &[&str] = &["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"];

fn rust_targets() -> Result<()> {
    let toolchain = workspace_toolchain()?;
    let installed = run::probe(
        "rustup",
        ["target", "list", "--installed", "--toolchain", &toolchain],
    )
    .unwrap_or_default();
    let missing: Vec<&str> = RUST_TARGETS
        .iter()
        .copied()
        .filter(|target| !installed.lines().any(|line| line.trim() == *target))
        .collect();
    if missing.is_empty() {
        eprintln!("    rust targets: {} present", RUST_TARGETS.join(", "));
        return Ok(());
    }
    eprintln!("    rustup target add {}", missing.join(" "));
    run::status(
        Command::new("rustup")
            .args(["target", "add", "--toolchain", &toolchain])
            .args(&missing),
    )
    .context("rustup could not add the targets: is the Rust toolchain server reachable?")
}

/// The arm64 guest's busybox (Debian's busybox-static for arm64), unpacked in the cache: the
/// arm64 guest cannot run the host's x86_64 binaries, only static arm64 ones.
pub fn guest_busybox_path() -> std::path::PathBuf {
    paths::cache().join("busybox-arm64/bin/busybox")
}

fn guest_busybox() -> Result<()> {
    let target = guest_busybox_path();
    if target.exists() {
        eprintln!("    busybox-static:arm64: present");
        return Ok(());
    }
    require_root("fetching busybox-static:arm64 (the arm64 guest's shell)")?;
    let foreign = run::probe("dpkg", ["--print-foreign-architectures"]).unwrap_or_default();
    if !foreign.lines().any(|arch| arch == "arm64") {
        eprintln!("    dpkg --add-architecture arm64 (to download busybox-static:arm64)");
        run::status(Command::new("dpkg").args(["--add-architecture", "arm64"]))?;
        run::status(Command::new("apt-get").args(["update", "-q"]))?;
    }
    let download = paths::cache().join("busybox-arm64.download");
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)?;
    eprintln!("    apt-get download busybox-static:arm64");
    let fetched = run::status(
        Command::new("apt-get")
            // Into root's cache, which apt's sandbox user cannot write to.
            .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
            .arg("busybox-static:arm64")
            .current_dir(&download),
    );
    if fetched.is_err() {
        // The arm64 package lists may be missing or stale after the architecture was added.
        run::status(Command::new("apt-get").args(["update", "-q"]))?;
        run::status(
            Command::new("apt-get")
                // Into root's cache, which apt's sandbox user cannot write to.
                .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
                .arg("busybox-static:arm64")
                .current_dir(&download),
        )
        .context("apt-get could not download busybox-static:arm64")?;
    }
    let deb = fs::read_dir(&download)?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .context("apt-get download left no .deb")?;
    let unpacked = download.join("root");
    run::status(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
    let dir = target.parent().context("busybox directory")?;
    fs::create_dir_all(dir)?;
    fs::copy(unpacked.join("bin/busybox"), &target)
        .context("busybox-static:arm64 has no bin/busybox")?;
    let _ = fs::remove_dir_all(&download);
    eprintln!("    {}", target.display());
    Ok(())
}

/// The bindgen Linux 7.3 needs (0.71.1; 6.12's is 0.69.5), in its own directory of the cache
/// so that the 6.12 kernel's inputs stay as they are (`kernel73.rs`).
fn bindgen_for_7_3() -> Result<()> {
    let (krate, version) = crate::kernel73::BINDGEN;
    let root = crate::kernel73::bindgen_dir();
    let binary = root.join("bin/bindgen");
    let current = run::probe(&binary.display().to_string(), ["--version"]).unwrap_or_default();
    if current.split_whitespace().any(|word| word == version) {
        eprintln!("    bindgen {version} (for 7.3): present");
        return Ok(());
    }
    eprintln!(
        "    cargo install {krate}@{version} into {} (for 7.3)",
        root.display()
    );
    run::status(
        Command::new("cargo")
            .env("LIBCLANG_PATH", LIBCLANG_PATH)
            .args(["install", "--locked", "--root"])
            .arg(&root)
            .arg(format!("{krate}@{version}")),
    )
    .with_context(|| format!("installing {krate} {version} failed: see the compiler output above"))
}

fn cargo_tools() -> Result<()> {
    for &(binary, krate, version) in CARGO_TOOLS {
        cargo_tool(binary, krate, version)?;
    }
    Ok(())
}

/// Installs `krate@version` with `cargo install --locked` unless `binary --version` already
/// names that version.
pub fn cargo_tool(binary: &str, krate: &str, version: &str) -> Result<()> {
    let current = run::probe(binary, ["--version"]).unwrap_or_default();
    if current.split_whitespace().any(|word| word == version) {
        eprintln!("    {binary} {version}: present");
        return Ok(());
    }
    eprintln!("    cargo install {krate}@{version} (takes a few minutes)");
    run::status(
        Command::new("cargo")
            .env("LIBCLANG_PATH", LIBCLANG_PATH)
            .args(["install", "--locked", &format!("{krate}@{version}")]),
    )
    .with_context(|| format!("installing {krate} failed: see the compiler output above"))
}
