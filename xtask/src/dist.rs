//! `cargo xtask dist`: one statically linked `phytrace` per architecture, released as
//! `target/dist/phytrace-VERSION-ARCH.tar.gz` (with a `.sha256` file) and as the Debian package
//! `target/dist/phytrace_VERSION_DEBARCH.deb` (`deb.rs`).
//!
//! The tarball holds the binary, README.md, LICENSE, docs/, specs/, contrib/ (the alert rules
//! and the Grafana dashboard), the man pages (man/man1: phytrace(1) and one per subcommand) and
//! the shell completions (completions/); everything the README, the docs and the help texts
//! name must be in it (`release_contents.rs`).
//!
//! Each binary is a release build for the architecture's musl target (linked by clang/lld, see
//! `.cargo/config.toml`); phytrace's build script builds the eBPF object for the same target
//! architecture (it passes `bpf_target_arch` = the target's `CARGO_CFG_TARGET_ARCH`), so
//! kprobe arguments are read from that architecture's `pt_regs`. The result is checked: an ELF
//! of the right machine with no interpreter and no shared libraries, kprobe programs that read
//! their first argument at the architecture's `pt_regs` offset, and eBPF objects that differ
//! between the architectures.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail, ensure};

use crate::{arch::Arch, deb, paths, release_contents, run, setup};

#[derive(clap::Args)]
pub struct DistArgs {
    /// Only these architectures (default: all).
    #[arg(long = "arch", value_enum, value_name = "ARCH")]
    pub arches: Vec<Arch>,
}

pub fn run(args: &DistArgs) -> Result<Vec<PathBuf>> {
    setup::run()?;
    let arches = if args.arches.is_empty() {
        Arch::ALL.to_vec()
    } else {
        args.arches.clone()
    };
    build_all(&arches)
}

/// Builds, checks and packs `arches` (the host's is always built: its binary generates the man
/// pages, the completions and the capability set, which are the same for every architecture);
/// returns the tarballs (each one's package is [`deb::file`]).
pub fn build_all(arches: &[Arch]) -> Result<Vec<PathBuf>> {
    let started = run::step("dist: static release builds");
    let host = Arch::host().context("xtask dist runs on x86_64 or aarch64 hosts")?;
    let mut built = Vec::new();
    for arch in std::iter::once(host).chain(arches.iter().copied().filter(|&a| a != host)) {
        built.push((arch, build(arch)?));
    }
    let generated = generate_docs(&built[0].1.0)?;
    let distinct_ebpf = built.len() < 2 || {
        let objects: Vec<Vec<u8>> = built
            .iter()
            .map(|(_, (_, object))| fs::read(object))
            .collect::<Result<_, _>>()?;
        objects.windows(2).all(|pair| pair[0] != pair[1])
    };
    ensure!(
        distinct_ebpf,
        "the eBPF objects of {} are identical: one was not built for its target's bpf_target_arch",
        built
            .iter()
            .map(|(arch, _)| arch.name())
            .collect::<Vec<_>>()
            .join(" and ")
    );
    let mut tarballs = Vec::new();
    for (arch, (binary, _)) in &built {
        if !arches.contains(arch) {
            continue;
        }
        let tarball = pack(*arch, binary, &generated)?;
        eprintln!("    {}", tarball.display());
        eprintln!("    {}", deb::file(*arch).display());
        tarballs.push(tarball);
    }
    let _ = fs::remove_dir_all(&generated);
    run::done("dist", started);
    Ok(tarballs)
}

/// The workspace version (phytrace's, which xtask shares).
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// `target/dist`.
pub fn dir() -> PathBuf {
    paths::target().join("dist")
}

/// The static binary `cargo xtask dist` builds for `arch`.
pub fn binary(arch: Arch) -> PathBuf {
    paths::target()
        .join(arch.musl_target())
        .join("release/phytrace")
}

