//! A PHY as the programs read it: its identity and status, out of one read of its
//! `struct phy_device` into a per-CPU buffer, or its status alone through direct loads.

use aya_ebpf::{macros::map, maps::PerCpuArray};
use phytrace_common::{KernelOffsets, RawEvent};

use super::{
    identity::send_phy_identity,
    kernel::{kernel_struct, phy_device_type, read_at},
};

/// Bytes of a `phy_device` read with one helper call: from its lowest field phytrace reads
/// (rounded down to 8) on; the loader checks that the highest one ends within.
const VIEW: usize = 320;

/// Slots of [`VIEWS`]: one per kind of program, since a MAC-side probe may interrupt an MDIO
/// one on the same CPU.
pub(super) const VIEW_MDIO: u32 = 0;
pub(super) const VIEW_CALLBACK: u32 = 1;
pub(super) const VIEW_MAC: u32 = 2;

/// Per-CPU buffers a [`PhyView`] is read into (too big for the 512-byte BPF stack).
#[map]
static VIEWS: PerCpuArray<[u64; VIEW / 8]> = PerCpuArray::with_max_entries(3, 0);

/// The field at `field` of a struct read from `start` on into the `len` bytes at `base`: a
/// naturally aligned field of `size` bytes inside the buffer (clamped, for the verifier).
fn field_at(base: *const u8, len: usize, start: u32, field: u32, size: usize) -> *const u8 {
    let at = field.wrapping_sub(start) as usize;
    let at = if at > len - size { len - size } else { at };
    // SAFETY: `at + size` is within the buffer.
    unsafe { base.add(at) }
}

/// The lowest of `fields`, rounded down to 8: where a read of them starts.
fn window_start(fields: &[u32]) -> u32 {
    let mut start = u32::MAX;
    for &field in fields {
        start = start.min(field);
    }
    start & !7
}

/// What changes of a PHY from one event to the next: its state and its link.
#[derive(Clone, Copy)]
pub(super) struct PhyStatus {
    state: u32,
    speed: i32,
    duplex: u32,
    link: u8,
}

impl PhyStatus {
    pub(super) const ZERO: Self = Self {
        state: 0,
        speed: 0,
        duplex: 0,
        link: 0,
    };

    fn fields(off: &KernelOffsets) -> [u32; 4] {
        [
            off.phy_state,
            off.phy_speed,
            off.phy_duplex,
            off.phy_link_byte,
        ]
    }

