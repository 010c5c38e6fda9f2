use proptest::prelude::*;

use super::{builder::Builder, *};

/// How `struct phy_device` and `enum phy_state` are encoded in [`phylib`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// As pahole writes them today: bitfield sizes in the members (`kind_flag` set).
    Plain,
    /// Bitfields as narrow int types, `kind_flag` clear.
    IntBitfields,
    /// `enum phy_state` as an ENUM64.
    Enum64,
}

const STATES: [(&str, i32); 8] = [
    ("PHY_DOWN", 0),
    ("PHY_READY", 1),
    ("PHY_HALTED", 2),
    ("PHY_ERROR", 3),
    ("PHY_UP", 4),
    ("PHY_RUNNING", 5),
    ("PHY_NOLINK", 6),
    ("PHY_CABLETEST", 7),
];

/// Adds a type of every other kind, so that the index must skip each record's trailing data.
fn fillers(b: &mut Builder, int: u32) {
    b.raw("", 13, false, 2, int, &[0, int, 0, int]); // FUNC_PROTO
    b.raw("f", 12, false, 0, b.next_id() - 1, &[]); // FUNC
    b.raw("v", 14, false, 0, int, &[1]); // VAR
    b.raw(".data", 15, false, 1, 8, &[b.next_id() - 1, 0, 4]); // DATASEC
    b.raw("tag", 17, false, 0, int, &[u32::MAX]); // DECL_TAG
    b.raw("double", 16, false, 0, 8, &[]); // FLOAT
    b.raw("user", 18, false, 0, int, &[]); // TYPE_TAG
    b.raw("", 11, false, 0, int, &[]); // RESTRICT
    b.enum64("other", false, &[("BIG", u64::MAX)]);
    b.fwd("phy_device");
    // Same names, other kinds: not what is looked up.
    b.composite(true, "phy_device", 4, &[("x", int, 0, 0)]);
    b.typedef("phy_state", int);
    b.composite(false, "phy_driver", 0, &[]);
}

/// A BTF blob with the phylib types phytrace reads, laid out as [`expected`] says.
fn phylib(variant: Variant) -> Vec<u8> {
    phylib_after(variant, |_| {})
}

/// [`phylib`], with the types `first` adds before all others.
fn phylib_after(variant: Variant, first: impl FnOnce(&mut Builder)) -> Vec<u8> {
    let mut b = Builder::new();
    first(&mut b);
    let int = b.int("int", 4, 0, 32);
    let uint = b.int("unsigned int", 4, 0, 32);
    let char = b.int("char", 1, 0, 8);
    fillers(&mut b, int);
    let u32_ = b.typedef("u32", uint);
    let phy_id = b.volatile(u32_);
    let phy_id = b.constant(phy_id);
    let states = if variant == Variant::Enum64 {
        let wide = STATES.map(|(name, value)| (name, value as u64));
        b.enum64("phy_state", false, &wide)
    } else {
        b.enum32("phy_state", false, &STATES)
    };
    let state = b.typedef("phy_state_t", states);
    let mii_bus = b.fwd("mii_bus");
    let bus_ptr = b.ptr(mii_bus);
    let mdio_device = b.composite(
        false,
        "mdio_device",
        64,
        &[
            ("dev", int, 0, 0),
            ("bus", bus_ptr, 64, 0),
            ("addr", int, 128, 0),
            ("flags", int, 160, 0),
        ],
    );
    let char_ptr = b.ptr(char);
    let phy_driver = b.composite(
        false,
        "phy_driver",
        16,
        &[("mdiodrv", int, 0, 0), ("name", char_ptr, 64, 0)],
    );
    let drv = b.ptr(phy_driver);
    let inner = b.composite(false, "", 8, &[("pad", int, 0, 0), ("state", state, 32, 0)]);
    let inner = b.typedef("inner_t", inner);
    let union = b.composite(true, "", 8, &[("phy_id", phy_id, 0, 0), ("", inner, 0, 0)]);
    let plain = [
        ("mdio", mdio_device, 0, 0),
        ("drv", drv, 64 * 8, 0),
        ("", union, 72 * 8, 0),
        ("speed", int, 80 * 8, 0),
        ("duplex", int, 84 * 8, 0),
    ];
    if variant == Variant::IntBitfields {
        let autoneg = b.int("unsigned int", 4, 2, 1);
        let link = b.int("unsigned int", 4, 3, 1);
        let mut members = plain.to_vec();
        members.extend([("autoneg", autoneg, 88 * 8, 0), ("link", link, 88 * 8, 0)]);
        b.composite_with(false, "phy_device", 96, false, &members);
    } else {
        let mut members = plain.to_vec();
        members.extend([
            ("autoneg", uint, 88 * 8 + 2, 1),
            ("link", uint, 88 * 8 + 3, 1),
        ]);
        b.composite(false, "phy_device", 96, &members);
    }
    let array = b.array(char, int, 61);
    let map = b.ptr(mdio_device);
    let map = b.array(map, int, 32);
    b.composite(
        false,
        "mii_bus",
        384,
        &[
            ("owner", char_ptr, 0, 0),
            ("id", array, 64, 0),
            ("mdio_map", map, 128 * 8, 0),
        ],
    );
    let name = b.array(char, int, 56);
    b.composite(
        false,
        "module",
        80,
        &[("state", int, 0, 0), ("name", name, 24 * 8, 0)],
    );
    let ifname = b.array(char, int, 16);
    b.composite(
        false,
        "net_device",
        64,
        &[("name", ifname, 0, 0), ("phydev", char_ptr, 40 * 8, 0)],
    );
    b.build()
}

