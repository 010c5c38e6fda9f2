//! arm64: call sites in decoded code (yaxpeax-arm).
//!
//! phylib calls an op as `ldr xD, [xP, #OFF_DRV]; ldr xT, [xD, #OFF_OP]; blr xT`; a `br` instead
//! of the `blr` is a tail call. phylink loads `pl->mac_ops` and `pl->config` with one `ldp`, or
//! from addresses it computes with a `sub` from a pointer into `struct phylink`
//! (`phylink_resolve`'s work item): both are read as loads from that pointer.

use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, ShiftStyle, SizeCode};

use super::{Found, Layout, Owner, Return, Target, flow::Flow};

/// Byte offset of `xN` in `struct pt_regs` (`regs[N]`).
fn pt_regs_offset(reg: u16) -> Option<u32> {
    (reg < 31).then_some(u32::from(reg) * 8)
}

/// Whether `code` has a 64-bit `ldr`/`str` at offset `marker` (`phy_device.drv`).
pub fn may_touch(code: &[u8], marker: u32) -> bool {
    code.chunks_exact(4).any(|word| {
        let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let load_or_store = word & 0xffc0_0000 == 0xf940_0000 || word & 0xffc0_0000 == 0xf900_0000;
        load_or_store && ((word >> 10) & 0xfff) * 8 == marker
    })
}

/// Whether `code`, a function at `address`, holds a direct call of or jump to `target` (`bl`,
/// `b`).
pub fn branches_to(code: &[u8], address: u64, target: u64) -> bool {
    let decoder = InstDecoder::default();
    code.chunks_exact(4).enumerate().any(|(at, word)| {
        let Ok(instruction) = decoder.decode(&mut U8Reader::new(word)) else {
            return false;
        };
        let (Opcode::B | Opcode::BL, Operand::PCOffset(offset)) =
            (instruction.opcode, instruction.operands[0])
        else {
            return false;
        };
        (address + (at * 4) as u64).wrapping_add_signed(offset) == target
    })
}

/// The call sites in `code`, one function's.
pub fn scan(code: &[u8], layout: &Layout) -> Vec<Found> {
    let function = Function::decode(code);
    let mut found = Vec::new();
    for (at, call) in function.instructions.iter().enumerate() {
        let Some(call) = call else {
            continue;
        };
        let tail = match call.opcode {
            Opcode::BLR => false,
            Opcode::BR => true,
            _ => continue,
        };
        let Operand::Register(SizeCode::X, target) = call.operands[0] else {
            continue;
        };
        let (Some(reg), Some((op, holders))) =
            (pt_regs_offset(target), function.op_call(at, target, layout))
        else {
            continue;
        };
        let owner = match layout.first_argument {
            None => None,
            Some(from_ops) => match function.owner(at, &holders) {
                Some(owner) if !function.passes_first(at, owner, from_ops) => continue,
                owner => owner,
            },
        };
        let offset = (at * 4) as u32;
        found.push(Found {
            offset,
            op,
            target: Target::Register(reg),
            ret: if tail {
                Return::Tail
            } else {
                Return::After(offset + 4)
            },
            owner,
        });
    }
    found
}

/// One function's instructions (`None`: a word that does not decode), the registers each
/// writes, and its control flow.
struct Function {
    instructions: Vec<Option<Instruction>>,
    /// Bit `n`: the instruction writes `xN` (or `wN`).
    writes: Vec<u32>,
    flow: Flow,
}

impl Function {
    fn decode(code: &[u8]) -> Self {
        let decoder = InstDecoder::default();
        let instructions: Vec<Option<Instruction>> = code
            .chunks_exact(4)
            .map(|word| decoder.decode(&mut U8Reader::new(word)).ok())
            .collect();
        let writes = instructions
            .iter()
            .map(|instruction| instruction.as_ref().map_or(0, written))
            .collect();
        let flow = Flow::new(instructions.len(), |at| {
            let Some(instruction) = &instructions[at] else {
                return Vec::new();
            };
            let target = || {
                instruction
                    .operands
                    .iter()
                    .find_map(|operand| match operand {
                        Operand::PCOffset(offset) => usize::try_from((at * 4) as i64 + offset)
                            .ok()
                            .map(|byte| byte / 4),
                        _ => None,
                    })
            };
            match instruction.opcode {
                Opcode::B => target().into_iter().collect(),
                Opcode::Bcc(_) | Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ => {
                    [Some(at + 1), target()].into_iter().flatten().collect()
                }
                Opcode::BR | Opcode::RET | Opcode::BRK => Vec::new(),
                _ => vec![at + 1],
            }
        });
        Self {
            instructions,
            writes,
            flow,
        }
    }

