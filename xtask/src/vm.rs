//! `cargo xtask vm`: boots the test kernel in QEMU and runs a command as root in the guest.
//!
//! The guest is a `microvm` with a busybox initramfs whose `/init` mounts the host's root file
//! system read-only over 9p, mounts proc/sys/dev/tracefs/debugfs/bpffs and tmpfs scratch
//! directories, mounts `target/vm-out` read-write at the same path, then runs the command on
//! the serial console and records its exit status. KVM is used when it works on this host
//! (probed once and remembered), TCG otherwise.
//!
//! An aarch64 guest (`--arch aarch64`: QEMU `virt`, always TCG) boots the same init script with
//! an arm64 busybox. It sees the same x86_64 host root but cannot run its programs: the init
//! puts busybox's applets in `/run/phytrace-guest/bin`, the only directory on `PATH`, and runs
//! the command with busybox `sh`, so the guest runs static arm64 binaries only (busybox, `cargo xtask
//! dist`'s phytrace). See docs/arm64.md.

use std::{
    env, fs,
    io::{IsTerminal as _, Read as _, Write as _},
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{arch::Arch, kernel::Kernel, paths, run};

/// Exit code when the guest did not finish within the timeout (as `timeout(1)`).
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit code when the guest stopped without reporting the command's status.
pub const EXIT_NO_STATUS: u8 = 125;

const INIT_SCRIPT: &str = include_str!("vm_init.sh");
const BUSYBOX: &str = "/bin/busybox";

#[derive(clap::Args)]
pub struct VmArgs {
    /// The guest's architecture (aarch64: QEMU `virt`, TCG; the guest runs static aarch64
    /// binaries only, see docs/arm64.md).
    #[arg(long, value_enum, default_value_t = Arch::X86_64)]
    pub arch: Arch,
    /// Which kernel to boot: ours (the test kernel `cargo xtask kernel` builds) or one of
    /// Debian's as packaged (x86_64; fetched once into the cache, docs/kernels.md).
    #[arg(long, value_enum, default_value_t = KernelChoice::Ours)]
    pub kernel: KernelChoice,
    #[command(flatten)]
    pub options: VmOptions,
    /// The command to run in the guest, as root (default: an interactive shell).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(clap::Args, Clone)]
pub struct VmOptions {
    /// Kill the guest after this many seconds (the VM suite's own limit is 300 s per script).
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 2048)]
    pub memory: u32,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Accelerator: KVM if it works here, else TCG (software emulation).
    #[arg(long, value_enum, default_value_t = Accel::Auto)]
    pub accel: Accel,
    /// The phytrace binary the guest sees as $PHYTRACE_BIN [default: target/debug/phytrace; for
    /// aarch64 the static build of `cargo xtask dist`].
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,
    /// Pass a USB device of the host into the guest (x86_64): `VENDOR:PRODUCT` in hex
    /// (`0b95:772a`, a real AX88772A dongle) or `BUS.ADDR` as `lsusb` prints them (`1.4`). The
    /// guest gets microvm's xHCI controller (`usb=on`, described by ACPI) and QEMU's `usb-host`
    /// device; the kernel needs `CONFIG_ACPI` and `CONFIG_USB_XHCI_PLATFORM` (docs/dongle.md).
    /// Not tested here: these machines have no USB devices.
    #[arg(long, value_name = "DEVICE", value_parser = UsbHost::parse)]
    pub usb_host: Option<UsbHost>,
}

/// A host USB device for QEMU's `usb-host` (`--usb-host`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UsbHost {
    /// By USB id: the first device of the host with that vendor and product.
    Id { vendor: u16, product: u16 },
    /// By position: bus number and device address.
    Address { bus: u32, addr: u32 },
}

impl UsbHost {
    fn parse(text: &str) -> Result<Self, String> {
        let hex = |s: &str| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let dec = |s: &str| s.parse::<u32>().ok();
        if let Some((v, p)) = text.split_once(':')
            && let (Some(vendor), Some(product)) = (hex(v), hex(p))
        {
            return Ok(Self::Id { vendor, product });
        }
        if let Some((b, a)) = text.split_once('.')
            && let (Some(bus), Some(addr)) = (dec(b), dec(a))
        {
            return Ok(Self::Address { bus, addr });
        }
        Err(format!(
            "`{text}`: expected VENDOR:PRODUCT in hex (0b95:772a) or BUS.ADDR (1.4)"
        ))
    }