/// The offsets [`phylib`] lays out.
fn expected() -> KernelOffsets {
    KernelOffsets {
        phy_bus: 8,
        phy_addr: 16,
        phy_id: 72,
        phy_drv: 64,
        phy_state: 76,
        phy_speed: 80,
        phy_duplex: 84,
        phy_link_byte: 88,
        phy_link_bit: 3,
        drv_name: 8,
        bus_id: 8,
        bus_mdio_map: 128,
        mdio_flags: 20,
        module_name: 24,
        netdev_name: 0,
        netdev_phydev: 40,
    }
}

fn expected_states() -> PhyStates {
    PhyStates {
        names: STATES
            .iter()
            .map(|(name, value)| (*value as u32, name["PHY_".len()..].into()))
            .collect(),
    }
}

#[test]
fn a_built_blob_gives_its_offsets_and_states() {
    for variant in [Variant::Plain, Variant::IntBitfields, Variant::Enum64] {
        let btf = KernelBtf::parse(phylib(variant)).unwrap();
        assert_eq!(btf.offsets().unwrap(), expected());
        assert_eq!(btf.phy_states().unwrap(), expected_states());
    }
}

#[test]
fn bitfields_have_no_byte_offset() {
    let btf = KernelBtf::parse(phylib(Variant::Plain)).unwrap();
    let err = btf.offset("phy_device", &["link"]).unwrap_err();
    assert!(format!("{err}").contains("is a bitfield"), "{err}");
    let btf = KernelBtf::parse(phylib(Variant::IntBitfields)).unwrap();
    assert!(btf.offset("phy_device", &["autoneg"]).is_err());
    assert_eq!(
        btf.place("phy_device", &["autoneg"]).unwrap(),
        Place {
            bits: 88 * 8 + 2,
            bitfield: true
        }
    );
}

#[test]
fn a_modules_split_btf_reads_on_top_of_vmlinuxs() {
    // vmlinux: `struct phylink_mac_ops`; the module: `struct phylink`, pointing at it, with
    // names both in its own strings and in the base's.
    let mut base = Builder::new();
    let int = base.int("int", 4, 0, 32);
    let ptr = base.ptr(0);
    let ops = base.composite(
        false,
        "phylink_mac_ops",
        16,
        &[("mac_link_down", ptr, 0, 0), ("mac_link_up", ptr, 64, 0)],
    );
    let base_blob = base.build();
    let mut module = Builder::split(&base);
    let ops_ptr = module.ptr(ops);
    let work = module.composite(false, "work_struct", 8, &[("data", int, 0, 0)]);
    module.composite(
        false,
        "phylink",
        48,
        &[("mac_ops", ops_ptr, 64, 0), ("resolve", work, 256, 0)],
    );
    let vmlinux = KernelBtf::parse(base_blob).unwrap();
    assert!(vmlinux.member_offset("phylink", &["mac_ops"]).is_err());
    let btf = vmlinux.on_top("phylink", &module.build()).unwrap();
    assert_eq!(btf.member_offset("phylink", &["mac_ops"]).unwrap(), 8);
    assert_eq!(
        btf.member_offset("phylink_mac_ops", &["mac_link_up"])
            .unwrap(),
        8
    );
    assert_eq!(btf.embedded_members("phylink").unwrap(), [32]);
    let err = format!("{:#}", btf.member_offset("phylink", &["pcs"]).unwrap_err());
    assert!(
        err.contains("`struct phylink` has no member `pcs`"),
        "{err}"
    );
    // Split BTF on its own is not BTF of its own types.
    assert!(vmlinux.on_top("phylink", &[0; 8]).is_err());
    // A module's BTF goes on vmlinux's only.
    let err = btf.on_top("libphy", &module.build()).err().unwrap();
    assert!(err.to_string().contains("not on phylink's"), "{err}");
}

