//! The device at an MDIO address: looked up in its bus's device table and named the first
//! time, then kept per CPU, so that an access to a known PHY reads only its status.

use aya_ebpf::{macros::map, maps::PerCpuArray};
use phytrace_common::KernelOffsets;

use crate::probes::{
    identity::{SENT_SLOTS, epoch, name_bus, sent_slot},
    kernel::{offsets, read_at},
    phy::{PhyStatus, PhyView, VIEW_MDIO},
};

/// The device at an MDIO address, as this CPU last found and named it.
#[derive(Clone, Copy)]
struct KnownDevice {
    /// The bus (a plain number); 0: the slot is empty.
    bus: u64,
    /// The `struct phy_device *` at the address; 0: the device there is not a PHY.
    phydev: u64,
    /// The [`epoch`] when it was found: any other, and it is looked up again.
    epoch: u64,
    addr: u32,
    _pad: u32,
}

/// The devices MDIO accesses went to, per CPU, direct-mapped by bus and address: an access
/// to a known device reads only its status, not its identity and the bus's device table.
#[map]
static DEVICES: PerCpuArray<KnownDevice> = PerCpuArray::with_max_entries(SENT_SLOTS, 0);

/// This CPU's slot in [`DEVICES`] for `addr` of `bus`.
fn device_slot(bus: u64, addr: u32) -> Option<*mut KnownDevice> {
    DEVICES.get_ptr_mut((sent_slot(bus) ^ addr) & (SENT_SLOTS - 1))
}

/// The PHY at `addr` of `bus` (a plain number), named, with its status now put in `status`;
/// 0 if there is none (its bus is named then). A PHY this CPU knows has only its status read;
/// one it does not is looked up by [`mdio_device_lookup`].
#[inline(always)]
pub(super) fn mdio_phy(off: &KernelOffsets, bus: u64, addr: u32, status: &mut PhyStatus) -> u64 {
    // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
    let known = device_slot(bus, addr).map(|slot| unsafe { &*slot });
    let phydev = match known {
        Some(known) if known.bus == bus && known.addr == addr && known.epoch == epoch() => {
            known.phydev
        }
        _ => mdio_device_lookup(bus, addr as u64),
    };
    if phydev != 0 {
        *status = PhyStatus::read(phydev, off);
    }
    phydev
}

/// The device at `addr` of `bus` (plain numbers) looked up and named (a PHY's identity, else
/// the bus's), and kept in this CPU's [`DEVICES`] slot once named: its `struct phy_device *`,
/// or 0 if no PHY is there.
///
/// A global function: the verifier checks it once per program, whatever the caller's state,
/// instead of once for each path of the caller that reaches it.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn mdio_device_lookup(bus: u64, addr: u64) -> u64 {
    let off = offsets();
    let addr = (addr & 31) as u32;
    let mdiodev: u64 = read_at(bus + off.bus_mdio_map as u64 + addr as u64 * 8, 0);
    let view = if mdiodev != 0 {
        PhyView::read(mdiodev, off, VIEW_MDIO).filter(PhyView::is_phy)
    } else {
        None
    };
    let (phydev, named) = match &view {
        Some(view) => (mdiodev, view.name(mdiodev)),
        None => (0, name_bus(off, bus)),
    };
    // No device there is not kept: one may be registered without a change of epoch.
    if let (Some(slot), true, true) = (device_slot(bus, addr), named, mdiodev != 0) {
        let known = KnownDevice {
            bus,
            phydev,
            epoch: epoch(),
            addr,
            _pad: 0,
        };
        // SAFETY: this CPU's slot of a per-CPU array; nothing else writes it meanwhile.
        unsafe { *slot = known };
    }
    phydev
}
