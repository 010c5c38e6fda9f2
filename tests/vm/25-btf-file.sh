#!/bin/bash
# `--btf FILE` (or PHYTRACE_BTF): the kernel's types read from a BTF file, as a kernel built
# without BTF needs. On that kernel (`cargo xtask test --kernel no-btf`, PHYTRACE_BTF set to the
# file pahole made from its vmlinux), doctor and record without the file fail (exit 3) and
# doctor's BTF check says so; elsewhere the file is a copy of the kernel's own BTF, and doctor
# says to leave it out. With the file, doctor can trace, and record traces the C driver from its
# load: MDIO through kprobes, exactly the simulator's accesses; callbacks at call sites; each
# PHY's state and link, read with helper calls, as phylib's state machine and sysfs have them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
mark_dmesg c
unload_all
status_of() { jq -r --arg n "$2" '.checks[] | select(.name == $n) | .status' "$1"; }
btf_check="BTF (struct layouts)"

if [[ -e /sys/kernel/btf/vmlinux ]]; then
    file=$PHYTRACE_OUT/vmlinux.btf
    cp /sys/kernel/btf/vmlinux "$file"
    file_check=warn
else
    file=${PHYTRACE_BTF:?the kernel has no BTF and PHYTRACE_BTF names no file}
    file_check=ok
    # Without the file: refused, and doctor's BTF check is what fails.
    json=$PHYTRACE_OUT/doctor-no-btf.json
    run_status env -u PHYTRACE_BTF "$PHYTRACE_BIN" doctor --format json
    printf '%s\n' "$out" >"$json"
    expect_eq "doctor without --btf: exit status" 3 "$status"
    expect_eq "doctor without --btf: $btf_check" fail "$(status_of "$json" "$btf_check")"
    run_status env -u PHYTRACE_BTF "$PHYTRACE_BIN" record -o "$PHYTRACE_OUT/no-btf.ptrace" --duration 1s
    printf '%s\n' "$out"
    expect_eq "record without --btf: exit status" 3 "$status"
    ok "without a BTF file, doctor and record refuse (exit 3)"
fi

# The offsets the file gives, as pahole reads the same file.
json=$PHYTRACE_OUT/doctor-btf-file.json
"$PHYTRACE_BIN" doctor --format json --btf "$file" >"$json" || { jq . "$json"; fail "doctor --btf failed"; }
jq -e '.can_trace' "$json" >/dev/null || { jq . "$json"; fail "doctor --btf: cannot trace"; }
expect_eq "doctor --btf: $btf_check" "$file_check" "$(status_of "$json" "$btf_check")"
expect_eq "doctor --btf: callbacks" ok "$(status_of "$json" callbacks)"
state=$(pahole -C phy_device "$file" 2>/dev/null | awk '/enum phy_state +state;/ { print $(NF-2) }')
jq -e --arg n "$btf_check" --arg at "phy_device.state at +$state," \
    '.checks[] | select(.name == $n) | .detail | contains($at)' "$json" >/dev/null ||
    fail "phy_device.state is not at +$state, where pahole reads it in $file"
ok "doctor --btf: can trace, phy_device.state at +$state as pahole reads $file"

cap=$PHYTRACE_OUT/btf-file.ptrace
start_record "$cap" --btf "$file"
expect_eq "record --btf: btf" "$file" "$(jq -r 'select(.status == "recording") | .btf' "$cap.status")"
expect_eq "record --btf: MDIO probes" kprobe "$(jq -r 'select(.status == "recording") | .mdio_probes' "$cap.status")"
expect_eq "record --btf: callback probes" callsite "$(jq -r 'select(.status == "recording") | .callback_probes' "$cap.status")"
load_driver c
load_sim
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
# phy_stop is synchronous: no access follows, the counters and the capture cover the same ones.
link_down "$a"
cp "$SIM_DBG/$a/counters" "$cap.counters"
stop_record "$cap"
events_json "$cap"
addr=$(sim_info "$a" addr)
capture_expect "$cap.json" 'exactly_once("phy_sim-0"; $addr; $counters)' --argjson addr "$addr" \
    --argjson counters "$(simulator_counters "$cap.counters")"
capture_expect "$cap.json" no_loss
capture_expect "$cap.json" 'all_returned("phy_sim-0"; $addr; 3)' --argjson addr "$addr"

# The PHY's state at each callback, read with helper calls, walks phylib's state machine: READY
# from probe to phy_start, UP until read_status finds the link (at 100/full, as sysfs had it),
# RUNNING from then on, HALTED once phy_stop took the link down.
states=$(jq -rs --argjson addr "$addr" '[.[] | select(.phy.bus == "phy_sim-0" and .phy.addr == $addr
        and .kind == "callback_enter") | .state.name]
    | reduce .[] as $s ([]; if last == $s then . else . + [$s] end) | join(" ")' "$cap.json")
expect_eq "states read with helper calls" "READY UP RUNNING HALTED" "$states"
found=$(jq -rs --argjson addr "$addr" '[.[] | select(.phy.bus == "phy_sim-0" and .phy.addr == $addr
        and .kind == "callback_exit" and .callback.name == "read_status" and .link.up)] | first
    | "\(.state_after.name) \(.link.speed)/\(.link.duplex)"' "$cap.json")
expect_eq "the read_status that found the link" "UP 100/full" "$found"
ok "the state walked READY, UP, RUNNING, HALTED; read_status found the link at 100/full"
assert_clean_dmesg c