#[test]
fn a_function_in_a_modules_btf_is_named_with_its_module() {
    // vmlinux: `bpf_rdonly_cast`; phylib as a module: `__mdiobus_read`.
    let mut base = Builder::new();
    let int = base.int("int", 4, 0, 32);
    base.raw("", 13, false, 0, int, &[]); // FUNC_PROTO
    let cast = base.raw("bpf_rdonly_cast", 12, false, 0, base.next_id() - 1, &[]);
    let base_blob = base.build();
    let mut module = Builder::split(&base);
    module.raw("", 13, false, 0, int, &[]);
    let read = module.raw("__mdiobus_read", 12, false, 0, module.next_id() - 1, &[]);
    let vmlinux = KernelBtf::parse(base_blob).unwrap();
    assert!(vmlinux.function_id("__mdiobus_read").is_err());
    let btf = vmlinux.on_top("libphy", &module.build()).unwrap();
    assert_eq!(
        btf.function_id("__mdiobus_read").unwrap(),
        FunctionId {
            id: read,
            module: Some("libphy".to_owned())
        }
    );
    assert_eq!(
        btf.function_id("bpf_rdonly_cast").unwrap(),
        FunctionId {
            id: cast,
            module: None
        }
    );
}

#[test]
fn missing_types_and_members_are_named() {
    let offsets_error = |phy_device: &dyn Fn(&mut Builder, u32)| {
        let mut b = Builder::new();
        let int = b.int("int", 4, 0, 32);
        phy_device(&mut b, int);
        let btf = KernelBtf::parse(b.build()).unwrap();
        format!("{:#}", btf.offsets().unwrap_err())
    };
    let err = offsets_error(&|_, _| {});
    assert!(
        err.contains("no `struct phy_device` (is CONFIG_PHYLIB enabled?)"),
        "{err}"
    );
    let err = offsets_error(&|b, _| {
        b.fwd("phy_device");
    });
    assert!(
        err.contains("no definition of `struct phy_device`"),
        "{err}"
    );
    let err = offsets_error(&|b, int| {
        b.composite(false, "phy_device", 4, &[("link", int, 0, 1)]);
    });
    assert!(
        err.contains("`struct phy_device` has no member `mdio`"),
        "{err}"
    );
    let err = offsets_error(&|b, int| {
        b.composite(
            false,
            "phy_device",
            4,
            &[("link", int, 0, 1), ("mdio", int, 0, 0)],
        );
    });
    assert!(err.contains("`phy_device.mdio` is not a struct"), "{err}");

    let states_error = |b: &Builder| {
        format!(
            "{}",
            KernelBtf::parse(b.build())
                .unwrap()
                .phy_states()
                .unwrap_err()
        )
    };
    let mut b = Builder::new();
    let err = states_error(&b);
    assert!(
        err.contains("no `enum phy_state` (is CONFIG_PHYLIB enabled?)"),
        "{err}"
    );
    let int = b.int("int", 4, 0, 32);
    b.composite(false, "phy_state", 4, &[("x", int, 0, 0)]);
    let err = states_error(&b);
    assert!(
        err.contains("`phy_state` in the kernel's BTF is not an enum"),
        "{err}"
    );
}

#[test]
fn the_index_matches_whole_names_only() {
    let mut b = Builder::new();
    let ids = [
        b.fwd("phy"),
        b.fwd("phy_device"),
        b.fwd("phy_devices"),
        b.fwd("ph"),
        b.fwd("phy_dev"),
        // Last in the string section: fewer than four bytes follow its start.
        b.fwd("p"),
    ];
    let wanted = ["phy", "phy_device", "ph", "p", "phy_d"];
    let btf = reader::Btf::parse(b.build(), &wanted).unwrap();
    assert_eq!(btf.named("phy"), [ids[0]]);
    assert_eq!(btf.named("phy_device"), [ids[1]]);
    assert_eq!(btf.named("ph"), [ids[3]]);
    assert_eq!(btf.named("p"), [ids[5]]);
    assert!(btf.named("phy_d").is_empty());
}

