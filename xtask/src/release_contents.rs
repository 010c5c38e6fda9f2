//! The files a release's README, help texts (its man pages) and docs name, and the check that
//! the release holds them: a `docs/…`, `specs/…` or `contrib/…` path named anywhere in them,
//! and every relative Markdown link of theirs that leads to the README, the licence or one of
//! those directories (links from the docs into the source tree are for readers of the
//! repository).

use std::{
    collections::BTreeSet,
    fs,
    path::{Component, Path, PathBuf},
};

use anyhow::{Context as _, Result, ensure};

/// The directories a release ships whole, whose files the texts name by path: the docs, the
/// specs, and the Prometheus rules and Grafana dashboard (`contrib/`).
pub const SHIPPED_DIRS: [&str; 3] = ["docs", "specs", "contrib"];
/// The top-level files a release ships beside the binary.
pub const SHIPPED_FILES: [&str; 2] = ["README.md", "LICENSE"];

/// Fails unless every file that `root`'s README, docs and man pages (`man_dir`, roff) name is
/// in `root`, a release's unpacked tree; returns how many distinct files they name.
pub fn check(root: &Path, man_dir: &Path) -> Result<usize> {
    let mut texts = vec![(PathBuf::from("README.md"), read(&root.join("README.md"))?)];
    for entry in fs::read_dir(root.join("docs")).context("the release has no docs/")? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "md") {
            let relative = path.strip_prefix(root)?.to_path_buf();
            texts.push((relative, read(&path)?));
        }
    }
    for entry in fs::read_dir(man_dir).with_context(|| format!("listing {}", man_dir.display()))? {
        let path = entry?.path();
        // roff writes `-` as `\-`; the help text had `-`.
        let text = read(&path)?.replace("\\-", "-");
        texts.push((path, text));
    }
    let mut named = BTreeSet::new();
    let mut missing = Vec::new();
    for (file, text) in &texts {
        for target in named_paths(text).into_iter().chain(links(file, text)) {
            if !root.join(&target).exists() {
                missing.push(format!("{} names {}", file.display(), target.display()));
            }
            named.insert(target);
        }
    }
    ensure!(
        missing.is_empty(),
        "the release lacks what its README, docs or --help name:\n  {}",
        missing.join("\n  ")
    );
    Ok(named.len())
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Whether `c` may be part of a path a text names.
fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// The paths under [`SHIPPED_DIRS`] `text` names, as words (`see docs/check.md.`), without the
/// punctuation that ends a sentence. A path starts where no path character precedes it.
fn named_paths(text: &str) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    for dir in SHIPPED_DIRS {
        let prefix = format!("{dir}/");
        for (at, _) in text.match_indices(&prefix) {
            if text[..at].chars().next_back().is_some_and(path_char) {
                continue;
            }
            let word: String = text[at..].chars().take_while(|&c| path_char(c)).collect();
            let word = word.trim_end_matches('.');
            if word.len() > prefix.len() {
                found.insert(PathBuf::from(word));
            }
        }
    }
    found
}

/// The targets of `file`'s relative Markdown links (`[text](target#anchor)`), resolved from its
/// directory, that lead to a shipped directory or file.
fn links(file: &Path, text: &str) -> BTreeSet<PathBuf> {
    if file.extension().is_none_or(|ext| ext != "md") {
        return BTreeSet::new();
    }
    let base = file.parent().unwrap_or(Path::new(""));
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next()?.trim();
            (!target.is_empty() && !target.contains("://") && !target.starts_with("mailto:"))
                .then(|| normalize(&base.join(target)))?
        })
        .filter(|path| {
            let first = path.components().next();
            let top = first.map(|c| c.as_os_str().to_string_lossy().into_owned());
            top.is_some_and(|top| {
                SHIPPED_DIRS.contains(&top.as_str())
                    || (path.components().count() == 1 && SHIPPED_FILES.contains(&top.as_str()))
            })
        })
        .collect()
}

/// `path` with `.` and `dir/..` taken out; `None` if it leaves the release.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<PathBuf> {
        paths.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn paths_named_in_prose_without_their_full_stop() {
        let help = "Check ordering rules (a spec, see docs/check.md.) e.g. \
                    `phytrace check --spec specs/ax88796b.spec`; not mydocs/x.md or ../docs/";
        assert_eq!(
            named_paths(help),
            set(&["docs/check.md", "specs/ax88796b.spec"])
        );
    }

    #[test]
    fn links_resolve_from_their_file_and_keep_to_the_release() {
        let readme = "[k](docs/kernels.md#why) [w](https://example.org/docs/x.md) [a](#top)";
        assert_eq!(
            links(Path::new("README.md"), readme),
            set(&["docs/kernels.md"])
        );
        let doc = "[p](probes.md) [r](../README.md) [s](../specs/dongle.spec) \
                   [e](../phytrace/src/event.rs) [out](../../etc/passwd)";
        assert_eq!(
            links(Path::new("docs/tui.md"), doc),
            set(&["docs/probes.md", "README.md", "specs/dongle.spec"])
        );
        assert!(links(Path::new("man/phytrace.1"), "[x](docs/a.md)").is_empty());
    }

    #[test]
    fn a_release_without_a_named_file_fails_with_its_name() {
        let root = std::env::temp_dir().join(format!("phytrace-contents-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["docs", "specs", "man"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("README.md"), "[c](docs/check.md)").unwrap();
        fs::write(root.join("docs/check.md"), "[s](../specs/ax88796b.spec)").unwrap();
        fs::write(
            root.join("man/phytrace.1"),
            "see docs/check.md, specs/dongle.spec",
        )
        .unwrap();
        fs::write(root.join("specs/dongle.spec"), "").unwrap();
        let err = check(&root, &root.join("man")).unwrap_err().to_string();
        assert!(
            err.contains("docs/check.md names specs/ax88796b.spec"),
            "{err}"
        );
        fs::write(root.join("specs/ax88796b.spec"), "").unwrap();
        assert_eq!(check(&root, &root.join("man")).unwrap(), 3);
        fs::remove_dir_all(&root).unwrap();
    }
}
