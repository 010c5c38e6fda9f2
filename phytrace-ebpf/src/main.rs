//! phytrace's eBPF programs: one object, its programs grouped by family in `probes`.
//!
//! - `probes::callbacks`: a Rust PHY driver's callbacks, whose first argument is the
//!   `struct phy_device *`. By symbol, `callback_enter` / `callback_exit` (kprobe + kretprobe
//!   on each `kernel::net::phy::Adapter<T>::*_callback`); at phylib's call sites of
//!   `phy_driver` operations, `call_site_enter` (kprobe on the call), `call_site_exit` (kprobe
//!   on the instruction it returns to) and `call_site_tail_exit` (kretprobe on a function that
//!   tail-calls the operation). Open callbacks are kept on a per-thread stack, so that a
//!   return knows its PHY and entry time, and an MDIO access the callback that made it.
//! - `probes::mdio`: the MDIO accessors `__mdiobus_read`, `__mdiobus_write`,
//!   `__mdiobus_c45_read` and `__mdiobus_c45_write`, which every phylib register access goes
//!   through. `mdio_read_enter` / `mdio_read_exit` and the same for `mdio_write`,
//!   `mdio_c45_read` and `mdio_c45_write`: fentry + fexit (BPF trampolines). Their twins
//!   `mdio_*_enter_kprobe` / `mdio_*_exit_kprobe`: kprobe + kretprobe, where the kernel has no
//!   trampolines (or when asked), and at the bus-op calls in the accessors' inlined copies.
//! - `probes::identity`: `device_changed` (kretprobe on the functions that remove or rebind a
//!   PHY or bus) makes the identities sent stale, so that they are sent again.
//! - `probes::modules`: `module_load` / `module_free` (raw tracepoints), a module going live or
//!   away.
//! - `probes::mac`: the MAC side. `mac_link_up` / `mac_link_down` (kprobes on asix's MAC ops,
//!   by name); `mac_site_link_up` / `mac_site_link_down` (kprobes at phylink's call sites of
//!   MAC ops); `carrier_on` / `carrier_off` (kprobes on `netif_carrier_on/off`);
//!   `phylink_resolve_enter` / `phylink_resolve_exit` (kprobe + kretprobe).
//! - `probes::selftest`: `selftest_enter` / `selftest_exit` (kprobe + kretprobe), which
//!   `phytrace doctor` attaches to a kernel function it triggers itself, to prove the whole
//!   probe → ring buffer → userspace path works.
//! - `probes::kernel_read`: `kernel_read` (kprobe on the `getppid` system call, which phytrace
//!   makes itself) copies the kernel memory phytrace asks for into a map: the kernel's code,
//!   read where `/proc/kcore` is refused.
//!
//! The shared modules: `kernel` (kernel memory, at the struct offsets of `OFFSETS`), `phy` (a
//! PHY's identity and status as read), `identity` (sending those once per CPU and epoch),
//! `ring` (the event stream and its loss counters), `thread` and `task_storage` (per-thread
//! state), `context` (a probe's cookie, registers and stack).
//!
//! The loader sets the globals `OFFSETS` (read from vmlinux BTF: no CO-RE here),
//! `PHY_DEVICE_TYPE`, `CALLBACK_DEPTH` and `SELFTEST_TGID` before load, and completes the
//! `bpf_rdonly_cast` kfunc calls.
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
