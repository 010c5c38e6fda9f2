//! `cargo xtask kernel`: the test kernel, built from Debian's linux-source-6.12 with the
//! fragment `kernel/phytrace.config` (plus the architecture's part, for arm64), and cached
//! outside the repository.
//!
//! The cache key covers everything that changes the result: the source package version, the
//! fragment, this recipe, the architecture, and the versions of rustc, clang, bindgen and
//! pahole. Each architecture has its own cache directory (the x86_64 one is where it always
//! was), so that building one never prunes the other.

use std::{
    collections::BTreeMap,
    fs,
    io::{BufRead as _, BufReader, IsTerminal as _, Write as _},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{arch::Arch, paths, run, setup, stock::StockKernel};

/// Bump when the build steps below change in a way that changes the output.
const RECIPE_VERSION: u32 = 1;
const SOURCE_PACKAGE: &str = "linux-source-6.12";
const SOURCE_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const TREE_NAME: &str = "linux-source-6.12";
const BUILT_STAMP: &str = "built";
const UNPACKED_STAMP: &str = "unpacked";

#[derive(clap::Args)]
pub struct KernelArgs {
    /// Rebuild even if a cached kernel matches.
    #[arg(long)]
    pub force: bool,
    /// The architecture to build for (arm64 is cross-built with LLVM).
    #[arg(long, value_enum, default_value_t = Arch::X86_64)]
    pub arch: Arch,
    /// The kernel source: Debian's linux-source-6.12 (the test kernel), the same without BTF
    /// (x86_64; `kernel_no_btf.rs`), or linux-source-7.3 (x86_64; `kernel73.rs`).
    #[arg(long, value_enum, default_value_t = Source::V6_12)]
    pub source: Source,
}

/// The kernel sources the test kernel can be built from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// Debian's linux-source-6.12 (bookworm): the test kernel.
    #[default]
    #[value(name = "6.12")]
    V6_12,
    /// The test kernel built without BTF, with a BTF file made for it by pahole.
    #[value(name = "6.12-no-btf")]
    V6_12NoBtf,
    /// Debian's linux-source-7.3 (trixie-backports).
    #[value(name = "7.3")]
    V7_3,
}

/// A built test kernel.
pub struct Kernel {
    /// The configured and built source tree (`make -C` target for out-of-tree modules).
    pub tree: PathBuf,
    /// The cache key this tree was built for.
    pub key: String,
    /// The architecture it was built for.
    pub arch: Arch,
    /// Debian's stock kernel instead of ours (`tree` is then its unpacked release directory).
    pub stock: Option<StockKernel>,
    /// Where its out-of-tree modules are collected (`.ko` files, and the guest's module tree
    /// in `tree/`): `target/modules` (x86_64), `target/modules-ARCH`, `target/modules-7.3`.
    pub modules: PathBuf,
    /// What the guest calls it (`PHYTRACE_VM_KERNEL`: `ours`, `7.3`, `no-btf`, `stock`), in the
    /// names of the captures its tests keep for the host (`twin-dongle-NAME.ptrace`).
    pub name: &'static str,
    /// The BTF file made for a kernel built without BTF (the guest's `PHYTRACE_BTF_FILE`).
    pub btf_file: Option<PathBuf>,
    /// The lockdown mode it boots with (`lockdown=MODE`), if any.
    pub lockdown: Option<&'static str>,
}

impl Kernel {
    /// Our test kernel built in `tree`.
    pub(crate) fn built(tree: PathBuf, key: String, arch: Arch) -> Self {
        Self {
            tree,
            key,
            arch,
            stock: None,
            modules: crate::modules::dir(arch),
            name: "ours",
            btf_file: None,
            lockdown: None,
        }
    }

    /// Debian's kernel `release` (x86_64), fetched and unpacked if needed (`stock.rs`).
    pub fn stock(release: crate::stock::Release) -> Result<Self> {
        let stock = crate::stock::prepare(release)?;
        Ok(Self {
            tree: stock.dir(),
            key: format!("stock-{:016x}", fnv1a(&[&stock.versions])),
            arch: Arch::X86_64,
            stock: Some(stock),
            // None of ours: they would have to be built with Debian's compiler.
            modules: paths::target().join(format!("modules-{}", release.guest_name)),
            name: release.guest_name,
            btf_file: None,
            // As Secure Boot runs Debian's kernel (LOCK_DOWN_IN_EFI_SECURE_BOOT).
            lockdown: Some("integrity"),
        })
    }

