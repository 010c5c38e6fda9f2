//! Checks the decoders against the bit definitions of `include/uapi/linux/mii.h` (Linux 6.12).

use super::*;

/// Every single-bit definition of `linux/mii.h`, with the register it belongs to. Aliases with
/// another meaning (1000BASE-X, SGMII, `ADVERTISE_RESV`) are left out on purpose.
const MII_H_BITS: &[(u16, &str, u16)] = &[
    (0x00, "BMCR_SPEED1000", 0x0040),
    (0x00, "BMCR_CTST", 0x0080),
    (0x00, "BMCR_FULLDPLX", 0x0100),
    (0x00, "BMCR_ANRESTART", 0x0200),
    (0x00, "BMCR_ISOLATE", 0x0400),
    (0x00, "BMCR_PDOWN", 0x0800),
    (0x00, "BMCR_ANENABLE", 0x1000),
    (0x00, "BMCR_SPEED100", 0x2000),
    (0x00, "BMCR_LOOPBACK", 0x4000),
    (0x00, "BMCR_RESET", 0x8000),
    (0x01, "BMSR_ERCAP", 0x0001),
    (0x01, "BMSR_JCD", 0x0002),
    (0x01, "BMSR_LSTATUS", 0x0004),
    (0x01, "BMSR_ANEGCAPABLE", 0x0008),
    (0x01, "BMSR_RFAULT", 0x0010),
    (0x01, "BMSR_ANEGCOMPLETE", 0x0020),
    (0x01, "BMSR_ESTATEN", 0x0100),
    (0x01, "BMSR_100HALF2", 0x0200),
    (0x01, "BMSR_100FULL2", 0x0400),
    (0x01, "BMSR_10HALF", 0x0800),
    (0x01, "BMSR_10FULL", 0x1000),
    (0x01, "BMSR_100HALF", 0x2000),
    (0x01, "BMSR_100FULL", 0x4000),
    (0x01, "BMSR_100BASE4", 0x8000),
    (0x04, "ADVERTISE_10HALF", 0x0020),
    (0x04, "ADVERTISE_10FULL", 0x0040),
    (0x04, "ADVERTISE_100HALF", 0x0080),
    (0x04, "ADVERTISE_100FULL", 0x0100),
    (0x04, "ADVERTISE_100BASE4", 0x0200),
    (0x04, "ADVERTISE_PAUSE_CAP", 0x0400),
    (0x04, "ADVERTISE_PAUSE_ASYM", 0x0800),
    (0x04, "ADVERTISE_XNP", 0x1000),
    (0x04, "ADVERTISE_RFAULT", 0x2000),
    (0x04, "ADVERTISE_LPACK", 0x4000),
    (0x04, "ADVERTISE_NPAGE", 0x8000),
    (0x05, "LPA_10HALF", 0x0020),
    (0x05, "LPA_10FULL", 0x0040),
    (0x05, "LPA_100HALF", 0x0080),
    (0x05, "LPA_100FULL", 0x0100),
    (0x05, "LPA_100BASE4", 0x0200),
    (0x05, "LPA_PAUSE_CAP", 0x0400),
    (0x05, "LPA_PAUSE_ASYM", 0x0800),
    (0x05, "LPA_RESV", 0x1000),
    (0x05, "LPA_RFAULT", 0x2000),
    (0x05, "LPA_LPACK", 0x4000),
    (0x05, "LPA_NPAGE", 0x8000),
    (0x06, "EXPANSION_NWAY", 0x0001),
    (0x06, "EXPANSION_LCWP", 0x0002),
    (0x06, "EXPANSION_ENABLENPAGE", 0x0004),
    (0x06, "EXPANSION_NPCAPABLE", 0x0008),
    (0x06, "EXPANSION_MFAULTS", 0x0010),
    (0x09, "ADVERTISE_1000HALF", 0x0100),
    (0x09, "ADVERTISE_1000FULL", 0x0200),
    (0x09, "CTL1000_PREFER_MASTER", 0x0400),
    (0x09, "CTL1000_AS_MASTER", 0x0800),
    (0x09, "CTL1000_ENABLE_MASTER", 0x1000),
    (0x0a, "LPA_1000HALF", 0x0400),
    (0x0a, "LPA_1000FULL", 0x0800),
    (0x0a, "LPA_1000REMRXOK", 0x1000),
    (0x0a, "LPA_1000LOCALRXOK", 0x2000),
    (0x0a, "LPA_1000MSRES", 0x4000),
    (0x0a, "LPA_1000MSFAIL", 0x8000),
    (0x0f, "ESTATUS_1000_THALF", 0x1000),
    (0x0f, "ESTATUS_1000_TFULL", 0x2000),
    (0x0f, "ESTATUS_1000_XHALF", 0x4000),
    (0x0f, "ESTATUS_1000_XFULL", 0x8000),
];

