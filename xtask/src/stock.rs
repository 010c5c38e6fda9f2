//! Debian's kernels, unmodified: their `vmlinuz`, modules and config exactly as packaged,
//! nothing rebuilt. Three: trixie-backports' 7.3 (Rust, phylib built in: the Rust Asix driver's
//! users), trixie's 6.12 (Debian 13: no Rust, phylib a module, the C driver) and forky's 7.2
//! (Debian 14: Rust, phylink a module).
//!
//! The packages come through a private apt state under the cache (its own sources file, lists
//! and archive cache; `apt-get download`, never `install`: the host stays bookworm), are
//! unpacked with `dpkg-deb -x` and the module tree is indexed with the host's `depmod`, so that
//! modprobe by name and by alias works in the guest. The guest mounts that tree over
//! `/lib/modules`; its initramfs carries the few modules it needs before the host root is
//! mounted (virtio-mmio and 9p are modules in Debian's build). See docs/kernels.md.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{paths, run};

/// A Debian kernel as packaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    /// Its release (`uname -r`).
    pub release: &'static str,
    /// Which it is, for messages.
    pub name: &'static str,
    /// What the guest calls it (`PHYTRACE_VM_KERNEL`).
    pub guest_name: &'static str,
    /// The suite that has it.
    suite: &'static str,
    /// The packages that make it up: boot image, modules, config.
    packages: &'static [&'static str],
    /// Booted on QEMU's `pc` machine with virtio-pci devices: on `microvm`, it finds no ACPI
    /// tables (Debian 13's 6.12 and 14's 7.2 do not; its 7.3 does), so none of the virtio-mmio
    /// devices ACPI describes there.
    pub pci: bool,
}

/// Debian's 7.3 (trixie-backports).
pub const DEBIAN_73: Release = Release {
    release: "7.3.4+deb13-amd64",
    name: "Debian's 7.3.4",
    guest_name: "stock",
    suite: "trixie-backports",
    packages: &[
        "linux-binary-7.3.4+deb13-amd64",
        "linux-modules-7.3.4+deb13-amd64",
        "linux-base-7.3.4+deb13-amd64",
    ],
    pci: false,
};

/// Debian 13's 6.12 (trixie).
pub const DEBIAN_13: Release = Release {
    release: "6.12.117+deb13-amd64",
    name: "Debian 13's 6.12.117",
    guest_name: "debian13",
    suite: "trixie",
    packages: &["linux-image-6.12.117+deb13-amd64-unsigned"],
    pci: true,
};

/// Debian 14's 7.2 (forky).
pub const DEBIAN_14: Release = Release {
    release: "7.2.12+deb14-amd64",
    name: "Debian 14's 7.2.12",
    guest_name: "debian14",
    suite: "forky",
    packages: &[
        "linux-binary-7.2.12+deb14-amd64",
        "linux-modules-7.2.12+deb14-amd64",
        "linux-base-7.2.12+deb14-amd64",
    ],
    pci: true,
};

/// Modules the initramfs loads before it mounts the host root: the virtio-mmio transport
/// (described by ACPI on microvm: Debian's build has no `virtio_mmio.device=` command line
/// devices) and 9p over virtio. Their dependencies come first, from `modules.dep`.
const EARLY_MODULES: [&str; 3] = ["virtio_mmio", "9pnet_virtio", "9p"];
/// Written once the packages are unpacked and indexed; holds their versions.
const STAMP: &str = "unpacked";
/// The host's Debian sources, whose mirror and keyring the private apt state reuses.
const HOST_SOURCES: &str = "/etc/apt/sources.list.d/debian.sources";
const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";
const DEFAULT_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// The unpacked stock kernel.
#[derive(Clone, Debug)]
pub struct StockKernel {
    /// Which kernel it is.
    pub release: Release,
    /// `…/lib/modules` of the unpacked packages (the guest's `/lib/modules`).
    pub modules: PathBuf,
    /// The packages' versions, for messages and cache keys.
    pub versions: String,
}

impl StockKernel {
    /// The release's directory: `vmlinuz`, `config`, `System.map`, `modules.*`, `kernel/`.
    pub fn dir(&self) -> PathBuf {
        self.modules.join(self.release.release)
    }

    /// The boot image, as Debian ships it.
    pub fn image(&self) -> PathBuf {
        self.dir().join("vmlinuz")
    }

