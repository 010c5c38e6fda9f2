//! The `.deb` package of `cargo xtask dist`, one per architecture, built with Debian's own
//! `dpkg-deb` from the release's tree (the one its tarball holds) and the files of
//! `packaging/deb`, then checked: its control fields and contents with `dpkg-deb`, and lintian.
//!
//! Where it installs: the binary in `/usr/bin`, the man pages in `/usr/share/man/man1`, the
//! completions where Debian's bash-completion, zsh and fish look, and the README, docs/,
//! specs/ and contrib/ in `/usr/share/doc/phytrace`. Its debconf question
//! `phytrace/grant-capabilities` (default no; `dpkg-reconfigure phytrace` asks again) lets the
//! members of a `phytrace` system group trace without root: the postinst gives the binary the
//! capabilities `phytrace generate capabilities` printed at build time
//! (`packaging/deb/postinst`).

use std::{
    env, fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail, ensure};

use crate::{arch::Arch, dist, paths, release_contents, run};

/// The package's name.
pub const PACKAGE: &str = "phytrace";
/// The Maintainer field unless `DEBFULLNAME` and `DEBEMAIL` (Debian's variables) say another.
const MAINTAINER: &str = "phytrace developers <phytrace@users.noreply.github.com>";
/// Where the package's files live in the workspace.
const PACKAGING: &str = "packaging/deb";
/// The maintainer scripts (mode 0755) and the other control files, from [`PACKAGING`].
const SCRIPTS: [&str; 3] = ["config", "postinst", "postrm"];
/// Where the README, docs/, specs/ and contrib/ are installed.
pub const DOC_DIR: &str = "usr/share/doc/phytrace";
/// The shell completions: (file in the release's `completions/`, where Debian's shells look).
const COMPLETIONS: [(&str, &str); 3] = [
    (
        "phytrace.bash",
        "usr/share/bash-completion/completions/phytrace",
    ),
    ("_phytrace", "usr/share/zsh/vendor-completions/_phytrace"),
    (
        "phytrace.fish",
        "usr/share/fish/vendor_completions.d/phytrace.fish",
    ),
];

/// The package file for `arch`: `target/dist/phytrace_VERSION_ARCH.deb`.
pub fn file(arch: Arch) -> PathBuf {
    dist::dir().join(format!(
        "{PACKAGE}_{}_{}.deb",
        dist::version(),
        arch.debian_arch()
    ))
}

/// What the package's files say of it: substituted for `@NAME@` in `packaging/deb`.
struct Fields {
    version: &'static str,
    arch: &'static str,
    maintainer: String,
    homepage: &'static str,
    capabilities: String,
    /// RFC 2822, of [`Fields::epoch`].
    date: String,
    /// The year of [`Fields::epoch`], for the copyright notice.
    year: String,
    /// The files' time: `SOURCE_DATE_EPOCH`, else the time of the commit built.
    epoch: String,
    /// In KiB, once the files are in place.
    installed_size: u64,
}

impl Fields {
    fn new(arch: Arch, capabilities: &str) -> Result<Self> {
        let epoch = match env::var("SOURCE_DATE_EPOCH") {
            Ok(epoch) => epoch,
            Err(_) => run::output(
                Command::new("git")
                    .args(["log", "-1", "--format=%ct"])
                    .current_dir(paths::workspace()),
            )
            .context("the package's date: set SOURCE_DATE_EPOCH outside a git checkout")?,
        };
        let date = run::output(
            Command::new("date")
                .args(["-u", "-R", "-d"])
                .arg(format!("@{epoch}")),
        )?;
        let year = run::output(
            Command::new("date")
                .args(["-u", "+%Y", "-d"])
                .arg(format!("@{epoch}")),
        )?;
        let maintainer = match (env::var("DEBFULLNAME"), env::var("DEBEMAIL")) {
            (Ok(name), Ok(email)) => format!("{name} <{email}>"),
            _ => MAINTAINER.to_owned(),
        };
        Ok(Self {
            version: dist::version(),
            arch: arch.debian_arch(),
            maintainer,
            homepage: env!("CARGO_PKG_REPOSITORY"),
            capabilities: capabilities.to_owned(),
            date,
            year,
            epoch,
            installed_size: 0,
        })
    }