/// Builds phytrace for `arch`'s musl target; returns the binary and its embedded eBPF object.
fn build(arch: Arch) -> Result<(PathBuf, PathBuf)> {
    let started = run::step(&format!(
        "dist: building phytrace for {arch} ({}, release)",
        arch.musl_target()
    ));
    build_static("phytrace", arch)?;
    let binary = binary(arch);
    check_static(&binary, arch)?;
    let object = ebpf_object(arch)?;
    let (program, embedded) = (fs::read(&binary)?, fs::read(&object)?);
    ensure!(
        contains(&program, &embedded),
        "{} does not embed {}: which eBPF object did the build use?",
        binary.display(),
        object.display()
    );
    check_argument_registers(&object, arch)?;
    run::done(&format!("{arch} build"), started);
    Ok((binary, object))
}

/// Builds `package` statically for `arch`'s musl target, release (`.cargo/config.toml` links
/// it: an environment's RUSTFLAGS would replace that, so it is not passed on; nor is
/// AYA_BUILD_SKIP, so phytrace embeds its eBPF object).
pub fn build_static(package: &str, arch: Arch) -> Result<()> {
    // Quiet on success: cargo's output is shown only if the build fails.
    run::output(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--locked", "--package", package])
            .args(["--target", arch.musl_target()])
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("AYA_BUILD_SKIP")
            .current_dir(paths::workspace()),
    )
    .with_context(|| {
        format!(
            "building {package} for {}: is its Rust target installed (`cargo xtask setup`)?",
            arch.musl_target()
        )
    })?;
    Ok(())
}

/// The eBPF object the last build for `arch` embedded (the newest one in its build outputs).
fn ebpf_object(arch: Arch) -> Result<PathBuf> {
    let build_dir = paths::target()
        .join(arch.musl_target())
        .join("release/build");
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in fs::read_dir(&build_dir)
        .with_context(|| format!("reading {}", build_dir.display()))?
        .flatten()
    {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("phytrace-") {
            continue;
        }
        let object = entry.path().join("out/phytrace");
        if let Ok(modified) = fs::metadata(&object).and_then(|m| m.modified())
            && newest.as_ref().is_none_or(|(time, _)| modified > *time)
        {
            newest = Some((modified, object));
        }
    }
    let (_, object) =
        newest.with_context(|| format!("no eBPF object under {}", build_dir.display()))?;
    ensure!(
        fs::metadata(&object)?.len() > 0,
        "{} is empty (built with AYA_BUILD_SKIP?)",
        object.display()
    );
    Ok(object)
}

/// Whether `haystack` holds `needle` (an `include_bytes!`'d file is stored as it is).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, _)) = needle.split_first() else {
        return true;
    };
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &byte)| byte == first)
        .any(|(at, _)| haystack[at..].starts_with(needle))
}

/// The `pt_regs` offsets of the registers a kprobe program reads first: the argument registers,
/// in order (x86_64 `di si dx cx r8 r9`, arm64 `regs[0..8]`, x0…x7), then the stack pointer
/// (which the callback programs read to pair a return with its entry; x86_64 `sp`, arm64 `sp`
/// after `regs[30]`). The two sets are disjoint, so a program's first register load tells which
/// architecture it was built for.
fn argument_offsets(arch: Arch) -> Vec<u64> {
    match arch {
        Arch::X86_64 => vec![0x70, 0x68, 0x60, 0x58, 0x48, 0x40, 0x98],
        Arch::Aarch64 => (0..8).map(|n| n * 8).chain([0xf8]).collect(),
    }
}