    /// The kernel's BTF (the `.BTF` section of the vmlinux inside `vmlinuz`), as the guest's
    /// `/sys/kernel/btf/vmlinux` holds it: extracted once, for the host tests of the BTF reader.
    pub fn vmlinux_btf(&self) -> PathBuf {
        root(self.release).join("vmlinux.btf")
    }

    /// The modules the initramfs loads, in load order, as paths into the tree (`.ko.xz`).
    pub fn early_modules(&self) -> Result<Vec<PathBuf>> {
        let deps = fs::read_to_string(self.dir().join("modules.dep"))
            .context("reading the stock kernel's modules.dep")?;
        let order = load_order(&parse_modules_dep(&deps), &EARLY_MODULES)?;
        Ok(order.into_iter().map(|rel| self.dir().join(rel)).collect())
    }
}

#[derive(clap::Args)]
pub struct StockArgs {
    /// Also rewrite phytrace's BTF test fixture (the types phytrace reads, cut out of this
    /// kernel's BTF: `xtask/src/btf_fixture.rs`).
    #[arg(long)]
    pub btf_fixture: bool,
}

/// Debian's kernels the tests boot.
pub const RELEASES: [Release; 3] = [DEBIAN_73, DEBIAN_13, DEBIAN_14];

/// `cargo xtask stock`: fetch each (once) and say where it is.
pub fn run(args: &StockArgs) -> Result<()> {
    for release in RELEASES {
        let kernel = prepare(release)?;
        eprintln!("    {}", kernel.versions);
        eprintln!("    {}", kernel.dir().display());
        eprintln!("    {}", kernel.vmlinux_btf().display());
        if args.btf_fixture && release == DEBIAN_73 {
            crate::btf_fixture::write(&kernel.vmlinux_btf(), &paths::workspace())?;
        }
    }
    Ok(())
}

/// Where everything of `release` lives in the cache.
fn root(release: Release) -> PathBuf {
    paths::cache().join("stock").join(release.release)
}

/// The kernel `release`, fetched and unpacked if it is not in the cache yet.
pub fn prepare(release: Release) -> Result<StockKernel> {
    let root = root(release);
    let modules = root.join("root/usr/lib/modules");
    if let Ok(versions) = fs::read_to_string(root.join(STAMP)) {
        let kernel = StockKernel {
            release,
            modules,
            versions: versions.trim().to_owned(),
        };
        if !kernel.vmlinux_btf().exists() {
            extract_btf(&kernel.image(), &kernel.vmlinux_btf())
                .context("extracting the stock kernel's BTF from its vmlinuz")?;
        }
        return Ok(kernel);
    }
    let started = run::step(&format!(
        "stock kernel: fetching {} ({}) from {} (once)",
        release.name, release.release, release.suite
    ));
    let debs = download(&root, release.suite, release.packages)?;
    let unpacked = root.join("root");
    let _ = fs::remove_dir_all(&unpacked);
    let mut versions = Vec::new();
    for deb in &debs {
        run::status(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&unpacked))?;
        let field = |name: &str| run::output(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name));
        versions.push(format!("{} {}", field("Package")?, field("Version")?));
    }
    let kernel = StockKernel {
        release,
        modules,
        versions: versions.join(", "),
    };
    // One package puts the boot image and config in /boot (6.12), the split ones beside the
    // modules: there, for all.
    for file in ["vmlinuz", "config"] {
        let in_boot = unpacked.join(format!("boot/{file}-{}", release.release));
        if in_boot.exists() {
            fs::rename(&in_boot, kernel.dir().join(file))?;
        }
    }
    if !kernel.image().exists() {
        bail!(
            "the stock kernel's packages have no {}",
            kernel.image().display()
        );
    }
    // Index the tree as the guest's modprobe needs it (the host's kmod reads .ko.xz).
    run::output(
        Command::new("depmod")
            .arg("-b")
            .arg(unpacked.join("usr"))
            .arg(release.release),
    )
    .context("depmod of the stock kernel's modules (kmod is in `cargo xtask setup`)")?;
    // The debs are unpacked: keep the cache small.
    for deb in &debs {
        let _ = fs::remove_file(deb);
    }
    extract_btf(&kernel.image(), &kernel.vmlinux_btf())
        .context("extracting the stock kernel's BTF from its vmlinuz")?;
    fs::write(root.join(STAMP), format!("{}\n", kernel.versions))?;
    eprintln!("    {}", kernel.versions);
    run::done("stock kernel", started);
    Ok(kernel)
}

