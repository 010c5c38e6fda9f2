//! The kprobes the kernel lists (debugfs): where running tracers rewrote its code, which a
//! search of the code must not read as the kernel's own instructions.

use std::fs;

/// Where the kernel lists its kprobes (debugfs).
const KPROBES_LIST: &str = "/sys/kernel/debug/kprobes/list";

/// The addresses of the kprobes in `list` (the format of [`KPROBES_LIST`]) that rewrote an
/// instruction a call site may be made of: not those on ftrace, disabled (their instruction
/// restored), or at a function's entry, whose first instruction is its ftrace site (a nop;
/// arm64 probes it with a breakpoint, phytrace's own entry and return probes included).
fn rewritten_addresses(list: &str) -> Vec<u64> {
    list.lines()
        .filter(|line| !line.contains("[FTRACE]") && !line.contains("[DISABLED]"))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let place = fields.nth(1)?;
            (!place.ends_with("+0x0")).then_some(address)
        })
        .collect()
}

/// The addresses where running kprobes rewrote the kernel's code; none where the kernel does
/// not list them (no debugfs: other tracers' kprobes are not known, nor said).
pub fn probed_addresses() -> Vec<u64> {
    fs::read_to_string(KPROBES_LIST)
        .map(|list| rewritten_addresses(&list))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kprobes_that_rewrote_an_instruction_count() {
        let list = "ffffffff81320df5  k  phy_remove+0x45    \n\
                    ffffffff813196d1  k  phy_request_interrupt+0xa1    [OPTIMIZED]\n\
                    ffffffff81319600  r  phy_disable_interrupts+0x0    [DISABLED][FTRACE]\n\
                    ffffffff81318ec0  r  phy_config_aneg+0x0    [FTRACE]\n\
                    ffffffff8131cff0  k  phy_save_page+0x10    [DISABLED]\n\
                    ffff800080a1c9a4  r  phy_probe+0x0    \n";
        assert_eq!(
            rewritten_addresses(list),
            [0xffff_ffff_8132_0df5, 0xffff_ffff_8131_96d1]
        );
    }
}
