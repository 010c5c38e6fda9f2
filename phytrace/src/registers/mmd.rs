//! MMD_CTRL/MMD_DATA (registers 13, 14): Clause 45 MMD registers reached through Clause 22.
//!
//! An access is a sequence: write MMD_CTRL = devad (function "address"), write MMD_DATA = the
//! MMD register, write MMD_CTRL = function | devad, then read or write MMD_DATA. [`MmdTracker`]
//! follows that sequence per PHY and names what each MMD_DATA access means.

use std::fmt;

use super::{Field, RegisterSpec, hex};
use crate::event::MdioOp;

/// `MII_MMD_CTRL`.
pub static MMD_CTRL: RegisterSpec = RegisterSpec {
    num: super::MII_MMD_CTRL,
    name: "MMD_CTRL",
    bits: &[],
    fields: &[
        Field {
            name: "DEVAD",
            mask: 0x001f,
            show: devad,
        },
        Field {
            name: "FUNC",
            mask: 0xc000,
            show: function,
        },
    ],
    reserved: 0x3fe0,
};

/// `MII_MMD_DATA`: its meaning depends on the previous MMD_CTRL write (see [`MmdTracker`]).
pub static MMD_DATA: RegisterSpec = RegisterSpec {
    num: super::MII_MMD_DATA,
    name: "MMD_DATA",
    bits: &[],
    fields: &[Field {
        name: "DATA",
        mask: 0xffff,
        show: hex,
    }],
    reserved: 0x0000,
};

/// The function field of MMD_CTRL (`MII_MMD_CTRL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmdFunction {
    /// `MII_MMD_CTRL_ADDR`: MMD_DATA holds the MMD register address.
    Address,
    /// `MII_MMD_CTRL_NOINCR`: data, no post increment.
    DataNoIncrement,
    /// `MII_MMD_CTRL_INCR_RDWT`: data, post increment on reads and writes.
    DataIncrementReadWrite,
    /// `MII_MMD_CTRL_INCR_ON_WT`: data, post increment on writes only.
    DataIncrementWrite,
}

impl MmdFunction {
    /// Decodes bits 15:14 of an MMD_CTRL value.
    pub fn from_ctrl(ctrl: u16) -> Self {
        match ctrl >> 14 {
            0 => Self::Address,
            1 => Self::DataNoIncrement,
            2 => Self::DataIncrementReadWrite,
            _ => Self::DataIncrementWrite,
        }
    }

    /// The `MII_MMD_CTRL_` name without prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Address => "ADDR",
            Self::DataNoIncrement => "NOINCR",
            Self::DataIncrementReadWrite => "INCR_RDWT",
            Self::DataIncrementWrite => "INCR_ON_WT",
        }
    }

    /// Whether an access of direction `op` to MMD_DATA increments the address afterwards.
    fn increments(self, op: MdioOp) -> bool {
        match self {
            Self::DataIncrementReadWrite => true,
            Self::DataIncrementWrite => op == MdioOp::Write,
            Self::Address | Self::DataNoIncrement => false,
        }
    }
}

/// The MMDs `linux/mdio.h` names: device address, `MDIO_MMD_*` name, and the short name
/// phytrace shows them by (`pcs.STAT1`) and the rule language takes.
const MMDS: &[(u8, &str, &str)] = &[
    (1, "PMAPMD", "pma"),
    (2, "WIS", "wis"),
    (3, "PCS", "pcs"),
    (4, "PHYXS", "phyxs"),
    (5, "DTEXS", "dtexs"),
    (6, "TC", "tc"),
    (7, "AN", "an"),
    (13, "POWER_UNIT", "power"),
    (29, "C22EXT", "c22ext"),
    (30, "VEND1", "vend1"),
    (31, "VEND2", "vend2"),
];

/// `MDIO_MMD_*` name of a device address, if it has one.
pub fn mmd_device_name(devad: u8) -> Option<&'static str> {
    MMDS.iter().find(|m| m.0 == devad).map(|m| m.1)
}

/// Short name of a device address (`pcs` for 3), if it has one.
pub fn mmd_short_name(devad: u8) -> Option<&'static str> {
    MMDS.iter().find(|m| m.0 == devad).map(|m| m.2)
}

