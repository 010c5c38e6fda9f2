//! BMCR (register 0): basic mode control.

use super::{Bit, RegisterSpec};

/// `MII_BMCR`.
pub static BMCR: RegisterSpec = RegisterSpec {
    num: 0x00,
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
            mask: 0x0200,
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
            mask: 0x8000,
        },
    ],
    fields: &[],
    reserved: 0x003f,
};
