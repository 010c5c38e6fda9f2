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
//!
//! Every copy still calls the bus's op through its function pointer (`bus->read(bus, addr,
//! regnum)`, a load from `mii_bus.read` then an indirect call): [`op_sites`] finds those calls
//! in the `mdio_bus.c` functions (named `*mdiobus*`) other than the accessors, where the
//! probe side puts the accessors' kprobe programs (`crate::probe::mdio_copy_probes`). The
//! probes on the accessors stay: the calls made from other files go through them, and a copy's call is
//! no call of the accessor, so no access is seen twice. A kernel that calls its accessors has
//! no such site: nothing more is armed.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{Isa, Layout, Return, cache, text::KernelMemory, text_symbols::TextSymbols};
use crate::kernel::{
    btf::KernelBtf,
    mdio::{ACCESSORS, BUS_OPS},
    snapshot::Snapshot,
};

/// A call of a bus op in an inlined copy of an accessor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpSite {
    /// The function holding the copy.
    pub function: String,
    /// Offset of the call instruction in it.
    pub call: u32,
    /// Offset of the instruction the call returns to.
    pub ret: u32,
    /// The accessor copied: an index in [`ACCESSORS`] and [`BUS_OPS`].
    pub accessor: usize,
}

/// The bus-op calls in the functions named `*mdiobus*` of vmlinux and of libphy (phylib as a
/// module) other than the accessors, read through `text`, found by the call-site search with
/// `layout` ([`Layout::mii_bus`]). A tail call of an op is no site: its return is not the
/// copy's.
fn op_sites(
    symbols: &TextSymbols,
    text: &mut impl KernelMemory,
    isa: Isa,
    layout: &Layout,
) -> Vec<OpSite> {
    let core = symbols
        .core_text()
        .map(|(start, end)| symbols.functions_in(start, end).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut sites = Vec::new();
    for function in core.into_iter().chain(symbols.module_functions("libphy")) {
        if !function.name.contains("mdiobus")
            || ACCESSORS.iter().any(|(name, _, _)| *name == function.name)
        {
            continue;
        }
        let Ok(code) = text.read(function.address, (function.end - function.address) as usize)
        else {
            continue;
        };
        for found in isa.scan(&code, function.address, layout, symbols.thunks()) {
            if let Return::After(ret) = found.ret {
                sites.push(OpSite {
                    function: function.name.to_owned(),
                    call: found.offset,
                    ret,
                    accessor: usize::from(found.op),
                });
            }
        }
    }
    sites
}

/// The survey of the running kernel ([`survey`]) under way on another thread: reading kallsyms
/// and the kernel text takes a slow guest over 100 ms, as long as verifying the programs.
pub struct Surveying(std::thread::JoinHandle<Result<(Survey, Option<String>)>>);

/// The inlined accessors and their copies' bus-op calls.
pub type Survey = (Vec<Inlined>, Vec<OpSite>);

impl Surveying {
    /// Starts [`survey`] of the running kernel, whose BTF is `btf`, on another thread, or
    /// takes this boot's from `cache` (a directory, see [`cache`]), where it keeps it.
    pub fn start(btf: &KernelBtf, cache: Option<PathBuf>, kernel: Arc<Snapshot>) -> Result<Self> {
        let layout = Layout::mii_bus(btf, &BUS_OPS);
        std::thread::Builder::new()
            .name("phytrace-mdio".into())
            .spawn(move || survey_cached(&layout, cache.as_deref(), &kernel))
            .map(Self)
            .context("starting a thread")
    }

    /// The survey, with what was wrong with a damaged cache entry it replaced.
    pub fn join(self) -> Result<(Survey, Option<String>)> {
        self.0
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the survey stopped")))
    }
}

impl OpSite {
    /// The accessor copied (`__mdiobus_read`).
    pub fn accessor_name(&self) -> &'static str {
        ACCESSORS
            .get(self.accessor)
            .map_or("unknown", |(name, _, _)| name)
    }
}

/// An accessor the kernel's code does not call from the wrapper phylib uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inlined {
    /// The accessor probed (`__mdiobus_read`).
    pub accessor: &'static str,
    /// The wrapper holding a copy of it (`mdiobus_read`).
    pub wrapper: &'static str,
}

impl Inlined {
    /// `accessor`, inlined into its locked wrapper (its name without the leading `__`).
    fn of(accessor: &'static str) -> Self {
        Self {
            accessor,
            wrapper: accessor.trim_start_matches('_'),
        }
    }
}

