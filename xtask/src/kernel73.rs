//! `cargo xtask kernel --source 7.3`: Linux 7.3 built from Debian's `linux-source-7.3`
//! (trixie-backports, fetched through the stock kernel's private apt state) with the same
//! fragment as the 6.12 test kernel, plus `kernel/phytrace-7.3.config` for what 7.3 renamed.
//! x86_64 only; cached in `~/.cache/phytrace/kernel-7.3`, apart from the 6.12 kernels.
//!
//! 7.3's Kconfig wants bindgen 0.71.1 or later (with 0.69.5, `RUST` silently drops out), which
//! `cargo xtask setup` installs beside the 6.12 one (`bindgen_dir`), so the 6.12 kernel's
//! cache key does not change.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::Arch,
    kernel::{self, Kernel, fnv1a},
    paths, run, setup, stock,
};

/// The source package and the tree it unpacks to.
const PACKAGE: &str = "linux-source-7.3";
pub const TREE_NAME: &str = "linux-source-7.3";
/// What 7.3 needs on top of `kernel/phytrace.config`.
const FRAGMENT_PART: &str = "kernel/phytrace-7.3.config";
/// The bindgen 7.3 needs (`rust/Makefile`: `min-tool-version.sh bindgen`).
pub const BINDGEN: (&str, &str) = ("bindgen-cli", "0.71.1");
/// Bump when the steps below change what they build.
const RECIPE_VERSION: u32 = 1;
const BUILT_STAMP: &str = "built";

/// Where `cargo xtask setup` installs 7.3's bindgen (`bin/bindgen` below it).
pub fn bindgen_dir() -> PathBuf {
    paths::cache().join(format!("tools/bindgen-{}", BINDGEN.1))
}

/// Puts 7.3's bindgen first on `cmd`'s PATH.
pub fn use_bindgen(cmd: &mut Command) {
    let mut path = vec![bindgen_dir().join("bin")];
    path.extend(env::split_paths(&env::var_os("PATH").unwrap_or_default()));
    if let Ok(joined) = env::join_paths(path) {
        cmd.env("PATH", joined);
    }
}

/// The source tarball and its version, fetched once into the cache.
fn source() -> Result<(PathBuf, String)> {
    let root = paths::cache().join("stock/source-7.3");
    let stamp = root.join("unpacked");
    let tarball = root.join("root/usr/src/linux-source-7.3.tar.xz");
    if let Ok(version) = fs::read_to_string(&stamp)
        && tarball.exists()
    {
        return Ok((tarball, version.trim().to_owned()));
    }
    let started = run::step("kernel 7.3: fetching linux-source-7.3 from trixie-backports (once)");
    let debs = stock::download(&root, "trixie-backports", &[PACKAGE])?;
    let deb = debs.first().context("no linux-source-7.3 .deb")?;
    run::status(
        Command::new("dpkg-deb")
            .arg("-x")
            .arg(deb)
            .arg(root.join("root")),
    )?;
    let version = run::output(Command::new("dpkg-deb").arg("-f").arg(deb).arg("Version"))?;
    let _ = fs::remove_file(deb);
    if !tarball.exists() {
        bail!("{PACKAGE} has no {}", tarball.display());
    }
    fs::write(&stamp, format!("{version}\n"))?;
    run::done("fetch", started);
    Ok((tarball, version))
}

fn fragment() -> Result<String> {
    let mut text = String::new();
    for part in ["kernel/phytrace.config", FRAGMENT_PART] {
        let path = paths::workspace().join(part);
        text +=
            &fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        text += "\n";
    }
    Ok(text)
}

fn bindgen_version() -> String {
    kernel::tool_version(
        &bindgen_dir().join("bin/bindgen").display().to_string(),
        &["--version"],
    )
}

/// The cache directory for the current inputs.
fn cache_dir(version: &str) -> Result<PathBuf> {
    let toolchain = setup::workspace_toolchain()?;
    let key = fnv1a(&[
        RECIPE_VERSION.to_string(),
        version.to_owned(),
        fragment()?,
        kernel::tool_version("rustup", &["run", &toolchain, "rustc", "--version"]),
        kernel::tool_version("clang-19", &["--version"]),
        bindgen_version(),
        kernel::tool_version("pahole", &["--version"]),
    ]);
    Ok(paths::cache()
        .join("kernel-7.3")
        .join(format!("{version}-{key:016x}")))
}

/// The built 7.3 kernel, if it is in the cache for the current inputs.
pub fn locate() -> Result<Kernel> {
    let (_, version) = source()?;
    let dir = cache_dir(&version)?;
    if !dir.join(BUILT_STAMP).exists() {
        bail!("the 7.3 kernel is not built: run `cargo xtask kernel --source 7.3` (15+ minutes)");
    }
    Ok(kernel(&dir))
}

/// The kernel built in `dir`, its modules in `target/modules-7.3`.
fn kernel(dir: &Path) -> Kernel {
    let key = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut kernel = Kernel::built(dir.join(TREE_NAME), key, Arch::X86_64);
    kernel.modules = paths::target().join("modules-7.3");
    kernel.name = "7.3";
    kernel
}

/// Fetches, configures and builds 7.3 (unless cached and not `force`).
pub fn run(force: bool) -> Result<Kernel> {
    if !bindgen_dir().join("bin/bindgen").exists() {
        bail!(
            "bindgen {} is missing from {}: run `cargo xtask setup`",
            BINDGEN.1,
            bindgen_dir().display()
        );
    }
    let (tarball, version) = source()?;
    let dir = cache_dir(&version)?;
    let tree = dir.join(TREE_NAME);
    if dir.join(BUILT_STAMP).exists() && !force {
        eprintln!("==> kernel 7.3: cached ({})", tree.display());
        return Ok(kernel(&dir));
    }
    let started = run::step(&format!(
        "kernel 7.3: building {PACKAGE} {version} in {}",
        dir.display()
    ));
    fs::create_dir_all(&dir)?;
    if !dir.join("unpacked").exists() {
        let _ = fs::remove_dir_all(&tree);
        run::status(
            Command::new("tar")
                .arg("xf")
                .arg(&tarball)
                .arg("-C")
                .arg(&dir),
        )?;
        fs::write(dir.join("unpacked"), "")?;
    }
    configure(&tree, &dir)?;
    kernel::build(&tree, &dir, Arch::X86_64)?;
    fs::write(
        dir.join(BUILT_STAMP),
        format!("{}\n", started.elapsed().as_secs()),
    )?;
    run::done("kernel 7.3", started);
    Ok(kernel(&dir))
}

/// allnoconfig with the fragment, then a check that Kconfig kept every option.
fn configure(tree: &Path, dir: &Path) -> Result<()> {
    let path = dir.join("phytrace.config");
    let text = fragment()?;
    fs::write(&path, &text)?;
    kernel::configure_with(tree, Arch::X86_64, &path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_7_3_fragment_renames_proc_sysctl() {
        let options = kernel::requested_options(&fragment().unwrap());
        assert_eq!(options["CONFIG_SYSCTL"].as_deref(), Some("y"));
        // The common part asks for it; 7.3 has no such option any more: "not set" wins.
        assert_eq!(options["CONFIG_PROC_SYSCTL"], None);
        assert_eq!(options["CONFIG_RUST"].as_deref(), Some("y"));
        assert_eq!(
            options["CONFIG_KPROBE_EVENTS_ON_NOTRACE"].as_deref(),
            Some("y")
        );
    }
}