/// For each kprobe program (section `kprobe`, `kprobe/…`) of an `llvm-objdump -d` listing: the
/// offset of its first load from the context (r1 at entry, or a register it was copied to), if
/// that is a 64-bit one (its first argument's `pt_regs` slot).
fn entry_argument_loads(listing: &str) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    let mut in_kprobe = false;
    let mut current: Option<String> = None;
    // The registers holding the context pointer, in the current program.
    let mut context: Vec<String> = Vec::new();
    for line in listing.lines() {
        if let Some(section) = line
            .strip_prefix("Disassembly of section ")
            .and_then(|rest| rest.strip_suffix(':'))
        {
            in_kprobe = section == "kprobe" || section.starts_with("kprobe/");
            current = None;
            continue;
        }
        if let Some(name) = line
            .split_once(" <")
            .and_then(|(_, rest)| rest.strip_suffix(">:"))
        {
            current = in_kprobe.then(|| name.to_owned());
            context = vec!["r1".to_owned()];
            continue;
        }
        let Some(name) = &current else { continue };
        let Some((_, instruction)) = line.split_once(":\t") else {
            continue;
        };
        // The first load from the context, of any width: a 64-bit one is a pt_regs slot (a
        // tracepoint program's context is no pt_regs, and is not checked).
        if let Some((width, base, offset)) = context_load(instruction)
            && context.iter().any(|reg| reg == base)
        {
            if width == "u64" {
                found.push((name.clone(), offset));
            }
            current = None;
            continue;
        }
        if instruction.starts_with("call ") {
            context.retain(|reg| !["r1", "r2", "r3", "r4", "r5"].contains(&reg.as_str()));
        } else if let Some((target, op, source)) = assignment(instruction) {
            context.retain(|reg| *reg != target);
            if op == "=" && context.iter().any(|reg| reg == source) {
                context.push(target);
            }
        }
    }
    found
}

/// `rA = *(WIDTH *)(rB + 0xOFFSET)`: (WIDTH, rB, OFFSET).
fn context_load(instruction: &str) -> Option<(&str, &str, u64)> {
    let (_, load) = instruction.split_once(" = *(")?;
    let (width, rest) = load.split_once(" *)(")?;
    let (base, offset) = rest.strip_suffix(')')?.split_once(" + 0x")?;
    Some((width, base, u64::from_str_radix(offset, 16).ok()?))
}

/// An instruction that writes a register: (the register as `rN`, the operator, the source).
fn assignment(instruction: &str) -> Option<(String, &str, &str)> {
    let mut words = instruction.splitn(3, ' ');
    let target = words.next()?;
    let op = words.next().filter(|op| op.ends_with('='))?;
    let number = target
        .strip_prefix('r')
        .or_else(|| target.strip_prefix('w'))?;
    number.parse::<u8>().ok()?;
    Some((format!("r{number}"), op, words.next().unwrap_or_default()))
}

/// Fails unless the eBPF object's kprobe programs read their arguments from `arch`'s argument
/// registers in `pt_regs` (the object was built with `bpf_target_arch` = `arch`).
fn check_argument_registers(object: &Path, arch: Arch) -> Result<()> {
    let listing = run::output(
        Command::new("llvm-objdump-19")
            .args(["-d", "--no-show-raw-insn"])
            .arg(object),
    )?;
    let loads = entry_argument_loads(&listing);
    ensure!(
        !loads.is_empty(),
        "{}: no kprobe program reading its pt_regs: cannot check its bpf_target_arch",
        object.display()
    );
    let slots = argument_offsets(arch);
    let wrong: Vec<String> = loads
        .iter()
        .filter(|(_, offset)| !slots.contains(offset))
        .map(|(name, offset)| format!("{name} reads pt_regs+{offset:#x}"))
        .collect();
    let shown: Vec<String> = slots.iter().map(|slot| format!("{slot:#x}")).collect();
    ensure!(
        wrong.is_empty(),
        "the eBPF object is not built for {arch} (arguments at pt_regs+{}): {}",
        shown.join("/"),
        wrong.join(", ")
    );
    eprintln!(
        "    eBPF object: {} kprobe programs read their arguments from {arch}'s registers",
        loads.len()
    );
    Ok(())
}

