//! Carrier changes of every network device (`netif_carrier_on/off`), with the device's name and
//! its PHY.

use aya_ebpf::{helpers::bpf_probe_read_kernel_str_bytes, macros::kprobe, programs::ProbeContext};
use phytrace_common::RawKind;

use super::{fill_mac_phy, mac_phy};
use crate::probes::{
    kernel::{offsets, read_at},
    ring::reserve_named,
};

/// `netif_carrier_on/off(netdev)`: reports the change of `kind`.
#[inline(always)]
fn carrier(ctx: &ProbeContext, kind: RawKind) -> u32 {
    let Some(netdev) = ctx.arg::<u64>(0) else {
        return 0;
    };
    let off = offsets();
    let phy = mac_phy(off, read_at(netdev, off.netdev_phydev));
    if let Some(mut entry) = reserve_named(kind) {
        // SAFETY: `reserve_named` initialised the entry.
        let record = unsafe { entry.assume_init_mut() };
        fill_mac_phy(&mut record.event, phy);
        // SAFETY: `net_device.name` is an IFNAMSIZ array inside the struct; the helper bounds
        // the copy and fails cleanly on a bad pointer.
        let _ = unsafe {
            bpf_probe_read_kernel_str_bytes(
                (netdev + off.netdev_name as u64) as *const u8,
                &mut record.name[..16],
            )
        };
        entry.submit(0);
    }
    0
}

#[kprobe]
pub fn carrier_on(ctx: ProbeContext) -> u32 {
    carrier(&ctx, RawKind::CarrierOn)
}

#[kprobe]
pub fn carrier_off(ctx: ProbeContext) -> u32 {
    carrier(&ctx, RawKind::CarrierOff)
}