#[test]
fn enum_values_must_fit_in_u32() {
    let mut b = Builder::new();
    b.enum32("phy_state", true, &[("PHY_DOWN", -1)]);
    let err = KernelBtf::parse(b.build())
        .unwrap()
        .phy_states()
        .unwrap_err();
    assert!(format!("{err}").contains("DOWN = -1"), "{err}");
    let mut b = Builder::new();
    b.enum32("phy_state", false, &[("PHY_DOWN", -1)]);
    let states = KernelBtf::parse(b.build()).unwrap().phy_states().unwrap();
    assert_eq!(states.names, [(u32::MAX, "DOWN".into())]);
    let mut b = Builder::new();
    b.enum64("phy_state", false, &[("PHY_DOWN", 1 << 32)]);
    assert!(KernelBtf::parse(b.build()).unwrap().phy_states().is_err());
}

/// The error of parsing `blob` and reading both offsets and states.
fn read(blob: Vec<u8>) -> Result<(KernelOffsets, PhyStates)> {
    let btf = KernelBtf::parse(blob)?;
    Ok((btf.offsets()?, btf.phy_states()?))
}

fn read_error(blob: Vec<u8>) -> String {
    format!("{:#}", read(blob).unwrap_err())
}

/// `blob` with the `u32` at `at` replaced.
fn patched(mut blob: Vec<u8>, at: usize, value: u32) -> Vec<u8> {
    blob[at..at + 4].copy_from_slice(&value.to_ne_bytes());
    blob
}

#[test]
fn malformed_headers_are_errors() {
    let good = phylib(Variant::Plain);
    assert!(read_error(good[..10].to_vec()).contains("too short"));
    let mut swapped = good.clone();
    swapped.swap(0, 1);
    assert!(read_error(swapped).contains("foreign byte order"));
    assert!(read_error(patched(good.clone(), 0, 0x1234)).contains("not BTF"));
    let mut version = good.clone();
    version[2] = 2;
    assert!(read_error(version).contains("version 2"));
    for header_len in [0, 23, u32::MAX] {
        let err = read_error(patched(good.clone(), 4, header_len));
        assert!(err.contains("header length"), "{err}");
    }
    let err = read_error(patched(good.clone(), 8, u32::MAX));
    assert!(err.contains("type section"), "{err}");
    let err = read_error(patched(good.clone(), 20, good.len() as u32));
    assert!(err.contains("string section"), "{err}");
    let err = read_error(good[..good.len() - 1].to_vec());
    assert!(err.contains("string section"), "{err}");
}

#[test]
fn malformed_types_are_errors() {
    let mut b = Builder::new();
    b.int("int", 4, 0, 32);
    b.raw("odd", 25, false, 0, 0, &[]);
    assert!(read_error(b.build()).contains("type 2 has unknown kind 25"));

    let mut b = Builder::new();
    b.composite(false, "phy_device", 4, &[("link", 9, 0, 0)]);
    assert!(read_error(b.build()).contains("type id 9 does not exist"));

    // The type section ends inside the members of type 1.
    let blob = patched(phylib(Variant::Plain), 12, 10);
    assert!(read_error(blob).contains("type 1 is cut off"));

    let mut b = Builder::new();
    let first = b.next_id();
    b.typedef("a", first + 1);
    b.typedef("b", first);
    b.composite(false, "phy_device", 4, &[("link", first, 0, 0)]);
    assert!(read_error(b.build()).contains("chain of more than"));

    let mut b = Builder::new();
    let looped = b.next_id();
    b.composite(false, "phy_device", 4, &[("", looped, 0, 0)]);
    assert!(read_error(b.build()).contains("nests `link` in over 256 anonymous structs"));
}

#[test]
fn malformed_strings_are_errors() {
    let mut b = Builder::new();
    let int = b.int("int", 4, 0, 32);
    b.composite(false, "phy_device", 4, &[("link", int, 0, 0)]);
    b.typedef("last", int);
    let blob = b.build();
    // The member's name offset, just after the int and the struct's fixed part.
    let member_name = 24 + 16 + 12;
    let err = read_error(patched(blob.clone(), member_name, 1000));
    assert!(err.contains("string offset 1000 is out of bounds"), "{err}");
    // The member named `last`, whose NUL falls outside the shortened string section.
    let strings = u32::from_ne_bytes(blob[20..24].try_into().unwrap());
    let unterminated = patched(blob, 20, strings - 1);
    let err = read_error(patched(unterminated, member_name, strings - 5));
    assert!(err.contains("not terminated"), "{err}");
}

