//! Decoders for the registers phylib touches: Clause 22 ones, one file per register family,
//! and Clause 45 ones per MMD ([`c45`]).
//!
//! Bit and field names are those of `include/uapi/linux/mii.h` and `linux/mdio.h` without the
//! register prefix (`BMCR_ANENABLE` is shown as `ANENABLE`). A [`RegisterSpec`] describes the
//! layout of one register; a [`Register`] says where one is (a Clause 22 number, or an MMD and a
//! register); [`decode`] names the bits of a value and [`changes`] lists what differs between
//! two successive values. The MMD access pair (registers 13/14) needs the history of the
//! accesses and is decoded by [`MmdTracker`].

mod advertise;
mod bmcr;
mod bmsr;
pub mod c45;
mod expansion;
mod gigabit;
mod mmd;
mod physid;
mod register;

use std::fmt;

pub use bmcr::{BMCR_ANRESTART, BMCR_RESET, MII_BMCR};
pub use mmd::{
    MmdAccess, MmdFunction, MmdTracker, mmd_device_name, mmd_named, mmd_short_name, mmd_short_names,
};
pub use physid::PhyId;
pub use register::Register;

/// A single named bit.
#[derive(Debug)]
pub struct Bit {
    /// Name as in `linux/mii.h` without the register prefix.
    pub name: &'static str,
    /// The bit's mask.
    pub mask: u16,
}

impl Bit {
    /// The bit `name` at `mask`.
    pub const fn new(name: &'static str, mask: u16) -> Self {
        Self { name, mask }
    }
}

/// A field of one or more bits shown as `NAME=value`.
#[derive(Debug)]
pub struct Field {
    /// Field name.
    pub name: &'static str,
    /// Mask of the field's bits.
    pub mask: u16,
    /// Renders the field's value (already shifted down); `None` hides it (e.g. reserved bits
    /// that are zero).
    pub show: fn(u16) -> Option<String>,
}

impl Field {
    /// The field `name` over `mask`, rendered by `show`.
    pub const fn new(name: &'static str, mask: u16, show: fn(u16) -> Option<String>) -> Self {
        Self { name, mask, show }
    }

    /// The field's value in `reg_value`, shifted down to bit 0.
    pub fn get(&self, reg_value: u16) -> u16 {
        (reg_value & self.mask) >> self.mask.trailing_zeros()
    }
}

/// Layout of one register: its bits, fields and reserved bits cover all 16 bits exactly once.
#[derive(Debug)]
pub struct RegisterSpec {
    /// Register number.
    pub num: u16,
    /// Name as in `linux/mii.h` without the `MII_` prefix.
    pub name: &'static str,
    /// Single named bits.
    pub bits: &'static [Bit],
    /// Multi-bit fields.
    pub fields: &'static [Field],
    /// Bits `linux/mii.h` calls reserved (`*_RESV`), shown in place as `RESV=0x0040` when set.
    pub reserved: u16,
}

/// `MII_MMD_CTRL`.
pub const MII_MMD_CTRL: u16 = 0x0d;
/// `MII_MMD_DATA`.
pub const MII_MMD_DATA: u16 = 0x0e;

/// Every register with a decoder.
pub static SPECS: &[&RegisterSpec] = &[
    &bmcr::BMCR,
    &bmsr::BMSR,
    &physid::PHYSID1,
    &physid::PHYSID2,
    &advertise::ADVERTISE,
    &advertise::LPA,
    &expansion::EXPANSION,
    &gigabit::CTRL1000,
    &gigabit::STAT1000,
    &mmd::MMD_CTRL,
    &mmd::MMD_DATA,
    &gigabit::ESTATUS,
];

/// The layout of register `reg`, if it has a decoder.
pub fn spec(reg: u16) -> Option<&'static RegisterSpec> {
    SPECS.iter().copied().find(|s| s.num == reg)
}

/// The number of the register named `name` (`BMCR`, any case), if it has a decoder.
pub fn number(name: &str) -> Option<u16> {
    SPECS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(|s| s.num)
}

/// The register's name: `BMSR`, or `R0x10` for a register without a decoder.
pub fn name(reg: u16) -> RegName {
    RegName(reg)
}

/// Display form of a register number (see [`name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegName(pub u16);

impl fmt::Display for RegName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match spec(self.0) {
            Some(s) => f.pad(s.name),
            None => f.pad(&format!("R0x{:02x}", self.0)),
        }
    }
}

/// A register value with its meaning; displays as `LSTATUS ANEGCOMPLETE SLCT=CSMA`, or as
/// `vendor specific` for a register the standard leaves to vendors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The register.
    pub reg: Register,
    /// Raw value.
    pub value: u16,
}

/// Decodes `value` as a value of register `reg` (a Clause 22 number or a [`Register`]).
pub fn decode(reg: impl Into<Register>, value: u16) -> Decoded {
    Decoded {
        reg: reg.into(),
        value,
    }
}

