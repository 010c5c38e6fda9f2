//! The architectures phytrace is built, tested and shipped for, and what differs between them:
//! kernel `ARCH`, boot image, QEMU, serial console and Rust target.

use std::fmt;

/// A machine architecture: the host's (x86_64) or a board's (aarch64).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arch {
    /// x86_64: the development host and the default test guest.
    #[default]
    #[value(name = "x86_64", alias = "x86-64", alias = "amd64")]
    X86_64,
    /// aarch64 (arm64): the boards, tested in a QEMU `virt` guest.
    #[value(name = "aarch64", alias = "arm64")]
    Aarch64,
}

impl Arch {
    /// Every architecture, host first.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The Rust/GNU name (`x86_64`, `aarch64`), as in file names.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The kernel's `ARCH=` (`x86`, `arm64`).
    pub fn kernel_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The make target of the boot image and its path in the built tree.
    pub fn boot_image(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("bzImage", "arch/x86/boot/bzImage"),
            Arch::Aarch64 => ("Image", "arch/arm64/boot/Image"),
        }
    }

    /// The architecture's part of the kernel config fragment, applied after
    /// `kernel/phytrace.config` (none for x86_64, whose options the common part names).
    pub fn fragment_part(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 => None,
            Arch::Aarch64 => Some("kernel/phytrace-arm64.config"),
        }
    }

    /// The static (musl) Rust target of the shipped binary.
    pub fn musl_target(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-musl",
            Arch::Aarch64 => "aarch64-unknown-linux-musl",
        }
    }

    /// Debian's name (`amd64`, `arm64`), as in package files and control fields.
    pub fn debian_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The QEMU system emulator.
    pub fn qemu(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Aarch64 => "qemu-system-aarch64",
        }
    }

    /// The guest's serial console device.
    pub fn console(self) -> &'static str {
        match self {
            Arch::X86_64 => "ttyS0",
            Arch::Aarch64 => "ttyAMA0",
        }
    }

    /// The architecture of the machine xtask runs on, if it is one of ours.
    pub fn host() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum as _;

    #[test]
    fn names_parse_back() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_str(arch.name(), false), Ok(arch));
        }
        assert_eq!(Arch::from_str("arm64", false), Ok(Arch::Aarch64));
    }

    #[test]
    fn targets_name_the_arch() {
        for arch in Arch::ALL {
            assert!(arch.musl_target().starts_with(arch.name()));
            assert!(arch.qemu().ends_with(arch.name()));
        }
    }
}