    /// The instructions whose writes of `xN` reach instruction `at`.
    fn writes_of(&self, at: usize, reg: u16) -> Option<Vec<usize>> {
        let bit = 1u32.checked_shl(u32::from(reg)).filter(|_| reg < 31)?;
        self.flow.reaching(at, |i| self.writes[i] & bit != 0)
    }

    /// The op a call through `xN` at `at` calls, if its target was loaded from a driver
    /// loaded from a `phy_device` (an ops struct from its holder), on every path to it; and
    /// the loads of the ops struct from its holder.
    fn op_call(&self, at: usize, target: u16, layout: &Layout) -> Option<(u16, Vec<Loaded>)> {
        let mut op = None;
        let mut holders = Vec::new();
        for def in self.writes_of(at, target)? {
            let loaded = self.loaded(def, target)?;
            let this = layout.op_at(loaded.offset)?;
            if op.is_some_and(|op| op != this)
                || !self.holds_ops(loaded.origin, loaded.base, layout, 4, &mut holders)
            {
                return None;
            }
            op = Some(this);
        }
        op.map(|op| (op, holders))
    }

    /// Whether `xN` holds an ops struct (a PHY's driver) at `at` on every path, loaded from
    /// its holder (copied at most `copies` times); the loads go to `holders`. Where the ops
    /// are the holder's own fields ([`Layout::holders`] empty), any register holds them.
    fn holds_ops(
        &self,
        at: usize,
        reg: u16,
        layout: &Layout,
        copies: u32,
        holders: &mut Vec<Loaded>,
    ) -> bool {
        if layout.holders.is_empty() {
            return true;
        }
        let Some(defs) = self.writes_of(at, reg) else {
            return false;
        };
        defs.into_iter().all(|def| {
            if let Some(loaded) = self.loaded(def, reg) {
                holders.push(loaded);
                return layout.loads_ops(loaded.offset);
            }
            copies > 0
                && self.instructions[def]
                    .as_ref()
                    .and_then(copied_from)
                    .is_some_and(|from| self.holds_ops(def, from, layout, copies - 1, holders))
        })
    }

    /// Where the load at `def` that wrote `xN` read from: `ldr`/`ldur xN, [xB, #OFF]`, or
    /// either register of an `ldp` (the second 8 bytes further), with a base computed by an
    /// `add`/`sub` folded in ([`Self::folded`]).
    fn loaded(&self, def: usize, reg: u16) -> Option<Loaded> {
        let instruction = self.instructions[def].as_ref()?;
        let (base, offset) = match (instruction.opcode, instruction.operands) {
            (
                Opcode::LDR | Opcode::LDUR,
                [
                    Operand::Register(SizeCode::X, to),
                    Operand::RegPreIndex(base, offset, false),
                    ..,
                ],
            ) if to == reg => (base, i64::from(offset)),
            (
                Opcode::LDP,
                [
                    Operand::Register(SizeCode::X, first),
                    Operand::Register(SizeCode::X, second),
                    Operand::RegPreIndex(base, offset, false),
                    ..,
                ],
            ) if first == reg || second == reg => {
                (base, i64::from(offset) + if second == reg { 8 } else { 0 })
            }
            _ => return None,
        };
        (base < 31).then(|| self.folded(def, base, offset))
    }

    /// `xB + offset` at `at`, expressed from `xS` if `xB` was computed there by one `add` or
    /// `sub xB, xS, #IMM` and `xS` keeps its value from that instruction to `at`.
    fn folded(&self, at: usize, base: u16, offset: i64) -> Loaded {
        let plain = Loaded {
            base,
            offset,
            origin: at,
        };
        let Some(defs) = self.writes_of(at, base) else {
            return plain;
        };
        let [def] = defs[..] else {
            return plain;
        };
        let Some(instruction) = self.instructions[def].as_ref() else {
            return plain;
        };
        let (from, immediate) = match (instruction.opcode, instruction.operands) {
            (
                opcode @ (Opcode::ADD | Opcode::SUB),
                [
                    Operand::RegisterOrSP(SizeCode::X, to),
                    Operand::RegisterOrSP(SizeCode::X, from),
                    Operand::Immediate(immediate),
                    Operand::Nothing,
                ],
            ) if to == base => (
                from,
                if opcode == Opcode::SUB {
                    -i64::from(immediate)
                } else {
                    i64::from(immediate)
                },
            ),
            _ => return plain,
        };
        let kept = from < 31 && from != base && {
            let at_def = self.writes_of(def, from);
            at_def.is_some() && at_def == self.writes_of(at, from)
        };
        if !kept {
            return plain;
        }
        Loaded {
            base: from,
            offset: offset + immediate,
            origin: def,
        }
    }