/// The accessors of [`ACCESSORS`] whose wrapper, read through `text`, holds no call of or jump
/// to them. An accessor or wrapper not in `symbols`, or whose code cannot be read, is not
/// reported (nothing is known of it).
pub fn find(symbols: &TextSymbols, text: &mut impl KernelMemory, isa: Isa) -> Vec<Inlined> {
    let mut inlined = Vec::new();
    for (accessor, _, _) in ACCESSORS {
        let Inlined { accessor, wrapper } = Inlined::of(accessor);
        let (Some(callee), Some(caller)) = (symbols.function(accessor), symbols.function(wrapper))
        else {
            continue;
        };
        let Ok(code) = text.read(caller.address, (caller.end - caller.address) as usize) else {
            continue;
        };
        if !isa.branches_to(&code, caller.address, callee.address) {
            inlined.push(Inlined::of(accessor));
        }
    }
    inlined
}

/// The running kernel's inlined accessors and their copies' bus-op calls; an error if its
/// text cannot be read (kallsyms without addresses, neither `/proc/kcore` nor BPF allowed).
pub fn survey(btf: &KernelBtf, kernel: &Snapshot) -> Result<Survey> {
    survey_at(&Layout::mii_bus(btf, &BUS_OPS), kernel)
}

/// The kind of the survey's cache entries.
pub const CACHED: &str = "mdio-inlining";

/// A survey as the cache keeps it: the inlined accessors by their index in [`ACCESSORS`].
#[derive(Serialize, Deserialize)]
struct Kept {
    inlined: Vec<usize>,
    sites: Vec<OpSite>,
}

/// [`survey_at`], or this boot's survey kept in `cache`; keeps a survey there unless another
/// tracer's kprobes may have hidden a call from it. With the survey, what was wrong with a
/// damaged entry it replaced.
fn survey_cached(
    layout: &Layout,
    cache: Option<&Path>,
    kernel: &Snapshot,
) -> Result<(Survey, Option<String>)> {
    let (place, lookup) = cache::lookup(cache, layout, cached);
    if let cache::Lookup::Hit(survey) = lookup {
        return Ok((survey, None));
    }
    let (inlined, sites) = survey_at(layout, kernel)?;
    if let Some((dir, key)) = &place
        && kernel.probed().is_empty()
    {
        let kept = Kept {
            inlined: inlined
                .iter()
                .filter_map(|i| ACCESSORS.iter().position(|(a, _, _)| *a == i.accessor))
                .collect(),
            sites: sites.clone(),
        };
        // A cache that cannot be written costs the next session the survey, nothing else.
        let _ = cache::write(dir, key, CACHED, &kept);
    }
    Ok(((inlined, sites), lookup.damage_note()))
}

/// The survey kept in `dir` for `key`, each index in it checked.
pub fn cached(dir: &Path, key: &cache::Key) -> cache::Lookup<Survey> {
    match cache::read(dir, key, CACHED, Kept::check) {
        cache::Lookup::Hit(kept) => {
            let inlined = kept
                .inlined
                .iter()
                .map(|&index| Inlined::of(ACCESSORS[index].0))
                .collect();
            cache::Lookup::Hit((inlined, kept.sites))
        }
        cache::Lookup::Miss => cache::Lookup::Miss,
        cache::Lookup::Damaged(why) => cache::Lookup::Damaged(why),
    }
}

impl Kept {
    /// Whether every accessor it names is one of [`ACCESSORS`], and every site returns after
    /// its call; why not.
    fn check(&mut self) -> Result<(), String> {
        let known = |index: usize| {
            (index < ACCESSORS.len())
                .then_some(())
                .ok_or_else(|| format!("accessor {index}, of {}", ACCESSORS.len()))
        };
        for &index in &self.inlined {
            known(index)?;
        }
        for site in &self.sites {
            known(site.accessor)?;
            if site.ret <= site.call {
                return Err(format!(
                    "{}+{:#x} returns before its call",
                    site.function, site.call
                ));
            }
        }
        Ok(())
    }
}

/// [`survey`], the bus ops at `layout`.
fn survey_at(layout: &Layout, kernel: &Snapshot) -> Result<Survey> {
    let symbols = kernel.functions()?;
    let mut text = kernel.text()?;
    let inlined = find(&symbols, &mut text, Isa::native());
    let sites = op_sites(&symbols, &mut text, Isa::native(), layout);
    Ok((inlined, sites))
}

