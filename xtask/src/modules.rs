//! `cargo xtask modules`: builds the out-of-tree modules under `driver/` against the test
//! kernel and collects them, with the in-tree C Asix driver, in `target/modules/` (x86_64) or
//! `target/modules-ARCH/` (another architecture's kernel).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{arch::Arch, kernel, paths, run};

/// The in-tree C driver, built as a module by the test kernel, for side-by-side runs.
const IN_TREE_MODULES: &[&str] = &["drivers/net/phy/ax88796b.ko"];
const KERNEL_KEY_FILE: &str = ".kernel-key";

#[derive(clap::Args)]
pub struct ModulesArgs {
    /// The architecture of the test kernel to build against.
    #[arg(long, value_enum, default_value_t = Arch::X86_64)]
    pub arch: Arch,
    /// The kernel source (7.3 or 6.12-no-btf: the kernel `cargo xtask kernel --source …`
    /// built; modules in target/modules-7.3 or target/modules-no-btf).
    #[arg(long, value_enum, default_value_t = kernel::Source::V6_12)]
    pub source: kernel::Source,
}

/// Builds every `driver/<name>/` that has a Kbuild file; returns the modules directory.
pub fn run(args: &ModulesArgs) -> Result<PathBuf> {
    let kernel = match args.source {
        kernel::Source::V7_3 => crate::kernel73::locate()?,
        kernel::Source::V6_12NoBtf => crate::kernel_no_btf::locate()?,
        kernel::Source::V6_12 => kernel::locate(args.arch)?,
    };
    build(&kernel)
}

/// Where the modules for `arch`'s kernel are collected.
pub fn dir(arch: Arch) -> PathBuf {
    match arch {
        Arch::X86_64 => paths::modules(),
        other => paths::target().join(format!("modules-{other}")),
    }
}

pub fn build(kernel: &kernel::Kernel) -> Result<PathBuf> {
    let started = run::step(&format!(
        "modules: building driver/* against the {} test kernel",
        kernel.arch
    ));
    let out = kernel.modules.clone();
    let build_root = out.join("build");
    // A module built against another kernel fails to load ("failed to validate module BTF").
    let key_file = out.join(KERNEL_KEY_FILE);
    if fs::read_to_string(&key_file).ok().as_deref() != Some(kernel.key.as_str()) {
        let _ = fs::remove_dir_all(&out);
    }
    fs::create_dir_all(&build_root)?;
    fs::write(&key_file, &kernel.key)?;

    for source in module_sources()? {
        let name = source
            .file_name()
            .context("module directory name")?
            .to_owned();
        let build_dir = build_root.join(&name);
        // Build in a copy so that build products stay out of the repository.
        run::status(
            Command::new("rsync")
                .arg("-a")
                .arg(format!("{}/", source.display()))
                .arg(&build_dir),
        )?;
        // Quiet on success; kbuild's errors are on stderr, which the error carries.
        run::output(
            kernel::make(&kernel.tree, kernel.arch)?
                .arg(format!("M={}", build_dir.display()))
                .arg("modules"),
        )
        .with_context(|| format!("building the module in {}", source.display()))?;
        for entry in fs::read_dir(&build_dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "ko") {
                copy_into(&path, &out)?;
            }
        }
    }
    for module in IN_TREE_MODULES {
        copy_into(&kernel.tree.join(module), &out)?;
    }
    install_tree(kernel, &out)?;
    run::done("modules", started);
    Ok(out)
}

/// The guest's module tree of the kernel whose modules are collected in `modules`
/// (`lib/modules/RELEASE` below it), which the VM mounts over `/lib/modules`: the kernel's
/// modules, ours in `extra/`, indexed by depmod, so that modprobe and the kernel's own
/// `request_module` find drivers by name and by alias as on a real system.
pub fn tree(modules: &Path) -> PathBuf {
    modules.join("tree")
}

fn install_tree(kernel: &kernel::Kernel, out: &Path) -> Result<()> {
    let root = tree(&kernel.modules);
    let _ = fs::remove_dir_all(&root);
    run::output(
        kernel::make(&kernel.tree, kernel.arch)?
            .arg(format!("INSTALL_MOD_PATH={}", root.display()))
            .args(["-s", "modules_install"]),
    )
    .context("installing the kernel's modules into the guest's module tree")?;
    let release = fs::read_to_string(kernel.tree.join("include/config/kernel.release"))
        .context("reading the kernel release")?;
    let release = release.trim();
    let extra = root.join("lib/modules").join(release).join("extra");
    fs::create_dir_all(&extra)?;
    for entry in fs::read_dir(out)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // Our modules; the in-tree ones are installed already.
        if path.extension().is_some_and(|ext| ext == "ko")
            && !IN_TREE_MODULES.iter().any(|m| m.ends_with(name))
        {
            fs::copy(&path, extra.join(name))?;
        }
    }
    run::status(Command::new("depmod").arg("-b").arg(&root).arg(release))
        .context("indexing the guest's module tree (depmod)")?;
    eprintln!(
        "    {} (depmod'd)",
        root.join("lib/modules").join(release).display()
    );
    Ok(())
}

fn module_sources() -> Result<Vec<PathBuf>> {
    let driver_dir = paths::workspace().join("driver");
    let Ok(entries) = fs::read_dir(&driver_dir) else {
        return Ok(Vec::new());
    };
    let mut sources: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("Kbuild").exists())
        .collect();
    sources.sort();
    Ok(sources)
}

fn copy_into(module: &Path, dir: &Path) -> Result<()> {
    let name = module.file_name().context("module file name")?;
    fs::copy(module, dir.join(name))
        .with_context(|| format!("copying {} to {}", module.display(), dir.display()))?;
    eprintln!("    {}", dir.join(name).display());
    Ok(())
}
