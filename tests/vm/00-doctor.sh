#!/bin/bash
# `phytrace doctor`, read through its JSON: the pipeline proof (the eBPF object loaded, a kprobe
# and a kretprobe on a kernel function, their events through the ring buffer and an aya-log
# line), the struct offsets against pahole's reading of the same BTF, callbacks at phylib's call
# sites, the PHYs present with their bound drivers, and `--module` for the C and the Rust Asix
# driver: the ops each sets, as their sources set them, each with the call sites that trace it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
setup rust
a=$(simdev ax88772a)
json=$PHYTRACE_OUT/doctor.json
"$PHYTRACE_BIN" doctor --format json --module ax88796b_rust >"$json" || { cat "$json"; fail "doctor failed"; }
want() { jq -e "$1" "$json" >/dev/null || { jq . "$json"; fail "$2"; }; }
status_of() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' "$json"; }
want '.can_trace == true' "doctor says this machine cannot trace"
expect_eq "pipeline self-test" ok "$(status_of 'pipeline self-test')"
want '.checks[] | select(.name == "pipeline self-test") | .detail | test("aya-log: \"self-test kprobe fired in tgid [0-9]+\"")' "no aya-log line"
expect_eq "callbacks" ok "$(status_of callbacks)"
want '.checks[] | select(.name == "callbacks") | .detail | test("every driver")' "callbacks not at call sites"
state=$(pahole -C phy_device /sys/kernel/btf/vmlinux 2>/dev/null | awk '/enum phy_state +state;/ { print $(NF-2) }')
want ".checks[] | select(.name == \"BTF (struct layouts)\") | .detail | test(\"phy_device.state at \\\\+$state,\")" "phy_device.state is not pahole's +$state"
ok "struct offsets as pahole reads them (phy_device.state at +$state)"

# The PHY present, as sysfs has it, with the Rust driver's callbacks and their call sites.
phy="phy_sim-0:$(printf %02x "$(sim_info "$a" addr)")"
want ".phys[] | select(.name == \"$phy\") | .driver == \"$(bound_driver "$a")\" and .module == \"ax88796b_rust\"" "doctor's $phy is not sysfs's"
want ".phys[] | select(.name == \"$phy\") | .traced.ops[] | select(.op == \"read_status\") | (.function | test(\"Adapter<ax88796b_rust::PhyAX88772A>>::read_status_callback\")) and (.sites | length > 0)" "read_status of $phy is not traced at a call site"
ok "$phy: $(bound_driver "$a"), read_status traced at call sites"

# --module for the Rust driver: its three drivers and their callbacks.
expect_eq "doctor --module ax88796b_rust" ok "$(status_of 'driver module')"
want '[.checks[] | select(.name == "driver module") | .items[] | select(test("^Asix Electronics AX88"))] | length == 3' "not three drivers in ax88796b_rust"

# --module for the C driver, not loaded: the ops drivers/net/phy/ax88796b.c sets, by function.
cleanup
json=$PHYTRACE_OUT/doctor-c.json
"$PHYTRACE_BIN" doctor --format json --module ax88796b >"$json" || { cat "$json"; fail "doctor --module ax88796b failed"; }
expect_eq "doctor --module ax88796b" ok "$(status_of 'driver module')"
items=$(jq -r '.checks[] | select(.name == "driver module") | .items[]' "$json")
echo "$items"
a772=$(sed -n '/^Asix Electronics AX88772A /,/^Asix Electronics AX88772C /p' <<<"$items")
for pair in soft_reset:asix_soft_reset read_status:asix_ax88772a_read_status \
    link_change_notify:asix_ax88772a_link_change_notify suspend:genphy_suspend resume:genphy_resume; do
    grep -qE "^  ${pair%%:*} +${pair#*:}  at [a-z_]+\+0x" <<<"$a772" ||
        fail "the AX88772A's ${pair%%:*} is not ${pair#*:} at a call site"
done
ok "the C driver's AX88772A: its five ops, each at phylib's call sites"