    /// Reads `phydev`'s status (zeroes where the reads fault): with direct loads, or with
    /// helper calls where the kernel has no BTF to check them against.
    pub(super) fn read(phydev: u64, off: &KernelOffsets) -> Self {
        match phy_device_type() {
            Some(r#type) => Self::load(phydev, r#type, off),
            None => Self {
                state: read_at(phydev, off.phy_state),
                speed: read_at(phydev, off.phy_speed),
                duplex: read_at(phydev, off.phy_duplex),
                link: (read_at::<u8>(phydev, off.phy_link_byte) >> (off.phy_link_bit & 7)) & 1,
            },
        }
    }

    /// Reads `phydev`'s status with direct loads through its type `r#type`.
    fn load(phydev: u64, r#type: u32, off: &KernelOffsets) -> Self {
        let device = kernel_struct(phydev, r#type);
        // SAFETY: `kernel_struct` makes the loads ones the kernel checks: each is at a member
        // of `struct phy_device` of its size (the verifier checks that against BTF), and one
        // that faults reads zero.
        unsafe {
            let at = |field: u32| device.add(field as usize);
            Self {
                state: core::ptr::read_volatile(at(off.phy_state).cast::<u32>()),
                speed: core::ptr::read_volatile(at(off.phy_speed).cast::<i32>()),
                duplex: core::ptr::read_volatile(at(off.phy_duplex).cast::<u32>()),
                link: (core::ptr::read_volatile(at(off.phy_link_byte)) >> (off.phy_link_bit & 7))
                    & 1,
            }
        }
    }

    /// The status out of `len` bytes at `base`, read from `start` on.
    fn pick(base: *const u8, len: usize, start: u32, off: &KernelOffsets) -> Self {
        let at = |field, size| field_at(base, len, start, field, size);
        // SAFETY: each read is within the buffer, at an offset aligned for its type (the
        // buffer is 8-aligned, `start` a multiple of 8, the fields naturally aligned).
        unsafe {
            Self {
                state: *at(off.phy_state, 4).cast::<u32>(),
                speed: *at(off.phy_speed, 4).cast::<i32>(),
                duplex: *at(off.phy_duplex, 4).cast::<u32>(),
                link: (*at(off.phy_link_byte, 1) >> (off.phy_link_bit & 7)) & 1,
            }
        }
    }

    /// Fills the state (as `state_after`) and the link into `event`.
    pub(super) fn fill(&self, event: &mut RawEvent) {
        event.state_after = self.state as u8;
        event.speed = self.speed;
        event.duplex = self.duplex as u8;
        event.link = self.link;
    }
}

/// `MDIO_DEVICE_FLAG_PHY` from `include/linux/mdio.h`.
const MDIO_DEVICE_FLAG_PHY: u32 = 1;

/// What phytrace reads of a `phy_device`: its identity and its status.
pub(super) struct PhyView {
    bus: u64,
    drv: u64,
    phy_id: u32,
    addr: u32,
    flags: u32,
    status: PhyStatus,
}

impl PhyView {
    /// Reads `phydev` into the buffer `slot` of this CPU and picks the fields out.
    #[inline(always)]
    pub(super) fn read(phydev: u64, off: &KernelOffsets, slot: u32) -> Option<Self> {
        let status = PhyStatus::fields(off);
        let start = window_start(&[
            off.phy_bus,
            off.phy_addr,
            off.mdio_flags,
            off.phy_drv,
            off.phy_id,
            status[0],
            status[1],
            status[2],
            status[3],
        ]);
        let buffer = VIEWS.get_ptr_mut(slot)?;
        // SAFETY: the helper writes at most the buffer's size from kernel memory it checks
        // (zeroes on a faulting read).
        unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_kernel(
                buffer.cast(),
                VIEW as u32,
                (phydev + start as u64) as *const core::ffi::c_void,
            )
        };
        let base = buffer.cast::<u8>();
        let at = |field, size| field_at(base, VIEW, start, field, size);
        // SAFETY: as in `PhyStatus::pick`.
        unsafe {
            Some(Self {
                bus: *at(off.phy_bus, 8).cast::<u64>(),
                drv: *at(off.phy_drv, 8).cast::<u64>(),
                phy_id: *at(off.phy_id, 4).cast::<u32>(),
                addr: *at(off.phy_addr, 4).cast::<u32>(),
                flags: *at(off.mdio_flags, 4).cast::<u32>(),
                status: PhyStatus::pick(base, VIEW, start, off),
            })
        }
    }

    /// The `phy_driver` bound to the PHY (0: none).
    pub(super) fn driver(&self) -> u64 {
        self.drv
    }

    /// Whether the `mdio_device` read is a PHY.
    pub(super) fn is_phy(&self) -> bool {
        self.flags & MDIO_DEVICE_FLAG_PHY != 0
    }

    /// Sends the identity of the PHY at `phydev` unless this CPU already sent it as it is now;
    /// false if there was no room for it.
    #[inline(always)]
    pub(super) fn name(&self, phydev: u64) -> bool {
        send_phy_identity(
            phydev,
            self.bus,
            self.drv,
            self.phy_id as u64,
            self.addr as u64,
        ) != 0
    }

    /// Fills the PHY's status into `event`.
    pub(super) fn fill(&self, event: &mut RawEvent) {
        self.status.fill(event);
    }
}

/// Reads `phydev` (into buffer `slot`) and names it if needed.
#[inline(always)]
pub(super) fn view_and_name(off: &KernelOffsets, phydev: u64, slot: u32) -> Option<PhyView> {
    let view = PhyView::read(phydev, off, slot)?;
    let _ = view.name(phydev);
    Some(view)
}