/// Reads `blob` every way phytrace does; only panics matter.
fn read_anything(blob: Vec<u8>) {
    if let Ok(btf) = KernelBtf::parse(blob) {
        let _ = btf.offsets();
        let _ = btf.phy_states();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn truncated_blobs_do_not_panic(len in 0usize..2_000) {
        let blob = phylib(Variant::Plain);
        read_anything(blob[..len.min(blob.len())].to_vec());
    }

    #[test]
    fn truncated_type_sections_do_not_panic(len in 0u32..2_000) {
        let blob = phylib(Variant::Plain);
        let types = u32::from_ne_bytes(blob[12..16].try_into().unwrap());
        let len = len.min(types);
        // The header, the type section cut to `len` bytes, the whole string section.
        let mut cut = blob[..24 + len as usize].to_vec();
        cut.extend_from_slice(&blob[24 + types as usize..]);
        read_anything(patched(patched(cut, 12, len), 16, len));
    }

    #[test]
    fn damaged_blobs_do_not_panic(
        variant in prop::sample::select(vec![Variant::Plain, Variant::IntBitfields, Variant::Enum64]),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut blob = phylib(variant);
        for (at, byte) in edits {
            let at = at.index(blob.len());
            blob[at] = byte;
        }
        read_anything(blob);
    }

    #[test]
    fn random_bytes_do_not_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut blob = phylib(Variant::Plain)[..24].to_vec();
        blob.extend(body.iter().copied());
        read_anything(blob.clone());
        read_anything(body);
    }
}

/// What phytrace read with the `btf-rs` crate before having its own reader: the reference the
/// running kernel's BTF is checked against.
mod btf_rs_reference {
    use anyhow::{Result, anyhow, bail};
    use btf_rs::{Btf, Struct, Type};
    use phytrace_common::KernelOffsets;

    fn struct_named(btf: &Btf, name: &str) -> Result<Struct> {
        btf.resolve_types_by_name(name)
            .map_err(|e| anyhow!("{e}"))?
            .into_iter()
            .find_map(|ty| match ty {
                Type::Struct(s) if !s.members.is_empty() => Some(s),
                _ => None,
            })
            .ok_or_else(|| anyhow!("no struct {name}"))
    }

    /// Bit offset, bitfield, type of `member`, searched in anonymous members too.
    fn find_member(btf: &Btf, st: &Struct, member: &str) -> Option<(u32, bool, Type)> {
        for m in &st.members {
            let name = btf.resolve_name(m).unwrap_or_default();
            let bitfield = m.bitfield_size().is_some_and(|size| size > 0);
            if name == member {
                return Some((m.bit_offset(), bitfield, btf.resolve_chained_type(m).ok()?));
            }
            if name.is_empty()
                && let Ok(Type::Struct(inner) | Type::Union(inner)) = btf.resolve_chained_type(m)
                && let Some((bits, bitfield, ty)) = find_member(btf, &inner, member)
            {
                return Some((m.bit_offset() + bits, bitfield, ty));
            }
        }
        None
    }

    /// Bit offset of `path` in `struct root`, and whether it is a bitfield.
    fn place(btf: &Btf, root: &str, path: &[&str]) -> Result<(u32, bool)> {
        let mut st = struct_named(btf, root)?;
        let mut total = 0;
        for (i, member) in path.iter().enumerate() {
            let (bits, bitfield, ty) =
                find_member(btf, &st, member).ok_or_else(|| anyhow!("no {member}"))?;
            total += bits;
            if i + 1 == path.len() {
                return Ok((total, bitfield));
            }
            st = match ty {
                Type::Struct(inner) | Type::Union(inner) => inner,
                _ => bail!("{member} is not a struct"),
            };
        }
        bail!("empty path")
    }

    fn offset(btf: &Btf, root: &str, path: &[&str]) -> Result<u32> {
        match place(btf, root, path)? {
            (bits, false) if bits % 8 == 0 => Ok(bits / 8),
            _ => bail!("bitfield"),
        }
    }