    /// The boot image QEMU loads (`bzImage` on x86_64, `Image` on arm64; Debian's `vmlinuz`).
    pub fn image(&self) -> PathBuf {
        match &self.stock {
            Some(stock) => stock.image(),
            None => self.tree.join(self.arch.boot_image().1),
        }
    }
}

fn fragment_path() -> PathBuf {
    paths::workspace().join("kernel/phytrace.config")
}

/// The fragment for `arch`: the common part, then the architecture's part (later lines win).
fn fragment_text(arch: Arch) -> Result<String> {
    let mut text = fs::read_to_string(fragment_path())
        .with_context(|| format!("reading {}", fragment_path().display()))?;
    if let Some(part) = arch.fragment_part() {
        let path = paths::workspace().join(part);
        text += "\n";
        text +=
            &fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(text)
}

/// 64-bit FNV-1a over `parts`, each followed by a NUL: a stable hash for cache keys (std's
/// hasher may change between releases).
pub fn fnv1a<T: AsRef<[u8]>>(parts: &[T]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for &byte in parts
        .iter()
        .flat_map(|part| part.as_ref().iter().chain(&[0]))
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

pub(crate) fn tool_version(program: &str, args: &[&str]) -> String {
    run::probe(program, args)
        .and_then(|text| text.lines().next().map(str::to_owned))
        .unwrap_or_else(|| format!("{program}: missing"))
}

fn source_version() -> Result<String> {
    run::probe("dpkg-query", ["-Wf=${Version}", SOURCE_PACKAGE])
        .filter(|version| !version.is_empty())
        .with_context(|| format!("{SOURCE_PACKAGE} is not installed: run `cargo xtask setup`"))
}

fn cache_key(arch: Arch) -> Result<(String, String)> {
    let (version, key) = cache_key_for(&fragment_text(arch)?)?;
    // The x86_64 key is what it was before there were two architectures: its cache stays valid.
    if arch == Arch::X86_64 {
        return Ok((version, key));
    }
    Ok((
        version,
        format!("{:016x}", fnv1a(&[key, format!("arch={arch}")])),
    ))
}

/// The source version and the cache key of a 6.12 kernel configured with `fragment`.
pub(crate) fn cache_key_for(fragment: &str) -> Result<(String, String)> {
    let version = source_version()?;
    let toolchain = setup::workspace_toolchain()?;
    let parts = vec![
        RECIPE_VERSION.to_string(),
        version.clone(),
        fragment.to_owned(),
        tool_version("rustup", &["run", &toolchain, "rustc", "--version"]),
        tool_version("clang-19", &["--version"]),
        tool_version("bindgen", &["--version"]),
        tool_version("pahole", &["--version"]),
    ];
    Ok((version, format!("{:016x}", fnv1a(&parts))))
}

/// The cache directory of `arch`'s kernels (x86_64: `kernel`, others: `kernel-ARCH`).
fn cache_root(arch: Arch) -> PathBuf {
    match arch {
        Arch::X86_64 => paths::cache().join("kernel"),
        other => paths::cache().join(format!("kernel-{other}")),
    }
}

/// The cached kernel for `arch` and the current inputs, if it has been built;
/// `PHYTRACE_KERNEL_TREE` (x86_64) or `PHYTRACE_KERNEL_TREE_AARCH64` names another built tree
/// to use instead (a kernel of your own, say).
pub fn locate(arch: Arch) -> Result<Kernel> {
    let variable = match arch {
        Arch::X86_64 => "PHYTRACE_KERNEL_TREE",
        Arch::Aarch64 => "PHYTRACE_KERNEL_TREE_AARCH64",
    };
    if let Some(tree) = std::env::var_os(variable) {
        let tree = PathBuf::from(tree);
        let image = arch.boot_image().1;
        anyhow::ensure!(
            tree.join(image).exists(),
            "{variable}={} has no {image}",
            tree.display()
        );
        let key = format!("custom-{:016x}", fnv1a(&[tree.display().to_string()]));
        return Ok(Kernel::built(tree, key, arch));
    }
    let (version, key) = cache_key(arch)?;
    let dir = cache_root(arch).join(format!("{version}-{key}"));
    if !dir.join(BUILT_STAMP).exists() {
        let flag = if arch == Arch::X86_64 {
            String::new()
        } else {
            format!(" --arch {arch}")
        };
        bail!(
            "the {arch} test kernel is not built for the current inputs: run `cargo xtask kernel{flag}` (about 6 minutes on idle cores)"
        );
    }
    Ok(Kernel::built(dir.join(TREE_NAME), key, arch))
}

pub fn run(args: &KernelArgs) -> Result<Kernel> {
    match args.source {
        Source::V6_12 => {}
        _ if args.arch != Arch::X86_64 => {
            let name = clap::ValueEnum::to_possible_value(&args.source)
                .map(|value| value.get_name().to_owned())
                .unwrap_or_default();
            bail!("--source {name}: built for x86_64 only")
        }
        Source::V6_12NoBtf => return crate::kernel_no_btf::run(args.force),
        Source::V7_3 => return crate::kernel73::run(args.force),
    }
    let arch = args.arch;
    let (version, key) = cache_key(arch)?;
    let dir = cache_root(arch).join(format!("{version}-{key}"));
    let tree = dir.join(TREE_NAME);
    if dir.join(BUILT_STAMP).exists() && !args.force {
        eprintln!("==> kernel: cached ({})", tree.display());
        return Ok(Kernel::built(tree, key, arch));
    }
    let started = run::step(&format!(
        "kernel: building {SOURCE_PACKAGE} {version} for {arch} in {}",
        dir.display()
    ));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    unpack(&dir)?;
    configure(&tree, &dir, arch)?;
    build(&tree, &dir, arch)?;
    fs::write(
        dir.join(BUILT_STAMP),
        format!("{}\n", started.elapsed().as_secs()),
    )?;
    prune_others(&dir, arch);
    run::done("kernel", started);
    Ok(Kernel::built(tree, key, arch))
}

/// Unpacks linux-source-6.12 into `dir` (once).
pub(crate) fn unpack(dir: &Path) -> Result<()> {
    if dir.join(UNPACKED_STAMP).exists() {
        return Ok(());
    }
    let started = run::step(&format!("kernel: unpacking {SOURCE_TARBALL}"));
    let tree = dir.join(TREE_NAME);
    if tree.exists() {
        fs::remove_dir_all(&tree).with_context(|| format!("removing {}", tree.display()))?;
    }
    run::status(
        Command::new("tar")
            .arg("xf")
            .arg(SOURCE_TARBALL)
            .arg("-C")
            .arg(dir),
    )
    .context(
        "unpacking the kernel source: is linux-source-6.12 installed (`cargo xtask setup`)?",
    )?;
    fs::write(dir.join(UNPACKED_STAMP), "")?;
    run::done("unpack", started);
    Ok(())
}

/// The linux-source-6.12 tree of the x86_64 test kernel for the current inputs, unpacked first
/// if it is not (configured and built or not): the kernel's own tools run from it.
pub(crate) fn source_tree() -> Result<PathBuf> {
    let (version, key) = cache_key(Arch::X86_64)?;
    let dir = cache_root(Arch::X86_64).join(format!("{version}-{key}"));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    unpack(&dir)?;
    Ok(dir.join(TREE_NAME))
}

/// `make` in a kernel tree for `arch` (cross-built with LLVM for arm64: no GNU cross tools).
pub fn make(tree: &Path, arch: Arch) -> Result<Command> {
    let mut cmd = Command::new("make");
    cmd.current_dir(tree).arg("LLVM=-19");
    if arch != Arch::X86_64 {
        cmd.arg(format!("ARCH={}", arch.kernel_arch()));
    }
    cmd.env("RUSTUP_TOOLCHAIN", setup::workspace_toolchain()?)
        .env("LIBCLANG_PATH", setup::LIBCLANG_PATH);
    // A 7.3 tree needs a newer bindgen than 6.12's (`kernel73.rs`).
    if tree.ends_with(crate::kernel73::TREE_NAME) {
        crate::kernel73::use_bindgen(&mut cmd);
    }
    Ok(cmd)
}

/// The options the fragment asks for: `CONFIG_X` → `Some(value)` or `None` for "is not set".
pub(crate) fn requested_options(fragment: &str) -> BTreeMap<String, Option<String>> {
    fragment
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# ") {
                let name = rest.strip_suffix(" is not set")?;
                return Some((name.to_owned(), None));
            }
            let (name, value) = line.split_once('=')?;
            name.starts_with("CONFIG_")
                .then(|| (name.to_owned(), Some(value.to_owned())))
        })
        .collect()
}