    /// The `-device` argument.
    fn qemu_device(&self) -> String {
        match self {
            Self::Id { vendor, product } => {
                format!("usb-host,vendorid=0x{vendor:04x},productid=0x{product:04x}")
            }
            Self::Address { bus, addr } => format!("usb-host,hostbus={bus},hostaddr={addr}"),
        }
    }
}

/// The kernel `cargo xtask vm` boots.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelChoice {
    /// The test kernel built from Debian's linux-source-6.12 and kernel/phytrace.config.
    Ours,
    /// Debian's unmodified 7.3 (`linux-image-7.3.4+deb13-amd64`).
    Stock,
    /// Debian 13's unmodified 6.12 (`linux-image-6.12.117+deb13-amd64`): phylib a module.
    Debian13,
    /// Debian 14's unmodified 7.2 (`linux-image-7.2.12+deb14-amd64`).
    Debian14,
    /// Linux 7.3 built from Debian's linux-source-7.3 with our fragment (`cargo xtask kernel
    /// --source 7.3`, `cargo xtask modules --source 7.3`).
    #[value(name = "7.3")]
    Source73,
    /// The test kernel built without BTF, traced with the BTF file pahole made from its
    /// vmlinux (`cargo xtask kernel --source 6.12-no-btf`; the guest's PHYTRACE_BTF).
    NoBtf,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Auto,
    Kvm,
    Tcg,
}

pub fn run(args: &VmArgs) -> Result<ExitCode> {
    let kernel = match args.kernel {
        KernelChoice::Ours => crate::kernel::locate(args.arch)?,
        KernelChoice::Stock | KernelChoice::Debian13 | KernelChoice::Debian14
            if args.arch != Arch::X86_64 =>
        {
            bail!("--kernel: Debian's kernels are booted for x86_64 only")
        }
        KernelChoice::Stock => Kernel::stock(crate::stock::DEBIAN_73)?,
        KernelChoice::Debian13 => Kernel::stock(crate::stock::DEBIAN_13)?,
        KernelChoice::Debian14 => Kernel::stock(crate::stock::DEBIAN_14)?,
        KernelChoice::Source73 if args.arch != Arch::X86_64 => {
            bail!("--kernel 7.3: built for x86_64 only")
        }
        KernelChoice::Source73 => crate::kernel73::locate()?,
        KernelChoice::NoBtf if args.arch != Arch::X86_64 => {
            bail!("--kernel no-btf: built for x86_64 only")
        }
        KernelChoice::NoBtf => crate::kernel_no_btf::locate()?,
    };
    let command = if args.command.is_empty() && kernel.arch != Arch::X86_64 {
        vec!["sh".to_owned()]
    } else if args.command.is_empty() {
        vec!["/bin/bash".to_owned(), "-l".to_owned()]
    } else {
        args.command.clone()
    };
    let dist_binary = crate::dist::binary(kernel.arch);
    if kernel.arch != Arch::X86_64 && args.options.bin.is_none() && !dist_binary.exists() {
        eprintln!(
            "xtask vm: {} is not built: `cargo xtask dist --arch {}` builds the phytrace this guest can run",
            dist_binary.display(),
            kernel.arch
        );
    }
    let code = boot(&kernel, &args.options, &command)?;
    Ok(ExitCode::from(code))
}

/// Everything a guest run of the release build needs: set-up, kernel, modules, and
/// `phytrace` built with `--release`, which `options` then hand to the guest (unless they name
/// another binary).
pub fn prepare_release(options: &VmOptions) -> Result<(Kernel, VmOptions)> {
    crate::setup::run()?;
    let kernel = crate::kernel::run(&crate::kernel::KernelArgs {
        force: false,
        arch: crate::arch::Arch::X86_64,
        source: Default::default(),
    })?;
    crate::modules::build(&kernel)?;
    let started = run::step("building phytrace (release)");
    run::status(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--package", "phytrace"])
            .current_dir(paths::workspace()),
    )?;
    run::done("build", started);
    let mut options = options.clone();
    options
        .bin
        .get_or_insert_with(|| paths::target().join("release/phytrace"));
    Ok((kernel, options))
}

/// The AX88772A dongle emulator, built with `--release`.
pub fn release_emulator() -> Result<PathBuf> {
    let started = run::step("building ax88772a-emulator (release)");
    run::status(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--package", "ax88772a-emulator"])
            .current_dir(paths::workspace()),
    )?;
    run::done("build", started);
    Ok(paths::target().join("release/ax88772a-emulator"))
}

