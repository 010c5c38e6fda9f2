//! arm64: call sites in decoded code (yaxpeax-arm).
//!
//! phylib calls an op as `ldr xD, [xP, #OFF_DRV]; ldr xT, [xD, #OFF_OP]; blr xT`; a `br` instead
//! of the `blr` is a tail call.

use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, ShiftStyle, SizeCode};

use super::{Found, Layout, Return, Target};

/// How far back from a call the load of its target and driver is looked for.
const LOOKBACK: usize = 48;

/// Byte offset of `xN` in `struct pt_regs` (`regs[N]`).
fn pt_regs_offset(reg: u16) -> Option<u32> {
    (reg < 31).then_some(u32::from(reg) * 8)
}

/// Whether `code` has a 64-bit `ldr`/`str` at the offset of `phy_device.drv`.
pub fn may_touch_driver(code: &[u8], layout: &Layout) -> bool {
    code.chunks_exact(4).any(|word| {
        let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let load_or_store = word & 0xffc0_0000 == 0xf940_0000 || word & 0xffc0_0000 == 0xf900_0000;
        load_or_store && ((word >> 10) & 0xfff) * 8 == layout.bound_driver
    })
}

/// The call sites in `code`, one function's.
pub fn scan(code: &[u8], layout: &Layout) -> Vec<Found> {
    let decoder = InstDecoder::default();
    let instructions: Vec<Option<Instruction>> = code
        .chunks_exact(4)
        .map(|word| decoder.decode(&mut U8Reader::new(word)).ok())
        .collect();
    let mut found = Vec::new();
    for (index, call) in instructions.iter().enumerate() {
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
        let Some(op) = op_call(&instructions[..index], target, layout) else {
            continue;
        };
        let offset = (index * 4) as u32;
        found.push(Found {
            offset,
            op,
            target: Target::Register(pt_regs_offset(target).unwrap_or_default()),
            ret: if tail {
                Return::Tail
            } else {
                Return::After(offset + 4)
            },
        });
    }
    found
}

/// The op a call through `xN` calls, if its target was loaded from a driver loaded from a
/// `phy_device`.
fn op_call(before: &[Option<Instruction>], target: u16, layout: &Layout) -> Option<u16> {
    pt_regs_offset(target)?;
    let at = last_write(before, target)?;
    let (driver, offset) = load(before[at].as_ref()?)?;
    let op = layout.op_at(offset)?;
    loaded_driver(&before[..at], driver, layout).then_some(op)
}

/// Whether `xN` holds a PHY's driver at the end of `before`.
fn loaded_driver(mut before: &[Option<Instruction>], mut reg: u16, layout: &Layout) -> bool {
    for _ in 0..4 {
        let Some(at) = last_write(before, reg) else {
            return false;
        };
        let Some(instruction) = before[at].as_ref() else {
            return false;
        };
        if let Some((_, offset)) = load(instruction) {
            return layout.loads_driver(offset);
        }
        match copied_from(instruction) {
            Some(from) => reg = from,
            None => return false,
        }
        before = &before[..at];
    }
    false
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

/// Whether `instruction` writes `xN`.
fn writes(instruction: &Instruction, reg: u16) -> bool {
    if matches!(
        instruction.opcode,
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
    ) {
        return false;
    }
    let names = |operand: Operand| matches!(operand, Operand::Register(_, r) if r == reg);
    names(instruction.operands[0])
        || (instruction.opcode == Opcode::LDP && names(instruction.operands[1]))
        || matches!(instruction.opcode, Opcode::BL | Opcode::BLR) && reg <= 18
}

/// The index of the last of `before` (at most [`LOOKBACK`] back) that writes `xN`; an
/// undecodable word stops the search.
fn last_write(before: &[Option<Instruction>], reg: u16) -> Option<usize> {
    let start = before.len().saturating_sub(LOOKBACK);
    for at in (start..before.len()).rev() {
        let instruction = before[at].as_ref()?;
        if writes(instruction, reg) {
            return Some(at);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let mut ops = vec![None; super::super::OPS.len()];
        ops[2] = Some(0xc8); // soft_reset
        Layout {
            ops,
            bound_driver: 0x250,
            device_driver: 0xa8,
        }
    }

    fn code(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn phy_init_hw_calls_soft_reset() {
        // ldr x8, [x19, #0x250]; cbz x8, .+8; ldr x8, [x8, #0xc8]; mov x0, x19; blr x8;
        // mov w20, w0
        let code = code(&[
            0xf9412a68, 0xb4000048, 0xf9406508, 0xaa1303e0, 0xd63f0100, 0x2a0003f4,
        ]);
        assert!(may_touch_driver(&code, &layout()));
        assert_eq!(
            scan(&code, &layout()),
            [Found {
                offset: 16,
                op: 2,
                target: Target::Register(64),
                ret: Return::After(20)
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
                ret: Return::Tail
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
