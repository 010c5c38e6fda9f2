//! CTRL1000 (9), STAT1000 (10) and ESTATUS (15): the 1000BASE-T registers.
//!
//! Bits without a `linux/mii.h` name use the IEEE 802.3 clause 40 meaning: `TEST` (test mode,
//! CTRL1000 15:13), `IDLE_ERR` (idle error count, STAT1000 7:0), `RESV` for reserved bits.

use super::{Bit, Field, RegisterSpec, dec_nonzero};

/// `MII_CTRL1000`: `1000FULL`/`1000HALF` are `ADVERTISE_1000*`, the others `CTL1000_*`.
pub static CTRL1000: RegisterSpec = RegisterSpec {
    num: 0x09,
    name: "CTRL1000",
    bits: &[
        Bit {
            name: "1000HALF",
            mask: 0x0100,
        },
        Bit {
            name: "1000FULL",
            mask: 0x0200,
        },
        Bit {
            name: "PREFER_MASTER",
            mask: 0x0400,
        },
        Bit {
            name: "AS_MASTER",
            mask: 0x0800,
        },
        Bit {
            name: "ENABLE_MASTER",
            mask: 0x1000,
        },
    ],
    fields: &[Field {
        name: "TEST",
        mask: 0xe000,
        show: dec_nonzero,
    }],
    reserved: 0x00ff,
};

/// `MII_STAT1000`: bits are `LPA_1000*`.
pub static STAT1000: RegisterSpec = RegisterSpec {
    num: 0x0a,
    name: "STAT1000",
    bits: &[
        Bit {
            name: "1000HALF",
            mask: 0x0400,
        },
        Bit {
            name: "1000FULL",
            mask: 0x0800,
        },
        Bit {
            name: "1000REMRXOK",
            mask: 0x1000,
        },
        Bit {
            name: "1000LOCALRXOK",
            mask: 0x2000,
        },
        Bit {
            name: "1000MSRES",
            mask: 0x4000,
        },
        Bit {
            name: "1000MSFAIL",
            mask: 0x8000,
        },
    ],
    fields: &[Field {
        name: "IDLE_ERR",
        mask: 0x00ff,
        show: dec_nonzero,
    }],
    reserved: 0x0300,
};

/// `MII_ESTATUS`.
pub static ESTATUS: RegisterSpec = RegisterSpec {
    num: 0x0f,
    name: "ESTATUS",
    bits: &[
        Bit {
            name: "1000_THALF",
            mask: 0x1000,
        },
        Bit {
            name: "1000_TFULL",
            mask: 0x2000,
        },
        Bit {
            name: "1000_XHALF",
            mask: 0x4000,
        },
        Bit {
            name: "1000_XFULL",
            mask: 0x8000,
        },
    ],
    fields: &[],
    reserved: 0x0fff,
};