impl Decoded {
    /// Names of the bits that are set, from bit 0 up.
    pub fn flags(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.reg
            .spec()
            .into_iter()
            .flat_map(|s| s.bits.iter())
            .filter(|b| self.value & b.mask != 0)
            .map(|b| b.name)
    }

    /// Fields worth showing, as `(name, rendered value)`.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.reg
            .spec()
            .into_iter()
            .flat_map(|s| s.fields.iter())
            .filter_map(|f| (f.show)(f.get(self.value)).map(|v| (f.name, v)))
    }

    /// The reserved bits that are set, in place, if any.
    pub fn reserved(&self) -> Option<u16> {
        let bits = self.value & self.reg.spec()?.reserved;
        (bits != 0).then_some(bits)
    }
}

impl fmt::Display for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reg.spec().is_none() && self.reg.is_vendor() {
            return f.write_str("vendor specific");
        }
        let mut sep = "";
        for flag in self.flags() {
            write!(f, "{sep}{flag}")?;
            sep = " ";
        }
        for (name, value) in self.fields() {
            write!(f, "{sep}{name}={value}")?;
            sep = " ";
        }
        if let Some(resv) = self.reserved() {
            write!(f, "{sep}RESV={resv:#06x}")?;
        }
        Ok(())
    }
}

/// One difference between two successive values of a register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A bit was set: `+LSTATUS`.
    Set(&'static str),
    /// A bit was cleared: `-LSTATUS`.
    Cleared(&'static str),
    /// A field changed: `SLCT=0x00→CSMA`.
    Field {
        /// Field name.
        name: &'static str,
        /// Old value, rendered.
        from: String,
        /// New value, rendered.
        to: String,
    },
    /// A register without a decoder changed: `0x0000→0x1234`.
    Raw {
        /// Old value.
        from: u16,
        /// New value.
        to: u16,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Set(name) => write!(f, "+{name}"),
            Self::Cleared(name) => write!(f, "-{name}"),
            Self::Field { name, from, to } => write!(f, "{name}={from}→{to}"),
            Self::Raw { from, to } => write!(f, "0x{from:04x}→0x{to:04x}"),
        }
    }
}

/// The changes from `old` to `new` in register `reg`, bits first, in bit order.
pub fn changes(reg: impl Into<Register>, old: u16, new: u16) -> ChangeList {
    let reg = reg.into();
    let mut list = Vec::new();
    if old != new {
        match reg.spec() {
            None => list.push(Change::Raw { from: old, to: new }),
            Some(s) => {
                for bit in s.bits.iter().filter(|b| (old ^ new) & b.mask != 0) {
                    list.push(if new & bit.mask != 0 {
                        Change::Set(bit.name)
                    } else {
                        Change::Cleared(bit.name)
                    });
                }
                for field in s.fields.iter().filter(|f| (old ^ new) & f.mask != 0) {
                    let show = |v| (field.show)(v).unwrap_or_else(|| format!("{v:#x}"));
                    list.push(Change::Field {
                        name: field.name,
                        from: show(field.get(old)),
                        to: show(field.get(new)),
                    });
                }
                if (old ^ new) & s.reserved != 0 {
                    list.push(Change::Field {
                        name: "RESV",
                        from: format!("{:#06x}", old & s.reserved),
                        to: format!("{:#06x}", new & s.reserved),
                    });
                }
            }
        }
    }
    ChangeList { reg, list }
}

/// The changes of one register; displays as `+LSTATUS +ANEGCOMPLETE` (empty when equal).
/// [`ChangeList::with_name`] prefixes the register name: `BMSR +LSTATUS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeList {
    /// The register.
    pub reg: Register,
    /// The changes, bits first.
    pub list: Vec<Change>,
}

impl ChangeList {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Display form with the register name first: `BMSR +LSTATUS +ANEGCOMPLETE`.
    pub fn with_name(&self) -> String {
        format!("{} {self}", self.reg)
    }
}

impl fmt::Display for ChangeList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for change in &self.list {
            write!(f, "{sep}{change}")?;
            sep = " ";
        }
        Ok(())
    }
}

/// Renders a field as hex, always shown.
fn hex(v: u16) -> Option<String> {
    Some(format!("{v:#x}"))
}

/// Renders a field as decimal, hidden when zero (counters, modes that are off).
fn dec_nonzero(v: u16) -> Option<String> {
    (v != 0).then(|| v.to_string())
}

/// The 802.3 selector field of ADVERTISE and LPA: `CSMA` for 802.3.
fn selector(v: u16) -> Option<String> {
    match v {
        0 => None,
        1 => Some("CSMA".to_owned()),
        v => Some(format!("{v:#x}")),
    }
}

#[cfg(test)]
mod tests;
