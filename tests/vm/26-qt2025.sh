#!/bin/bash
# The QT2025 (drivers/net/phy/qt2025.rs), mainline's other Rust PHY driver, all Clause 45, on
# phy_sim's model beside an AX88772A on the C driver, one bus: the QT2025's driver loads by its
# mdio: alias when phy_sim's bus is scanned, checks the hardware revision, holds the PHY's CPU,
# loads a firmware file of our own (a pattern of the largest size it takes, 24 KiB, from a
# firmware path of the test's) one byte per MDIO write, and starts the CPU; the simulated 10G
# link comes up, flaps and goes down. Then a QT2025 of the wrong revision, which its driver
# refuses (-ENODEV), as on real hardware, and one whose firmware file is too large (-EFBIG). phytrace records it all from before the load, with
# the default ring, and is compared with what it did not write: the kernel's kprobes on the
# driver's callback symbols (count, order per thread, return values), the mdio:mdio_access
# tracepoint (every access per thread), the simulator's counters per MMD and register, its SRAM
# and the firmware file (byte for byte), and sysfs's link.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
trap_cleanup
read -r old_buffer_kb _ <"$TRACEFS/buffer_size_kb"
restore() {
    remove_truth
    echo 0 >"$TRACEFS/events/mdio/mdio_access/enable"
    echo "$old_buffer_kb" >"$TRACEFS/buffer_size_kb"
    qt2025_firmware_remove
}
cleanup_also restore
mark_dmesg qt2025
unload_all

qt2025_firmware
fw=$QT2025_FW
jq -n '[inputs | tonumber]' < <(od -An -v -tu1 "$fw" | tr -s ' ' '\n' | grep .) >"$fw.json"

# The truth: kprobes on the driver's callbacks, defined before it loads; mdio:mdio_access,
# with room for the firmware load's 24,576 writes.
names=$PHYTRACE_OUT/qt2025-truth-names
echo 32768 >"$TRACEFS/buffer_size_kb"
define_truth qt2025 "$names" '^_R.*Adapter.*_callback'
echo 1 >"$TRACEFS/events/mdio/mdio_access/enable"

cap=$PHYTRACE_OUT/qt2025.ptrace
start_record "$cap"
load_driver c
load_sim phys=ax88772a@1,qt2025@4
module_loaded qt2025 || fail "qt2025 was not loaded by its mdio: alias"
q=$(simdev qt2025) a=$(simdev ax88772a)
expect_eq "the QT2025's driver" "QT2025 10Gpbs SFP+" "$(sim_info "$q" driver)"
cmp "$fw" <(head -c "$(stat -c %s "$fw")" "$SIM_DBG/$q/sram") || fail "the simulator's SRAM differs from the firmware file"
ok "the simulator's SRAM holds the firmware file, byte for byte"
link_up "$q" "$a"
wait_mode "$q" 10000 full
wait_mode "$a" 100 full
sim_set "$q" cable 0
wait_state "$q" NOLINK
sim_set "$q" cable 1
wait_mode "$q" 10000 full
link_down "$q" "$a"
addr=$(sim_info "$q" addr)
cp "$SIM_DBG/$q/counters" "$cap.counters"
cp "$SIM_DBG/$a/counters" "$cap.counters-a"
rmmod phy_sim
# The first session's end, on the clock of the capture's events (CLOCK_MONOTONIC).
first_ended=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')

# The wrong revision: the driver reads it and refuses the PHY; the generic Clause 45 driver
# takes it.
load_sim phys=qt2025@4 qt2025_hw_rev=0xa101
q=$(simdev qt2025)
expect_eq "the refused QT2025's driver" "Generic Clause 45 PHY" "$(sim_info "$q" driver)"
rmmod phy_sim
# A firmware file larger than the 24 KiB of SRAM: refused (-EFBIG) before any byte is written.
cp "$fw" "$fw.good"
printf 'x' >>"$fw"
load_sim phys=qt2025@4
q=$(simdev qt2025)
expect_eq "the QT2025 with too large a firmware: its driver" "Generic Clause 45 PHY" "$(sim_info "$q" driver)"
expect_eq "SRAM writes with too large a firmware" 0 "$(simulator_c45_counters "$SIM_DBG/$q/counters" | jq '.sram3[1] + .sram4[1]')"
rmmod phy_sim
mv "$fw.good" "$fw"
stop_record "$cap"
echo 0 >"$TRACEFS/events/mdio/mdio_access/enable"
stop_truth "$cap.truth"
events_json "$cap"

python3 "$here/callsite_truth.py" "$names" "$cap.truth" "$cap.json" qt2025:: op ||
    fail "the QT2025's callbacks differ from the kernel's kprobes"