    /// `template` with each `@NAME@` replaced; fails on one it does not know.
    fn fill(&self, template: &str) -> Result<String> {
        let size = self.installed_size.to_string();
        let mut text = template.to_owned();
        for (name, value) in [
            ("VERSION", self.version),
            ("ARCH", self.arch),
            ("MAINTAINER", &self.maintainer),
            ("HOMEPAGE", self.homepage),
            ("CAPABILITIES", &self.capabilities),
            ("DATE", &self.date),
            ("YEAR", &self.year),
            ("INSTALLED_SIZE", &size),
        ] {
            text = text.replace(&format!("@{name}@"), value);
        }
        if let Some(unknown) = placeholders(&text).next() {
            bail!("unknown placeholder {unknown}");
        }
        Ok(text)
    }
}

/// The `@NAME@` (capitals and `_`) in `text`.
fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices('@').filter_map(|(at, _)| {
        let rest = &text[at + 1..];
        let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c == '_'))?;
        (end > 0 && rest[end..].starts_with('@')).then(|| &text[at..at + end + 2])
    })
}

/// Builds and checks the package of `arch` from `release`, the release's tree (the binary,
/// README, docs/, specs/, contrib/, man/man1 and completions/); `capabilities` is what
/// `phytrace generate capabilities` printed. Returns the package file.
pub fn build(arch: Arch, release: &Path, capabilities: &str) -> Result<PathBuf> {
    let mut fields = Fields::new(arch, capabilities)?;
    let root = dist::dir().join(format!("deb-{}", arch.debian_arch()));
    let _ = fs::remove_dir_all(&root);
    let packaging = paths::workspace().join(PACKAGING);
    let template = |name: &str| {
        fs::read_to_string(packaging.join(name))
            .with_context(|| format!("reading {PACKAGING}/{name}"))
    };

    install(&release.join("phytrace"), &root.join("usr/bin/phytrace"))?;
    let man1 = root.join("usr/share/man/man1");
    fs::create_dir_all(&man1)?;
    for entry in fs::read_dir(release.join("man/man1"))? {
        let page = entry?.path();
        let name = page.file_name().context("a man page")?.to_string_lossy();
        gzip(&page, &man1.join(format!("{name}.gz")))?;
    }
    for (file, target) in COMPLETIONS {
        install(&release.join("completions").join(file), &root.join(target))?;
    }
    let doc = root.join(DOC_DIR);
    fs::create_dir_all(&doc)?;
    fs::copy(release.join("README.md"), doc.join("README.md"))?;
    for dir in release_contents::SHIPPED_DIRS {
        run::status(
            Command::new("cp")
                .arg("-R")
                .arg(release.join(dir))
                .arg(&doc),
        )?;
    }
    fs::write(doc.join("copyright"), fields.fill(&template("copyright")?)?)?;
    install(
        &packaging.join("lintian-overrides"),
        &root.join("usr/share/lintian/overrides/phytrace"),
    )?;
    let changelog = root.join("changelog");
    fs::write(&changelog, fields.fill(&template("changelog")?)?)?;
    gzip(&changelog, &doc.join("changelog.gz"))?;
    fs::remove_file(&changelog)?;

    let control = root.join("DEBIAN");
    fs::create_dir_all(&control)?;
    for name in SCRIPTS.iter().chain(&["templates"]) {
        fs::write(control.join(name), fields.fill(&template(name)?)?)?;
    }
    let sums = run::output(
        Command::new("sh")
            .args(["-c", "find usr -type f | LC_ALL=C sort | xargs md5sum"])
            .current_dir(&root),
    )?;
    fs::write(control.join("md5sums"), sums + "\n")?;
    fields.installed_size = installed_size(&root.join("usr"))?;
    fs::write(control.join("control"), fields.fill(&template("control")?)?)?;
    normalize(&root, &fields.epoch)?;

    let deb = file(arch);
    run::output(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&root)
            .arg(&deb)
            .env("SOURCE_DATE_EPOCH", &fields.epoch),
    )
    .context("dpkg-deb could not build the package")?;
    check(&deb, &root, &fields)?;
    fs::remove_dir_all(&root)?;
    lintian(&deb)?;
    Ok(deb)
}