    /// The holder at the call at `at`, if every load of its ops struct (`holders`) was made
    /// from one register at one offset, and that register holds at the call what it held at
    /// each of them.
    fn owner(&self, at: usize, holders: &[Loaded]) -> Option<Owner> {
        let first = holders.first()?;
        let at_call = self.writes_of(at, first.base)?;
        let kept = holders.iter().all(|loaded| {
            (loaded.base, loaded.offset) == (first.base, first.offset)
                && self.writes_of(loaded.origin, loaded.base).as_ref() == Some(&at_call)
        });
        kept.then_some(Owner {
            register: pt_regs_offset(first.base)?,
            displacement: i32::try_from(first.offset).ok()?,
        })
    }

    /// Whether the call at `at` is passed first (`x0`) what was loaded from its holder `owner`
    /// at `from_ops` past the ops struct's pointer, with the holder's register holding at each
    /// such load what it holds at the call.
    fn passes_first(&self, at: usize, owner: Owner, from_ops: i64) -> bool {
        let base = (owner.register / 8) as u16;
        let place = (base, i64::from(owner.displacement) + from_ops);
        let base_at_call = self.writes_of(at, base);
        self.writes_of(at, 0).is_some_and(|defs| {
            defs.iter().all(|&def| {
                self.loaded(def, 0).is_some_and(|loaded| {
                    (loaded.base, loaded.offset) == place
                        && self.writes_of(loaded.origin, base) == base_at_call
                })
            })
        })
    }
}

/// Where a register's value was loaded from: `base + offset`, `base` holding the value it held
/// at instruction `origin` (the load, or the `add`/`sub` that computed its address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Loaded {
    base: u16,
    offset: i64,
    origin: usize,
}

/// `mov xD, xS` (`orr xD, xzr, xS`): the source register.
fn copied_from(instruction: &Instruction) -> Option<u16> {
    match (
        instruction.opcode,
        instruction.operands[1],
        instruction.operands[2],
    ) {
        (
            Opcode::ORR,
            Operand::Register(SizeCode::X, 31),
            Operand::RegShift(ShiftStyle::LSL, 0, SizeCode::X, from),
        ) => Some(from),
        _ => None,
    }
}

