//! PHYSID1/PHYSID2 (registers 2, 3): the PHY identifier, and the names of known PHYs.

use std::fmt;

use super::{Field, RegisterSpec, hex};

/// `MII_PHYSID1`: OUI bits 3..18.
pub static PHYSID1: RegisterSpec = RegisterSpec {
    num: 0x02,
    name: "PHYSID1",
    bits: &[],
    fields: &[Field {
        name: "OUI_HI",
        mask: 0xffff,
        show: hex,
    }],
    reserved: 0x0000,
};

/// `MII_PHYSID2`: OUI bits 19..24, model number, revision.
pub static PHYSID2: RegisterSpec = RegisterSpec {
    num: 0x03,
    name: "PHYSID2",
    bits: &[],
    fields: &[
        Field {
            name: "REV",
            mask: 0x000f,
            show: hex,
        },
        Field {
            name: "MODEL",
            mask: 0x03f0,
            show: hex,
        },
        Field {
            name: "OUI_LO",
            mask: 0xfc00,
            show: hex,
        },
    ],
    reserved: 0x0000,
};

/// A 32-bit PHY identifier (`PHYSID1 << 16 | PHYSID2`, as `phy_device.phy_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhyId(pub u32);

impl PhyId {
    /// Builds the identifier from the two register values.
    pub fn from_registers(physid1: u16, physid2: u16) -> Self {
        Self(u32::from(physid1) << 16 | u32::from(physid2))
    }

    /// The 22 OUI bits the identifier carries, as phylib prints them (`0x000ec6` for Asix).
    pub fn oui(self) -> u32 {
        self.0 >> 10
    }

    /// Manufacturer's model number (6 bits).
    pub fn model(self) -> u8 {
        ((self.0 >> 4) & 0x3f) as u8
    }

    /// Revision number (4 bits).
    pub fn revision(self) -> u8 {
        (self.0 & 0xf) as u8
    }

    /// The PHY's name if it is one phytrace knows (the Asix PHYs of the traced driver).
    pub fn known_name(self) -> Option<&'static str> {
        match self.0 {
            0x003b_1861 => Some("AX88772A"),
            0x003b_1881 => Some("AX88772C"),
            0x003b_1841 => Some("AX88796B"),
            _ => None,
        }
    }
}

impl fmt::Display for PhyId {
    /// `0x003b1861 (OUI 0x000ec6 model 0x06 rev 1, AX88772A)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#010x} (OUI {:#08x} model {:#04x} rev {}",
            self.0,
            self.oui(),
            self.model(),
            self.revision()
        )?;
        match self.known_name() {
            Some(name) => write!(f, ", {name})"),
            None => write!(f, ")"),
        }
    }
}
