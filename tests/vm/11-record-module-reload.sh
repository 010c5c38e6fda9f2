#!/bin/bash
# `phytrace record` across a reload of the driver module mid-capture: the capture says where the
# gap was (detached) and re-attaches to the new module instance, whose callbacks are recorded.
# The symbol probes' machinery (`--callback-probes symbol`): they are armed per module instance;
# call sites need nothing at a reload (18-record-callsite.sh reloads under them).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
mark_dmesg reload
setup rust
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
cap=$PHYTRACE_OUT/record-reload.ptrace
start_record "$cap" --callback-probes symbol
jq -e 'select(.status == "recording") | .waiting_for | index("ax88796b_rust") == null' \
    "$cap.status" >/dev/null || fail "record waits for ax88796b_rust although it is loaded"
wait_for 10 capture_has "$cap" exit read_status || fail "no read_status recorded before the reload"
for round in 1 2; do
    log "reload $round"
    rmmod phy_sim
    rmmod ax88796b_rust
    wait_for 5 capture_has_n "$cap" detached ax88796b_rust "$round" || fail "no detachment recorded"
    load_driver rust
    wait_for 10 capture_has_n "$cap" attached '"reattached":true' "$round" || fail "no re-attachment recorded"
    load_sim
    a=$(simdev ax88772a)
    link_up "$a"
    wait_mode "$a" 100 full
done
# The new instance's polling is in the capture: one read_status more than the link-up's.
polls=$("$PHYTRACE_BIN" dump --format json "$cap" --kind exit 2>/dev/null | grep -c '"name":"read_status"' || true)
wait_for 10 capture_has_n "$cap" exit '"name":"read_status"' $((polls + 1)) || fail "no polling after the reload"
stop_record "$cap"
events_json "$cap"
for expect in 'attached("ax88796b_rust")' 'detached("ax88796b_rust")' \
    'reattached("ax88796b_rust")' attribution no_loss cpu_order; do
    capture_expect "$cap.json" "$expect"
done
count=$(grep -c '"kind":"attached"' "$cap.json")
expect_eq "attachments (start + 2 reloads)" 3 "$count"
assert_clean_dmesg reload
