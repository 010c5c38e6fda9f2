//! EXPANSION (register 6): auto-negotiation expansion.

use super::{Bit, RegisterSpec};

/// `MII_EXPANSION`.
pub static EXPANSION: RegisterSpec = RegisterSpec {
    num: 0x06,
    name: "EXPANSION",
    bits: &[
        Bit {
            name: "NWAY",
            mask: 0x0001,
        },
        Bit {
            name: "LCWP",
            mask: 0x0002,
        },
        Bit {
            name: "ENABLENPAGE",
            mask: 0x0004,
        },
        Bit {
            name: "NPCAPABLE",
            mask: 0x0008,
        },
        Bit {
            name: "MFAULTS",
            mask: 0x0010,
        },
    ],
    fields: &[],
    reserved: 0xffe0,
};