/// The mirror and keyring of the host's Debian sources (deb822), or Debian's defaults.
pub fn mirror_and_keyring() -> (String, String) {
    let text = fs::read_to_string(HOST_SOURCES).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|rest| rest.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    (
        field("URIs:")
            .and_then(|uris| uris.split_whitespace().next().map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_MIRROR.to_owned()),
        field("Signed-By:").unwrap_or_else(|| DEFAULT_KEYRING.to_owned()),
    )
}

/// `apt-get update` + `download` of `packages` from `suite` in a private apt state under
/// `root`; returns the `.deb` files.
pub fn download(root: &Path, suite: &str, packages: &[&str]) -> Result<Vec<PathBuf>> {
    let apt = root.join("apt");
    let lists = apt.join("lists");
    let cache = apt.join("cache");
    let debs = root.join("debs");
    for dir in [
        lists.join("partial"),
        cache.join("archives/partial"),
        debs.clone(),
    ] {
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let (mirror, keyring) = mirror_and_keyring();
    let sources = apt.join("sources.list");
    fs::write(
        &sources,
        format!("deb [signed-by={keyring}] {mirror} {suite} main\n"),
    )?;
    let apt_get = |args: &[&str]| {
        let mut cmd = Command::new("apt-get");
        cmd.arg("-q")
            .arg(format!("-oDir::Etc::SourceList={}", sources.display()))
            .arg("-oDir::Etc::SourceParts=/dev/null")
            .arg(format!("-oDir::State::Lists={}", lists.display()))
            .arg(format!("-oDir::Cache={}", cache.display()))
            // Into root's cache, which apt's sandbox user cannot write to.
            .arg("-oAPT::Sandbox::User=root")
            // A testing suite's Release file may be past its date on a snapshot mirror.
            .arg("-oAcquire::Check-Valid-Until=false")
            .args(args)
            .current_dir(&debs);
        cmd
    };
    eprintln!(
        "    apt-get update ({mirror} {suite}, private state in {})",
        apt.display()
    );
    run::output(&mut apt_get(&["update"]))
        .with_context(|| format!("apt-get update of the private {suite} state"))?;
    eprintln!("    apt-get download {}", packages.join(" "));
    run::output(&mut apt_get(&[&["download"][..], packages].concat()))
        .with_context(|| format!("apt-get download of {}", packages.join(" ")))?;
    let found: Vec<PathBuf> = fs::read_dir(&debs)?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .collect();
    if found.len() != packages.len() {
        bail!(
            "apt-get download left {} .deb files in {}, expected {}",
            found.len(),
            debs.display(),
            packages.len()
        );
    }
    Ok(found)
}

/// Compressed-stream magics a bzImage's payload may start with, and the tool that reads it
/// (`scripts/extract-vmlinux` tries the same list).
const PAYLOADS: [(&[u8], &str); 3] = [
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x1f\x8b\x08", "gzip"),
];

/// Writes the `.BTF` section of the vmlinux compressed inside `image` to `out`: at each offset
/// where a known compression magic starts, decompress (trailing data is the decompressor's
/// error, as in `scripts/extract-vmlinux`) until the result is an ELF file; then
/// `llvm-objcopy --dump-section`.
fn extract_btf(image: &Path, out: &Path) -> Result<()> {
    let bytes = fs::read(image).with_context(|| format!("reading {}", image.display()))?;
    let tmp = out.with_extension("vmlinux");
    for (magic, tool) in PAYLOADS {
        for at in bytes
            .windows(magic.len())
            .enumerate()
            .filter(|(_, w)| *w == magic)
            .map(|(at, _)| at)
        {
            let mut child = Command::new(tool)
                .args(["-dcq"])
                .stdin(std::process::Stdio::piped())
                .stdout(fs::File::create(&tmp)?)
                .stderr(std::process::Stdio::null())
                .spawn()
                .with_context(|| format!("could not start {tool}"))?;
            if let Some(mut stdin) = child.stdin.take() {
                use std::io::Write as _;
                // The decompressor stops reading at the end of its stream: a broken pipe.
                let _ = stdin.write_all(&bytes[at..]);
            }
            let _ = child.wait();
            let mut head = [0u8; 4];
            let is_elf = fs::File::open(&tmp)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok()
                && head == *b"\x7fELF";
            if !is_elf {
                continue;
            }
            let dumped = run::output(
                Command::new("llvm-objcopy-19")
                    .arg(format!("--dump-section=.BTF={}", out.display()))
                    .arg(&tmp)
                    .arg(tmp.with_extension("stripped")),
            );
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(tmp.with_extension("stripped"));
            return dumped.map(drop).context("the vmlinux has no .BTF section");
        }
    }
    let _ = fs::remove_file(&tmp);
    bail!(
        "found no compressed vmlinux (zstd, xz, gzip) in {}",
        image.display()
    )
}

/// `modules.dep`: module name (`9p`) → (its path, its dependencies' paths).
fn parse_modules_dep(text: &str) -> BTreeMap<String, (String, Vec<String>)> {
    text.lines()
        .filter_map(|line| {
            let (path, deps) = line.split_once(':')?;
            Some((
                module_name(path),
                (
                    path.to_owned(),
                    deps.split_whitespace().map(str::to_owned).collect(),
                ),
            ))
        })
        .collect()
}

/// The module name of a path in the tree: `kernel/fs/9p/9p.ko.xz` → `9p` (`-` read as `_`).
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file).replace('-', "_")
}

