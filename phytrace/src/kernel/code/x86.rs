//! x86_64: call sites in decoded code (iced-x86).
//!
//! phylib calls an op as `mov OFF_DRV(%phydev),%drv; mov OFF_OP(%drv),%reg; call *%reg`,
//! through a retpoline thunk (`call __x86_indirect_thunk_REG`) on kernels built with them, or
//! `call *OFF_OP(%drv)`; a `jmp` instead of the `call` is a tail call.

use std::collections::{BTreeMap, HashMap};

use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess,
    OpKind, Register,
};
use memchr::memmem;

use super::{Found, Layout, Owner, Return, Target, flow::Flow};

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

/// Whether `code` holds the 32-bit displacement `marker` (`phy_device.drv`; one under 128 may
/// be encoded in 8 bits: every function is decoded).
pub fn may_touch(code: &[u8], marker: u32) -> bool {
    marker < 0x80 || memmem::find(code, &marker.to_le_bytes()).is_some()
}

/// Whether `code`, a function at `address`, holds a direct call of or jump to `target`.
pub fn branches_to(code: &[u8], address: u64, target: u64) -> bool {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    decoder.iter().any(|instruction| {
        !instruction.is_invalid()
            && instruction.op_count() == 1
            && instruction.op0_kind() == OpKind::NearBranch64
            && instruction.near_branch64() == target
    })
}

