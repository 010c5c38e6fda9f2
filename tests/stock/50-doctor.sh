#!/bin/bash
# `phytrace doctor` on Debian's stock kernel, against what the kernel itself says: the BTF
# offsets it reports are pahole's from the same /sys/kernel/btf/vmlinux; the kernel refuses a
# kprobe in the Rust PHY driver (no ftrace site, no CONFIG_KPROBE_EVENTS_ON_NOTRACE), and
# doctor must not claim that such a probe works; it finds the machine traceable all the same
# (MDIO through BPF trampolines, callbacks at phylib's call sites).
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
stock_only
expect_eq "kernel release" 7.3.4+deb13-amd64 "$(uname -r)"
grep -q '^# CONFIG_KPROBE_EVENTS_ON_NOTRACE is not set' "/lib/modules/$(uname -r)/config" ||
    fail "this stock kernel's config sets KPROBE_EVENTS_ON_NOTRACE"

out=$("$PHYTRACE_BIN" doctor 2>&1) || { echo "$out"; fail "phytrace doctor finds the stock kernel untraceable"; }
echo "$out"
grep -q '^\[ok  \] BTF (struct layouts)' <<<"$out" || fail "doctor did not read the BTF"
state=$(pahole -C phy_device /sys/kernel/btf/vmlinux 2>/dev/null | awk '/enum phy_state +state;/ { print $(NF-2) }')
[[ -n $state ]] || fail "pahole found no phy_device.state in /sys/kernel/btf/vmlinux"
grep -q "phy_device.state at +$state," <<<"$out" || fail "doctor's phy_device.state is not pahole's (+$state)"
ok "doctor's phy_device.state offset is pahole's: +$state"

# The kernel's own answer to a kprobe in Debian's ax88796b_rust, loaded for the purpose.
modprobe ax88796b_rust
module=$(modinfo -n ax88796b_rust)
[[ $module == /lib/modules/*/kernel/drivers/net/phy/ax88796b_rust.ko* ]] || fail "ax88796b_rust is not Debian's: $module"
symbol=$(grep -m1 -E ' [tT] _R.*soft_reset_callback' /proc/kallsyms | awk '{ print $3 }')
[[ -n $symbol ]] || fail "no soft_reset callback of ax88796b_rust in /proc/kallsyms"
mark_dmesg kprobe
if echo "p:phytrace_stock/rust $symbol" >>/sys/kernel/tracing/kprobe_events 2>/dev/null; then
    echo "-:phytrace_stock/rust" >>/sys/kernel/tracing/kprobe_events
    fail "the stock kernel accepted a kprobe on $symbol"
fi
dmesg_since_mark | grep -q 'Could not probe notrace function' || fail "no 'notrace' refusal in dmesg"
ok "the kernel refuses a kprobe on $symbol (notrace)"
rust_line=$(grep -A1 'kprobe on a Rust symbol' <<<"$out")
if grep -q '^\[ok' <<<"$rust_line"; then fail "doctor says a kprobe on a Rust symbol works: $rust_line"; fi
grep -q KPROBE_EVENTS_ON_NOTRACE <<<"$rust_line" || fail "doctor does not name CONFIG_KPROBE_EVENTS_ON_NOTRACE: $rust_line"
ok "doctor reports the refusal and names CONFIG_KPROBE_EVENTS_ON_NOTRACE"
rmmod ax88796b_rust
