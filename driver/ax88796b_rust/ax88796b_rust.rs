// SPDX-License-Identifier: GPL-2.0

//! Asix PHYs (AX88772A, AX88772C, AX88796B), Rust driver.
//!
//! Out-of-tree build, for phytrace, of FUJITA Tomonori's Rust Asix PHY driver
//! (`drivers/net/phy/ax88796b_rust.rs`, merged in Linux 6.8), which is the reference this
//! file follows. Both behave as the C driver `drivers/net/phy/ax88796b.c`: same driver names,
//! IDs, flags and callbacks, so the C and the Rust module are loaded one at a time. See
//! `driver/README.md` for what differs from upstream.

use kernel::{
    c_str,
    net::phy::{self, reg::C22, DeviceId, Driver},
    prelude::*,
    uapi,
};

kernel::module_phy_driver! {
    drivers: [PhyAX88772A, PhyAX88772C, PhyAX88796B],
    device_table: [
        DeviceId::new_with_driver::<PhyAX88772A>(),
        DeviceId::new_with_driver::<PhyAX88772C>(),
        DeviceId::new_with_driver::<PhyAX88796B>(),
    ],
    name: "ax88796b_rust",
    description: "Asix PHY driver (Rust)",
    license: "GPL",
}

const BMCR_SPEED100: u16 = uapi::BMCR_SPEED100 as u16;
const BMCR_FULLDPLX: u16 = uapi::BMCR_FULLDPLX as u16;

/// Soft reset through `BMCR_RESET`, polling until the bit clears.
///
/// These PHYs only reset when the bit toggles: clear BMCR first, or a reset bit left set (as on
/// the AX88796B of the Individual Computers X-Surf 100) makes the generic reset time out.
fn asix_soft_reset(dev: &mut phy::Device) -> Result {
    dev.write(C22::BMCR, 0)?;
    dev.genphy_soft_reset()
}

/// Speed and duplex as forced or resolved in BMCR.
fn set_mode_from_bmcr(dev: &mut phy::Device, bmcr: u16) {
    dev.set_speed(if bmcr & BMCR_SPEED100 != 0 {
        uapi::SPEED_100
    } else {
        uapi::SPEED_10
    });
    dev.set_duplex(if bmcr & BMCR_FULLDPLX != 0 {
        phy::DuplexMode::Full
    } else {
        phy::DuplexMode::Half
    });
}

struct PhyAX88772A;

#[vtable]
impl Driver for PhyAX88772A {
    const FLAGS: u32 = phy::flags::IS_INTERNAL;
    const NAME: &'static CStr = c_str!("Asix Electronics AX88772A");
    const PHY_DEVICE_ID: DeviceId = DeviceId::new_with_exact_mask(0x003b1861);

    // With some old switches (NETGEAR EN 108TP) the AX88772A reports the link up with autoneg
    // done while MII_LPA reads 0; the AX88772C does not. Resolving from an empty LPA gives
    // nothing, so start from BMCR and let the LPA override it when it has something.
    fn read_status(dev: &mut phy::Device) -> Result<u16> {
        dev.genphy_update_link()?;
        if !dev.is_link_up() {
            return Ok(0);
        }

        let bmcr = dev.read(C22::BMCR)?;
        set_mode_from_bmcr(dev, bmcr);

        dev.genphy_read_lpa()?;
        if dev.is_autoneg_enabled() && dev.is_autoneg_completed() {
            dev.resolve_aneg_linkmode();
        }
        Ok(0)
    }

    fn suspend(dev: &mut phy::Device) -> Result {
        dev.genphy_suspend()
    }

    fn resume(dev: &mut phy::Device) -> Result {
        dev.genphy_resume()
    }

    fn soft_reset(dev: &mut phy::Device) -> Result {
        asix_soft_reset(dev)
    }

    // On losing the link, reset the PHY and restart autoneg: otherwise MII_LPA keeps stale
    // values with some link partners. Errors are not reported from this callback.
    fn link_change_notify(dev: &mut phy::Device) {
        if dev.state() == phy::DeviceState::NoLink {
            let _ = dev.init_hw();
            let _ = dev.start_aneg();
        }
    }
}

struct PhyAX88772C;

#[vtable]
impl Driver for PhyAX88772C {
    const FLAGS: u32 = phy::flags::IS_INTERNAL;
    const NAME: &'static CStr = c_str!("Asix Electronics AX88772C");
    const PHY_DEVICE_ID: DeviceId = DeviceId::new_with_exact_mask(0x003b1881);

    fn suspend(dev: &mut phy::Device) -> Result {
        dev.genphy_suspend()
    }

    fn resume(dev: &mut phy::Device) -> Result {
        dev.genphy_resume()
    }

    fn soft_reset(dev: &mut phy::Device) -> Result {
        asix_soft_reset(dev)
    }
}

struct PhyAX88796B;

#[vtable]
impl Driver for PhyAX88796B {
    const NAME: &'static CStr = c_str!("Asix Electronics AX88796B");
    const PHY_DEVICE_ID: DeviceId = DeviceId::new_with_model_mask(0x003b1841);

    fn soft_reset(dev: &mut phy::Device) -> Result {
        asix_soft_reset(dev)
    }
}