/// Multi-bit definitions of `linux/mii.h`: register, name, mask.
const MII_H_FIELDS: &[(u16, &str, u16)] = &[
    (0x04, "SLCT", 0x001f),
    (0x05, "SLCT", 0x001f),
    (0x0d, "DEVAD", 0x001f),
];

/// `*_RESV` masks of `linux/mii.h` (BMCR, BMSR, EXPANSION).
const MII_H_RESERVED: &[(u16, u16)] = &[(0x00, 0x003f), (0x01, 0x00c0), (0x06, 0xffe0)];

/// `mii.h` name without its register prefix (`BMCR_ANENABLE` → `ANENABLE`).
fn short(name: &str) -> &str {
    name.split_once('_').map_or(name, |(_, rest)| rest)
}

#[test]
fn every_mii_h_bit_decodes_to_its_name() {
    for &(reg, full, mask) in MII_H_BITS {
        let flags: Vec<_> = decode(reg, mask).flags().collect();
        assert_eq!(flags, [short(full)], "{full} in register {reg:#x}");
        assert_eq!(decode(reg, mask).to_string(), short(full));
    }
}

#[test]
fn every_mii_h_bit_is_in_its_spec() {
    for spec in SPECS {
        for bit in spec.bits {
            assert!(
                MII_H_BITS
                    .iter()
                    .any(|&(r, n, m)| r == spec.num && short(n) == bit.name && m == bit.mask),
                "{}.{} is not in mii.h",
                spec.name,
                bit.name
            );
        }
    }
}

#[test]
fn mii_h_fields_match() {
    for &(reg, name, mask) in MII_H_FIELDS {
        let spec = spec(reg).unwrap();
        assert!(
            spec.fields.iter().any(|f| f.name == name && f.mask == mask),
            "{}.{name}",
            spec.name
        );
    }
}

#[test]
fn mii_h_reserved_bits_match() {
    for &(reg, mask) in MII_H_RESERVED {
        assert_eq!(spec(reg).unwrap().reserved, mask);
        assert_eq!(decode(reg, mask).to_string(), format!("RESV={mask:#06x}"));
    }
}

#[test]
fn specs_cover_all_16_bits_exactly_once() {
    for spec in SPECS {
        let fields = spec.fields.iter().map(|f| f.mask);
        let masks = spec
            .bits
            .iter()
            .map(|b| b.mask)
            .chain(fields)
            .chain([spec.reserved]);
        let mut seen = 0u16;
        for mask in masks {
            assert_eq!(seen & mask, 0, "{}: overlapping {mask:#06x}", spec.name);
            seen |= mask;
        }
        assert_eq!(seen, 0xffff, "{}: bits not covered", spec.name);
    }
}

#[test]
fn register_numbers_match_mii_h() {
    let expected = [
        ("BMCR", 0x00),
        ("BMSR", 0x01),
        ("PHYSID1", 0x02),
        ("PHYSID2", 0x03),
        ("ADVERTISE", 0x04),
        ("LPA", 0x05),
        ("EXPANSION", 0x06),
        ("CTRL1000", 0x09),
        ("STAT1000", 0x0a),
        ("MMD_CTRL", 0x0d),
        ("MMD_DATA", 0x0e),
        ("ESTATUS", 0x0f),
    ];
    for (name, num) in expected {
        assert_eq!(super::name(num).to_string(), name);
    }
    assert_eq!(super::name(0x1f).to_string(), "R0x1f");
}

