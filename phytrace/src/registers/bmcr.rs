//! BMCR (register 0): basic mode control.

use super::{Bit, RegisterSpec};

/// `MII_BMCR`: the register's number.
pub const MII_BMCR: u16 = 0x00;
/// `BMCR_ANRESTART`: restart autonegotiation.
pub const BMCR_ANRESTART: u16 = 0x0200;
/// `BMCR_RESET`: software reset (which restarts autonegotiation too).
pub const BMCR_RESET: u16 = 0x8000;

/// `MII_BMCR`.
pub static BMCR: RegisterSpec = RegisterSpec {
    num: MII_BMCR,
    name: "BMCR",
    bits: &[
        Bit {
            name: "SPEED1000",
            mask: 0x0040,
        },
        Bit {
            name: "CTST",
            mask: 0x0080,
        },
        Bit {
            name: "FULLDPLX",
            mask: 0x0100,
        },
        Bit {
            name: "ANRESTART",
            mask: BMCR_ANRESTART,
        },
        Bit {
            name: "ISOLATE",
            mask: 0x0400,
        },
        Bit {
            name: "PDOWN",
            mask: 0x0800,
        },
        Bit {
            name: "ANENABLE",
            mask: 0x1000,
        },
        Bit {
            name: "SPEED100",
            mask: 0x2000,
        },
        Bit {
            name: "LOOPBACK",
            mask: 0x4000,
        },
        Bit {
            name: "RESET",
            mask: BMCR_RESET,
        },
    ],
    fields: &[],
    reserved: 0x003f,
};
