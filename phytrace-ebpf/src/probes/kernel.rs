//! Kernel memory as the programs read it: struct offsets set by the loader from vmlinux BTF
//! (no CO-RE), reads through the checked helper, and typed views through `bpf_rdonly_cast`
//! where the kernel has BTF of its own.

use aya_ebpf::helpers::bpf_probe_read_kernel;
use phytrace_common::KernelOffsets;

/// Struct offsets, overridden by the loader from vmlinux BTF.
#[unsafe(no_mangle)]
static OFFSETS: KernelOffsets = KernelOffsets {
    phy_bus: 0,
    phy_addr: 0,
    phy_id: 0,
    phy_drv: 0,
    phy_state: 0,
    phy_speed: 0,
    phy_duplex: 0,
    phy_link_byte: 0,
    phy_link_bit: 0,
    drv_name: 0,
    bus_id: 0,
    bus_mdio_map: 0,
    mdio_flags: 0,
    module_name: 0,
    netdev_name: 0,
    netdev_phydev: 0,
};

/// BTF id of `struct phy_device` in the kernel's BTF, set by the loader; 0 where the kernel
/// has no BTF of its own (the types then come from a file, `--btf`).
#[unsafe(no_mangle)]
static PHY_DEVICE_TYPE: u32 = 0;

/// The BTF id of `struct phy_device`, or `None` where the kernel has no BTF: then the verifier
/// has nothing to check typed loads and task-local storage against, and the programs read
/// with helpers and keep thread state by thread id. A constant to the verifier (read-only
/// data), which verifies only the branch taken.
pub(super) fn phy_device_type() -> Option<u32> {
    // SAFETY: as in `offsets`.
    let id = unsafe { core::ptr::read_volatile(&PHY_DEVICE_TYPE) };
    (id != 0).then_some(id)
}

/// The struct offsets of the running kernel.
pub(super) fn offsets() -> &'static KernelOffsets {
    // SAFETY: `OFFSETS` is a plain global the loader rewrites before load; hiding the pointer
    // from the optimizer keeps it from folding the initial zeros into the code, while each
    // field is still read where it is used (no copy of the whole struct on the stack).
    unsafe { &*core::hint::black_box(&raw const OFFSETS) }
}

/// `bpf_rdonly_cast(address, type)`: `address` as a pointer to the kernel struct of BTF id
/// `type` (a constant), through which loads compile to checked direct loads instead of helper
/// calls. The call is a kfunc call the loader completes with the kfunc's BTF id
/// (`phytrace_common::KFUNC_CALL_PLACEHOLDER`); the verifier then replaces it by a move. Only
/// where [`phy_device_type`] is known.
pub(super) fn kernel_struct(address: u64, r#type: u32) -> *const u8 {
    let cast: u64;
    // SAFETY: the instruction is a call with the BPF calling convention: arguments in r1 and
    // r2, the result in r0, r1–r5 clobbered; it touches no memory of this program.
    unsafe {
        core::arch::asm!(
            ".quad {call}",
            call = const phytrace_common::KFUNC_CALL_PLACEHOLDER,
            inout("r1") address => _,
            inout("r2") r#type as u64 => _,
            lateout("r0") cast,
            lateout("r3") _,
            lateout("r4") _,
            lateout("r5") _,
            options(nostack, pure, nomem),
        )
    };
    cast as *const u8
}

/// Reads a `T` at `base + offset` in kernel memory, or zero if the read faults.
pub(super) fn read_at<T: Copy + Default>(base: u64, offset: u32) -> T {
    // SAFETY: `bpf_probe_read_kernel` checks the address and fails cleanly on a bad pointer.
    unsafe { bpf_probe_read_kernel((base + offset as u64) as *const T) }.unwrap_or_default()
}

/// `value` as a plain number to the verifier (a trampoline's pointer arguments are typed
/// pointers, on which it refuses arithmetic such as a hash).
pub(super) fn untyped(value: u64) -> u64 {
    read_at(&raw const value as u64, 0)
}
