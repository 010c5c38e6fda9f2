//! Where a register is: a Clause 22 register number, or a register of a Clause 45 MMD.

use std::fmt;

use super::{RegisterSpec, c45, mmd_short_name};

/// A register of a PHY; displays as `BMSR`, `R0x1f`, `pcs.STAT1` or `pcs.0x8000`. Clause 22
/// registers sort first, then Clause 45 ones by MMD and register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Register {
    /// A Clause 22 register, 0 to 31.
    C22(u16),
    /// Register `reg` of MMD `devad` (Clause 45).
    C45 {
        /// The MMD.
        devad: u8,
        /// The register in it.
        reg: u16,
    },
}

impl From<u16> for Register {
    /// The Clause 22 register `reg`.
    fn from(reg: u16) -> Self {
        Self::C22(reg)
    }
}

impl Register {
    /// The register an MDIO access names: Clause 45 when it has an MMD.
    pub fn of(devad: Option<u8>, reg: u16) -> Self {
        match devad {
            Some(devad) => Self::C45 { devad, reg },
            None => Self::C22(reg),
        }
    }

    /// Its layout, if it has a decoder.
    pub fn spec(self) -> Option<&'static RegisterSpec> {
        match self {
            Self::C22(reg) => super::spec(reg),
            Self::C45 { devad, reg } => c45::spec(devad, reg),
        }
    }

    /// Whether the standard leaves it to vendors (Clause 45 only).
    pub fn is_vendor(self) -> bool {
        match self {
            Self::C22(_) => false,
            Self::C45 { devad, reg } => c45::is_vendor(devad, reg),
        }
    }

    /// The MMD of a Clause 45 register.
    pub fn devad(self) -> Option<u8> {
        match self {
            Self::C22(_) => None,
            Self::C45 { devad, .. } => Some(devad),
        }
    }

    /// The register number (within its MMD for Clause 45).
    pub fn number(self) -> u16 {
        match self {
            Self::C22(reg) | Self::C45 { reg, .. } => reg,
        }
    }

    /// Its address in numbers: `0x01`, `3.0x0001`.
    pub fn numeric(self) -> String {
        match self {
            Self::C22(reg) => format!("{reg:#04x}"),
            Self::C45 { devad, reg } => format!("{devad}.{reg:#06x}"),
        }
    }

    /// Its name with its address where the name hides it: `BMSR`, `pcs.STAT1 (3.0x0001)`,
    /// `pcs.0x8000`.
    pub fn labelled(self) -> String {
        match (self, self.spec()) {
            (Self::C45 { .. }, Some(_)) => format!("{self} ({})", self.numeric()),
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for Register {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::C22(reg) => fmt::Display::fmt(&super::name(reg), f),
            Self::C45 { devad, reg } => {
                let mmd = mmd_short_name(devad).map_or_else(|| devad.to_string(), str::to_owned);
                let text = match self.spec() {
                    Some(spec) => format!("{mmd}.{}", spec.name),
                    None => format!("{mmd}.{reg:#06x}"),
                };
                f.pad(&text)
            }
        }
    }
}
