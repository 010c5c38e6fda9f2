//! phytrace's eBPF programs.
//!
//! - `callback_enter` / `callback_exit`: kprobe + kretprobe attached to every
//!   `kernel::net::phy::Adapter<T>::*_callback` of a Rust PHY driver. Each callback's first
//!   argument is the `struct phy_device *`. Open callbacks are kept on a per-thread stack so that
//!   the exit knows its PHY and entry time, and MDIO accesses know which callback caused them.
//! - `mdio_read_enter` / `mdio_read_exit`, `mdio_write_enter` / `mdio_write_exit`: kprobe +
//!   kretprobe on `__mdiobus_read` / `__mdiobus_write`, which every phylib register access
//!   (including `phy_modify`) goes through.
//! - `selftest_enter` / `selftest_exit`: `phytrace doctor` attaches these to a kernel function
//!   that it triggers itself, to prove the whole probe → ring buffer → userspace path works.
//!
//! Struct offsets come from userspace (`OFFSETS`), read from vmlinux BTF: no CO-RE here.
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]
#![cfg_attr(target_arch = "bpf", feature(asm_experimental_arch))]

#[cfg(target_arch = "bpf")]
mod probes;

/// On the host this crate only needs to type-check (for `cargo clippy --workspace`).
#[cfg(not(target_arch = "bpf"))]
fn main() {}

#[cfg(target_arch = "bpf")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // SAFETY: eBPF programs cannot panic; the verifier rejects any path that reaches here.
    unsafe { core::hint::unreachable_unchecked() }
}

#[cfg(target_arch = "bpf")]
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
