//! PHY XS (MMD 4): control and status 1 and 2, speed ability and the XGXS lane state.

use super::common::{device_present, speed_select};
use crate::registers::{Bit, Field, RegisterSpec};

/// `MDIO_CTRL1` of the PHY XS.
pub static CTRL1: RegisterSpec = RegisterSpec {
    num: 0,
    name: "CTRL1",
    bits: &[
        Bit::new("SPEED1000", 0x0040),
        Bit::new("LPOWER", 0x0800),
        Bit::new("SPEED100", 0x2000),
        Bit::new("LOOPBACK", 0x4000),
        Bit::new("RESET", 0x8000),
    ],
    fields: &[Field::new("SPEEDSEL", 0x003c, speed_select)],
    reserved: 0x1783,
};

/// `MDIO_STAT1` of the PHY XS: `LSTATUS` is the transmit link (latched low).
pub static STAT1: RegisterSpec = RegisterSpec {
    num: 1,
    name: "STAT1",
    bits: &[
        Bit::new("LPOWERABLE", 0x0002),
        Bit::new("LSTATUS", 0x0004),
        Bit::new("FAULT", 0x0080),
    ],
    fields: &[],
    reserved: 0xff79,
};

/// `MDIO_SPEED` of the PHY XS.
pub static SPEED: RegisterSpec = RegisterSpec {
    num: 4,
    name: "SPEED",
    bits: &[Bit::new("10G", 0x0001)],
    fields: &[],
    reserved: 0xfffe,
};

/// `MDIO_STAT2` of the PHY XS: faults, device present.
pub static STAT2: RegisterSpec = RegisterSpec {
    num: 8,
    name: "STAT2",
    bits: &[Bit::new("RXFAULT", 0x0400), Bit::new("TXFAULT", 0x0800)],
    fields: &[Field::new("DEVPRST", 0xc000, device_present)],
    reserved: 0x33ff,
};

/// `MDIO_PHYXS_LNSTAT`: `MDIO_PHYXS_LNSTAT_*`, lane sync and alignment.
pub static LNSTAT: RegisterSpec = RegisterSpec {
    num: 24,
    name: "LNSTAT",
    bits: &[
        Bit::new("SYNC0", 0x0001),
        Bit::new("SYNC1", 0x0002),
        Bit::new("SYNC2", 0x0004),
        Bit::new("SYNC3", 0x0008),
        Bit::new("ALIGN", 0x1000),
    ],
    fields: &[],
    reserved: 0xeff0,
};
