//! Whether the running kernel still calls the MDIO accessors phytrace probes, or its compiler
//! inlined them into their callers.
//!
//! `__mdiobus_read` and its three siblings are exported functions with BTF and an ftrace
//! site, so their probes attach; but a compiler may also inline their bodies into the
//! functions of `mdio_bus.c` that call them. clang does so in our 7.3 build: `mdiobus_read`
//! (what `phy_read`, the MII ioctls and the Rust abstractions' register reads use),
//! `mdiobus_write`, the `_nested` variants and `__mdiobus_modify_changed` hold their own
//! copies and never call the accessor, whose probes then see only the few accesses made from
//! other files (`phy_read_paged`, the MMD helpers of `phy-core.c`). BTF says a function
//! exists, not that its callers call it: the wrappers' code does. Each accessor is checked in
//! its locked wrapper (the accessor's name without the leading `__`): a wrapper that neither
//! calls nor jumps to it holds an inlined copy.

use std::{fs, path::Path};

use super::{
    callsites::{
        Isa,
        kallsyms::TextSymbols,
        text::{KCORE, Kcore, KernelMemory},
    },
    mdio_probes::ACCESSORS,
    symbols::KALLSYMS,
};

/// An accessor the kernel's code does not call from the wrapper phylib uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inlined {
    /// The accessor probed (`__mdiobus_read`).
    pub accessor: &'static str,
    /// The wrapper holding a copy of it (`mdiobus_read`).
    pub wrapper: &'static str,
}

/// The accessors of [`ACCESSORS`] whose wrapper, read through `text`, holds no call of or jump
/// to them. An accessor or wrapper not in `symbols`, or whose code cannot be read, is not
/// reported (nothing is known of it).
pub fn find(symbols: &TextSymbols, text: &mut impl KernelMemory, isa: Isa) -> Vec<Inlined> {
    let mut inlined = Vec::new();
    for (accessor, _, _) in ACCESSORS {
        let wrapper = accessor.trim_start_matches('_');
        let (Some(callee), Some(caller)) = (symbols.function(accessor), symbols.function(wrapper))
        else {
            continue;
        };
        let Ok(code) = text.read(caller.address, (caller.end - caller.address) as usize) else {
            continue;
        };
        if !branches_to(isa, &code, caller.address, callee.address) {
            inlined.push(Inlined { accessor, wrapper });
        }
    }
    inlined
}

/// Whether `code` (at `address`) holds a direct call of or jump to `target`.
fn branches_to(isa: Isa, code: &[u8], address: u64, target: u64) -> bool {
    match isa {
        Isa::X86_64 => {
            use iced_x86::{Decoder, DecoderOptions, OpKind};
            let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
            decoder.iter().any(|instruction| {
                !instruction.is_invalid()
                    && instruction.op_count() == 1
                    && instruction.op0_kind() == OpKind::NearBranch64
                    && instruction.near_branch64() == target
            })
        }
        // `bl`/`b` imm26, the only direct branches a call or tail call uses.
        Isa::Aarch64 => code.chunks_exact(4).enumerate().any(|(index, word)| {
            let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            if word >> 26 != 0b100101 && word >> 26 != 0b000101 {
                return false;
            }
            let offset = (i64::from(word << 6) << 32 >> 36) as u64;
            (address + 4 * index as u64).wrapping_add(offset) == target
        }),
    }
}

/// What a session should know when the running kernel inlined an accessor: `None` if it calls
/// them all, or if that cannot be read (kallsyms without addresses, no `/proc/kcore`).
pub fn note() -> Option<String> {
    let kallsyms = fs::read_to_string(KALLSYMS).ok()?;
    let symbols = TextSymbols::parse(&kallsyms);
    let mut kcore = Kcore::open(Path::new(KCORE)).ok()?;
    describe(&find(&symbols, &mut kcore, Isa::native()))
}