/// The call sites in `code`, a function at `address`; `thunks` maps retpoline thunks to the
/// register they call through.
pub fn scan(code: &[u8], address: u64, layout: &Layout, thunks: &BTreeMap<u64, u32>) -> Vec<Found> {
    let function = Function::decode(code, address);
    let mut found = Vec::new();
    for (at, call) in function.instructions.iter().enumerate() {
        let Some((via, tail)) = indirect_call(call, thunks) else {
            continue;
        };
        let Some((op, target, holders)) = function.op_call(at, via, layout) else {
            continue;
        };
        let owner = match layout.first_argument {
            None => None,
            Some(from_ops) => match function.owner(at, &holders) {
                Some(owner) if !function.passes_first(at, owner, from_ops) => continue,
                owner => owner,
            },
        };
        found.push(Found {
            offset: (call.ip() - address) as u32,
            op,
            target,
            owner,
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

/// The general registers a call may change (the System V ABI's caller-saved ones).
const CALL_CLOBBERED: [Register; 9] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
];

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

/// One function's instructions, the general registers each writes, and its control flow.
struct Function {
    instructions: Vec<Instruction>,
    /// Bit `n`: the instruction writes `Register::RAX + n` (or a part of it); a call writes
    /// the registers it may change.
    writes: Vec<u16>,
    flow: Flow,
}

impl Function {
    fn decode(code: &[u8], address: u64) -> Self {
        let instructions: Vec<Instruction> =
            Decoder::with_ip(64, code, address, DecoderOptions::NONE)
                .into_iter()
                .collect();
        let mut info = InstructionInfoFactory::new();
        let writes = instructions
            .iter()
            .map(|instruction| {
                info.info(instruction)
                    .used_registers()
                    .iter()
                    .filter(|used| {
                        matches!(
                            used.access(),
                            OpAccess::Write
                                | OpAccess::ReadWrite
                                | OpAccess::CondWrite
                                | OpAccess::ReadCondWrite
                        )
                    })
                    .filter_map(|used| gpr_bit(used.register()))
                    .chain(
                        matches!(
                            instruction.flow_control(),
                            FlowControl::Call | FlowControl::IndirectCall
                        )
                        .then_some(CALL_CLOBBERED.iter().filter_map(|&reg| gpr_bit(reg)))
                        .into_iter()
                        .flatten(),
                    )
                    .fold(0, |bits, bit| bits | bit)
            })
            .collect();
        let index: HashMap<u64, usize> = instructions
            .iter()
            .enumerate()
            .map(|(at, instruction)| (instruction.ip(), at))
            .collect();
        let flow = Flow::new(instructions.len(), |at| {
            let instruction = &instructions[at];
            let target = || index.get(&instruction.near_branch_target()).copied();
            match instruction.flow_control() {
                FlowControl::ConditionalBranch => {
                    [Some(at + 1), target()].into_iter().flatten().collect()
                }
                FlowControl::UnconditionalBranch => target().into_iter().collect(),
                FlowControl::IndirectBranch | FlowControl::Return | FlowControl::Exception => {
                    Vec::new()
                }
                _ => vec![at + 1],
            }
        });
        Self {
            instructions,
            writes,
            flow,
        }
    }

    /// The instructions whose writes of `reg` reach instruction `at`.
    fn writes_of(&self, at: usize, reg: Register) -> Option<Vec<usize>> {
        let bit = gpr_bit(reg)?;
        self.flow.reaching(at, |i| self.writes[i] & bit != 0)
    }

    /// The op the call at `at` through `via` calls, if its target was loaded from an ops
    /// struct that was loaded from its holder (`struct phy_driver` from a `phy_device`), on
    /// every path to it; with the instructions that loaded the ops struct.
    fn op_call(&self, at: usize, via: Via, layout: &Layout) -> Option<(u16, Target, Vec<usize>)> {
        let mut holders = Vec::new();
        match via {
            Via::Register(reg) => {
                let mut op = None;
                for def in self.writes_of(at, reg)? {
                    let (base, displacement) = load(&self.instructions[def])?;
                    let this = layout.op_at(displacement)?;
                    if op.is_some_and(|op| op != this)
                        || !self.holds_ops(def, base, layout, 4, &mut holders)
                    {
                        return None;
                    }
                    op = Some(this);
                }
                Some((op?, Target::Register(pt_regs_offset(reg)?), holders))
            }
            Via::Memory { base, displacement } => {
                let op = layout.op_at(displacement)?;
                self.holds_ops(at, base, layout, 4, &mut holders)
                    .then_some((op, Target::Memory(pt_regs_offset(base)?), holders))
            }
        }
    }

    /// Whether `reg` holds an ops struct at instruction `at` on every path: loaded from its
    /// holder (`phy_device.drv` or the device's driver), or copied (up to `copies` times)
    /// from a register that holds one. The loads are added to `loads`. Where the ops are the
    /// holder's own fields ([`Layout::holders`] empty), any register holds them.
    fn holds_ops(
        &self,
        at: usize,
        reg: Register,
        layout: &Layout,
        copies: u32,
        loads: &mut Vec<usize>,
    ) -> bool {
        if layout.holders.is_empty() {
            return true;
        }
        let Some(defs) = self.writes_of(at, reg) else {
            return false;
        };
        defs.into_iter().all(|def| {
            let instruction = &self.instructions[def];
            if let Some((Register::RSP, slot)) = load(instruction) {
                return copies > 0 && self.spilled_ops(def, slot, layout, copies - 1, loads);
            }
            if let Some((_, displacement)) = load(instruction) {
                loads.push(def);
                return layout.loads_ops(displacement);
            }
            copies > 0
                && matches!(instruction.code(), Code::Mov_r64_rm64 | Code::Mov_rm64_r64)
                && instruction.op0_kind() == OpKind::Register
                && instruction.op1_kind() == OpKind::Register
                && self.holds_ops(def, instruction.op1_register(), layout, copies - 1, loads)
        })
    }

    /// Whether the stack slot at `slot` past `%rsp` holds an ops struct at instruction `at` on
    /// every path: each store that reaches it is `mov %reg,slot(%rsp)` with `reg` holding one
    /// ([`Self::holds_ops`]), `%rsp` is not moved between them (a call returns it as it found
    /// it), and the function takes no address of its stack at or below the slot's end (a callee
    /// given one could write the slot). A value the compiler spilled across a call
    /// (`phy_suspend` keeps `phydev->drv` there on one of its paths to `drv->suspend`).
    fn spilled_ops(
        &self,
        at: usize,
        slot: i64,
        layout: &Layout,
        copies: u32,
        loads: &mut Vec<usize>,
    ) -> bool {
        let escapes = self.instructions.iter().any(|instruction| {
            (instruction.code() == Code::Lea_r64_m
                && instruction.memory_base() == Register::RSP
                && (instruction.memory_displacement64() as i64) < slot + 8)
                || (instruction.op_count() == 2
                    && instruction.op1_kind() == OpKind::Register
                    && instruction.op1_register() == Register::RSP)
        });
        let Some(rsp) = gpr_bit(Register::RSP) else {
            return false;
        };
        let moves_rsp = |i: usize| {
            self.writes[i] & rsp != 0
                && !matches!(
                    self.instructions[i].flow_control(),
                    FlowControl::Call | FlowControl::IndirectCall
                )
        };
        let Some(stores) = (!escapes)
            .then(|| {
                self.flow.reaching(at, |i| {
                    moves_rsp(i) || writes_stack(&self.instructions[i], slot)
                })
            })
            .flatten()
        else {
            return false;
        };
        stores.into_iter().all(|store| {
            let instruction = &self.instructions[store];
            instruction.code() == Code::Mov_rm64_r64
                && instruction.op0_kind() == OpKind::Memory
                && instruction.memory_base() == Register::RSP
                && instruction.memory_index() == Register::None
                && instruction.memory_displacement64() as i64 == slot
                && self.holds_ops(store, instruction.op1_register(), layout, copies, loads)
        })
    }

    /// The holder at the call at `at`, if every load of its ops struct (`loads`) was made from
    /// one register at one displacement, and that register is not written on any path from
    /// them to the call (nor by the loads).
    fn owner(&self, at: usize, loads: &[usize]) -> Option<Owner> {
        let mut place = None;
        for &def in loads {
            let this = load(&self.instructions[def])?;
            if place.is_some_and(|place| place != this) {
                return None;
            }
            place = Some(this);
        }
        let (base, displacement) = place?;
        let bit = gpr_bit(base)?;
        let kept = loads.iter().all(|&def| self.writes[def] & bit == 0)
            && self
                .flow
                .reaching(at, |i| self.writes[i] & bit != 0 || loads.contains(&i))?
                .iter()
                .all(|i| loads.contains(i));
        kept.then_some(Owner {
            register: pt_regs_offset(base)?,
            displacement: i32::try_from(displacement).ok()?,
        })
    }

    /// Whether the call at `at` is passed first (`%rdi`) what was loaded from its holder
    /// `owner` at `from_ops` past the ops struct's pointer, with the holder's register
    /// holding at each such load what it holds at the call.
    fn passes_first(&self, at: usize, owner: Owner, from_ops: i64) -> bool {
        let Some(base) = register_at(owner.register) else {
            return false;
        };
        let place = (base, i64::from(owner.displacement) + from_ops);
        let base_at_call = self.writes_of(at, base);
        self.writes_of(at, Register::RDI).is_some_and(|defs| {
            defs.iter().all(|&def| {
                load(&self.instructions[def]) == Some(place)
                    && self.writes_of(def, base) == base_at_call
            })
        })
    }
}

/// The bit of `reg`'s 64-bit register in [`Function::writes`].
fn gpr_bit(reg: Register) -> Option<u16> {
    let n = (reg.full_register() as u32).checked_sub(Register::RAX as u32)?;
    (n < 16).then(|| 1 << n)
}

/// Whether `instruction` may write the 8 bytes at `slot` past `%rsp`: its first operand is
/// memory at `%rsp` within 8 bytes of it (a compare, which writes nothing, is counted too).
fn writes_stack(instruction: &Instruction, slot: i64) -> bool {
    instruction.op_count() > 0
        && instruction.op0_kind() == OpKind::Memory
        && instruction.memory_base() == Register::RSP
        && ((instruction.memory_displacement64() as i64) - slot).abs() < 8
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

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let mut ops = vec![None; super::super::OPS.len()];
        ops[2] = Some(0xd0); // soft_reset
        ops[10] = Some(0x1a0); // link_change_notify
        Layout {
            names: &super::super::OPS,
            ops,
            holders: vec![0x360, 0x68],
            marker: Some(0x360),
            first_argument: None,
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
        assert!(may_touch(&code, 0x360));
        let found = scan(&code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(
            found,
            [Found {
                offset: 20,
                op: 2,
                target: Target::Register(80),
                ret: Return::After(22),
                owner: None,
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
                    ret: Return::After(19),
                    owner: None,
                },
                Found {
                    offset: 33,
                    op: 10,
                    target: Target::Register(80),
                    ret: Return::Tail,
                    owner: None,
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
                ret: Return::After(18),
                owner: None,
            }]
        );
    }

    #[test]
    fn a_driver_loaded_in_another_block_reaches_the_call_through_a_jump() {
        // mov 0x68(%rdi),%r14 (the device's driver); jmp 1f; lea 0x360(%rbx),%r14 (another
        // block); ret; 1: mov 0xd0(%r14),%rax; call *%rax
        let code = [
            0x4c, 0x8b, 0x77, 0x68, 0xeb, 0x08, 0x4c, 0x8d, 0xb3, 0x60, 0x03, 0x00, 0x00, 0xc3,
            0x49, 0x8b, 0x86, 0xd0, 0x00, 0x00, 0x00, 0xff, 0xd0,
        ];
        assert_eq!(
            scan(&code, BASE, &layout(), &BTreeMap::new()),
            [Found {
                offset: 21,
                op: 2,
                target: Target::Register(80),
                ret: Return::After(23),
                owner: None,
            }]
        );
        // Without the jump, the other block's write is on the path: not a site.
        let mut fallthrough = code;
        fallthrough[4..6].copy_from_slice(&[0x66, 0x90]);
        fallthrough[13] = 0x90;
        assert!(scan(&fallthrough, BASE, &layout(), &BTreeMap::new()).is_empty());
    }

    #[test]
    fn suspend_through_a_spilled_driver_in_debian_14s_phy_suspend() {
        // 7.2's phy_suspend: `phydev->drv` in %rcx, spilled to 0x10(%rsp) across the call of
        // phy_ethtool_get_wol on one path and reloaded, then `mov 0x108(%rcx),%rax; call
        // __x86_indirect_thunk_rax`.
        let code = include_bytes!("../../../tests/data/callsites/phy_suspend-7.2-x86_64.bin");
        let base = 0xffff_ffff_8cad_cd50;
        let thunks = BTreeMap::from([(0xffff_ffff_8cec_2100, 80)]);
        let mut layout = layout();
        layout.ops[6] = Some(0x108); // suspend
        let found = scan(code, base, &layout, &thunks);
        assert_eq!(
            found,
            [Found {
                offset: 0xb0,
                op: 6,
                target: Target::Register(80),
                ret: Return::After(0xb5),
                owner: None,
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

/// phylink's calls of MAC ops in the 6.12 test kernel's `phylink.ko` (its `.text`, not
/// relocated: calls out of the module lead to the next instruction).
#[cfg(test)]
mod mac_tests {
    use super::*;
    use crate::kernel::code::phylink_6_12_layout as layout;

    const BASE: u64 = 0xffff_ffff_c000_0000;

    fn owner(register: u32, displacement: i32) -> Option<Owner> {
        Some(Owner {
            register,
            displacement,
        })
    }

    #[test]
    fn mac_link_up_and_down_in_phylink_resolve_through_its_work_item() {
        let code = include_bytes!("../../../tests/data/callsites/phylink_resolve-6.12-x86_64.bin");
        let found = scan(code, BASE, &layout(), &BTreeMap::new());
        // `pl` is `%r14 - 0x130` (the work item) throughout: a callee-saved register.
        let site = |offset: u32, op: u16, base: u32, len: u32| Found {
            offset,
            op,
            target: Target::Memory(base),
            ret: Return::After(offset + len),
            owner: owner(8, -0x128),
        };
        assert_eq!(
            found,
            [
                site(0x31c, 1, 80, 3),
                site(0x3a9, 1, 80, 3),
                site(0x644, 0, 56, 4)
            ]
        );
    }

    #[test]
    fn mac_link_down_in_phylink_link_down_with_pl_in_rbx() {
        let code =
            include_bytes!("../../../tests/data/callsites/phylink_link_down-6.12-x86_64.bin");
        let found = scan(code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(
            found,
            [Found {
                offset: 0x28,
                op: 1,
                target: Target::Memory(80),
                ret: Return::After(0x2b),
                owner: owner(40, 8),
            }]
        );
    }

    /// The retpoline thunks of the 7.3 test data: one per register, 16 bytes apart past
    /// `BASE + 0x100000`, in iced's register order (its calls were relocated to them).
    fn thunks_7_3() -> BTreeMap<u64, u32> {
        (0..16)
            .filter_map(|n| {
                Some((
                    BASE + 0x10_0000 + 16 * n,
                    pt_regs_offset(Register::RAX + n as u32)?,
                ))
            })
            .collect()
    }

    #[test]
    fn mac_link_down_through_a_retpoline_in_debians_7_3() {
        let code = include_bytes!("../../../tests/data/callsites/phylink_link_down-7.3-x86_64.bin");
        let found = scan(code, BASE, &layout(), &thunks_7_3());
        assert_eq!(
            found,
            [Found {
                offset: 0x71,
                op: 1,
                target: Target::Register(80),
                ret: Return::After(0x76),
                owner: owner(40, 8),
            }]
        );
    }

    #[test]
    fn a_pcs_op_of_the_same_shape_is_no_mac_site() {
        // `pl->pcs->ops->pcs_config(pl->pcs, …)` and `pcs->ops->pcs_get_state(pcs, …)`:
        // `struct phylink_pcs` holds its ops at `mac_ops`'s offset, at the offsets of
        // `mac_link_down` and `mac_link_up`, but passes the PCS first, not `pl->config`.
        for code in [
            &include_bytes!("../../../tests/data/callsites/phylink_major_config-7.3-x86_64.bin")[..],
            &include_bytes!(
                "../../../tests/data/callsites/phylink_mac_pcs_get_state-7.3-x86_64.bin"
            )[..],
        ] {
            assert_eq!(scan(code, BASE, &layout(), &thunks_7_3()), []);
        }
    }

    #[test]
    fn a_holder_overwritten_before_the_call_is_no_owner() {
        // mov 0x8(%rdi),%rax; mov 0x10(%rdi),%rdi; call *0x28(%rax): `pl` was in %rdi, which
        // now holds `pl->config`.
        let code = [
            0x48, 0x8b, 0x47, 0x08, 0x48, 0x8b, 0x7f, 0x10, 0xff, 0x50, 0x28,
        ];
        let found = scan(&code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].owner, None);
        // A direct call between the load and the call may change %rdi too.
        // mov 0x8(%rdi),%rbx; call rel32 (next); call *0x28(%rbx)
        let code = [
            0x48, 0x8b, 0x5f, 0x08, 0xe8, 0x00, 0x00, 0x00, 0x00, 0xff, 0x53, 0x28,
        ];
        let found = scan(&code, BASE, &layout(), &BTreeMap::new());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].owner, None);
    }
}
