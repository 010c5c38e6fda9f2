//! Clause 45 registers, one file per MMD: the standard registers phylib reads, named as
//! `include/uapi/linux/mdio.h` names them without `MDIO_` and the MMD prefix (`MDIO_STAT1` of
//! the PCS is `pcs.STAT1`), and the ranges the standard leaves to vendors.

mod an;
mod common;
mod pcs;
mod phyxs;
mod pma;

use super::RegisterSpec;

/// PMA/PMD (MMD 1).
static PMA: &[&RegisterSpec] = &[
    &pma::CTRL1,
    &pma::STAT1,
    &common::DEVID1,
    &common::DEVID2,
    &pma::SPEED,
    &common::DEVS1,
    &common::DEVS2,
    &pma::CTRL2,
    &pma::STAT2,
    &pma::TXDIS,
    &pma::RXDET,
    &pma::EXTABLE,
    &common::PKGID1,
    &common::PKGID2,
    &pma::NG_EXTABLE,
];

/// PCS (MMD 3).
static PCS: &[&RegisterSpec] = &[
    &pcs::CTRL1,
    &pcs::STAT1,
    &common::DEVID1,
    &common::DEVID2,
    &pcs::SPEED,
    &common::DEVS1,
    &common::DEVS2,
    &pcs::CTRL2,
    &pcs::STAT2,
    &common::PKGID1,
    &common::PKGID2,
    &pcs::BASER_STAT1,
    &pcs::BASER_STAT2,
];

/// PHY XS (MMD 4).
static PHYXS: &[&RegisterSpec] = &[
    &phyxs::CTRL1,
    &phyxs::STAT1,
    &common::DEVID1,
    &common::DEVID2,
    &phyxs::SPEED,
    &common::DEVS1,
    &common::DEVS2,
    &phyxs::STAT2,
    &common::PKGID1,
    &common::PKGID2,
    &phyxs::LNSTAT,
];

/// AN (MMD 7).
static AN: &[&RegisterSpec] = &[
    &an::CTRL1,
    &an::STAT1,
    &common::DEVID1,
    &common::DEVID2,
    &common::DEVS1,
    &common::DEVS2,
    &common::PKGID1,
    &common::PKGID2,
    &an::ADVERTISE,
    &an::LPA,
    &an::BASET_CTRL,
    &an::BASET_STAT,
];

/// Any other standard MMD (WIS, DTE XS, TC, ...): the registers every MMD has.
static OTHER: &[&RegisterSpec] = &[
    &common::DEVID1,
    &common::DEVID2,
    &common::DEVS1,
    &common::DEVS2,
    &common::PKGID1,
    &common::PKGID2,
];

/// First register of the range IEEE 802.3 clause 45.2 leaves to vendors in each standard MMD.
pub const VENDOR_FIRST: u16 = 0x8000;

/// The registers with a decoder in MMD `devad` (none in the vendor MMDs 30 and 31).
pub fn specs(devad: u8) -> &'static [&'static RegisterSpec] {
    match devad {
        1 => PMA,
        3 => PCS,
        4 => PHYXS,
        7 => AN,
        30 | 31 => &[],
        _ => OTHER,
    }
}

/// The layout of register `reg` of MMD `devad`, if it has a decoder.
pub fn spec(devad: u8, reg: u16) -> Option<&'static RegisterSpec> {
    specs(devad).iter().copied().find(|s| s.num == reg)
}

/// The number of the register of MMD `devad` named `name` (any case).
pub fn number(devad: u8, name: &str) -> Option<u16> {
    specs(devad)
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(|s| s.num)
}

/// Whether the standard leaves register `reg` of MMD `devad` to vendors: all of the vendor
/// MMDs (30, 31), registers 0x8000 and up of the others.
pub fn is_vendor(devad: u8, reg: u16) -> bool {
    matches!(devad, 30 | 31) || reg >= VENDOR_FIRST
}
