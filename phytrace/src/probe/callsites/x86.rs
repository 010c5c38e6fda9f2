//! x86_64: call sites in decoded code (iced-x86).
//!
//! phylib calls an op as `mov OFF_DRV(%phydev),%drv; mov OFF_OP(%drv),%reg; call *%reg`,
//! through a retpoline thunk (`call __x86_indirect_thunk_REG`) on kernels built with them, or
//! `call *OFF_OP(%drv)`; a `jmp` instead of the `call` is a tail call.

use std::collections::BTreeMap;

use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess,
    OpKind, Register,
};
use memchr::memmem;

use super::{Found, Layout, Return, Target};

/// How far back from a call the load of its target and driver is looked for.
const LOOKBACK: usize = 48;

/// Byte offset of `reg` (a 64-bit general register) in `struct pt_regs`.
pub fn pt_regs_offset(reg: Register) -> Option<u32> {
    Some(match reg.full_register() {
        Register::R15 => 0,
        Register::R14 => 8,
        Register::R13 => 16,
        Register::R12 => 24,
        Register::RBP => 32,
        Register::RBX => 40,
        Register::R11 => 48,
        Register::R10 => 56,
        Register::R9 => 64,
        Register::R8 => 72,
        Register::RAX => 80,
        Register::RCX => 88,
        Register::RDX => 96,
        Register::RSI => 104,
        Register::RDI => 112,
        _ => return None,
    })
}

/// The register a retpoline thunk named `name` jumps through (`pt_regs` offset).
pub fn thunk_register(name: &str) -> Option<u32> {
    let reg = [
        "__x86_indirect_thunk_",
        "__x86_indirect_call_thunk_",
        "__x86_indirect_jump_thunk_",
        "__x86_indirect_its_thunk_",
    ]
    .iter()
    .find_map(|prefix| name.strip_prefix(prefix))?;
    let reg = match reg {
        "rax" => Register::RAX,
        "rbx" => Register::RBX,
        "rcx" => Register::RCX,
        "rdx" => Register::RDX,
        "rsi" => Register::RSI,
        "rdi" => Register::RDI,
        "rbp" => Register::RBP,
        "r8" => Register::R8,
        "r9" => Register::R9,
        "r10" => Register::R10,
        "r11" => Register::R11,
        "r12" => Register::R12,
        "r13" => Register::R13,
        "r14" => Register::R14,
        "r15" => Register::R15,
        _ => return None,
    };
    pt_regs_offset(reg)
}

/// Whether `code` holds the 32-bit displacement of `phy_device.drv` (past the first 128 bytes
/// of `struct phy_device`; were it not, every function is decoded).
pub fn may_touch_driver(code: &[u8], layout: &Layout) -> bool {
    layout.bound_driver < 0x80 || memmem::find(code, &layout.bound_driver.to_le_bytes()).is_some()
}

/// The call sites in `code`, a function at `address`; `thunks` maps retpoline thunks to the
/// register they call through.
pub fn scan(code: &[u8], address: u64, layout: &Layout, thunks: &BTreeMap<u64, u32>) -> Vec<Found> {
    let instructions: Vec<Instruction> = Decoder::with_ip(64, code, address, DecoderOptions::NONE)
        .into_iter()
        .collect();
    let mut info = InstructionInfoFactory::new();
    let mut found = Vec::new();
    for (index, call) in instructions.iter().enumerate() {
        let Some((via, tail)) = indirect_call(call, thunks) else {
            continue;
        };
        let Some((op, target)) = op_call(&instructions[..index], via, layout, &mut info) else {
            continue;
        };
        found.push(Found {
            offset: (call.ip() - address) as u32,
            op,
            target,
            ret: if tail {
                Return::Tail
            } else {
                Return::After((call.next_ip() - address) as u32)
            },
        });
    }
    found
}

/// How an indirect call or jump gets its target.
#[derive(Clone, Copy)]
enum Via {
    Register(Register),
    Memory { base: Register, displacement: i64 },
}