    pub fn offsets(btf: &Btf) -> Result<KernelOffsets> {
        let (link, _) = place(btf, "phy_device", &["link"])?;
        Ok(KernelOffsets {
            phy_bus: offset(btf, "phy_device", &["mdio", "bus"])?,
            phy_addr: offset(btf, "phy_device", &["mdio", "addr"])?,
            phy_id: offset(btf, "phy_device", &["phy_id"])?,
            phy_drv: offset(btf, "phy_device", &["drv"])?,
            phy_state: offset(btf, "phy_device", &["state"])?,
            phy_speed: offset(btf, "phy_device", &["speed"])?,
            phy_duplex: offset(btf, "phy_device", &["duplex"])?,
            phy_link_byte: link / 8,
            phy_link_bit: link % 8,
            drv_name: offset(btf, "phy_driver", &["name"])?,
            bus_id: offset(btf, "mii_bus", &["id"])?,
            bus_mdio_map: offset(btf, "mii_bus", &["mdio_map"])?,
            mdio_flags: offset(btf, "mdio_device", &["flags"])?,
            module_name: offset(btf, "module", &["name"])?,
            netdev_name: offset(btf, "net_device", &["name"])?,
            netdev_phydev: offset(btf, "net_device", &["phydev"])?,
        })
    }

    /// `enum phy_state`: (value, name without `PHY_`).
    pub fn phy_states(btf: &Btf) -> Result<Vec<(u32, String)>> {
        let types = btf
            .resolve_types_by_name("phy_state")
            .map_err(|e| anyhow!("{e}"))?;
        let Some(Type::Enum(en)) = types.into_iter().find(|ty| matches!(ty, Type::Enum(_))) else {
            bail!("not an enum");
        };
        en.members
            .iter()
            .map(|m| {
                let name = btf.resolve_name(m).map_err(|e| anyhow!("{e}"))?;
                Ok((m.val(), name.trim_start_matches("PHY_").to_owned()))
            })
            .collect()
    }
}

#[test]
fn the_running_kernels_btf_reads_as_btf_rs_reads_it() {
    let path = Path::new(VMLINUX_BTF);
    assert!(
        path.exists(),
        "{VMLINUX_BTF} is missing: this test needs a kernel with CONFIG_DEBUG_INFO_BTF, as every \
         machine phytrace is built and tested on has"
    );
    let btf = KernelBtf::open(path).unwrap();
    let reference = btf_rs::Btf::from_file(path).unwrap();
    let offsets = btf.offsets();
    let states = btf.phy_states();
    match (&offsets, btf_rs_reference::offsets(&reference)) {
        (Ok(ours), Ok(theirs)) => assert_eq!(*ours, theirs),
        (Err(_), Err(_)) => eprintln!("this kernel has no phylib types: {offsets:?}"),
        (ours, theirs) => panic!("ours: {ours:?}\nbtf-rs: {theirs:?}"),
    }
    match (&states, btf_rs_reference::phy_states(&reference)) {
        (Ok(ours), Ok(theirs)) => {
            let ours: Vec<(u32, String)> = ours
                .names
                .iter()
                .map(|(v, n)| (*v, n.to_string()))
                .collect();
            assert_eq!(ours, theirs)
        }
        (Err(_), Err(_)) => {}
        (ours, theirs) => panic!("ours: {ours:?}\nbtf-rs: {theirs:?}"),
    }
    if let (Ok(offsets), Ok(states)) = (offsets, states) {
        // `mdio` comes first in `struct phy_device`, and every field lies inside the struct.
        assert!(offsets.phy_bus < offsets.phy_drv, "{offsets:?}");
        assert!(offsets.phy_addr < offsets.phy_drv, "{offsets:?}");
        assert!(offsets.phy_state > offsets.phy_id && offsets.phy_speed > offsets.phy_state);
        assert_eq!(offsets.phy_duplex, offsets.phy_speed + 4);
        assert!(offsets.phy_link_bit < 8);
        let names: Vec<&str> = states.names.iter().map(|(_, n)| n.as_ref()).collect();
        for state in ["DOWN", "READY", "HALTED", "UP", "RUNNING", "NOLINK"] {
            assert!(names.contains(&state), "{names:?}");
        }
    }
}

#[test]
fn the_kernels_btf_object_holds_the_sysfs_files_bytes() {
    let from_object = super::object::vmlinux();
    // SAFETY: a call without preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let err = from_object.expect_err("the kernel handed its BTF object to a user");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
        return;
    }
    let from_object = from_object.unwrap();
    assert_eq!(from_object, std::fs::read(VMLINUX_BTF).unwrap());
    assert!(KernelBtf::running().is_ok());
}

/// Debian 7.3.4's own vmlinux BTF (`linux-image-7.3.4+deb13-amd64`), cut down to the types
/// phytrace looks up and what they embed: real 7.3 records, byte for byte but for renumbered
/// ids and pointers to `void` (`cargo xtask stock --btf-fixture`, `xtask/src/btf_fixture.rs`).
const DEBIAN_7_3: &[u8] =
    include_bytes!("../../../tests/data/btf/debian-7.3.4+deb13-amd64-phylib.btf");

