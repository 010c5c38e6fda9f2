//! PMA/PMD (MMD 1): control and status 1 and 2, speed ability, the 10G transmit disable and
//! signal detect, and the extended abilities phylib reads (`genphy_c45_pma_read_abilities`).

use super::common::{device_present, speed_select};
use crate::registers::{Bit, Field, RegisterSpec};

/// `MDIO_CTRL1` of the PMA/PMD.
pub static CTRL1: RegisterSpec = RegisterSpec {
    num: 0,
    name: "CTRL1",
    bits: &[
        Bit::new("LOOPBACK", 0x0001),
        Bit::new("SPEED1000", 0x0040),
        Bit::new("LPOWER", 0x0800),
        Bit::new("SPEED100", 0x2000),
        Bit::new("RESET", 0x8000),
    ],
    fields: &[Field::new("SPEEDSEL", 0x003c, speed_select)],
    reserved: 0x5782,
};

/// `MDIO_STAT1` of the PMA/PMD: `LSTATUS` is the receive link, latched low.
pub static STAT1: RegisterSpec = RegisterSpec {
    num: 1,
    name: "STAT1",
    bits: &[
        Bit::new("LPOWERABLE", 0x0002),
        Bit::new("LSTATUS", 0x0004),
        Bit::new("FAULT", 0x0080),
    ],
    fields: &[],
    reserved: 0xff79,
};

/// `MDIO_SPEED` of the PMA/PMD: `MDIO_SPEED_10G` and `MDIO_PMA_SPEED_*`.
pub static SPEED: RegisterSpec = RegisterSpec {
    num: 4,
    name: "SPEED",
    bits: &[
        Bit::new("10G", 0x0001),
        Bit::new("2B", 0x0002),
        Bit::new("10P", 0x0004),
        Bit::new("1000", 0x0010),
        Bit::new("100", 0x0020),
        Bit::new("10", 0x0040),
        Bit::new("2_5G", 0x2000),
        Bit::new("5G", 0x4000),
    ],
    fields: &[],
    reserved: 0x9f88,
};

/// `MDIO_CTRL2` of the PMA/PMD: the PMA/PMD type (`MDIO_PMA_CTRL2_*`).
pub static CTRL2: RegisterSpec = RegisterSpec {
    num: 7,
    name: "CTRL2",
    bits: &[],
    fields: &[Field::new("TYPE", 0x003f, pma_type)],
    reserved: 0xffc0,
};

/// `MDIO_STAT2` of the PMA/PMD: abilities, faults, device present.
pub static STAT2: RegisterSpec = RegisterSpec {
    num: 8,
    name: "STAT2",
    bits: &[
        Bit::new("LBABLE", 0x0001),
        Bit::new("10GBEW", 0x0002),
        Bit::new("10GBLW", 0x0004),
        Bit::new("10GBSW", 0x0008),
        Bit::new("10GBLX4", 0x0010),
        Bit::new("10GBER", 0x0020),
        Bit::new("10GBLR", 0x0040),
        Bit::new("10GBSR", 0x0080),
        Bit::new("TXDISAB", 0x0100),
        Bit::new("EXTABLE", 0x0200),
        Bit::new("RXFAULT", 0x0400),
        Bit::new("TXFAULT", 0x0800),
        Bit::new("RXFLTABLE", 0x1000),
        Bit::new("TXFLTABLE", 0x2000),
    ],
    fields: &[Field::new("DEVPRST", 0xc000, device_present)],
    reserved: 0,
};

/// `MDIO_PMA_TXDIS`: `MDIO_PMD_TXDIS_*`.
pub static TXDIS: RegisterSpec = RegisterSpec {
    num: 9,
    name: "TXDIS",
    bits: &[
        Bit::new("GLOBAL", 0x0001),
        Bit::new("0", 0x0002),
        Bit::new("1", 0x0004),
        Bit::new("2", 0x0008),
        Bit::new("3", 0x0010),
    ],
    fields: &[],
    reserved: 0xffe0,
};

/// `MDIO_PMA_RXDET`: `MDIO_PMD_RXDET_*`, the receive signal detect.
pub static RXDET: RegisterSpec = RegisterSpec {
    num: 10,
    name: "RXDET",
    bits: &[
        Bit::new("GLOBAL", 0x0001),
        Bit::new("0", 0x0002),
        Bit::new("1", 0x0004),
        Bit::new("2", 0x0008),
        Bit::new("3", 0x0010),
    ],
    fields: &[],
    reserved: 0xffe0,
};

/// `MDIO_PMA_EXTABLE`: `MDIO_PMA_EXTABLE_*`.
pub static EXTABLE: RegisterSpec = RegisterSpec {
    num: 11,
    name: "EXTABLE",
    bits: &[
        Bit::new("10GCX4", 0x0001),
        Bit::new("10GBLRM", 0x0002),
        Bit::new("10GBT", 0x0004),
        Bit::new("10GBKX4", 0x0008),
        Bit::new("10GBKR", 0x0010),
        Bit::new("1000BT", 0x0020),
        Bit::new("1000BKX", 0x0040),
        Bit::new("100BTX", 0x0080),
        Bit::new("10BT", 0x0100),
        Bit::new("BT1", 0x0800),
        Bit::new("NBT", 0x4000),
    ],
    fields: &[],
    reserved: 0xb600,
};

/// `MDIO_PMA_NG_EXTABLE`: `MDIO_PMA_NG_EXTABLE_*`.
pub static NG_EXTABLE: RegisterSpec = RegisterSpec {
    num: 21,
    name: "NG_EXTABLE",
    bits: &[Bit::new("2_5GBT", 0x0001), Bit::new("5GBT", 0x0002)],
    fields: &[],
    reserved: 0xfffc,
};

/// `MDIO_PMA_CTRL2_*` type names.
fn pma_type(v: u16) -> Option<String> {
    const NAMES: [&str; 16] = [
        "10GBCX4", "10GBEW", "10GBLW", "10GBSW", "10GBLX4", "10GBER", "10GBLR", "10GBSR",
        "10GBLRM", "10GBT", "10GBKX4", "10GBKR", "1000BT", "1000BKX", "100BTX", "10BT",
    ];
    Some(match v {
        0x30 => "2_5GBT".to_owned(),
        0x31 => "5GBT".to_owned(),
        0x3d => "BASET1".to_owned(),
        v => NAMES
            .get(usize::from(v))
            .map_or_else(|| format!("{v:#x}"), |name| (*name).to_owned()),
    })
}