#[test]
fn typical_values_decode() {
    assert_eq!(
        decode(0x01, 0x786d).to_string(),
        "ERCAP LSTATUS ANEGCAPABLE ANEGCOMPLETE 10HALF 10FULL 100HALF 100FULL RESV=0x0040"
    );
    assert_eq!(
        decode(0x00, 0x3100).to_string(),
        "FULLDPLX ANENABLE SPEED100"
    );
    assert_eq!(
        decode(0x05, 0x45e1).to_string(),
        "10HALF 10FULL 100HALF 100FULL PAUSE_CAP LPACK SLCT=CSMA"
    );
    assert_eq!(decode(0x00, 0x0005).to_string(), "RESV=0x0005");
    assert_eq!(changes(0x00, 0, 1).to_string(), "RESV=0x0000→0x0001");
    assert_eq!(decode(0x10, 0x1234).to_string(), "");
}

#[test]
fn changes_render_like_the_dump() {
    assert_eq!(
        changes(0x01, 0x7849, 0x786d).with_name(),
        "BMSR +LSTATUS +ANEGCOMPLETE"
    );
    assert_eq!(changes(0x01, 0x786d, 0x7869).to_string(), "-LSTATUS");
    assert_eq!(changes(0x04, 0x01e0, 0x01e2).to_string(), "SLCT=0x0→0x2");
    assert_eq!(changes(0x04, 0x0000, 0x0001).to_string(), "SLCT=0x0→CSMA");
    assert!(changes(0x01, 0x786d, 0x786d).is_empty());
    assert_eq!(changes(0x11, 1, 2).to_string(), "0x0001→0x0002");
    assert_eq!(
        changes(0x0a, 0, 0x0c05).to_string(),
        "+1000HALF +1000FULL IDLE_ERR=0x0→5"
    );
}

#[test]
fn asix_ids_are_named() {
    for (id, name, model) in [
        (0x003b_1861, "AX88772A", 0x06),
        (0x003b_1881, "AX88772C", 0x08),
        (0x003b_1841, "AX88796B", 0x04),
    ] {
        let phy = PhyId::from_registers(0x003b, (id & 0xffff) as u16);
        assert_eq!(phy, PhyId(id));
        assert_eq!(phy.known_name(), Some(name));
        assert_eq!(phy.oui(), 0x000ec6);
        assert_eq!(phy.model(), model);
        assert_eq!(phy.revision(), 1);
    }
    assert_eq!(
        PhyId(0x003b_1861).to_string(),
        "0x003b1861 (OUI 0x000ec6 model 0x06 rev 1, AX88772A)"
    );
    assert_eq!(PhyId(0x0141_0cc2).known_name(), None);
    assert_eq!(
        decode(0x03, 0x1861).to_string(),
        "REV=0x1 MODEL=0x6 OUI_LO=0x6"
    );
}

#[test]
fn mmd_ctrl_functions_match_mii_h() {
    // MII_MMD_CTRL_ADDR, _NOINCR, _INCR_RDWT, _INCR_ON_WT.
    for (value, name) in [
        (0x0000, "ADDR"),
        (0x4000, "NOINCR"),
        (0x8000, "INCR_RDWT"),
        (0xc000, "INCR_ON_WT"),
    ] {
        assert_eq!(MmdFunction::from_ctrl(value | 7).name(), name);
        assert_eq!(
            decode(MII_MMD_CTRL, value | 7).to_string(),
            format!("DEVAD=7(AN) FUNC={name}")
        );
    }
}

#[test]
fn mmd_sequence_is_followed() {
    use crate::event::MdioOp::{Read, Write};
    let mut mmd = MmdTracker::default();
    assert_eq!(
        mmd.observe(Read, MII_MMD_DATA, 5),
        None,
        "no MMD_CTRL seen yet"
    );
    assert_eq!(
        mmd.observe(Write, MII_MMD_CTRL, 0x0007),
        Some(MmdAccess::Select {
            devad: 7,
            function: MmdFunction::Address
        })
    );
    assert_eq!(
        mmd.observe(Write, MII_MMD_DATA, 0x003c),
        Some(MmdAccess::Address {
            devad: 7,
            addr: 0x3c
        })
    );
    mmd.observe(Write, MII_MMD_CTRL, 0x8007);
    let first = mmd.observe(Read, MII_MMD_DATA, 0x0006).unwrap();
    assert_eq!(first.to_string(), "MMD AN.0x003c read 0x0006");
    let second = mmd.observe(Read, MII_MMD_DATA, 0x0000).unwrap();
    assert_eq!(
        second,
        MmdAccess::Data {
            devad: 7,
            addr: Some(0x3d),
            op: Read,
            value: 0
        }
    );
    mmd.observe(Write, MII_MMD_CTRL, 0xc007);
    mmd.observe(Read, MII_MMD_DATA, 1);
    assert_eq!(
        mmd.observe(Write, MII_MMD_DATA, 2),
        Some(MmdAccess::Data {
            devad: 7,
            addr: Some(0x3e),
            op: Write,
            value: 2
        }),
        "INCR_ON_WT does not increment on reads"
    );
    mmd.observe(Write, MII_MMD_CTRL, 0x4003);
    assert_eq!(
        mmd.observe(Write, MII_MMD_DATA, 9).unwrap().to_string(),
        "MMD PCS.? write 0x0009",
        "another device: the address is unknown"
    );
    assert_eq!(mmd.observe(Read, 0x01, 0), None);
}

