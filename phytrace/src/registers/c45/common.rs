//! The registers every MMD has at the same place (IEEE 802.3 clause 45.2): control 1 and
//! status 1 (their bits differ per MMD, see each MMD's file), device identifier, devices in
//! package and package identifier.

use crate::registers::{Bit, Field, RegisterSpec, hex};

/// `MDIO_DEVID1`: OUI bits 3..18, as `MII_PHYSID1`.
pub static DEVID1: RegisterSpec = RegisterSpec {
    num: 2,
    name: "DEVID1",
    bits: &[],
    fields: &[Field::new("OUI_HI", 0xffff, hex)],
    reserved: 0,
};

/// `MDIO_DEVID2`: OUI bits 19..24, model, revision, as `MII_PHYSID2`.
pub static DEVID2: RegisterSpec = RegisterSpec {
    num: 3,
    name: "DEVID2",
    bits: &[],
    fields: &[
        Field::new("REV", 0x000f, hex),
        Field::new("MODEL", 0x03f0, hex),
        Field::new("OUI_LO", 0xfc00, hex),
    ],
    reserved: 0,
};

/// `MDIO_DEVS1`: the MMDs present in the package, bits `MDIO_DEVS_*` 0 to 7.
pub static DEVS1: RegisterSpec = RegisterSpec {
    num: 5,
    name: "DEVS1",
    bits: &[
        Bit::new("C22PRESENT", 0x0001),
        Bit::new("PMAPMD", 0x0002),
        Bit::new("WIS", 0x0004),
        Bit::new("PCS", 0x0008),
        Bit::new("PHYXS", 0x0010),
        Bit::new("DTEXS", 0x0020),
        Bit::new("TC", 0x0040),
        Bit::new("AN", 0x0080),
    ],
    fields: &[],
    reserved: 0xff00,
};

/// `MDIO_DEVS2`: the MMDs present in the package, bits `MDIO_DEVS_*` 29 to 31.
pub static DEVS2: RegisterSpec = RegisterSpec {
    num: 6,
    name: "DEVS2",
    bits: &[
        Bit::new("C22EXT", 0x2000),
        Bit::new("VEND1", 0x4000),
        Bit::new("VEND2", 0x8000),
    ],
    fields: &[],
    reserved: 0x1fff,
};

/// `MDIO_PKGID1`: package identifier, high half.
pub static PKGID1: RegisterSpec = RegisterSpec {
    num: 14,
    name: "PKGID1",
    bits: &[],
    fields: &[Field::new("OUI_HI", 0xffff, hex)],
    reserved: 0,
};

/// `MDIO_PKGID2`: package identifier, low half.
pub static PKGID2: RegisterSpec = RegisterSpec {
    num: 15,
    name: "PKGID2",
    bits: &[],
    fields: &[
        Field::new("REV", 0x000f, hex),
        Field::new("MODEL", 0x03f0, hex),
        Field::new("OUI_LO", 0xfc00, hex),
    ],
    reserved: 0,
};

/// `MDIO_STAT2_DEVPRST`: `present` for `MDIO_STAT2_DEVPRST_VAL` (binary 10), else the value.
pub fn device_present(v: u16) -> Option<String> {
    Some(match v {
        2 => "present".to_owned(),
        v => format!("{v:#x}"),
    })
}

/// `MDIO_CTRL1_SPEEDSEL` bits 5:2, meaningful with `SPEED1000` and `SPEED100` both set
/// (`MDIO_CTRL1_SPEEDSELEXT`): `10G` (0), `10P2B` (1), `2.5G` (6), `5G` (7).
pub fn speed_select(v: u16) -> Option<String> {
    Some(match v {
        0 => "10G".to_owned(),
        1 => "10P2B".to_owned(),
        6 => "2.5G".to_owned(),
        7 => "5G".to_owned(),
        v => format!("{v:#x}"),
    })
}
