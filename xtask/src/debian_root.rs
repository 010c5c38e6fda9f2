//! Debian roots made once with mmdebstrap (`cargo xtask setup`) in the cache, which guests enter
//! with chroot:
//! - [`USER_MACHINE`], Debian trixie as a user's machine, for phytrace's package: a copy of it
//!   into which apt installs the amd64 package, as a user would (`apt install
//!   ./phytrace_…deb`), for the stock-kernel stage: the guest runs phytrace from that copy on
//!   Debian's 7.3 (tests/stock/54-package.sh);
//! - [`BPFTRACE`], Debian forky with its bpftrace, the peer a kernel developer installs today,
//!   which `cargo xtask bench` runs beside bookworm's (never installed on the host).
//!
//! The host's apt sources are left alone: mmdebstrap fetches each suite from the mirror of the
//! host's Debian sources. apt and the package's maintainer scripts run in the copy through
//! chroot, in a mount namespace of their own (tests/deb/install.sh).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{paths, run, setup, stock};

/// A Debian root as mmdebstrap makes it.
pub struct Root {
    /// The Debian release.
    suite: &'static str,
    /// mmdebstrap's variant: the packages it starts from.
    variant: &'static str,
    /// The packages beyond the variant's.
    include: &'static str,
    /// Its folder in the cache.
    name: &'static str,
}

/// Debian trixie as a user's machine: beyond mmdebstrap's minbase (dpkg, apt, debconf,
/// passwd), man-db, to read the pages as a user would, and libcap2-bin, which the package
/// recommends, so that apt installs it without the network.
pub const USER_MACHINE: Root = Root {
    suite: "trixie",
    variant: "minbase",
    include: "man-db,libcap2-bin",
    name: "trixie",
};

/// Debian forky's bpftrace (0.27), with what it runs on.
pub const BPFTRACE: Root = Root {
    suite: "forky",
    variant: "apt",
    include: "bpftrace",
    name: "forky-bpftrace",
};

/// The script that installs the package in the copy and checks its grant of capabilities.
const INSTALL_SCRIPT: &str = "tests/deb/install.sh";
/// Written once the root is complete; holds the mmdebstrap command that made it.
const STAMP: &str = "made";

/// The copy with phytrace installed: `$PHYTRACE_TARGET/debian-root` in the guest.
pub fn installed() -> PathBuf {
    paths::target().join("debian-root")
}

impl Root {
    /// Where it is made.
    fn dir(&self) -> PathBuf {
        paths::cache().join("debian-root").join(self.name)
    }

    /// The root, made once; the path the guest enters.
    pub fn prepare(&self) -> Result<PathBuf> {
        let (dir, suite) = (self.dir(), self.suite);
        let root = dir.join("root");
        if dir.join(STAMP).exists() {
            eprintln!("    Debian {suite} root ({}): present", self.include);
            return Ok(root);
        }
        setup::require_root("making a Debian root (mmdebstrap)")?;
        let started = run::step(&format!("Debian {suite} root: mmdebstrap (once)"));
        let (mirror, keyring) = stock::mirror_and_keyring();
        let partial = dir.join("root.partial");
        let _ = fs::remove_dir_all(&partial);
        fs::create_dir_all(&dir)?;
        let mut mmdebstrap = Command::new("mmdebstrap");
        mmdebstrap
            .args(["--quiet", "--mode=root"])
            .arg(format!("--variant={}", self.variant))
            .arg(format!("--include={}", self.include))
            // A mirror's snapshot of a suite in development may hold an expired Release file.
            .arg("--aptopt=Acquire::Check-Valid-Until \"false\"")
            .arg(suite)
            .arg(&partial)
            .arg(format!("deb [signed-by={keyring}] {mirror} {suite} main"));
        let shown = run::show(&mmdebstrap);
        run::output(&mut mmdebstrap)
            .context("mmdebstrap (in `cargo xtask setup`) could not make the Debian root")?;
        let _ = fs::remove_dir_all(&root);
        fs::rename(&partial, &root)?;
        fs::write(dir.join(STAMP), shown + "\n")?;
        run::done(&format!("Debian {suite} root"), started);
        Ok(root)
    }
}

/// Copies the root to [`installed`] and installs `deb` there with apt, checking what it
/// installed and its opt-in grant (tests/deb/install.sh), which it leaves granted.
pub fn install(deb: &Path) -> Result<PathBuf> {
    let started = run::step(&format!(
        "Debian {} root: apt install ./{}",
        USER_MACHINE.suite,
        deb.file_name().unwrap_or_default().to_string_lossy()
    ));
    let base = USER_MACHINE.prepare()?;
    let target = installed();
    let copy = target.with_extension("partial");
    let _ = fs::remove_dir_all(&copy);
    run::status(
        Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(&base)
            .arg(&copy),
    )?;
    let inside = Path::new("/tmp").join(deb.file_name().context("a package file name")?);
    fs::copy(deb, copy.join(inside.strip_prefix("/")?))?;
    fs::copy(
        paths::workspace().join(INSTALL_SCRIPT),
        copy.join("tmp/install.sh"),
    )?;
    // Mounts made for apt (/proc) end with the namespace.
    run::status(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "chroot"])
            .arg(&copy)
            .args(["/bin/bash", "/tmp/install.sh"])
            .arg(&inside),
    )
    .context("installing phytrace's package in the Debian root failed (above)")?;
    for entry in fs::read_dir(copy.join("tmp"))? {
        let path = entry?.path();
        if path.is_dir() {
            fs::remove_dir_all(path)?;
        } else {
            fs::remove_file(path)?;
        }
    }
    // Where the guest binds its module tree, as the kernel's package fills it on a machine.
    fs::create_dir_all(copy.join("usr/lib/modules"))?;
    let _ = fs::remove_dir_all(&target);
    fs::rename(&copy, &target)?;
    eprintln!("    {}", target.display());
    run::done("package installed", started);
    Ok(target)
}