/// The note for `inlined` (`None` if empty).
pub fn describe(inlined: &[Inlined]) -> Option<String> {
    if inlined.is_empty() {
        return None;
    }
    let pairs: Vec<String> = inlined
        .iter()
        .map(|i| format!("{} into {}", i.accessor, i.wrapper))
        .collect();
    Some(format!(
        "this kernel's compiler inlined {}: the MDIO accesses made through them (phy_read, \
         phy_write, phy_modify, the MII ioctls) never call the probed accessor and are not \
         recorded; only those made from other files are",
        pairs.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 T __mdiobus_read
ffffffff81001100 T __mdiobus_write
ffffffff81001200 T mdiobus_read
ffffffff81001240 T mdiobus_write
ffffffff81001280 T _etext
";

    /// Kernel text: each wrapper's bytes at its address, `nop`s elsewhere.
    struct Text(Vec<(u64, Vec<u8>)>);

    impl KernelMemory for Text {
        fn read(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
            let mut bytes = vec![0x90; len];
            if let Some((_, code)) = self.0.iter().find(|(at, _)| *at == address) {
                bytes[..code.len()].copy_from_slice(code);
            }
            Ok(bytes)
        }
    }

    /// `call rel32` at `from` to `to`.
    fn call(from: u64, to: u64) -> Vec<u8> {
        let rel = (to.wrapping_sub(from + 5)) as u32;
        [&[0xe8][..], &rel.to_le_bytes()].concat()
    }

    /// `jmp rel32` (a tail call) at `from` to `to`.
    fn jmp(from: u64, to: u64) -> Vec<u8> {
        let rel = (to.wrapping_sub(from + 5)) as u32;
        [&[0xe9][..], &rel.to_le_bytes()].concat()
    }

    #[test]
    fn a_wrapper_calling_its_accessor_is_not_reported() {
        let symbols = TextSymbols::parse(KALLSYMS);
        // 6.12: mdiobus_read calls __mdiobus_read after `nop5; push %rbx`.
        let read = [
            &[0x0f, 0x1f, 0x44, 0x00, 0x00, 0x53][..],
            &call(0xffffffff81001206, 0xffffffff81001000),
        ]
        .concat();
        let write = jmp(0xffffffff81001240, 0xffffffff81001100);
        let mut text = Text(vec![
            (0xffffffff81001200, read),
            (0xffffffff81001240, write),
        ]);
        assert_eq!(find(&symbols, &mut text, Isa::X86_64), []);
    }

    #[test]
    fn a_wrapper_with_its_own_copy_is_reported() {
        let symbols = TextSymbols::parse(KALLSYMS);
        // 7.3 (clang): mdiobus_read calls mutex_lock and the bus's op, never __mdiobus_read.
        let read = [
            &call(0xffffffff81001200, 0xffffffff81000000)[..], // mutex_lock stand-in
            &[0x48, 0x8b, 0x47, 0x58],                         // mov 0x58(%rdi),%rax
            &[0xff, 0xd0],                                     // call *%rax
        ]
        .concat();
        let write = call(0xffffffff81001240, 0xffffffff81001100);
        let mut text = Text(vec![
            (0xffffffff81001200, read),
            (0xffffffff81001240, write),
        ]);
        let found = find(&symbols, &mut text, Isa::X86_64);
        assert_eq!(
            found,
            [Inlined {
                accessor: "__mdiobus_read",
                wrapper: "mdiobus_read"
            }]
        );
        let note = describe(&found).expect("a note");
        assert!(note.contains("__mdiobus_read into mdiobus_read"), "{note}");
        assert_eq!(describe(&[]), None);
    }

    #[test]
    fn arm64_bl_and_b_are_read_both_ways() {
        // bl +0x100 at 0x1000 (0x94000040); b -0x800 at 0x1004 (0x17fffe00).
        let code = [0x94000040u32, 0x17fffe00]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>();
        assert!(branches_to(Isa::Aarch64, &code, 0x1000, 0x1100));
        assert!(branches_to(Isa::Aarch64, &code, 0x1000, 0x1004 - 0x800));
        assert!(!branches_to(Isa::Aarch64, &code, 0x1000, 0x1104));
    }
}