/// Single-bit definitions of `linux/mdio.h` (Linux 6.12) by MMD and register: (devad,
/// register, name without `MDIO_` and its register prefix, mask).
const MDIO_H_BITS: &[(u8, u16, &str, u16)] = &[
    (1, 0, "LOOPBACK", 0x0001),
    (1, 0, "SPEED1000", 0x0040),
    (1, 0, "LPOWER", 0x0800),
    (1, 0, "SPEED100", 0x2000),
    (1, 0, "RESET", 0x8000),
    (1, 1, "LPOWERABLE", 0x0002),
    (1, 1, "LSTATUS", 0x0004),
    (1, 1, "FAULT", 0x0080),
    (1, 4, "10G", 0x0001),
    (1, 4, "1000", 0x0010),
    (1, 4, "2_5G", 0x2000),
    (1, 4, "5G", 0x4000),
    (1, 5, "PMAPMD", 0x0002),
    (1, 5, "AN", 0x0080),
    (1, 6, "VEND2", 0x8000),
    (1, 8, "LBABLE", 0x0001),
    (1, 8, "10GBSR", 0x0080),
    (1, 8, "EXTABLE", 0x0200),
    (1, 8, "RXFAULT", 0x0400),
    (1, 8, "TXFAULT", 0x0800),
    (1, 8, "TXFLTABLE", 0x2000),
    (1, 11, "10GBT", 0x0004),
    (1, 11, "NBT", 0x4000),
    (1, 21, "5GBT", 0x0002),
    (3, 0, "CLKSTOP_EN", 0x0400),
    (3, 0, "LOOPBACK", 0x4000),
    (3, 1, "LSTATUS", 0x0004),
    (3, 1, "FAULT", 0x0080),
    (3, 4, "10P2B", 0x0002),
    (3, 4, "5G", 0x0080),
    (3, 8, "10GBR", 0x0001),
    (3, 8, "RXFLTABLE", 0x1000),
    (3, 32, "BLKLK", 0x0001),
    (4, 0, "LOOPBACK", 0x4000),
    (4, 1, "LSTATUS", 0x0004),
    (4, 24, "SYNC3", 0x0008),
    (4, 24, "ALIGN", 0x1000),
    (7, 0, "RESTART", 0x0200),
    (7, 0, "ENABLE", 0x1000),
    (7, 0, "XNP", 0x2000),
    (7, 1, "LPABLE", 0x0001),
    (7, 1, "ABLE", 0x0008),
    (7, 1, "COMPLETE", 0x0020),
    (7, 1, "PAGE", 0x0040),
    (7, 32, "ADV10G", 0x1000),
    (7, 33, "LP10G", 0x0800),
    (7, 33, "MSFLT", 0x8000),
];

#[test]
fn mdio_h_bits_decode_in_their_mmd() {
    for &(devad, reg, name, mask) in MDIO_H_BITS {
        let register = Register::C45 { devad, reg };
        let flags: Vec<_> = decode(register, mask).flags().collect();
        assert_eq!(flags, [name], "{name} in {register}");
    }
}

#[test]
fn c45_specs_cover_all_16_bits_exactly_once() {
    for devad in 0..32 {
        for spec in c45::specs(devad) {
            let masks = spec.bits.iter().map(|b| b.mask);
            let masks = masks.chain(spec.fields.iter().map(|f| f.mask));
            let mut seen = 0u16;
            for mask in masks.chain([spec.reserved]) {
                assert_eq!(
                    seen & mask,
                    0,
                    "{devad}.{}: overlapping {mask:#06x}",
                    spec.name
                );
                seen |= mask;
            }
            assert_eq!(seen, 0xffff, "{devad}.{}: bits not covered", spec.name);
        }
    }
}