/// Boots `kernel`, runs `command` in the guest with the workspace's environment, streams its
/// output, and returns its exit status (or [`EXIT_TIMEOUT`] / [`EXIT_NO_STATUS`]).
pub fn boot(kernel: &Kernel, options: &VmOptions, command: &[String]) -> Result<u8> {
    let started = Instant::now();
    if options.usb_host.is_some() && kernel.arch != Arch::X86_64 {
        bail!("--usb-host: only for the x86_64 guest");
    }
    let out = paths::vm_out();
    let run_dir = out.join(".vm").join(std::process::id().to_string());
    let _ = fs::remove_dir_all(&run_dir);
    fs::create_dir_all(&run_dir)?;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let arch = kernel.arch;
    let bin = options.bin.clone().unwrap_or_else(|| match arch {
        Arch::X86_64 => paths::target().join("debug/phytrace"),
        other => crate::dist::binary(other),
    });
    fs::write(
        run_dir.join("run.sh"),
        guest_script(command, &bin, kernel, interactive)?,
    )?;

    let initramfs = initramfs(kernel)?;
    let native = Arch::host() == Some(arch);
    // Another architecture's guest is always emulated.
    let accel = match options.accel {
        _ if !native => Accel::Tcg,
        Accel::Auto if kvm_works(kernel, &initramfs) => Accel::Kvm,
        Accel::Auto => Accel::Tcg,
        chosen => chosen,
    };
    let mut qemu = qemu_command(
        kernel,
        &initramfs,
        options,
        accel,
        &out,
        &run_dir,
        interactive,
    );
    qemu.stdin(if interactive {
        Stdio::inherit()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let mut child = qemu
        .spawn()
        .with_context(|| format!("could not start {}: run `cargo xtask setup`", arch.qemu()))?;
    let mut stdout = child.stdout.take().context("qemu's stdout")?;
    let pump = thread::spawn(move || {
        // Serial output arrives with CRLF line ends; keep them for a terminal only.
        let mut buf = [0u8; 8192];
        let mut sink = std::io::stdout();
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            let chunk: Vec<u8> = if interactive {
                buf[..n].to_vec()
            } else {
                buf[..n].iter().copied().filter(|&b| b != b'\r').collect()
            };
            let _ = sink.write_all(&chunk);
            let _ = sink.flush();
        }
    });

    let deadline = started + Duration::from_secs(options.timeout);
    let timed_out = loop {
        if child.try_wait()?.is_some() {
            break false;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break true;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let _ = pump.join();
    let status = fs::read_to_string(run_dir.join("status")).ok();
    let _ = fs::remove_dir_all(&run_dir);
    let elapsed = started.elapsed().as_secs_f64();
    if timed_out {
        eprintln!(
            "xtask vm: the guest did not finish within {} s and was killed",
            options.timeout
        );
        return Ok(EXIT_TIMEOUT);
    }
    match status.and_then(|text| text.trim().parse::<u8>().ok()) {
        Some(code) => {
            if env::var_os("PHYTRACE_VM_QUIET").is_none() {
                let accel = if accel == Accel::Kvm { "KVM" } else { "TCG" };
                eprintln!("xtask vm: exit status {code} after {elapsed:.1} s ({accel})");
            }
            Ok(code)
        }
        None => {
            eprintln!(
                "xtask vm: the guest stopped after {elapsed:.1} s without reporting an exit status (kernel panic or init failure: see the console output above)"
            );
            Ok(EXIT_NO_STATUS)
        }
    }
}

/// Quotes `arg` for a POSIX shell.
fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Where a foreign-architecture guest's init puts busybox and its applets (on a tmpfs).
const GUEST_BIN: &str = "/run/phytrace-guest/bin";

/// The script the guest runs: environment, working directory, terminal size, the command.
pub fn guest_script(
    command: &[String],
    bin: &Path,
    kernel: &Kernel,
    interactive: bool,
) -> Result<String> {
    let arch = kernel.arch;
    let workspace = paths::workspace();
    let cwd = env::current_dir()?;
    let mut script = String::from("set -e\n");
    let path = match arch {
        Arch::X86_64 => {
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/root/.cargo/bin"
                .to_owned()
        }
        // The host's programs are for another architecture: busybox's applets only.
        _ => GUEST_BIN.to_owned(),
    };
    let vars = [
        ("PATH", path),
        ("HOME", "/root".to_owned()),
        ("LANG", "C.UTF-8".to_owned()),
        (
            "TERM",
            env::var("TERM").unwrap_or_else(|_| "linux".to_owned()),
        ),
        ("PHYTRACE_ROOT", workspace.display().to_string()),
        ("PHYTRACE_MODULES", kernel.modules.display().to_string()),
        ("PHYTRACE_ARCH", arch.name().to_owned()),
        ("PHYTRACE_OUT", paths::vm_out().display().to_string()),
        ("PHYTRACE_BIN", bin.display().to_string()),
        // Cargo's target directory (CARGO_TARGET_DIR), where the tests find the emulator.
        ("PHYTRACE_TARGET", paths::target().display().to_string()),
    ];
    for (name, value) in vars {
        script += &format!("export {name}={}\n", shell_quote(&value));
    }
    // A kernel without BTF is traced with the file made for it, as its users would.
    if let Some(file) = &kernel.btf_file {
        script += &format!(
            "export PHYTRACE_BTF={}\n",
            shell_quote(&file.display().to_string())
        );
    }
    if let Ok(no_color) = env::var("NO_COLOR") {
        script += &format!("export NO_COLOR={}\n", shell_quote(&no_color));
    }
    script += &format!(
        "cd {} 2>/dev/null || cd /\n",
        shell_quote(&cwd.display().to_string())
    );
    if let Some((cols, rows)) = terminal_size().filter(|_| interactive) {
        script += &format!("stty rows {rows} cols {cols} 2>/dev/null || true\n");
    }
    script += "set +e\n";
    let quoted: Vec<String> = command.iter().map(|arg| shell_quote(arg)).collect();
    script += &quoted.join(" ");
    script += "\n";
    Ok(script)
}

/// The host terminal's size, to hand to the guest's serial console.
fn terminal_size() -> Option<(u16, u16)> {
    let text = run::probe("stty", ["size", "-F", "/dev/tty"])?;
    let mut parts = text.split_whitespace().map(|n| n.parse::<u16>().ok());
    let rows = parts.next()??;
    let cols = parts.next()??;
    Some((cols, rows))
}

fn qemu_command(
    kernel: &Kernel,
    initramfs: &Path,
    options: &VmOptions,
    accel: Accel,
    out: &Path,
    run_dir: &Path,
    interactive: bool,
) -> Command {
    let arch = kernel.arch;
    let virtio_9p = if kernel.stock.as_ref().is_some_and(|stock| stock.release.pci) {
        "virtio-9p-pci"
    } else {
        "virtio-9p-device"
    };
    let mut cmd = Command::new(arch.qemu());
    match arch {
        Arch::X86_64 => {
            // A USB device passed through needs a host controller: microvm's own xHCI, which
            // only ACPI describes (the virtio-mmio devices then too, not the command line).
            let pci = kernel.stock.as_ref().is_some_and(|stock| stock.release.pci);
            cmd.args([
                "-M",
                if options.usb_host.is_some() {
                    "microvm,acpi=on,usb=on,rtc=on"
                } else if pci {
                    "pc"
                } else if kernel.stock.is_some() {
                    // Debian's build finds virtio-mmio devices through ACPI only (no
                    // CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES).
                    "microvm,acpi=on,rtc=on"
                } else {
                    "microvm,acpi=off,rtc=on"
                },
            ]);
            match accel {
                Accel::Kvm => cmd.args(["-accel", "kvm", "-cpu", "host,-arch-capabilities"]),
                _ => cmd.args(["-accel", "tcg,thread=multi", "-cpu", "max"]),
            };
        }
        // Pointer authentication with QEMU's own (fast) algorithm: the architected one is slow
        // under TCG.
        Arch::Aarch64 => {
            cmd.args(["-M", "virt"]).args([
                "-accel",
                "tcg,thread=multi",
                "-cpu",
                "max,pauth-impdef=on",
            ]);
        }
    }
    let signal = if interactive { "off" } else { "on" };
    cmd.args([
        "-smp",
        &options.cpus.to_string(),
        "-m",
        &options.memory.to_string(),
    ])
    .args([
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-action",
        "reboot=shutdown",
    ])
    .args([
        "-chardev",
        &format!("stdio,id=console,signal={signal}"),
        "-serial",
        "chardev:console",
    ])
    .arg("-kernel")
    .arg(kernel.image())
    .arg("-initrd")
    .arg(initramfs)
    .arg("-append")
    .arg(format!(
        "console={} quiet panic=-1 oops=panic rdinit=/init {}{}\
             PHYTRACE_VM_OUT={} PHYTRACE_VM_RUN={} PHYTRACE_VM_KEEP={} PHYTRACE_VM_MODULES={} \
             PHYTRACE_VM_KERNEL={}",
        arch.console(),
        kernel
            .lockdown
            .map_or(String::new(), |mode| format!("lockdown={mode} ")),
        match arch {
            Arch::X86_64 => format!(
                "reboot=t tsc=reliable no_timer_check {}",
                tsc_khz().map_or(String::new(), |khz| format!("tsc_early_khz={khz} "))
            ),
            // The host root's programs cannot run here: init uses its own busybox.
            _ => format!("PHYTRACE_VM_GUEST_BIN={GUEST_BIN} "),
        },
        out.display(),
        run_dir.display(),
        kept_directories().join(","),
        match &kernel.stock {
            Some(stock) => stock.modules.clone(),
            None => crate::modules::tree(&kernel.modules).join("lib/modules"),
        }
        .display(),
        kernel.name
    ))
    .args([
        "-fsdev",
        "local,id=hostroot,path=/,security_model=none,readonly=on",
    ])
    .args([
        "-device",
        &format!("{virtio_9p},fsdev=hostroot,mount_tag=hostroot"),
    ])
    .args([
        "-fsdev",
        &format!("local,id=out,path={},security_model=none", out.display()),
    ])
    .args(["-device", &format!("{virtio_9p},fsdev=out,mount_tag=out")]);
    if let Some(usb) = &options.usb_host {
        cmd.args(["-device", &usb.qemu_device()]);
    }
    cmd
}

/// Directories the guest must see although they may lie under a path it replaces with a tmpfs
/// (`/tmp`, `/run`, …): the workspace and the target directory. Comma-separated on the kernel
/// command line; `vm_init.sh` splits them.
fn kept_directories() -> Vec<String> {
    let workspace = paths::workspace();
    let target = paths::target();
    let mut dirs = vec![workspace.display().to_string()];
    if !target.starts_with(&workspace) {
        dirs.push(target.display().to_string());
    }
    dirs
}

/// The host's TSC frequency, which the guest's TSC runs at under TCG too. Handing it to the
/// guest skips the PIT calibration, which fails on a busy host and leaves the guest on a
/// jiffies clock (4 ms resolution: useless for latencies).
fn tsc_khz() -> Option<u64> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = cpuinfo.lines().find_map(|line| {
        line.strip_prefix("cpu MHz")?
            .split(':')
            .nth(1)?
            .trim()
            .parse()
            .ok()
    })?;
    Some((mhz * 1000.0) as u64)
}

/// The initramfs (`arch`'s busybox + `/init`; for the stock kernel also the modules it loads
/// before mounting the host root, in `/modules` with their load order), cached by content.
fn initramfs(kernel: &Kernel) -> Result<PathBuf> {
    let arch = kernel.arch;
    let source = match arch {
        Arch::X86_64 => PathBuf::from(BUSYBOX),
        _ => crate::setup::guest_busybox_path(),
    };
    let busybox = fs::read(&source).with_context(|| {
        format!(
            "reading {}: install busybox-static (`cargo xtask setup`)",
            source.display()
        )
    })?;
    let mut parts: Vec<&[u8]> = vec![INIT_SCRIPT.as_bytes(), &busybox];
    if let Some(stock) = &kernel.stock {
        parts.push(stock.versions.as_bytes());
    }
    let key = crate::kernel::fnv1a(&parts);
    let image = paths::cache().join(format!("initramfs-{key:016x}.cpio"));
    if image.exists() {
        return Ok(image);
    }
    let stage = paths::cache().join(format!("initramfs-stage-{}", std::process::id()));
    let _ = fs::remove_dir_all(&stage);
    for dir in ["bin", "dev", "proc", "sys", "host", "out"] {
        fs::create_dir_all(stage.join(dir))?;
    }
    fs::write(stage.join("bin/busybox"), &busybox)?;
    fs::write(stage.join("init"), INIT_SCRIPT)?;
    run::status(
        Command::new("chmod")
            .arg("755")
            .arg(stage.join("bin/busybox"))
            .arg(stage.join("init")),
    )?;
    if let Some(stock) = &kernel.stock {
        let names = crate::stock::unpack_modules(&stock.early_modules()?, &stage.join("modules"))?;
        fs::write(stage.join("modules/order"), names.join("\n") + "\n")?;
    }
    let list = run::output(Command::new("find").arg(".").current_dir(&stage))?;
    let partial = image.with_extension(format!("partial-{}", std::process::id()));
    let mut cpio = Command::new("cpio")
        .args(["--quiet", "-o", "-H", "newc", "-R", "0:0"])
        .current_dir(&stage)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(&partial)?)
        .spawn()
        .context("could not start cpio: run `cargo xtask setup`")?;
    cpio.stdin
        .take()
        .context("cpio stdin")?
        .write_all(list.as_bytes())?;
    if !cpio.wait()?.success() {
        let _ = fs::remove_file(&partial);
        bail!("cpio failed to build the initramfs");
    }
    let _ = fs::remove_dir_all(&stage);
    // Whole or not at all, for a guest booting at the same time.
    fs::rename(&partial, &image)?;
    Ok(image)
}

/// Whether KVM boots our kernel on this host. Probed once (a 10 s boot of `true`) and
/// remembered per host kernel: on some hosts `/dev/kvm` exists but guests hang.
fn kvm_works(kernel: &Kernel, initramfs: &Path) -> bool {
    if fs::File::open("/dev/kvm").is_err() {
        return false;
    }
    let host = run::probe("uname", ["-r"]).unwrap_or_default();
    let memo = paths::cache().join(format!("kvm-works-{host}"));
    if let Ok(answer) = fs::read_to_string(&memo) {
        return answer.trim() == "yes";
    }
    eprintln!("xtask vm: probing whether KVM works on this host (once, at most 10 s)");
    let out = paths::vm_out();
    let run_dir = out
        .join(".vm")
        .join(format!("kvm-probe-{}", std::process::id()));
    let works = fs::create_dir_all(&run_dir)
        .and_then(|()| fs::write(run_dir.join("run.sh"), "true\n"))
        .is_ok()
        && {
            let options = VmOptions {
                timeout: 10,
                memory: 512,
                cpus: 1,
                accel: Accel::Kvm,
                bin: None,
                usb_host: None,
            };
            let mut cmd = qemu_command(
                kernel,
                initramfs,
                &options,
                Accel::Kvm,
                &out,
                &run_dir,
                false,
            );
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            match cmd.spawn() {
                Ok(mut child) => {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                        thread::sleep(Duration::from_millis(50));
                    }
                    let _ = child.kill();
                    let _ = child.wait();
                    fs::read_to_string(run_dir.join("status")).is_ok_and(|s| s.trim() == "0")
                }
                Err(_) => false,
            }
        };
    let _ = fs::remove_dir_all(&run_dir);
    let _ = fs::write(&memo, if works { "yes\n" } else { "no\n" });
    eprintln!(
        "xtask vm: KVM {}",
        if works {
            "works"
        } else {
            "does not work here: using TCG"
        }
    );
    works
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usb_host_by_id_or_address() {
        let id = UsbHost::parse("0b95:772a").unwrap();
        assert_eq!(
            id.qemu_device(),
            "usb-host,vendorid=0x0b95,productid=0x772a"
        );
        assert_eq!(UsbHost::parse("0x0B95:0x772A").unwrap(), id);
        let at = UsbHost::parse("1.4").unwrap();
        assert_eq!(at.qemu_device(), "usb-host,hostbus=1,hostaddr=4");
        for bad in ["", "0b95", "zz:772a", "1.x", "1-4"] {
            assert!(UsbHost::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shell_quote_survives_quotes() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn guest_script_runs_the_command_last() {
        let mut kernel = Kernel::built(PathBuf::from("/tree"), String::new(), Arch::X86_64);
        let script = |kernel: &Kernel| {
            guest_script(
                &["echo".into(), "a'b".into()],
                Path::new("/bin/phytrace"),
                kernel,
                false,
            )
            .unwrap()
        };
        let plain = script(&kernel);
        assert!(plain.contains("export PHYTRACE_MODULES="));
        assert!(!plain.contains("PHYTRACE_BTF"));
        assert!(plain.trim_end().ends_with(r"'echo' 'a'\''b'"));
        kernel.btf_file = Some(PathBuf::from("/cache/vmlinux.btf"));
        assert!(script(&kernel).contains("export PHYTRACE_BTF='/cache/vmlinux.btf'\n"));
    }
}