/// `call` is an indirect call (or a jump: `true`), through what.
fn indirect_call(call: &Instruction, thunks: &BTreeMap<u64, u32>) -> Option<(Via, bool)> {
    let tail = match call.flow_control() {
        FlowControl::Call | FlowControl::IndirectCall => false,
        FlowControl::UnconditionalBranch | FlowControl::IndirectBranch => true,
        _ => return None,
    };
    let via = match call.op0_kind() {
        OpKind::Register => Via::Register(call.op0_register()),
        OpKind::Memory
            if call.memory_index() == Register::None
                && call.memory_base().is_gpr64()
                && call.memory_base() != Register::RSP =>
        {
            Via::Memory {
                base: call.memory_base(),
                displacement: call.memory_displacement64() as i64,
            }
        }
        OpKind::NearBranch64 => {
            let offset = *thunks.get(&call.near_branch_target())?;
            Via::Register(register_at(offset)?)
        }
        _ => return None,
    };
    Some((via, tail))
}

/// The 64-bit register at `pt_regs` offset `offset`.
fn register_at(offset: u32) -> Option<Register> {
    (0..16)
        .map(|n| Register::RAX + n)
        .find(|&reg| pt_regs_offset(reg) == Some(offset))
}

/// The op a call through `via` calls, if its target was loaded from a `struct phy_driver` that
/// was loaded from a `phy_device` (`before` are the instructions before the call).
fn op_call(
    before: &[Instruction],
    via: Via,
    layout: &Layout,
    info: &mut InstructionInfoFactory,
) -> Option<(u16, Target)> {
    let (driver_reg, displacement, target, load_at) = match via {
        Via::Register(reg) => {
            let at = last_write(before, reg, info)?;
            let (base, displacement) = load(&before[at])?;
            (
                base,
                displacement,
                Target::Register(pt_regs_offset(reg)?),
                at,
            )
        }
        Via::Memory { base, displacement } => (
            base,
            displacement,
            Target::Memory(pt_regs_offset(base)?),
            before.len(),
        ),
    };
    let op = layout.op_at(displacement)?;
    loaded_driver(&before[..load_at], driver_reg, layout, info).then_some((op, target))
}

/// Whether `reg` holds a PHY's driver at the end of `before`: loaded from `phy_device.drv` or
/// the device's driver, possibly copied through other registers.
fn loaded_driver(
    mut before: &[Instruction],
    mut reg: Register,
    layout: &Layout,
    info: &mut InstructionInfoFactory,
) -> bool {
    for _ in 0..4 {
        let Some(at) = last_write(before, reg, info) else {
            return false;
        };
        let instruction = &before[at];
        if let Some((_, displacement)) = load(instruction) {
            return layout.loads_driver(displacement);
        }
        if instruction.code() != Code::Mov_r64_rm64 && instruction.code() != Code::Mov_rm64_r64 {
            return false;
        }
        if instruction.op1_kind() != OpKind::Register {
            return false;
        }
        reg = instruction.op1_register();
        before = &before[..at];
    }
    false
}

/// `mov OFF(%base),%reg`: the base register and the offset.
fn load(instruction: &Instruction) -> Option<(Register, i64)> {
    (instruction.code() == Code::Mov_r64_rm64
        && instruction.op1_kind() == OpKind::Memory
        && instruction.memory_index() == Register::None
        && instruction.memory_base().is_gpr64()
        && instruction.memory_base() != Register::RIP)
        .then(|| {
            (
                instruction.memory_base(),
                instruction.memory_displacement64() as i64,
            )
        })
}

