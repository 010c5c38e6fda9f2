#!/bin/bash
# `phytrace doctor` on Debian's stock kernel, against what the kernel itself says: the BTF
# offsets it reports are pahole's from the same /sys/kernel/btf/vmlinux; the kernel refuses a
# kprobe in the Rust PHY driver (no ftrace site, no CONFIG_KPROBE_EVENTS_ON_NOTRACE), and
# doctor must not claim that such a probe works; it finds the machine traceable all the same
# (MDIO through BPF trampolines, callbacks at phylib's call sites), and `--module ax88796b_rust`
# reads Debian's compressed module file: its three drivers, their callbacks at call sites.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
stock_only
expect_eq "kernel release" 7.3.4+deb13-amd64 "$(uname -r)"
grep -q '^# CONFIG_KPROBE_EVENTS_ON_NOTRACE is not set' "/lib/modules/$(uname -r)/config" ||
    fail "this stock kernel's config sets KPROBE_EVENTS_ON_NOTRACE"

json=$("$PHYTRACE_BIN" doctor --format json --module ax88796b_rust) || { echo "$json"; fail "phytrace doctor finds the stock kernel untraceable"; }
jq . <<<"$json"
status_of() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' <<<"$json"; }
expect_eq "doctor's BTF check" ok "$(status_of 'BTF (struct layouts)')"
state=$(pahole -C phy_device /sys/kernel/btf/vmlinux 2>/dev/null | awk '/enum phy_state +state;/ { print $(NF-2) }')
[[ -n $state ]] || fail "pahole found no phy_device.state in /sys/kernel/btf/vmlinux"
jq -e --arg s "phy_device.state at +$state," '.checks[] | select(.name == "BTF (struct layouts)") | .detail | contains($s)' <<<"$json" >/dev/null ||
    fail "doctor's phy_device.state is not pahole's (+$state)"
ok "doctor's phy_device.state offset is pahole's: +$state"
expect_eq "doctor's callbacks" ok "$(status_of callbacks)"
jq -e '.checks[] | select(.name == "callbacks") | .detail | startswith("every driver")' <<<"$json" >/dev/null ||
    fail "doctor does not trace callbacks at phylib's call sites"
expect_eq "doctor --module ax88796b_rust" ok "$(status_of 'driver module')"
items=$(jq -r '.checks[] | select(.name == "driver module") | .items[]' <<<"$json")
expect_eq "ax88796b_rust's drivers" 3 "$(grep -c '^Asix Electronics AX88' <<<"$items")"
grep -qE '^  soft_reset +<kernel::net::phy::Adapter<ax88796b_rust::PhyAX88772A>>::soft_reset_callback  at [a-z_]+\+0x' <<<"$items" ||
    fail "the AX88772A's soft_reset is not its Adapter callback at a call site"

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
jq -e '[.checks[] | select(.detail | test("kprobe on .* was accepted"))] | length == 0' <<<"$json" >/dev/null ||
    fail "doctor says a kprobe on a Rust symbol works"
ok "doctor claims no kprobe on a Rust symbol"
rmmod ax88796b_rust