/// The paths to load for `wanted`, dependencies first, each once.
fn load_order(
    deps: &BTreeMap<String, (String, Vec<String>)>,
    wanted: &[&str],
) -> Result<Vec<String>> {
    fn visit(
        deps: &BTreeMap<String, (String, Vec<String>)>,
        name: &str,
        order: &mut Vec<String>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32 {
            bail!("modules.dep: the dependencies of {name} loop");
        }
        let Some((path, needs)) = deps.get(name) else {
            bail!("the stock kernel has no module {name} (modules.dep)");
        };
        if order.contains(path) {
            return Ok(());
        }
        for need in needs {
            visit(deps, &module_name(need), order, depth + 1)?;
        }
        order.push(path.clone());
        Ok(())
    }
    let mut order = Vec::new();
    for name in wanted {
        visit(deps, name, &mut order, 0)?;
    }
    Ok(order)
}

/// Decompresses `.ko.xz` modules into `dir` as `NAME.ko`; returns the names in order.
pub fn unpack_modules(modules: &[PathBuf], dir: &Path) -> Result<Vec<String>> {
    fs::create_dir_all(dir)?;
    let mut names = Vec::new();
    for path in modules {
        let name = module_name(&path.display().to_string());
        let out = fs::File::create(dir.join(format!("{name}.ko")))?;
        let status = Command::new("xz")
            .arg("-dc")
            .arg(path)
            .stdout(out)
            .status()
            .context("could not start xz")?;
        if !status.success() {
            bail!("xz -dc {} failed ({status})", path.display());
        }
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz
kernel/drivers/virtio/virtio_mmio.ko.xz:
kernel/net/9p/9pnet.ko.xz: kernel/fs/netfs/netfs.ko.xz
kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz
kernel/fs/netfs/netfs.ko.xz:
kernel/drivers/usb/gadget/udc/udc-core.ko.xz:
";

    #[test]
    fn early_modules_load_dependencies_first_once() {
        let order = load_order(&parse_modules_dep(DEP), &EARLY_MODULES).unwrap();
        assert_eq!(
            order,
            [
                "kernel/drivers/virtio/virtio_mmio.ko.xz",
                "kernel/fs/netfs/netfs.ko.xz",
                "kernel/net/9p/9pnet.ko.xz",
                "kernel/net/9p/9pnet_virtio.ko.xz",
                "kernel/fs/9p/9p.ko.xz",
            ]
        );
    }

    #[test]
    fn module_names_as_modprobe_spells_them() {
        assert_eq!(
            module_name("kernel/drivers/usb/gadget/udc/udc-core.ko.xz"),
            "udc_core"
        );
        assert_eq!(module_name("9p.ko"), "9p");
        let missing = load_order(&parse_modules_dep(DEP), &["raw_gadget"]).unwrap_err();
        assert!(
            missing.to_string().contains("no module raw_gadget"),
            "{missing}"
        );
    }
}
