//! Debian roots made once with mmdebstrap (`cargo xtask setup`) in the cache, entered with
//! chroot; nothing of them is installed on the host, whose apt sources are left alone
//! (mmdebstrap fetches from the mirror of the host's Debian sources):
//! - [`USER_MACHINE`], Debian trixie as a user's machine, for phytrace's package: a copy of it
//!   into which apt installs the amd64 package, as a user would (`apt install ./phytrace_…deb`),
//!   for the stock-kernel stage: the guest runs phytrace from that copy on Debian's 7.3
//!   (tests/stock/54-package.sh). apt and the package's maintainer scripts run in the copy
//!   through chroot, in a mount namespace of their own (tests/deb/install.sh).
//! - [`BPFTRACE`], Debian forky with its bpftrace, the peer a kernel developer installs today:
//!   `cargo xtask bench` runs it in the guest beside bookworm's.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{paths, run, setup, stock};

/// A Debian root: what mmdebstrap makes, under `debian-root/NAME` in the cache.
pub struct Root {
    /// Its directory's name.
    name: &'static str,
    suite: &'static str,
    /// mmdebstrap's variant.
    variant: &'static str,
    /// Packages beyond the variant's.
    include: &'static str,
}

/// Debian trixie as a user's machine: minbase (dpkg, apt, debconf, passwd), man-db, to read the
/// pages as a user would, and libcap2-bin, which the package recommends, so that apt installs
/// it without the network.
pub const USER_MACHINE: Root = Root {
    name: "trixie",
    suite: "trixie",
    variant: "minbase",
    include: "man-db,libcap2-bin",
};

/// Debian forky with bpftrace and what it depends on (the apt variant: no more than that).
pub const BPFTRACE: Root = Root {
    name: "forky-bpftrace",
    suite: "forky",
    variant: "apt",
    include: "bpftrace",
};

/// The script that installs the package in the copy and checks its grant of capabilities.
const INSTALL_SCRIPT: &str = "tests/deb/install.sh";
/// Written once the root is complete; holds the mmdebstrap command that made it.
const STAMP: &str = "made";

impl Root {
    /// Where the root is (made by [`Root::prepare`]); the guest sees it at the same path.
    pub fn path(&self) -> PathBuf {
        paths::cache()
            .join("debian-root")
            .join(self.name)
            .join("root")
    }

    /// Makes the root, once; returns it.
    pub fn prepare(&self) -> Result<PathBuf> {
        let root = self.path();
        let dir = root.parent().context("the root's directory")?;
        let (name, suite) = (self.name, self.suite);
        if dir.join(STAMP).exists() {
            eprintln!("    Debian root {name}: present");
            return Ok(root);
        }
        setup::require_root("making a Debian root (mmdebstrap)")?;
        let started = run::step(&format!("Debian root {name}: mmdebstrap {suite} (once)"));
        let (mirror, keyring) = stock::mirror_and_keyring();
        let partial = dir.join("root.partial");
        let _ = fs::remove_dir_all(&partial);
        fs::create_dir_all(dir)?;
        let mut mmdebstrap = Command::new("mmdebstrap");
        mmdebstrap
            .args(["--quiet", "--mode=root"])
            .arg(format!("--variant={}", self.variant))
            .arg(format!("--include={}", self.include))
            // A suite's Release file may be past its Valid-Until on a mirror that lags.
            .arg("--aptopt=Acquire::Check-Valid-Until \"false\"")
            .arg(suite)
            .arg(&partial)
            .arg(format!("deb [signed-by={keyring}] {mirror} {suite} main"));
        let shown = run::show(&mmdebstrap);
        run::output(&mut mmdebstrap).with_context(|| {
            format!("mmdebstrap (in `cargo xtask setup`) could not make {name}")
        })?;
        let _ = fs::remove_dir_all(&root);
        fs::rename(&partial, &root)?;
        fs::write(dir.join(STAMP), shown + "\n")?;
        run::done(&format!("Debian root {name}"), started);
        Ok(root)
    }
}

/// The copy of [`USER_MACHINE`] with phytrace installed: `$PHYTRACE_TARGET/debian-root` in the
/// guest.
pub fn installed() -> PathBuf {
    paths::target().join("debian-root")
}

/// Copies [`USER_MACHINE`] to [`installed`] and installs `deb` there with apt, checking what it
/// installed and its opt-in grant (tests/deb/install.sh), which it leaves granted.
pub fn install(deb: &Path) -> Result<PathBuf> {
    let started = run::step(&format!(
        "Debian root {}: apt install ./{}",
        USER_MACHINE.name,
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
