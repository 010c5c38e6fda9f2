//! Debian trixie as a user's machine, for phytrace's package: a root made once with mmdebstrap
//! (`cargo xtask setup`) in the cache, and a copy of it into which apt installs the amd64
//! package, as a user would (`apt install ./phytrace_…deb`), for the stock-kernel stage: the
//! guest runs phytrace from that copy on Debian's 7.3 (tests/stock/54-package.sh).
//!
//! The host's apt sources are left alone: mmdebstrap fetches trixie from the mirror of the
//! host's Debian sources. apt and the package's maintainer scripts run in the copy through
//! chroot, in a mount namespace of their own (tests/deb/install.sh).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{paths, run, setup, stock};

/// The Debian release the root is.
const SUITE: &str = "trixie";
/// Beyond mmdebstrap's minbase (dpkg, apt, debconf, passwd): man-db, to read the pages as a
/// user would, and libcap2-bin, which the package recommends, so that apt installs it without
/// the network.
const INCLUDE: &str = "man-db,libcap2-bin";
/// The script that installs the package in the copy and checks its grant of capabilities.
const INSTALL_SCRIPT: &str = "tests/deb/install.sh";
/// Written once the root is complete; holds the mmdebstrap command that made it.
const STAMP: &str = "made";

/// The root mmdebstrap made.
fn base() -> PathBuf {
    paths::cache().join("debian-root").join(SUITE)
}

/// The copy with phytrace installed: `$PHYTRACE_TARGET/debian-root` in the guest.
pub fn installed() -> PathBuf {
    paths::target().join("debian-root")
}

/// Makes the trixie root, once; returns it.
pub fn prepare() -> Result<PathBuf> {
    let dir = base();
    let root = dir.join("root");
    if dir.join(STAMP).exists() {
        eprintln!("    Debian {SUITE} root: present");
        return Ok(root);
    }
    setup::require_root("making the Debian root (mmdebstrap)")?;
    let started = run::step(&format!("Debian {SUITE} root: mmdebstrap (once)"));
    let (mirror, keyring) = stock::mirror_and_keyring();
    let partial = dir.join("root.partial");
    let _ = fs::remove_dir_all(&partial);
    fs::create_dir_all(&dir)?;
    let mut mmdebstrap = Command::new("mmdebstrap");
    mmdebstrap
        .args(["--quiet", "--mode=root", "--variant=minbase"])
        .arg(format!("--include={INCLUDE}"))
        .arg(SUITE)
        .arg(&partial)
        .arg(format!("deb [signed-by={keyring}] {mirror} {SUITE} main"));
    let shown = run::show(&mmdebstrap);
    run::output(&mut mmdebstrap)
        .context("mmdebstrap (in `cargo xtask setup`) could not make the Debian root")?;
    let _ = fs::remove_dir_all(&root);
    fs::rename(&partial, &root)?;
    fs::write(dir.join(STAMP), shown + "\n")?;
    run::done(&format!("Debian {SUITE} root"), started);
    Ok(root)
}

/// Copies the root to [`installed`] and installs `deb` there with apt, checking what it
/// installed and its opt-in grant (tests/deb/install.sh), which it leaves granted.
pub fn install(deb: &Path) -> Result<PathBuf> {
    let started = run::step(&format!(
        "Debian {SUITE} root: apt install ./{}",
        deb.file_name().unwrap_or_default().to_string_lossy()
    ));
    let base = prepare()?;
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