/// The device address named `name`: a short name (`pcs`) or an `MDIO_MMD_*` name (`PMAPMD`),
/// any case.
pub fn mmd_named(name: &str) -> Option<u8> {
    MMDS.iter()
        .find(|m| m.1.eq_ignore_ascii_case(name) || m.2.eq_ignore_ascii_case(name))
        .map(|m| m.0)
}

/// The short names of the MMDs, for messages.
pub fn mmd_short_names() -> impl Iterator<Item = &'static str> {
    MMDS.iter().map(|m| m.2)
}

fn devad(v: u16) -> Option<String> {
    Some(match mmd_device_name(v as u8) {
        Some(name) => format!("{v}({name})"),
        None => v.to_string(),
    })
}

fn function(v: u16) -> Option<String> {
    Some(MmdFunction::from_ctrl(v << 14).name().to_owned())
}

/// What an access to MMD_CTRL or MMD_DATA did, in MMD terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmdAccess {
    /// MMD_CTRL selected a device and function.
    Select {
        /// Device address.
        devad: u8,
        /// Function.
        function: MmdFunction,
    },
    /// MMD_DATA set the register address of a device.
    Address {
        /// Device address.
        devad: u8,
        /// MMD register address.
        addr: u16,
    },
    /// MMD_DATA read or wrote an MMD register.
    Data {
        /// Device address.
        devad: u8,
        /// MMD register address, if the sequence was seen from its start.
        addr: Option<u16>,
        /// Read or write.
        op: MdioOp,
        /// Value.
        value: u16,
    },
}

impl fmt::Display for MmdAccess {
    /// `MMD AN select INCR_RDWT`, `MMD AN addr=0x003c`, `MMD AN.0x003c read 0x0006`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dev = |devad: u8| match mmd_device_name(devad) {
            Some(name) => name.to_owned(),
            None => format!("dev{devad}"),
        };
        match *self {
            Self::Select { devad, function } => {
                write!(f, "MMD {} select {}", dev(devad), function.name())
            }
            Self::Address { devad, addr } => write!(f, "MMD {} addr={addr:#06x}", dev(devad)),
            Self::Data {
                devad,
                addr,
                op,
                value,
            } => {
                let op = op.name();
                match addr {
                    Some(addr) => write!(f, "MMD {}.{addr:#06x} {op} {value:#06x}", dev(devad)),
                    None => write!(f, "MMD {}.? {op} {value:#06x}", dev(devad)),
                }
            }
        }
    }
}

/// Follows the MMD_CTRL/MMD_DATA sequence of one PHY.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MmdTracker {
    /// Last MMD_CTRL value seen, if any.
    ctrl: Option<u16>,
    /// MMD register address currently selected, if known.
    addr: Option<u16>,
}

impl MmdTracker {
    /// Feeds one successful access; returns its MMD meaning for registers 13 and 14.
    pub fn observe(&mut self, op: MdioOp, reg: u16, value: u16) -> Option<MmdAccess> {
        match reg {
            super::MII_MMD_CTRL => {
                if self.ctrl.is_some_and(|c| c & 0x1f != value & 0x1f) {
                    self.addr = None;
                }
                self.ctrl = Some(value);
                Some(MmdAccess::Select {
                    devad: (value & 0x1f) as u8,
                    function: MmdFunction::from_ctrl(value),
                })
            }
            super::MII_MMD_DATA => {
                let ctrl = self.ctrl?;
                let devad = (ctrl & 0x1f) as u8;
                let function = MmdFunction::from_ctrl(ctrl);
                if function == MmdFunction::Address {
                    if op == MdioOp::Write {
                        self.addr = Some(value);
                    }
                    return Some(MmdAccess::Address { devad, addr: value });
                }
                let addr = self.addr;
                if function.increments(op) {
                    self.addr = addr.map(|a| a.wrapping_add(1));
                }
                Some(MmdAccess::Data {
                    devad,
                    addr,
                    op,
                    value,
                })
            }
            _ => None,
        }
    }
}
