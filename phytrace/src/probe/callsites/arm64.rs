//! arm64: call sites in decoded code (yaxpeax-arm).
//!
//! phylib calls an op as `ldr xD, [xP, #OFF_DRV]; ldr xT, [xD, #OFF_OP]; blr xT`; a `br` instead
//! of the `blr` is a tail call.

use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, ShiftStyle, SizeCode};

use super::{Found, Layout, Return, Target, flow::Flow};

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
        let (Some(reg), Some(op)) = (pt_regs_offset(target), function.op_call(at, target, layout))
        else {
            continue;
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
            // Not proven on arm64 yet: sites checked through their holder are not armed.
            owner: None,
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
    /// loaded from a `phy_device`, on every path to it.
    fn op_call(&self, at: usize, target: u16, layout: &Layout) -> Option<u16> {
        let mut op = None;
        for def in self.writes_of(at, target)? {
            let (driver, offset) = load(self.instructions[def].as_ref()?)?;
            let this = layout.op_at(offset)?;
            if op.is_some_and(|op| op != this) || !self.holds_ops(def, driver, layout, 4) {
                return None;
            }
            op = Some(this);
        }
        op
    }

    /// Whether `xN` holds an ops struct (a PHY's driver) at `at` on every path, loaded from
    /// its holder (copied at most `copies` times).
    fn holds_ops(&self, at: usize, reg: u16, layout: &Layout, copies: u32) -> bool {
        let Some(defs) = self.writes_of(at, reg) else {
            return false;
        };
        defs.into_iter().all(|def| {
            let Some(instruction) = self.instructions[def].as_ref() else {
                return false;
            };
            if let Some((_, offset)) = load(instruction) {
                return layout.loads_ops(offset);
            }
            copies > 0
                && copied_from(instruction)
                    .is_some_and(|from| self.holds_ops(def, from, layout, copies - 1))
        })
    }
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

/// `ldr xT, [xB, #OFF]`: the base register and the offset.
fn load(instruction: &Instruction) -> Option<(u16, i64)> {
    match (
        instruction.opcode,
        instruction.operands[0],
        instruction.operands[1],
    ) {
        (
            Opcode::LDR,
            Operand::Register(SizeCode::X, _),
            Operand::RegPreIndex(base, offset, false),
        ) if base < 31 => Some((base, i64::from(offset))),
        _ => None,
    }
}

/// The registers `instruction` writes, as bits: its first operand (unless it is a store or a
/// compare-and-branch), a pair load's second, and what a call clobbers (`x0`–`x18`, `x30`).
fn written(instruction: &Instruction) -> u32 {
    const CALL_CLOBBERED: u32 = ((1 << 19) - 1) | (1 << 30);
    let bit = |operand: Operand| match operand {
        Operand::Register(_, reg) if reg < 31 => 1 << reg,
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
    fn a_call_clobbered_by_a_call_is_not_a_site() {
        // ldr x8, [x19, #0x250]; ldr x1, [x8, #0xc8]; bl .; blr x1
        let code = code(&[0xf9412a68, 0xf9406501, 0x94000000, 0xd63f0020]);
        assert!(scan(&code, &layout()).is_empty());
    }
}