#[test]
fn c45_registers_are_named_per_mmd() {
    // MDIO_CTRL1, MDIO_STAT1, MDIO_SPEED, MDIO_DEVS1, MDIO_CTRL2, MDIO_STAT2,
    // MDIO_PCS_10GBRT_STAT1/2, MDIO_PHYXS_LNSTAT, MDIO_AN_10GBT_STAT.
    for (devad, reg, shown) in [
        (1, 0x0000, "pma.CTRL1"),
        (1, 0x0001, "pma.STAT1"),
        (1, 0x0004, "pma.SPEED"),
        (1, 0x0005, "pma.DEVS1"),
        (1, 0x0007, "pma.CTRL2"),
        (1, 0x0008, "pma.STAT2"),
        (3, 0x0001, "pcs.STAT1"),
        (3, 0x0008, "pcs.STAT2"),
        (3, 0x0020, "pcs.BASER_STAT1"),
        (3, 0x0021, "pcs.BASER_STAT2"),
        (4, 0x0001, "phyxs.STAT1"),
        (4, 0x0018, "phyxs.LNSTAT"),
        (7, 0x0001, "an.STAT1"),
        (7, 0x0021, "an.BASET_STAT"),
        (2, 0x0002, "wis.DEVID1"),
        (3, 0x0026, "pcs.0x0026"),
        (1, 0xd001, "pma.0xd001"),
        (30, 0x0001, "vend1.0x0001"),
        (9, 0x0001, "9.0x0001"),
    ] {
        let register = Register::C45 { devad, reg };
        assert_eq!(register.to_string(), shown);
        if let Some(name) = shown.split_once('.').map(|(_, n)| n)
            && !name.starts_with("0x")
        {
            assert_eq!(c45::number(devad, &name.to_lowercase()), Some(reg));
        }
    }
    assert_eq!(
        Register::C45 { devad: 3, reg: 1 }.labelled(),
        "pcs.STAT1 (3.0x0001)"
    );
    assert_eq!(
        Register::C45 {
            devad: 3,
            reg: 0x8000
        }
        .labelled(),
        "pcs.0x8000"
    );
    assert_eq!(Register::C22(1).labelled(), "BMSR");
    assert_eq!(mmd_named("PMAPMD"), Some(1));
    assert_eq!(mmd_named("Pcs"), Some(3));
    assert_eq!(mmd_named("bogus"), None);
}

#[test]
fn c45_values_decode_link_faults_and_speed() {
    let pcs = |reg| Register::C45 { devad: 3, reg };
    let pma = |reg| Register::C45 { devad: 1, reg };
    assert_eq!(decode(pcs(1), 0x0006).to_string(), "LPOWERABLE LSTATUS");
    assert_eq!(decode(pcs(1), 0x0082).to_string(), "LPOWERABLE FAULT");
    assert_eq!(decode(pcs(0x20), 0x1001).to_string(), "BLKLK RXLNK");
    assert_eq!(decode(pcs(0x21), 0x8003).to_string(), "LBLKLK ERR=3");
    assert_eq!(
        decode(pma(0), 0x2040).to_string(),
        "SPEED1000 SPEED100 SPEEDSEL=10G"
    );
    assert_eq!(decode(pma(7), 0x0006).to_string(), "TYPE=10GBLR");
    assert_eq!(
        decode(pma(8), 0xb301).to_string(),
        "LBABLE TXDISAB EXTABLE RXFLTABLE TXFLTABLE DEVPRST=present"
    );
    assert_eq!(
        decode(Register::C45 { devad: 7, reg: 1 }, 0x0024).to_string(),
        "LSTATUS COMPLETE"
    );
    assert_eq!(
        decode(
            Register::C45 {
                devad: 7,
                reg: 0x13
            },
            0x0041
        )
        .to_string(),
        "10FULL SLCT=CSMA"
    );
    assert_eq!(decode(pma(0xd001), 0xb3ff).to_string(), "vendor specific");
    assert_eq!(decode(pcs(0x26), 0x0e00).to_string(), "");
    assert_eq!(
        changes(pcs(1), 0x0006, 0x0002).with_name(),
        "pcs.STAT1 -LSTATUS"
    );
    assert_eq!(changes(pcs(0x8000), 1, 2).to_string(), "0x0001→0x0002");
}
