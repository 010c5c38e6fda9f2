//! The shellcheck step of `cargo xtask test`: every shell script of the workspace, and the
//! guest scripts `cargo xtask vm` writes, checked with the options of `.shellcheckrc`.

use std::{
    fs,
    io::Read as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};

use crate::{arch::Arch, paths, run, vm};

/// Directories that hold no script of ours: build output, git's own, third-party code.
const SKIPPED_DIRS: &[&str] = &["target", ".git", "vendor"];

/// Runs shellcheck on every script; fails, after printing them, on any finding.
pub fn run() -> Result<()> {
    let started = run::step("shellcheck");
    let scripts = scripts(&paths::workspace())?;
    anyhow::ensure!(!scripts.is_empty(), "no shell script found to check");
    run::status(
        Command::new("shellcheck")
            .args(&scripts)
            .current_dir(paths::workspace()),
    )
    .context("shellcheck found problems (above)")?;
    // The guest runs them with /bin/sh: the host root's (dash) or busybox's.
    let generated = generated_guest_scripts()?;
    run::status(
        Command::new("shellcheck")
            .arg("--shell=dash")
            .args(&generated),
    )
    .context("shellcheck found problems in a generated guest script (above)")?;
    eprintln!(
        "    {} scripts and {} generated guest scripts clean",
        scripts.len(),
        generated.len()
    );
    run::done("shellcheck", started);
    Ok(())
}

/// The shell scripts under `root`, relative to it, sorted: `*.sh` files and files whose first
/// line is a `#!` naming a shell.
fn scripts(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&&*entry.file_name().to_string_lossy()) {
                    dirs.push(path);
                }
            } else if kind.is_file() && is_shell_script(&path)? {
                found.push(path.strip_prefix(root)?.to_path_buf());
            }
        }
    }
    found.sort();
    Ok(found)
}

fn is_shell_script(path: &Path) -> Result<bool> {
    if path.extension().is_some_and(|ext| ext == "sh") {
        return Ok(true);
    }
    let mut start = [0u8; 128];
    let read = fs::File::open(path)
        .and_then(|mut file| file.read(&mut start))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(names_a_shell(&start[..read]))
}

/// Whether `start` (a file's first bytes) is a `#!` line whose interpreter is a shell.
fn names_a_shell(start: &[u8]) -> bool {
    let Some(line) = start.strip_prefix(b"#!") else {
        return false;
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line)
        .split_whitespace()
        .map(|word| word.rsplit('/').next().unwrap_or(word))
        .any(|program| ["sh", "bash", "dash"].contains(&program))
}

/// The script `cargo xtask vm` writes for the guest, for each architecture.
fn generated_guest_scripts() -> Result<Vec<PathBuf>> {
    let dir = paths::target().join("shellcheck");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let command = ["/bin/bash".to_owned(), "tests/vm/run.sh".to_owned()];
    Arch::ALL
        .into_iter()
        .map(|arch| {
            let path = dir.join(format!("guest-run-{}.sh", arch.name()));
            // With every optional line: a kernel without BTF gets PHYTRACE_BTF.
            let mut kernel =
                crate::kernel::Kernel::built(PathBuf::from("tree"), String::new(), arch);
            kernel.btf_file = Some(PathBuf::from("vmlinux.btf"));
            let script = vm::guest_script(&command, Path::new("phytrace"), &kernel, false)?;
            fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_naming_a_shell_are_scripts() {
        assert!(names_a_shell(b"#!/usr/bin/env bash\nset -e\n"));
        assert!(names_a_shell(b"#!/bin/busybox sh\n"));
        assert!(names_a_shell(b"#!/bin/sh"));
        assert!(!names_a_shell(b"#!/usr/bin/env python3\n"));
        assert!(!names_a_shell(b"# bash, but no shebang\n"));
    }

    #[test]
    fn finds_the_suites_and_the_ci_script() {
        let found = scripts(&paths::workspace()).unwrap();
        for expected in ["tests/vm/run.sh", "scenarios/common.sh", ".ci/run"] {
            assert!(found.contains(&PathBuf::from(expected)), "{expected}");
        }
        assert!(!found.iter().any(|p| p.starts_with("target")));
    }
}