/// Copies `from` to `to`, creating `to`'s directory.
fn install(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to.parent().context("a file's directory")?)?;
    fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    Ok(())
}

/// `gzip -9n` of `from` into `to` (no name, no time: the same bytes every build).
fn gzip(from: &Path, to: &Path) -> Result<()> {
    let out = fs::File::create(to)?;
    let status = Command::new("gzip")
        .args(["-9nc"])
        .arg(from)
        .stdout(out)
        .status()
        .context("could not start gzip")?;
    ensure!(
        status.success(),
        "gzip {} failed ({status})",
        from.display()
    );
    Ok(())
}

/// The Installed-Size in KiB, counted as dpkg-gencontrol does: each file rounded up to a
/// KiB, each directory one.
fn installed_size(dir: &Path) -> Result<u64> {
    let mut total = 1;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            installed_size(&entry.path())?
        } else {
            meta.len().div_ceil(1024).max(1)
        };
    }
    Ok(total)
}

/// Modes as Debian wants them (directories and programs 0755, other files 0644), whatever
/// the umask, and every file's time the package's.
fn normalize(root: &Path, epoch: &str) -> Result<()> {
    let executable = |path: &Path| {
        path == root.join("usr/bin/phytrace")
            || SCRIPTS
                .iter()
                .any(|script| path == root.join("DEBIAN").join(script))
    };
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let mode = if executable(&path) { 0o755 } else { 0o644 };
                fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
            }
        }
    }
    run::status(
        Command::new("find")
            .arg(root)
            .args(["-exec", "touch", "--no-dereference"])
            .arg(format!("--date=@{epoch}"))
            .args(["{}", "+"]),
    )
}

/// The fields `dpkg-deb --field` reads back must be the ones written, and `dpkg-deb --contents`
/// must list every file of the tree it was built from, as root's, with its mode.
fn check(deb: &Path, root: &Path, fields: &Fields) -> Result<()> {
    for (field, want) in [
        ("Package", PACKAGE),
        ("Version", fields.version),
        ("Architecture", fields.arch),
        ("Maintainer", &fields.maintainer),
    ] {
        let got = run::output(Command::new("dpkg-deb").arg("--field").arg(deb).arg(field))?;
        ensure!(
            got == want,
            "{}: {field} is `{got}`, not `{want}`",
            deb.display()
        );
    }
    let postinst = run::output(
        Command::new("dpkg-deb")
            .arg("--info")
            .arg(deb)
            .arg("postinst"),
    )?;
    let granted = format!("CAPABILITIES='{}'", fields.capabilities);
    ensure!(
        postinst.lines().any(|line| line == granted),
        "{}: the postinst does not grant {}",
        deb.display(),
        fields.capabilities
    );
    for member in SCRIPTS.iter().chain(&["templates", "md5sums"]) {
        run::output(Command::new("dpkg-deb").arg("--info").arg(deb).arg(member))
            .with_context(|| format!("{}: no control file {member}", deb.display()))?;
    }
    let depends = run::output(
        Command::new("dpkg-deb")
            .arg("--field")
            .arg(deb)
            .arg("Depends"),
    )?;
    ensure!(
        !depends.contains("libc"),
        "{}: a static binary depends on no C library: {depends}",
        deb.display()
    );
    let listing = run::output(Command::new("dpkg-deb").arg("--contents").arg(deb))?;
    let listed = contents(&listing);
    let mut missing = Vec::new();
    let mut files = vec![root.join("usr")];
    while let Some(dir) = files.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                files.push(path);
                continue;
            }
            let name = format!("./{}", path.strip_prefix(root)?.display());
            let mode = if path.ends_with("usr/bin/phytrace") {
                "-rwxr-xr-x"
            } else {
                "-rw-r--r--"
            };
            if !listed
                .iter()
                .any(|(m, owner, n)| *n == name && *m == mode && *owner == "root/root")
            {
                missing.push(name);
            }
        }
    }
    ensure!(
        missing.is_empty(),
        "{} lacks, or has with the wrong owner or mode: {}",
        deb.display(),
        missing.join(", ")
    );
    eprintln!(
        "    {}: {} files, control fields as written",
        deb.display(),
        listed
            .iter()
            .filter(|(mode, ..)| mode.starts_with('-'))
            .count()
    );
    Ok(())
}

