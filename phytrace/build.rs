//! Builds the eBPF programs (phytrace-ebpf) with the nightly pinned in
//! `phytrace-ebpf/rust-toolchain.toml` and bpf-linker, quietly: the inner cargo's log goes to
//! `$OUT_DIR/ebpf-build.log`, and is printed only if the build fails (on success, only cargo's
//! one-line count of compiler warnings, if there are any).
//!
//! This is the build aya-build 0.2 runs (same command and flags), which forwards every line of
//! that log as a build-script warning.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, anyhow, bail};

const EBPF_PACKAGE: &str = "phytrace-ebpf";
/// The eBPF binary's name: `include_bytes!(concat!(env!("OUT_DIR"), "/phytrace"))`.
const EBPF_BINARY: &str = "phytrace";

fn main() -> anyhow::Result<()> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let workspace = manifest_dir.parent().context("phytrace has a parent")?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    println!("cargo:rerun-if-env-changed=AYA_BUILD_SKIP");
    if env::var_os("AYA_BUILD_SKIP").is_some_and(|v| v == "1" || v == "true") {
        // Lints and docs need no eBPF object: leave an empty one for `include_bytes!`.
        let object = out_dir.join(EBPF_BINARY);
        if !object.exists() {
            fs::write(object, [])?;
        }
        return Ok(());
    }
    for dir in [EBPF_PACKAGE, "phytrace-common"] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    let toolchain = pinned_nightly(&workspace.join(EBPF_PACKAGE))?;
    let object = build_ebpf(&toolchain, &out_dir)?;
    fs::copy(&object, out_dir.join(EBPF_BINARY))
        .with_context(|| format!("copying {}", object.display()))?;
    Ok(())
}

/// The `channel` of `ebpf_dir/rust-toolchain.toml`.
fn pinned_nightly(ebpf_dir: &Path) -> anyhow::Result<String> {
    let path = ebpf_dir.join("rust-toolchain.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("channel"))
        .and_then(|rest| rest.split('"').nth(1))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{} has no `channel = \"…\"` line", path.display()))
}

/// Builds the eBPF binary for the BPF target of the crate's target architecture; returns its
/// path. Fails with the build's log.
fn build_ebpf(toolchain: &str, out_dir: &Path) -> anyhow::Result<PathBuf> {
    let endian = env::var("CARGO_CFG_TARGET_ENDIAN")?;
    let target = match endian.as_str() {
        "little" => "bpfel-unknown-none",
        "big" => "bpfeb-unknown-none",
        other => bail!("unsupported endianness {other}"),
    };
    // Kprobe arguments are read from the target architecture's `pt_regs`.
    let arch = env::var("CARGO_CFG_TARGET_ARCH")?;
    let rustflags = [
        format!("--cfg=bpf_target_arch=\"{arch}\""),
        "-Cdebuginfo=2".into(),
        "-Clink-arg=--btf".into(),
    ]
    .join("\x1f");
    // Its own target directory: the outer cargo holds the lock on the workspace's.
    let target_dir = out_dir.join("ebpf-target");
    let mut cargo = Command::new("rustup");
    cargo
        .args([
            "run",
            toolchain,
            "cargo",
            "build",
            "--package",
            EBPF_PACKAGE,
            "--bins",
        ])
        .args(["--release", "--target", target, "-Z", "build-std=core"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags)
        // The outer build's compiler (or clippy's wrapper) is not the pinned nightly.
        .env_remove("RUSTC")
        .env_remove("RUSTC_WORKSPACE_WRAPPER");
    let output = cargo
        .output()
        .with_context(|| format!("running {cargo:?} (is rustup installed?)"))?;
    let log = [output.stdout, output.stderr].concat();
    let log_path = out_dir.join("ebpf-build.log");
    fs::write(&log_path, &log).with_context(|| format!("writing {}", log_path.display()))?;
    let log = String::from_utf8_lossy(&log);
    if !output.status.success() {
        eprintln!("{log}");
        bail!(
            "building the eBPF programs failed ({}): {cargo:?}",
            output.status
        );
    }
    for count in log
        .lines()
        .filter(|line| line.starts_with("warning: `") && line.contains(" generated "))
    {
        println!("cargo:warning={count} (log: {})", log_path.display());
    }
    Ok(target_dir.join(target).join("release").join(EBPF_BINARY))
}