/// Options of `requested` that `.config` does not have as asked, with what it has instead.
pub(crate) fn dropped_options(
    requested: &BTreeMap<String, Option<String>>,
    config: &str,
) -> Vec<String> {
    let actual: BTreeMap<&str, &str> = config
        .lines()
        .filter_map(|line| line.split_once('='))
        .collect();
    requested
        .iter()
        .filter_map(|(name, wanted)| {
            let got = actual.get(name.as_str()).copied();
            match (wanted.as_deref(), got) {
                (Some(want), Some(got)) if want == got => None,
                (None, None | Some("n")) => None,
                (Some(want), got) => {
                    Some(format!("{name}={want} (got {})", got.unwrap_or("not set")))
                }
                (None, Some(got)) => Some(format!("{name} is not set (got {got})")),
            }
        })
        .collect()
}

fn configure(tree: &Path, dir: &Path, arch: Arch) -> Result<()> {
    match arch.fragment_part() {
        None => configure_with(
            tree,
            arch,
            &fragment_path(),
            &fs::read_to_string(fragment_path())?,
        ),
        Some(_) => {
            // Kconfig reads one file: the common part and the architecture's, concatenated.
            let combined = dir.join("phytrace.config");
            let text = fragment_text(arch)?;
            fs::write(&combined, &text)?;
            configure_with(tree, arch, &combined, &text)
        }
    }
}