/// What is missing when the kernel's code could not be read (`err`).
pub fn unchecked(err: &anyhow::Error) -> String {
    format!(
        "whether this kernel's compiler inlined the MDIO accessors into their wrappers could not \
         be checked ({err:#}): accesses made through such copies would be missed"
    )
}

/// The functions holding `sites`, each once, in order.
pub fn functions(sites: &[OpSite]) -> String {
    let mut functions: Vec<&str> = sites.iter().map(|s| s.function.as_str()).collect();
    functions.dedup();
    functions.join(", ")
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
    use std::{collections::BTreeMap, io};

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
        assert!(Isa::Aarch64.branches_to(&code, 0x1000, 0x1100));
        assert!(Isa::Aarch64.branches_to(&code, 0x1000, 0x1004 - 0x800));
        assert!(!Isa::Aarch64.branches_to(&code, 0x1000, 0x1104));
    }
    /// `mdiobus_read` of our 7.3 (clang 19) at 0xffffffff813995b0: `__mdiobus_read` inlined.
    const MDIOBUS_READ_73: &[&str] = &[
        "0f1f44000055415741564154534189d44189f74989fe488d9f800400004889dfe80bcf1700bdfaffffff4183ff1f0f8f",
        "83000000498b46584885c074414c89f74489fe4489e2ffd089c5833d07e29500007f394963cf48c1e105498d040e4805",
        "800000006548ff05f4f9c20049ff840e8000000085ed783148ff4018eb2fbda1ffffff833dcee19500007ec7410fb6d7",
        "440fb7c54c89f7be010000004489e14189e9e879090000ebaa48ff40086548ff0dabf9c20074134889dfe8a1ce170089",
        "e85b415c415e415f5dc3e861ccc6ffebe66666666666662e0f1f840000000000",
    ];
    /// `mdiobus_read` of our 6.12 (clang 19) at 0xffffffff81322090: calls `__mdiobus_read`.
    const MDIOBUS_READ_612: &[&str] = &[
        "0f1f44000055415741565389d389f54989fe4c8dbf800400004c89ffe80f7716004c89f789ee89dae8d3fbffff89c34c",
        "89ffe82977160089d85b415e415f5dc3",
    ];
    /// `__mdiobus_modify_changed` of our 7.3 at 0xffffffff813991c0: a read and a write inlined.
    const MODIFY_CHANGED_73: &[&str] = &[
        "0f1f440000b8faffffff83fe1f0f8f5e0100005541574156415541545389d389f54989fe488b47584885c0744b4c89f7",
        "89ee89da4589c74189ccffd04489e14589f8833dffe59500007f3b4863d548c1e2054d8d24164981c4800000006548ff",
        "05ebfdc20049ff84168000000085c0784649ff442418eb44b8a1ffffff833dc4e59500007ec5400fb6d5440fb7c84c89",
        "f7be010000004189cf89d94589c44589c84189c14189c5e8640d00004489f94489e84589e0eb9449ff4424086548ff0d",
        "8cfdc2000f84a800000085c00f88950000000fb7c9f7d121c1450fb7e84109cd4139c5b800000000747d498b46604885",
        "c07431410fb7cd4c89f789ee89daffd04189c7833d3ee59500007f276548ff053cfdc20049ff04244585ff782f49ff44",
        "2410eb2d41bfa1ffffff833d17e59500007ed9450fb7c5400fb6d54c89f731f689d94589f9e8c60c0000ebc049ff4424",
        "086548ff0df7fcc20074264585ffb801000000410f48c75b415c415d415e415f5dc3e8a9cfc6ff85c00f8953ffffffeb",
        "e6e89acfc6ffebd30f1f840000000000",
    ];

    fn bytes(hex: &[&str]) -> Vec<u8> {
        let hex = hex.concat();
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// `mii_bus.read`, `.write`, `.read_c45`, `.write_c45` in both kernels' BTF.
    fn layout() -> Layout {
        Layout {
            names: &BUS_OPS,
            ops: vec![Some(0x58), Some(0x60), Some(0x68), Some(0x70)],
            holders: Vec::new(),
            marker: None,
            first_argument: None,
        }
    }

    /// (op, call, return) of the bus-op calls the search finds in `code` at `address`.
    fn op_calls(code: &[u8], address: u64, thunks: &BTreeMap<u64, u32>) -> Vec<(usize, u32, u32)> {
        Isa::X86_64
            .scan(code, address, &layout(), thunks)
            .into_iter()
            .filter_map(|found| match found.ret {
                Return::After(ret) => Some((usize::from(found.op), found.offset, ret)),
                Return::Tail => None,
            })
            .collect()
    }

    #[test]
    fn the_bus_op_calls_of_inlined_copies_are_found_in_73s_code() {
        let none = BTreeMap::new();
        let read = bytes(MDIOBUS_READ_73);
        assert_eq!(
            op_calls(&read, 0xffffffff813995b0, &none),
            [(0, 0x46, 0x48)]
        );
        let modify = bytes(MODIFY_CHANGED_73);
        assert_eq!(
            op_calls(&modify, 0xffffffff813991c0, &none),
            [(0, 0x3a, 0x3c), (1, 0xfe, 0x100)]
        );
        // 6.12's wrapper calls the accessor: no op call of its own.
        let read = bytes(MDIOBUS_READ_612);
        assert_eq!(op_calls(&read, 0xffffffff81322090, &none), []);
    }

    #[test]
    fn a_retpoline_call_of_a_loaded_op_is_a_site() {
        // mov 0x60(%rdi),%r11; call __x86_indirect_thunk_r11; mov %eax,%ebx
        let thunk = 0xffffffff81200000u64;
        let code = [
            &[0x4c, 0x8b, 0x5f, 0x60][..],
            &call(0xffffffff81001004, thunk),
            &[0x89, 0xc3],
        ]
        .concat();
        let thunks = BTreeMap::from([(
            thunk,
            crate::kernel::code::x86::pt_regs_offset(iced_x86::Register::R11).unwrap(),
        )]);
        assert_eq!(op_calls(&code, 0xffffffff81001000, &thunks), [(1, 4, 9)]);
        // The register overwritten between the load and the call: no site.
        let code = [
            &[0x4c, 0x8b, 0x5f, 0x60, 0x4d, 0x31, 0xdb][..], // …; xor %r11,%r11
            &call(0xffffffff81001007, thunk),
        ]
        .concat();
        assert_eq!(op_calls(&code, 0xffffffff81001000, &thunks), []);
    }

    #[test]
    fn a_kept_survey_naming_an_unknown_accessor_is_refused() {
        let site = OpSite {
            function: "mdiobus_read".to_owned(),
            call: 4,
            ret: 6,
            accessor: 3,
        };
        let mut kept = Kept {
            inlined: vec![0, 3],
            sites: vec![site.clone()],
        };
        assert_eq!(kept.check(), Ok(()));
        kept.inlined.push(4);
        assert_eq!(kept.check(), Err("accessor 4, of 4".to_owned()));
        kept.inlined.pop();
        kept.sites.push(OpSite {
            accessor: usize::MAX,
            ..site.clone()
        });
        assert!(kept.check().is_err());
        kept.sites = vec![OpSite { ret: 4, ..site }];
        assert_eq!(
            kept.check(),
            Err("mdiobus_read+0x4 returns before its call".to_owned())
        );
    }

    #[test]
    fn op_sites_skip_the_accessors_and_other_functions() {
        let symbols = TextSymbols::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81001000 T __mdiobus_read\n\
             ffffffff81001100 T mdiobus_read\n\
             ffffffff81001200 T other_function\n\
             ffffffff81001300 T _etext\n",
        );
        // The same op call in all three.
        let code = vec![0x48, 0x8b, 0x47, 0x58, 0xff, 0xd0, 0xc3];
        let mut text = Text(vec![
            (0xffffffff81001000, code.clone()),
            (0xffffffff81001100, code.clone()),
            (0xffffffff81001200, code),
        ]);
        assert_eq!(
            op_sites(&symbols, &mut text, Isa::X86_64, &layout()),
            [OpSite {
                function: "mdiobus_read".to_owned(),
                call: 4,
                ret: 6,
                accessor: 0
            }]
        );
        // arm64: ldr x8, [x0, #0x58]; blr x8; ret.
        let code: Vec<u8> = [0xf940_2c08u32, 0xd63f_0100, 0xd65f_03c0]
            .iter()
            .flat_map(|word| word.to_le_bytes())
            .collect();
        let mut text = Text(vec![(0xffffffff81001100, code)]);
        assert_eq!(
            op_sites(&symbols, &mut text, Isa::Aarch64, &layout()),
            [OpSite {
                function: "mdiobus_read".to_owned(),
                call: 4,
                ret: 8,
                accessor: 0
            }]
        );
    }
}
