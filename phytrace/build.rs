//! Builds the eBPF programs (phytrace-ebpf) with the nightly pinned in
//! `phytrace-ebpf/rust-toolchain.toml`, through aya-build and bpf-linker.

use std::{env, fs, path::PathBuf};

use anyhow::{Context as _, anyhow};

fn pinned_nightly(ebpf_dir: &str) -> anyhow::Result<String> {
    let path = format!("{ebpf_dir}/rust-toolchain.toml");
    println!("cargo:rerun-if-changed={path}");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    text.lines()
        .find_map(|line| line.trim().strip_prefix("channel"))
        .and_then(|rest| rest.split('"').nth(1))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{path} has no `channel = \"…\"` line"))
}

fn main() -> anyhow::Result<()> {
    let manifest_dir = env::var("CARGO_MANIFEST_DIR")?;
    let ebpf_dir = format!("{manifest_dir}/../phytrace-ebpf");
    if env::var_os("AYA_BUILD_SKIP").is_some_and(|v| v == "1" || v == "true") {
        // Lints and docs need no eBPF object: leave an empty one for `include_bytes!`.
        let out = PathBuf::from(env::var("OUT_DIR")?).join("phytrace");
        if !out.exists() {
            fs::write(out, [])?;
        }
    }
    let toolchain = pinned_nightly(&ebpf_dir)?;
    let package = aya_build::Package {
        name: "phytrace-ebpf",
        root_dir: &ebpf_dir,
        ..Default::default()
    };
    aya_build::build_ebpf([package], aya_build::Toolchain::Custom(&toolchain))
}