/// `allnoconfig` of `tree` with the fragment `text` (in the file `fragment`), then a check
/// that Kconfig kept every option it asks for.
pub(crate) fn configure_with(tree: &Path, arch: Arch, fragment: &Path, text: &str) -> Result<()> {
    let started = run::step(&format!(
        "kernel: configuring (allnoconfig + {})",
        fragment.display()
    ));
    run::output(
        make(tree, arch)?
            .arg(format!("KCONFIG_ALLCONFIG={}", fragment.display()))
            .arg("allnoconfig"),
    )?;
    run::output(make(tree, arch)?.arg("olddefconfig"))?;
    let requested = requested_options(text);
    let config = fs::read_to_string(tree.join(".config"))?;
    let dropped = dropped_options(&requested, &config);
    if !dropped.is_empty() {
        bail!(
            "Kconfig did not set {} option(s) of {}; their dependencies are unmet:\n  {}",
            dropped.len(),
            fragment.display(),
            dropped.join("\n  ")
        );
    }
    eprintln!("    all {} requested options are set", requested.len());
    run::done("configure", started);
    Ok(())
}

/// Lines of kbuild output that count as one build step (`  CC      kernel/fork.o`).
fn is_step(line: &str) -> bool {
    line.starts_with("  ") && line.split_whitespace().count() >= 2
}