/// The registers `instruction` writes, as bits: its first operand (unless it is a store or a
/// compare-and-branch), a pair load's second, and what a call clobbers (`x0`–`x18`, `x30`).
fn written(instruction: &Instruction) -> u32 {
    const CALL_CLOBBERED: u32 = ((1 << 19) - 1) | (1 << 30);
    let bit = |operand: Operand| match operand {
        Operand::Register(_, reg) | Operand::RegisterOrSP(_, reg) if reg < 31 => 1 << reg,
        _ => 0,
    };
    match instruction.opcode {
        Opcode::STR
        | Opcode::STRB
        | Opcode::STRH
        | Opcode::STUR
        | Opcode::STURB
        | Opcode::STURH
        | Opcode::STP
        | Opcode::STLR
        | Opcode::CBZ
        | Opcode::CBNZ
        | Opcode::TBZ
        | Opcode::TBNZ
        | Opcode::BR
        | Opcode::RET => 0,
        Opcode::BL | Opcode::BLR => CALL_CLOBBERED,
        Opcode::LDP => bit(instruction.operands[0]) | bit(instruction.operands[1]),
        _ => bit(instruction.operands[0]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let mut ops = vec![None; super::super::OPS.len()];
        ops[2] = Some(0xc8); // soft_reset
        Layout {
            names: &super::super::OPS,
            ops,
            holders: vec![0x250, 0xa8],
            marker: Some(0x250),
            first_argument: None,
        }
    }

    fn code(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn phy_init_hw_calls_soft_reset() {
        // ldr x8, [x19, #0x250]; ldr x8, [x8, #0xc8]; cbz x8, 1f; mov x0, x19; blr x8;
        // 1: mov w20, w0
        let code = code(&[
            0xf9412a68, 0xf9406508, 0xb4000068, 0xaa1303e0, 0xd63f0100, 0x2a0003f4,
        ]);
        assert!(may_touch(&code, 0x250));
        assert_eq!(
            scan(&code, &layout()),
            [Found {
                offset: 16,
                op: 2,
                target: Target::Register(64),
                ret: Return::After(20),
                owner: None,
            }]
        );
    }

    #[test]
    fn a_tail_call_and_a_driver_copied() {
        // ldr x9, [x0, #0x250]; mov x8, x9; ldr x1, [x8, #0xc8]; br x1
        let code = code(&[0xf9412809, 0xaa0903e8, 0xf9406501, 0xd61f0020]);
        assert_eq!(
            scan(&code, &layout()),
            [Found {
                offset: 12,
                op: 2,
                target: Target::Register(8),
                ret: Return::Tail,
                owner: None,
            }]
        );
    }

    #[test]
    fn a_driver_pointer_moved_by_an_add_is_no_driver() {
        // ldr x8, [x19, #0x250]; add x8, x8, #0x10; ldr x1, [x8, #0xc8]; blr x1
        let code = code(&[0xf9412a68, 0x91004108, 0xf9406501, 0xd63f0020]);
        assert!(scan(&code, &layout()).is_empty());
    }

    #[test]
    fn a_call_clobbered_by_a_call_is_not_a_site() {
        // ldr x8, [x19, #0x250]; ldr x1, [x8, #0xc8]; bl .; blr x1
        let code = code(&[0xf9412a68, 0xf9406501, 0x94000000, 0xd63f0020]);
        assert!(scan(&code, &layout()).is_empty());
    }
}

/// phylink's calls of MAC ops in the arm64 6.12 test kernel's `phylink.ko` (its `.text`, not
/// relocated: a `bl` out of the module branches to itself).
#[cfg(test)]
mod mac_tests {
    use super::*;
    use crate::kernel::code::phylink_6_12_layout as layout;

    fn code(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/data/callsites/{name}-6.12-aarch64.bin",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
    }

    /// A call through `x8` at `offset` of `op`, the holder `struct phylink` at `x19 +
    /// displacement` (`x19` is `regs[19]`, 152 bytes into `struct pt_regs`).
    fn site(offset: u32, op: u16, displacement: i32) -> Found {
        Found {
            offset,
            op,
            target: Target::Register(64),
            ret: Return::After(offset + 4),
            owner: Some(Owner {
                register: 152,
                displacement,
            }),
        }
    }

    #[test]
    fn mac_link_up_and_down_in_phylink_resolve_through_its_work_item() {
        // `sub x8, x19, #0x128; ldr x8, [x8]` loads `mac_ops`, `sub x22, x19, #0x120;
        // ldr x0, [x22]` the config: `pl` is `x19 - 0x130` (the work item) throughout.
        assert_eq!(
            scan(&code("phylink_resolve"), &layout()),
            [
                site(0xec, 1, -0x128),
                site(0x390, 1, -0x128),
                site(0x634, 0, -0x128)
            ]
        );
    }

    #[test]
    fn mac_link_down_with_mac_ops_and_config_from_one_ldp() {
        // ldp x8, x0, [x19, #0x8]; …; ldr x8, [x8, #0x28]; blr x8
        assert_eq!(
            scan(&code("phylink_link_down"), &layout()),
            [site(0x34, 1, 8)]
        );
        assert_eq!(scan(&code("phylink_resume"), &layout()), [site(0x90, 1, 8)]);
    }

    #[test]
    fn phylink_major_config_makes_no_mac_link_call() {
        assert_eq!(scan(&code("phylink_major_config"), &layout()), []);
    }

    fn words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn a_holder_overwritten_before_the_call_is_no_owner() {
        // mov x19, x0; ldp x8, x0, [x19, #0x8]; mov x19, x1; ldr x8, [x8, #0x28]; blr x8
        let found = scan(
            &words(&[0xaa0003f3, 0xa9408268, 0xaa0103f3, 0xf9401508, 0xd63f0100]),
            &layout(),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].owner, None);
    }

    #[test]
    fn a_call_not_passed_the_config_is_no_mac_site() {
        // mov x19, x0; ldr x8, [x19, #0x8]; ldr x0, [x19, #0x18]; ldr x8, [x8, #0x28]; blr x8
        let code = words(&[0xaa0003f3, 0xf9400668, 0xf9400e60, 0xf9401508, 0xd63f0100]);
        assert_eq!(scan(&code, &layout()), []);
    }
}