/// The index of the last of `before` (at most [`LOOKBACK`] back) that writes `reg`.
fn last_write(
    before: &[Instruction],
    reg: Register,
    info: &mut InstructionInfoFactory,
) -> Option<usize> {
    let full = reg.full_register();
    let start = before.len().saturating_sub(LOOKBACK);
    (start..before.len()).rev().find(|&at| {
        info.info(&before[at]).used_registers().iter().any(|used| {
            used.register().full_register() == full
                && matches!(
                    used.access(),
                    OpAccess::Write
                        | OpAccess::ReadWrite
                        | OpAccess::CondWrite
                        | OpAccess::ReadCondWrite
                )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let mut ops = vec![None; super::super::OPS.len()];
        ops[2] = Some(0xd0); // soft_reset
        ops[10] = Some(0x1a0); // link_change_notify
        Layout {
            ops,
            bound_driver: 0x360,
            device_driver: 0x68 + 0x40,
        }
    }

    const BASE: u64 = 0xffff_ffff_8110_0000;

    #[test]
    fn a_register_call_after_the_two_loads() {
        // mov 0x360(%rbx),%rax; test %rax,%rax; mov 0xd0(%rax),%rax; mov %rbx,%rdi;
        // call *%rax; test %eax,%eax
        let code = [
            0x48, 0x8b, 0x83, 0x60, 0x03, 0x00, 0x00, 0x48, 0x85, 0xc0, 0x48, 0x8b, 0x80, 0xd0,
            0x00, 0x00, 0x00, 0x48, 0x89, 0xdf, 0xff, 0xd0, 0x85, 0xc0,
        ];
        assert!(may_touch_driver(&code, &layout()));
        let found = scan(&code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(
            found,
            [Found {
                offset: 20,
                op: 2,
                target: Target::Register(80),
                ret: Return::After(22),
            }]
        );
    }

    #[test]
    fn a_retpoline_thunk_call_and_a_tail_jump() {
        let thunk = BASE + 0x1000;
        let thunks = BTreeMap::from([(thunk, 80)]);
        // mov 0x360(%rdi),%rax; mov 0xd0(%rax),%rax; call thunk; mov 0x360(%rbx),%rax;
        // mov 0x1a0(%rax),%rax; jmp thunk
        let mut code = vec![
            0x48, 0x8b, 0x87, 0x60, 0x03, 0x00, 0x00, 0x48, 0x8b, 0x80, 0xd0, 0x00, 0x00, 0x00,
        ];
        let rel = |code: &Vec<u8>| ((thunk - (BASE + code.len() as u64 + 5)) as i32).to_le_bytes();
        let r = rel(&code);
        code.push(0xe8);
        code.extend(r);
        code.extend([0x48, 0x8b, 0x83, 0x60, 0x03, 0x00, 0x00]);
        code.extend([0x48, 0x8b, 0x80, 0xa0, 0x01, 0x00, 0x00]);
        let r = rel(&code);
        code.push(0xe9);
        code.extend(r);
        let found = scan(&code, BASE, &layout(), &thunks);
        assert_eq!(
            found,
            [
                Found {
                    offset: 14,
                    op: 2,
                    target: Target::Register(80),
                    ret: Return::After(19)
                },
                Found {
                    offset: 33,
                    op: 10,
                    target: Target::Register(80),
                    ret: Return::Tail
                },
            ]
        );
    }

    #[test]
    fn a_call_through_memory_and_a_driver_copied_between_registers() {
        // mov 0x360(%rdi),%rbx; mov %rbx,%r12; call *0xd0(%r12)
        let code = [
            0x48, 0x8b, 0x9f, 0x60, 0x03, 0x00, 0x00, 0x49, 0x89, 0xdc, 0x41, 0xff, 0x94, 0x24,
            0xd0, 0x00, 0x00, 0x00,
        ];
        let found = scan(&code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(
            found,
            [Found {
                offset: 10,
                op: 2,
                target: Target::Memory(24),
                ret: Return::After(18)
            }]
        );
    }

    #[test]
    fn calls_through_other_structs_are_not_sites() {
        // mov 0x10(%rdi),%rax (not a driver); mov 0xd0(%rax),%rax; call *%rax
        let code = [
            0x48, 0x8b, 0x47, 0x10, 0x48, 0x8b, 0x80, 0xd0, 0x00, 0x00, 0x00, 0xff, 0xd0,
        ];
        assert!(scan(&code, BASE, &layout(), &BTreeMap::new()).is_empty());
        // The op offset of no op: mov 0x360(%rdi),%rax; mov 0xd8(%rax),%rax; call *%rax
        let code = [
            0x48, 0x8b, 0x87, 0x60, 0x03, 0x00, 0x00, 0x48, 0x8b, 0x80, 0xd8, 0x00, 0x00, 0x00,
            0xff, 0xd0,
        ];
        assert!(scan(&code, BASE, &layout(), &BTreeMap::new()).is_empty());
    }
}