pub(crate) fn build(tree: &Path, dir: &Path, arch: Arch) -> Result<()> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let image = arch.boot_image().0;
    let started = run::step(&format!("kernel: make -j{jobs} {image} modules"));
    // The kernel's cache root (`dir` is one build in it).
    let expected_file = dir
        .parent()
        .map_or_else(|| cache_root(arch), Path::to_path_buf)
        .join("last-build-steps");
    let expected: Option<u64> = fs::read_to_string(&expected_file)
        .ok()
        .and_then(|text| text.trim().parse().ok());
    let log_path = dir.join("build.log");
    let mut log = fs::File::create(&log_path)?;
    // Warnings (pahole's about Rust DWARF, among others) go to a file: shown when the build fails.
    let err_path = dir.join("build.err");
    let err_log = fs::File::create(&err_path)?;
    let mut child = make(tree, arch)?
        .arg(format!("-j{jobs}"))
        .args([image, "modules"])
        .stdout(Stdio::piped())
        .stderr(err_log)
        .spawn()
        .context("could not start make")?;
    let stdout = child.stdout.take().context("make's stdout")?;
    let tty = std::io::stderr().is_terminal();
    let mut steps = 0u64;
    let mut last_report = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        writeln!(log, "{line}")?;
        if is_step(&line) {
            steps += 1;
        }
        let every = if tty {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(30)
        };
        if last_report.elapsed() >= every {
            last_report = Instant::now();
            let total = expected.map_or(String::new(), |n| format!("/~{n}"));
            let secs = started.elapsed().as_secs();
            let status = format!(
                "    [{:>2}:{:02}] {steps}{total} steps  {}",
                secs / 60,
                secs % 60,
                line.trim()
            );
            if tty {
                eprint!("\r\x1b[K{}", status.chars().take(120).collect::<String>());
            } else {
                eprintln!("{status}");
            }
        }
    }
    if tty {
        eprintln!();
    }
    let status = child.wait()?;
    let errors = fs::read_to_string(&err_path).unwrap_or_default();
    if !status.success() {
        let lines: Vec<&str> = errors.lines().collect();
        bail!(
            "the kernel build failed ({status}):\n{}\nfull log: {} and {}",
            lines[lines.len().saturating_sub(30)..].join("\n"),
            log_path.display(),
            err_path.display()
        );
    }
    let warnings = errors.lines().count();
    if warnings > 0 {
        eprintln!("    {warnings} lines of warnings in {}", err_path.display());
    }
    fs::write(expected_file, steps.to_string())?;
    eprintln!("    {steps} steps");
    run::done("build", started);
    Ok(())
}

/// Removes `arch`'s kernels built for other inputs: each tree takes several GiB.
fn prune_others(keep: &Path, arch: Arch) {
    let Ok(entries) = fs::read_dir(cache_root(arch)) else {
        return;
    };
    for entry in entries.flatten() {
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
    fn requested_options_reads_values_and_not_set() {
        let options =
            requested_options("# comment\nCONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\n");
        assert_eq!(options.len(), 3);
        assert_eq!(options["CONFIG_A"].as_deref(), Some("y"));
        assert_eq!(options["CONFIG_C"], None);
    }

    #[test]
    fn dropped_options_names_each_mismatch() {
        let requested =
            requested_options("CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_D=y\n");
        let config = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=y\n# CONFIG_D is not set\n";
        let dropped = dropped_options(&requested, config);
        assert_eq!(
            dropped,
            [
                "CONFIG_B=m (got y)",
                "CONFIG_C is not set (got y)",
                "CONFIG_D=y (got not set)"
            ]
        );
    }

    #[test]
    fn the_shipped_fragment_is_well_formed() {
        let text = fs::read_to_string(fragment_path()).unwrap();
        let options = requested_options(&text);
        assert!(options.len() > 50);
        for key in [
            "CONFIG_RUST",
            "CONFIG_KPROBE_EVENTS_ON_NOTRACE",
            "CONFIG_DEBUG_INFO_BTF",
        ] {
            assert_eq!(options[key].as_deref(), Some("y"), "{key}");
        }
        assert_eq!(options["CONFIG_AX88796B_PHY"].as_deref(), Some("m"));
    }

    #[test]
    fn the_arm64_part_overrides_the_x86_only_options() {
        let options = requested_options(&fragment_text(Arch::Aarch64).unwrap());
        assert_eq!(options["CONFIG_KVM_GUEST"], None);
        assert_eq!(
            options["CONFIG_SERIAL_AMBA_PL011_CONSOLE"].as_deref(),
            Some("y")
        );
        assert_eq!(options["CONFIG_RUST"].as_deref(), Some("y"));
        let x86 = requested_options(&fragment_text(Arch::X86_64).unwrap());
        assert_eq!(x86["CONFIG_KVM_GUEST"].as_deref(), Some("y"));
    }

    #[test]
    fn cache_key_hash_is_stable() {
        assert_eq!(fnv1a::<&str>(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&["a"]), fnv1a(&["b"]));
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }
}
