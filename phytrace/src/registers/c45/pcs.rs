//! PCS (MMD 3): control and status 1 and 2, speed ability, and the 10GBASE-R/-T PCS status
//! (`MDIO_PCS_10GBRT_STAT1`/`2`, named `BASER_STAT1`/`2`). Bits without a `linux/mdio.h` name
//! take IEEE 802.3 clause 45.2.3's: `HIBER` (3.32.1), `RXLNK` (3.32.12, the 10GBASE-R receive
//! link), `LHIBER` and `LBLKLK` (3.33.14 and 15, latched).

use super::common::{device_present, speed_select};
use crate::registers::{Bit, Field, RegisterSpec, dec_nonzero};

/// `MDIO_CTRL1` of the PCS.
pub static CTRL1: RegisterSpec = RegisterSpec {
    num: 0,
    name: "CTRL1",
    bits: &[
        Bit::new("SPEED1000", 0x0040),
        Bit::new("CLKSTOP_EN", 0x0400),
        Bit::new("LPOWER", 0x0800),
        Bit::new("SPEED100", 0x2000),
        Bit::new("LOOPBACK", 0x4000),
        Bit::new("RESET", 0x8000),
    ],
    fields: &[Field::new("SPEEDSEL", 0x003c, speed_select)],
    reserved: 0x1383,
};

/// `MDIO_STAT1` of the PCS: `LSTATUS` is the PCS receive link, latched low.
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

/// `MDIO_SPEED` of the PCS: `MDIO_SPEED_10G` and `MDIO_PCS_SPEED_*`.
pub static SPEED: RegisterSpec = RegisterSpec {
    num: 4,
    name: "SPEED",
    bits: &[
        Bit::new("10G", 0x0001),
        Bit::new("10P2B", 0x0002),
        Bit::new("2_5G", 0x0040),
        Bit::new("5G", 0x0080),
    ],
    fields: &[],
    reserved: 0xff3c,
};

/// `MDIO_CTRL2` of the PCS: the PCS type (`MDIO_PCS_CTRL2_*`).
pub static CTRL2: RegisterSpec = RegisterSpec {
    num: 7,
    name: "CTRL2",
    bits: &[],
    fields: &[Field::new("TYPE", 0x0003, pcs_type)],
    reserved: 0xfffc,
};

/// `MDIO_STAT2` of the PCS: abilities, faults, device present.
pub static STAT2: RegisterSpec = RegisterSpec {
    num: 8,
    name: "STAT2",
    bits: &[
        Bit::new("10GBR", 0x0001),
        Bit::new("10GBX", 0x0002),
        Bit::new("10GBW", 0x0004),
        Bit::new("RXFAULT", 0x0400),
        Bit::new("TXFAULT", 0x0800),
        Bit::new("RXFLTABLE", 0x1000),
        Bit::new("TXFLTABLE", 0x2000),
    ],
    fields: &[Field::new("DEVPRST", 0xc000, device_present)],
    reserved: 0x03f8,
};

/// `MDIO_PCS_10GBRT_STAT1`: block lock and the 10GBASE-R receive link.
pub static BASER_STAT1: RegisterSpec = RegisterSpec {
    num: 32,
    name: "BASER_STAT1",
    bits: &[
        Bit::new("BLKLK", 0x0001),
        Bit::new("HIBER", 0x0002),
        Bit::new("RXLNK", 0x1000),
    ],
    fields: &[],
    reserved: 0xeffc,
};

/// `MDIO_PCS_10GBRT_STAT2`: errored blocks (`ERR`), bit error rate counter (`BER`), latched
/// high BER and block lock.
pub static BASER_STAT2: RegisterSpec = RegisterSpec {
    num: 33,
    name: "BASER_STAT2",
    bits: &[Bit::new("LHIBER", 0x4000), Bit::new("LBLKLK", 0x8000)],
    fields: &[
        Field::new("ERR", 0x00ff, dec_nonzero),
        Field::new("BER", 0x3f00, dec_nonzero),
    ],
    reserved: 0,
};

/// `MDIO_PCS_CTRL2_*` type names.
fn pcs_type(v: u16) -> Option<String> {
    Some(["10GBR", "10GBX", "10GBW", "10GBT"][usize::from(v & 3)].to_owned())
}