/// Where `cargo xtask stock` leaves that kernel's whole BTF.
fn debian_7_3_full() -> Option<std::path::PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    let path = cache.join("phytrace/stock/7.3.4+deb13-amd64/vmlinux.btf");
    path.exists().then_some(path)
}

#[test]
fn debian_7_3_btf_gives_the_offsets_its_machine_code_uses() {
    let btf = KernelBtf::parse(DEBIAN_7_3.to_vec()).unwrap();
    let offsets = btf.offsets().unwrap();
    // In this kernel's phy_init_hw: `mov 0x360(%rbx),%rax` loads phydev->drv, then
    // `mov 0xd0(%rax),%rax` drv->soft_reset (disassembled from its vmlinuz).
    assert_eq!(offsets.phy_drv, 0x360);
    assert_eq!(btf.offset("phy_driver", &["soft_reset"]).unwrap(), 0xd0);
    // The rest as btf-rs reads them in the whole BTF (checked below when it is in the cache).
    assert_eq!(
        offsets,
        KernelOffsets {
            phy_bus: 792,
            phy_addr: 824,
            phy_id: 884,
            phy_drv: 864,
            phy_state: 1032,
            phy_speed: 1056,
            phy_duplex: 1060,
            phy_link_byte: 1025,
            phy_link_bit: 7,
            drv_name: 168,
            bus_id: 16,
            bus_mdio_map: 1984,
            mdio_flags: 828,
            module_name: 24,
            netdev_name: 288,
            netdev_phydev: 2472,
        }
    );
    assert_eq!(btf.phy_states().unwrap(), expected_states());
    for function in [
        "__mdiobus_read",
        "__mdiobus_write",
        "__mdiobus_c45_read",
        "__mdiobus_c45_write",
        "bpf_rdonly_cast",
    ] {
        btf.function_id(function).unwrap();
    }
    assert!(btf.types().is_ok());
}

#[test]
fn debian_7_3_btf_names_what_it_lacks() {
    let btf = KernelBtf::parse(DEBIAN_7_3.to_vec()).unwrap();
    let err = format!(
        "{:#}",
        btf.offset("phy_device", &["mdio", "no_such"]).unwrap_err()
    );
    assert!(
        err.contains("`struct phy_device` has no member `mdio.no_such`"),
        "{err}"
    );
    let err = format!("{:#}", btf.function_id("__mdiobus_no_such").unwrap_err());
    assert!(err.contains("no function `__mdiobus_no_such`"), "{err}");
    // Not wanted when indexed: looked up as missing, not guessed.
    let err = format!("{:#}", btf.struct_named("sk_buff").unwrap_err());
    assert!(err.contains("`struct sk_buff`"), "{err}");
}

#[test]
fn debian_7_3_full_btf_reads_as_the_fixture_and_btf_rs() {
    let Some(path) = debian_7_3_full() else {
        eprintln!(
            "SKIPPED: no Debian 7.3 vmlinux BTF in the cache (`cargo xtask stock` fetches it); \
             the committed cut-down fixture is tested on its own"
        );
        return;
    };
    let full = KernelBtf::open(&path).unwrap();
    let cut = KernelBtf::parse(DEBIAN_7_3.to_vec()).unwrap();
    assert_eq!(full.offsets().unwrap(), cut.offsets().unwrap());
    assert_eq!(full.phy_states().unwrap(), cut.phy_states().unwrap());
    let reference = btf_rs::Btf::from_file(&path).unwrap();
    assert_eq!(
        full.offsets().unwrap(),
        btf_rs_reference::offsets(&reference).unwrap()
    );
    assert_eq!(full.btf.type_count(), 127_424);
}

/// `blob` (24-byte header, types then strings) with a Linux 7.3 layout section of `entries`
/// (`info_sz`, `elem_sz` by kind) between the types and the strings, and the 32-byte header.
fn with_layout(blob: &[u8], entries: &[(u8, u8)]) -> Vec<u8> {
    let word = |at: usize| u32::from_ne_bytes(blob[at..at + 4].try_into().unwrap());
    let (types_len, strings_len) = (word(12), word(20));
    let layout: Vec<u8> = entries
        .iter()
        .flat_map(|&(info, elem)| [info, elem, 0, 0])
        .collect();
    let layout_len = layout.len() as u32;
    let mut out = blob[..4].to_vec();
    for value in [
        32,
        0,
        types_len,
        types_len + layout_len,
        strings_len,
        types_len,
        layout_len,
    ] {
        out.extend_from_slice(&value.to_ne_bytes());
    }
    out.extend_from_slice(&blob[24..24 + types_len as usize]);
    out.extend_from_slice(&layout);
    out.extend_from_slice(&blob[24 + types_len as usize..]);
    out
}