/// `dpkg-deb --contents` lines as (mode, owner/group, path).
fn contents(listing: &str) -> Vec<(&str, &str, &str)> {
    listing
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let mode = words.next()?;
            let owner = words.next()?;
            Some((mode, owner, words.nth(3)?))
        })
        .collect()
}

/// lintian (installed by `cargo xtask setup`) on `deb`: fails on any warning or error.
fn lintian(deb: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    // Its findings go to standard output; its complaint about running as root to the error.
    let out = Command::new("lintian")
        .args(["--fail-on", "error,warning", "--tag-display-limit", "0"])
        .arg(deb)
        .stderr(std::process::Stdio::null())
        .output()
        .context("could not start lintian (`cargo xtask setup` installs it)")?;
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "lintian found problems in {} ({}):\n{}",
        deb.display(),
        out.status,
        said.trim_end()
    );
    if !said.trim().is_empty() {
        eprintln!("{}", said.trim_end());
    }
    eprintln!(
        "    lintian: clean ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        Fields {
            version: "0.1.0",
            arch: "arm64",
            maintainer: "A <a@example.org>".to_owned(),
            homepage: "https://example.org",
            capabilities: "cap_bpf+ep".to_owned(),
            date: "Thu, 01 Jan 1970 00:00:00 +0000".to_owned(),
            year: "1970".to_owned(),
            epoch: "0".to_owned(),
            installed_size: 42,
        }
    }

    #[test]
    fn templates_are_filled_and_unknown_placeholders_refused() {
        let text = fields()
            .fill("Version: @VERSION@\nArchitecture: @ARCH@\nSize: @INSTALLED_SIZE@")
            .unwrap();
        assert_eq!(text, "Version: 0.1.0\nArchitecture: arm64\nSize: 42");
        let err = fields().fill("x@y.z @VERSION@ @NAME@").unwrap_err();
        assert_eq!(err.to_string(), "unknown placeholder @NAME@");
        assert_eq!(fields().fill("a@B.c, \"$@\" @").unwrap(), "a@B.c, \"$@\" @");
    }

    #[test]
    fn every_template_of_the_package_is_filled() {
        let dir = paths::workspace().join(PACKAGING);
        for name in SCRIPTS
            .iter()
            .chain(&["templates", "control", "copyright", "changelog"])
        {
            let text = fs::read_to_string(dir.join(name)).unwrap();
            fields().fill(&text).unwrap();
        }
    }

    #[test]
    fn contents_lines_are_read() {
        let listing = "drwxr-xr-x root/root         0 2026-12-06 00:00 ./usr/\n\
                       -rwxr-xr-x root/root  11534336 2026-12-06 00:00 ./usr/bin/phytrace\n";
        assert_eq!(
            contents(listing),
            [
                ("drwxr-xr-x", "root/root", "./usr/"),
                ("-rwxr-xr-x", "root/root", "./usr/bin/phytrace")
            ]
        );
    }
}
