//! ADVERTISE (register 4) and LPA (register 5): our and the link partner's auto-negotiation
//! base pages, with the copper (not 1000BASE-X) meaning of the bits.

use super::{Bit, Field, RegisterSpec, selector};

/// `MII_ADVERTISE`. Bit 12 is `XNP` (`ADVERTISE_RESV` is an alias of it).
pub static ADVERTISE: RegisterSpec = ADVERTISE_LAYOUT;

/// The layout of `MII_ADVERTISE`, shared with `MDIO_AN_ADVERTISE`.
pub(super) const ADVERTISE_LAYOUT: RegisterSpec = RegisterSpec {
    num: 0x04,
    name: "ADVERTISE",
    bits: &[
        Bit {
            name: "10HALF",
            mask: 0x0020,
        },
        Bit {
            name: "10FULL",
            mask: 0x0040,
        },
        Bit {
            name: "100HALF",
            mask: 0x0080,
        },
        Bit {
            name: "100FULL",
            mask: 0x0100,
        },
        Bit {
            name: "100BASE4",
            mask: 0x0200,
        },
        Bit {
            name: "PAUSE_CAP",
            mask: 0x0400,
        },
        Bit {
            name: "PAUSE_ASYM",
            mask: 0x0800,
        },
        Bit {
            name: "XNP",
            mask: 0x1000,
        },
        Bit {
            name: "RFAULT",
            mask: 0x2000,
        },
        Bit {
            name: "LPACK",
            mask: 0x4000,
        },
        Bit {
            name: "NPAGE",
            mask: 0x8000,
        },
    ],
    fields: &[Field {
        name: "SLCT",
        mask: 0x001f,
        show: selector,
    }],
    reserved: 0x0000,
};

/// `MII_LPA`: `LPACK` is the partner's acknowledge, `RFAULT` its remote fault, `NPAGE` its next
/// page bit.
pub static LPA: RegisterSpec = LPA_LAYOUT;

/// The layout of `MII_LPA`, shared with `MDIO_AN_LPA`.
pub(super) const LPA_LAYOUT: RegisterSpec = RegisterSpec {
    num: 0x05,
    name: "LPA",
    bits: &[
        Bit {
            name: "10HALF",
            mask: 0x0020,
        },
        Bit {
            name: "10FULL",
            mask: 0x0040,
        },
        Bit {
            name: "100HALF",
            mask: 0x0080,
        },
        Bit {
            name: "100FULL",
            mask: 0x0100,
        },
        Bit {
            name: "100BASE4",
            mask: 0x0200,
        },
        Bit {
            name: "PAUSE_CAP",
            mask: 0x0400,
        },
        Bit {
            name: "PAUSE_ASYM",
            mask: 0x0800,
        },
        Bit {
            name: "RESV",
            mask: 0x1000,
        },
        Bit {
            name: "RFAULT",
            mask: 0x2000,
        },
        Bit {
            name: "LPACK",
            mask: 0x4000,
        },
        Bit {
            name: "NPAGE",
            mask: 0x8000,
        },
    ],
    fields: &[Field {
        name: "SLCT",
        mask: 0x001f,
        show: selector,
    }],
    reserved: 0x0000,
};