/// The layout libbpf writes for the kinds of Linux 7.3, and kind 36 (a kind from the future:
/// its low five bits are those of STRUCT) with a 4-byte part and 8 bytes per entry.
fn layout_with_kind_36() -> Vec<(u8, u8)> {
    let mut entries = vec![
        (0, 0),
        (4, 0),
        (0, 0),
        (12, 0),
        (0, 12),
        (0, 12),
        (0, 8),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 8),
        (4, 0),
        (0, 12),
        (0, 0),
        (4, 0),
        (0, 0),
        (0, 12),
    ];
    entries.resize(36, (0, 0));
    entries.push((4, 8));
    entries
}

/// A `phy_device` of kind 36 with two 8-byte entries before the real types: a reader masking
/// the kind to five bits would take it for the struct.
fn future_kind(b: &mut Builder) {
    b.raw("phy_device", 36, false, 2, 96, &[7, 1, 2, 3, 4]);
}

#[test]
fn a_7_3_layout_section_skips_kinds_this_reader_does_not_know() {
    let blob = with_layout(
        &phylib_after(Variant::Plain, future_kind),
        &layout_with_kind_36(),
    );
    assert_eq!(read(blob).unwrap(), (expected(), expected_states()));
    // Without the layout the record cannot be skipped: an error, not a guess.
    let err = read_error(phylib_after(Variant::Plain, future_kind));
    assert!(err.contains("type 1 has unknown kind 36"), "{err}");
    assert!(err.contains("no layout section"), "{err}");
    // A layout that does not describe it either.
    let err = read_error(with_layout(
        &phylib_after(Variant::Plain, future_kind),
        &layout_with_kind_36()[..20],
    ));
    assert!(
        err.contains("layout section does not describe either"),
        "{err}"
    );
}

#[test]
fn a_7_3_layout_section_that_contradicts_a_known_kind_is_an_error() {
    let mut entries = layout_with_kind_36();
    entries[4] = (0, 16); // STRUCT members of 16 bytes: not the format this reader knows
    let err = read_error(with_layout(&phylib(Variant::Plain), &entries));
    assert!(err.contains("gives kind 4 0 bytes + 16 per entry"), "{err}");
    entries[4] = (0, 12);
    entries[36] = (2, 0);
    let err = read_error(with_layout(&phylib(Variant::Plain), &entries));
    assert!(err.contains("not whole words"), "{err}");
    // The layout must lie between the types and the strings.
    let good = with_layout(&phylib(Variant::Plain), &layout_with_kind_36());
    let err = read_error(patched(good.clone(), 24, 0));
    assert!(err.contains("does not lie aligned between"), "{err}");
    let err = read_error(patched(good, 28, 7));
    assert!(err.contains("layout section"), "{err}");
}

#[test]
fn vlen_has_24_bits() {
    // 65 537 enumerators: a 16-bit vlen would read 1 and lose its way in the type section.
    let wide = |b: &mut Builder| {
        let values: Vec<(String, i32)> = (0..65_537).map(|i| (format!("E{i}"), i)).collect();
        let values: Vec<(&str, i32)> = values.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        b.enum32("wide", false, &values);
    };
    let blob = phylib_after(Variant::Plain, wide);
    assert_eq!(read(blob.clone()).unwrap(), (expected(), expected_states()));
    let btf = Btf::parse(blob, &["wide"]).unwrap();
    let wide = btf.get(btf.named("wide")[0]).unwrap();
    assert_eq!(wide.vlen, 65_537);
    assert_eq!(btf.enumerators(&wide).unwrap().last().unwrap().1, 65_536);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn damaged_7_3_blobs_do_not_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut blob =
            with_layout(&phylib_after(Variant::Plain, future_kind), &layout_with_kind_36());
        for (at, byte) in edits {
            let at = at.index(blob.len());
            blob[at] = byte;
        }
        read_anything(blob);
    }

    #[test]
    fn damaged_debian_7_3_blobs_do_not_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut blob = DEBIAN_7_3.to_vec();
        for (at, byte) in edits {
            let at = at.index(blob.len());
            blob[at] = byte;
        }
        read_anything(blob);
    }
}
