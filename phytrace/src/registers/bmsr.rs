//! BMSR (register 1): basic mode status. `LSTATUS` is latched low: the first read after a link
//! drop returns it cleared.

use super::{Bit, RegisterSpec};

/// `MII_BMSR`.
pub static BMSR: RegisterSpec = RegisterSpec {
    num: 0x01,
    name: "BMSR",
    bits: &[
        Bit {
            name: "ERCAP",
            mask: 0x0001,
        },
        Bit {
            name: "JCD",
            mask: 0x0002,
        },
        Bit {
            name: "LSTATUS",
            mask: 0x0004,
        },
        Bit {
            name: "ANEGCAPABLE",
            mask: 0x0008,
        },
        Bit {
            name: "RFAULT",
            mask: 0x0010,
        },
        Bit {
            name: "ANEGCOMPLETE",
            mask: 0x0020,
        },
        Bit {
            name: "ESTATEN",
            mask: 0x0100,
        },
        Bit {
            name: "100HALF2",
            mask: 0x0200,
        },
        Bit {
            name: "100FULL2",
            mask: 0x0400,
        },
        Bit {
            name: "10HALF",
            mask: 0x0800,
        },
        Bit {
            name: "10FULL",
            mask: 0x1000,
        },
        Bit {
            name: "100HALF",
            mask: 0x2000,
        },
        Bit {
            name: "100FULL",
            mask: 0x4000,
        },
        Bit {
            name: "100BASE4",
            mask: 0x8000,
        },
    ],
    fields: &[],
    reserved: 0x00c0,
};
