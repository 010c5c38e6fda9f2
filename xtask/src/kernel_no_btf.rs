//! `cargo xtask kernel --source 6.12-no-btf`: the 6.12 test kernel built without BTF, as many board
//! support kernels are (`kernel/phytrace-no-btf.config` on top of the test kernel's fragment),
//! and the BTF file a user of such a kernel makes from its DWARF with pahole, which phytrace
//! reads with `--btf FILE`. x86_64 only; cached in `~/.cache/phytrace/kernel-no-btf`.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::Arch,
    kernel::{self, Kernel},
    paths, run,
};

/// What the kernel without BTF changes in the test kernel's fragment.
const FRAGMENT_PART: &str = "kernel/phytrace-no-btf.config";
const TREE_NAME: &str = "linux-source-6.12";
const BUILT_STAMP: &str = "built";
/// The BTF file made for the kernel, beside its tree.
const BTF_FILE: &str = "vmlinux.btf";
/// pahole's options for vmlinux's BTF: those 6.12's `scripts/Makefile.btf` gives the pahole
/// `cargo xtask setup` installs (1.24), Rust's DWARF left out as the kernel leaves it out.
const PAHOLE_OPTIONS: [&str; 3] = ["--btf_gen_floats", "-j", "--lang_exclude=rust"];

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

fn cache_dir() -> Result<PathBuf> {
    let (version, key) = kernel::cache_key_for(&fragment()?)?;
    Ok(paths::cache()
        .join("kernel-no-btf")
        .join(format!("{version}-{key}")))
}

/// The kernel built in `dir`, its modules in `target/modules-no-btf`.
fn kernel(dir: &Path) -> Kernel {
    let key = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut kernel = Kernel::built(dir.join(TREE_NAME), key, Arch::X86_64);
    kernel.modules = paths::target().join("modules-no-btf");
    kernel.name = "no-btf";
    kernel.btf_file = Some(dir.join(BTF_FILE));
    kernel
}

/// The built kernel without BTF, if it is in the cache for the current inputs.
pub fn locate() -> Result<Kernel> {
    let dir = cache_dir()?;
    if !dir.join(BUILT_STAMP).exists() {
        bail!("the kernel without BTF is not built: run `cargo xtask kernel --source 6.12-no-btf`");
    }
    Ok(kernel(&dir))
}

/// Configures and builds the kernel and makes its BTF file (unless cached and not `force`).
pub fn run(force: bool) -> Result<Kernel> {
    let dir = cache_dir()?;
    let tree = dir.join(TREE_NAME);
    if dir.join(BUILT_STAMP).exists() && !force {
        eprintln!("==> kernel without BTF: cached ({})", tree.display());
        return Ok(kernel(&dir));
    }
    let started = run::step(&format!(
        "kernel without BTF: building in {}",
        dir.display()
    ));
    fs::create_dir_all(&dir)?;
    kernel::unpack(&dir)?;
    let path = dir.join("phytrace.config");
    let text = fragment()?;
    fs::write(&path, &text)?;
    kernel::configure_with(&tree, Arch::X86_64, &path, &text)?;
    kernel::build(&tree, &dir, Arch::X86_64)?;
    let config = fs::read_to_string(tree.join(".config"))?;
    if config.lines().any(|line| line == "CONFIG_DEBUG_INFO_BTF=y") {
        bail!("the kernel without BTF was configured with CONFIG_DEBUG_INFO_BTF=y");
    }
    detach_btf(&tree, &dir.join(BTF_FILE))?;
    fs::write(
        dir.join(BUILT_STAMP),
        format!("{}\n", started.elapsed().as_secs()),
    )?;
    prune_others(&dir);
    run::done("kernel without BTF", started);
    Ok(kernel(&dir))
}

/// Writes the BTF of `tree`'s vmlinux, encoded from its DWARF, to `file`.
fn detach_btf(tree: &Path, file: &Path) -> Result<()> {
    let started = run::step("kernel without BTF: pahole --btf_encode_detached");
    run::output(
        Command::new("pahole")
            .args(PAHOLE_OPTIONS)
            .arg(format!("--btf_encode_detached={}", file.display()))
            .arg(tree.join("vmlinux")),
    )
    .context("encoding the BTF file from vmlinux's DWARF")?;
    run::done("pahole", started);
    Ok(())
}

/// Removes kernels without BTF built for other inputs.
fn prune_others(keep: &Path) {
    let Some(root) = keep.parent() else { return };
    for entry in fs::read_dir(root).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && path != keep {
            eprintln!("    removing the outdated kernel {}", path.display());
            let _ = fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_turns_btf_off_and_keeps_the_rest() {
        let options = kernel::requested_options(&fragment().unwrap());
        assert_eq!(options["CONFIG_DEBUG_INFO_BTF"], None);
        assert_eq!(options["CONFIG_DEBUG_INFO_BTF_MODULES"], None);
        assert_eq!(options["CONFIG_DEBUG_INFO"].as_deref(), Some("y"));
        assert_eq!(options["CONFIG_RUST"].as_deref(), Some("y"));
    }
}