/// What makes an ELF file dynamic, from `readelf --program-headers --dynamic`.
fn dynamic_parts(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter(|line| line.trim_start().starts_with("INTERP") || line.contains("(NEEDED)"))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The ELF machine of `readelf --file-header` output.
fn machine(readelf: &str) -> Option<&str> {
    readelf
        .lines()
        .find_map(|line| line.trim().strip_prefix("Machine:"))
        .map(str::trim)
}

/// Fails unless `binary` is an ELF for `arch` with no interpreter and no shared libraries.
pub fn check_static(binary: &Path, arch: Arch) -> Result<()> {
    let headers = run::output(
        Command::new("llvm-readelf-19")
            .args(["--file-header", "--program-headers", "--dynamic"])
            .arg(binary),
    )
    .with_context(|| format!("reading the ELF headers of {}", binary.display()))?;
    let want = match arch {
        Arch::X86_64 => "Advanced Micro Devices X86-64",
        Arch::Aarch64 => "AArch64",
    };
    let got = machine(&headers).unwrap_or("unknown");
    if got != want {
        bail!("{} is for {got}, not {want}", binary.display());
    }
    let dynamic = dynamic_parts(&headers);
    if !dynamic.is_empty() {
        bail!("{} is not static: {}", binary.display(), dynamic.join("; "));
    }
    eprintln!("    {}: static {arch} ELF", binary.display());
    Ok(())
}

/// The man pages (`man/`), the completions (`completions/`) and the capability set
/// (`capabilities`), rendered by `binary` (runs on this machine).
fn generate_docs(binary: &Path) -> Result<PathBuf> {
    let out = dir().join(".generated");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(out.join("completions"))?;
    run::output(
        Command::new(binary)
            .args(["generate", "man", "--dir"])
            .arg(out.join("man")),
    )
    .context("phytrace generate man --dir")?;
    for (artifact, file) in [
        ("bash", "completions/phytrace.bash"),
        ("zsh", "completions/_phytrace"),
        ("fish", "completions/phytrace.fish"),
        ("capabilities", "capabilities"),
    ] {
        let text = run::output(Command::new(binary).args(["generate", artifact]))
            .with_context(|| format!("phytrace generate {artifact}"))?;
        fs::write(out.join(file), text + "\n")?;
    }
    Ok(out)
}

/// Gathers the release of `arch` in `target/dist/phytrace-VERSION-ARCH`, checks that it holds
/// what its texts name, builds its package, then packs the tarball and writes its SHA-256.
fn pack(arch: Arch, binary: &Path, generated: &Path) -> Result<PathBuf> {
    let name = format!("phytrace-{}-{arch}", version());
    let stage = dir().join(&name);
    let _ = fs::remove_dir_all(&stage);
    fs::create_dir_all(stage.join("man"))?;
    // Without its symbol table (Debian's packages ship stripped programs; boards have little
    // room): a release build keeps one.
    run::status(
        Command::new("llvm-strip-19")
            .arg("--strip-all")
            .arg(binary)
            .arg("-o")
            .arg(stage.join("phytrace")),
    )?;
    let workspace = paths::workspace();
    for file in release_contents::SHIPPED_FILES {
        fs::copy(workspace.join(file), stage.join(file))
            .with_context(|| format!("copying {file}"))?;
    }
    run::status(
        Command::new("cp")
            .arg("-R")
            .args(release_contents::SHIPPED_DIRS.map(|dir| workspace.join(dir)))
            .arg(generated.join("completions"))
            .arg(&stage),
    )?;
    run::status(
        Command::new("cp")
            .arg("-R")
            .arg(generated.join("man"))
            .arg(stage.join("man/man1")),
    )?;
    let named = release_contents::check(&stage, &stage.join("man/man1"))?;
    eprintln!("    {name}: holds the {named} files its README, docs and --help name");
    let capabilities = fs::read_to_string(generated.join("capabilities"))?;
    deb::build(arch, &stage, capabilities.trim())?;
    let tarball = dir().join(format!("{name}.tar.gz"));
    // Reproducible: sorted, fixed owner and time, gzip without a timestamp.
    run::status(
        Command::new("tar")
            .args([
                "--sort=name",
                "--owner=0",
                "--group=0",
                "--numeric-owner",
                "--mtime=@0",
                "--use-compress-program=gzip -n",
                "-cf",
            ])
            .arg(&tarball)
            .arg("-C")
            .arg(dir())
            .arg(&name),
    )?;
    fs::remove_dir_all(&stage)?;
    let sum = run::output(
        Command::new("sha256sum")
            .arg(format!("{name}.tar.gz"))
            .current_dir(dir()),
    )?;
    fs::write(dir().join(format!("{name}.tar.gz.sha256")), sum + "\n")?;
    Ok(tarball)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DYNAMIC: &str = "ELF Header:
  Machine:                           AArch64
Program Headers:
  Type           Offset   VirtAddr           PhysAddr           FileSiz  MemSiz   Flg Align
  PHDR           0x000040 0x0000000000000040 0x0000000000000040 0x000268 0x000268 R   0x8
  INTERP         0x0002a8 0x00000000000002a8 0x00000000000002a8 0x00001b 0x00001b R   0x1
Dynamic section at offset 0x3c8 contains 2 entries:
  Tag        Type                         Name/Value
  0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
";

    #[test]
    fn a_dynamic_binary_is_named_by_its_interpreter_and_libraries() {
        let parts = dynamic_parts(DYNAMIC);
        assert_eq!(parts.len(), 2);
        assert!(parts[1].contains("libc.so.6"));
        assert_eq!(machine(DYNAMIC), Some("AArch64"));
    }

    #[test]
    fn kprobe_programs_are_checked_by_their_first_context_load() {
        let listing = "Disassembly of section .text:
0000000000000000 <helper>:
       0:\tr2 = *(u64 *)(r1 + 0x8)
Disassembly of section kprobe:
0000000000000000 <callback_enter>:
       0:\tr9 = *(u64 *)(r1 + 0x70)
       1:\tr2 = *(u64 *)(r1 + 0x68)
0000000000000618 <mdio_write_enter>:
     194:\tr7 = *(u64 *)(r10 - 0x8)
     195:\tr6 = *(u64 *)(r1 + 0x0)
0000000000000728 <selftest_enter>:
     232:\tr7 = *(u32 *)(r1 + 0x0)
     233:\tr1 = *(u64 *)(r1 + 0x8)
0000000000000c50 <mac_link_up>:
     394:\tr7 = r1
     395:\tr1 = *(u64 *)(r7 + 0x40)
0000000000000d00 <copied_then_overwritten>:
     400:\tr7 = r1
     401:\tr7 = 0x0
     402:\tr1 = 0x0 ll
     403:\tr2 = *(u64 *)(r7 + 0x8)
     404:\tr3 = *(u64 *)(r1 + 0x10)
Disassembly of section kretprobe:
0000000000000000 <callback_exit>:
       0:\tr2 = *(u64 *)(r1 + 0x50)
Disassembly of section raw_tp/module_load:
0000000000000000 <module_load>:
       0:\tr2 = *(u64 *)(r1 + 0x0)
";
        assert_eq!(
            entry_argument_loads(listing),
            [
                ("callback_enter".to_owned(), 0x70),
                ("mdio_write_enter".to_owned(), 0x0),
                ("mac_link_up".to_owned(), 0x40),
            ]
        );
    }

    #[test]
    fn an_embedded_object_is_found() {
        assert!(contains(b"..\x7fELF.obj..", b"\x7fELF.obj"));
        assert!(!contains(b"..\x7fELF.ob", b"\x7fELF.obj"));
    }

    #[test]
    fn a_static_binary_has_no_dynamic_parts() {
        let text = "ELF Header:\n  Machine: Advanced Micro Devices X86-64\nProgram Headers:\n  LOAD 0x0 0x0\nThere is no dynamic section in this file.\n";
        assert!(dynamic_parts(text).is_empty());
        assert_eq!(machine(text), Some("Advanced Micro Devices X86-64"));
    }
}
