//! AN (MMD 7): control and status 1, the base page advertisement and link partner ability
//! (the Clause 22 layout, as phylib reads them), and the 10GBASE-T control and status
//! (`MDIO_AN_10GBT_CTRL`/`STAT`, named `BASET_CTRL`/`BASET_STAT`).

use crate::registers::{Bit, RegisterSpec, advertise};

/// `MDIO_CTRL1` of the AN: `MDIO_AN_CTRL1_*`.
pub static CTRL1: RegisterSpec = RegisterSpec {
    num: 0,
    name: "CTRL1",
    bits: &[
        Bit::new("RESTART", 0x0200),
        Bit::new("ENABLE", 0x1000),
        Bit::new("XNP", 0x2000),
        Bit::new("RESET", 0x8000),
    ],
    fields: &[],
    reserved: 0x4dff,
};

/// `MDIO_STAT1` of the AN: `MDIO_AN_STAT1_*` and the link status.
pub static STAT1: RegisterSpec = RegisterSpec {
    num: 1,
    name: "STAT1",
    bits: &[
        Bit::new("LPABLE", 0x0001),
        Bit::new("LSTATUS", 0x0004),
        Bit::new("ABLE", 0x0008),
        Bit::new("RFAULT", 0x0010),
        Bit::new("COMPLETE", 0x0020),
        Bit::new("PAGE", 0x0040),
        Bit::new("XNP", 0x0080),
    ],
    fields: &[],
    reserved: 0xff02,
};

/// `MDIO_AN_ADVERTISE`: bits as `MII_ADVERTISE`'s.
pub static ADVERTISE: RegisterSpec = RegisterSpec {
    num: 16,
    name: "ADVERTISE",
    ..advertise::ADVERTISE_LAYOUT
};

/// `MDIO_AN_LPA`: bits as `MII_LPA`'s.
pub static LPA: RegisterSpec = RegisterSpec {
    num: 19,
    name: "LPA",
    ..advertise::LPA_LAYOUT
};

/// `MDIO_AN_10GBT_CTRL`: `MDIO_AN_10GBT_CTRL_*`.
pub static BASET_CTRL: RegisterSpec = RegisterSpec {
    num: 32,
    name: "BASET_CTRL",
    bits: &[
        Bit::new("ADVFSRT2_5G", 0x0020),
        Bit::new("ADV2_5G", 0x0080),
        Bit::new("ADV5G", 0x0100),
        Bit::new("ADV10G", 0x1000),
    ],
    fields: &[],
    reserved: 0xee5f,
};

/// `MDIO_AN_10GBT_STAT`: `MDIO_AN_10GBT_STAT_*`.
pub static BASET_STAT: RegisterSpec = RegisterSpec {
    num: 33,
    name: "BASET_STAT",
    bits: &[
        Bit::new("LP2_5G", 0x0020),
        Bit::new("LP5G", 0x0040),
        Bit::new("LPTRR", 0x0200),
        Bit::new("LPLTABLE", 0x0400),
        Bit::new("LP10G", 0x0800),
        Bit::new("REMOK", 0x1000),
        Bit::new("LOCOK", 0x2000),
        Bit::new("MS", 0x4000),
        Bit::new("MSFLT", 0x8000),
    ],
    fields: &[],
    reserved: 0x019f,
};