python3 "$here/mdio_truth.py" "$cap.truth" "$cap.json" phy_sim-0 "$addr" ||
    fail "the QT2025's MDIO accesses differ from mdio:mdio_access"
python3 "$here/mdio_truth.py" "$cap.truth" "$cap.json" phy_sim-0 1 ||
    fail "the AX88772A's MDIO accesses differ from mdio:mdio_access"
capture_expect "$cap.json" no_loss
capture_expect "$cap.json" attribution
# The trailer counts the writes as the kernel traced them (mdio:mdio_access leaves out failed
# accesses: none fails here), and the Clause 45 accesses the capture holds.
expect_eq "MDIO writes that failed" 0 "$(jq -c 'select(.kind == "mdio" and .op == "write" and .error != null)' "$cap.json" | wc -l)"
expect_eq "MDIO writes in the trailer (mdio:mdio_access)" "$(grep -cE 'mdio_access: \S+ write ' "$cap.truth")" \
    "$(trailer_field "$cap" counts.mdio_write)"
expect_eq "Clause 45 accesses in the trailer (the capture's)" "$(jq -c 'select(.kind == "mdio" and .devad != null)' "$cap.json" | wc -l)" \
    "$(trailer_field "$cap" counts.mdio_c45)"
# The questions about callbacks read them alone, without the firmware load's 24,576 writes.
callbacks=$cap.callbacks.json
jq -c 'select(.kind != "mdio")' "$cap.json" >"$callbacks"
refused_at=$(jq -s --argjson addr "$addr" '[.[] | select(.kind == "callback_exit" and .callback.name == "probe"
        and .phy.addr == $addr and .ret == -19)] | first | .ts_ns // empty' "$callbacks")
[[ -n $refused_at ]] || fail "no probe of the QT2025 returned -ENODEV"
ok "the QT2025 of the wrong revision: probe returned -ENODEV"
expect_eq "probes of the QT2025 that returned -EFBIG" 1 "$(jq -s --argjson addr "$addr" '[.[] | select(.kind == "callback_exit"
        and .callback.name == "probe" and .phy.addr == $addr and .ret == -27)] | length' "$callbacks")"
# The first session's counters are compared with its events.
jq -c --argjson t "$first_ended" 'select(.ts_ns < $t)' "$cap.json" >"$cap.first.json"
capture_expect "$cap.first.json" 'c45_exactly_once("phy_sim-0"; $addr; $counters)' --argjson addr "$addr" \
    --argjson counters "$(simulator_c45_counters "$cap.counters")"
capture_expect "$cap.first.json" 'exactly_once("phy_sim-0"; 1; $counters)' \
    --argjson counters "$(simulator_counters "$cap.counters-a")"
capture_expect "$cap.first.json" 'firmware_writes("phy_sim-0"; $addr; $bytes[0])' --argjson addr "$addr" \
    --slurpfile bytes "$fw.json"
nc45=$(jq -c 'select(.kind == "mdio" and .devad != null and .phy.addr == 1)' "$cap.json" | wc -l)
expect_eq "Clause 45 accesses attributed to the AX88772A" 0 "$nc45"
# The link as phylib read it, against sysfs: 10G full whenever read_status saw it up.
modes=$(jq -rs --argjson addr "$addr" --argjson t "$first_ended" '[.[] | select(.kind == "callback_exit"
        and .callback.name == "read_status" and .phy.addr == $addr and .ts_ns < $t and .link.up)
        | "\(.link.speed)/\(.link.duplex)"] | unique | join(" ")' "$callbacks")
expect_eq "the QT2025's link when up" "10000/full" "$modes"
ups=$(jq -s --argjson addr "$addr" --argjson t "$first_ended" '[.[] | select(.kind == "callback_exit"
        and .callback.name == "read_status" and .phy.addr == $addr and .ts_ns < $t) | .link.up]
        | [foreach .[] as $u ({last: false, n: 0};
        {last: $u, n: (if $u and (.last | not) then .n + 1 else .n end)}; .n)] | last' "$callbacks")
expect_eq "the QT2025's link came up" 2 "$ups"
# The shipped spec scopes by driver; here the generic driver takes the address after the refusals.
sed "s/for driver \"QT2025\"/for phy \"phy_sim-0:$(printf %02x "$addr")\"/" "$PHYTRACE_ROOT/specs/qt2025.spec" >"$cap.spec"
"$PHYTRACE_BIN" check --spec "$cap.spec" "$cap" || fail "specs/qt2025.spec fails on the capture"
ok "specs/qt2025.spec holds"
result "\"qt2025_firmware_writes\":$(simulator_c45_counters "$cap.counters" | jq '.sram3[1] + .sram4[1]')"
assert_clean_dmesg qt2025
