#!/bin/bash
# The MAC side traced at phylink's call sites of `pl->mac_ops->mac_link_up/down` (`record
# --mac-probes callsite`): phylink is not loaded when record starts, so its sites are found and armed as it
# goes live (the dongle's plug-in loads asix, which loads phylink). Compared, count for count
# and speed for speed, with the kernel's own kprobe events on asix's `ax88772_mac_link_up` and
# `ax88772_mac_link_down` (tracefs group `truth`, defined before asix loads), over plug-in, link
# up, a cable flap and link down. Where the kernel refuses a kprobe on those calls (x86 kprobes
# do not take `call *OFF(%reg)`: kernels without retpolines), phytrace must say so and trace asix's
# MAC ops by name instead, and the kernel itself must refuse a kprobe there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
trap_cleanup
mac_cleanup() {
    dongle_stop
    remove_truth
    dongle_modules_unload
}
cleanup_also mac_cleanup
[[ -x $DONGLE_BIN ]] || fail "$DONGLE_BIN missing: cargo build -p ax88772a-emulator"
mark_dmesg mac-callsite
flavour=c
[[ ${PHYTRACE_VM_KERNEL:-} == stock ]] && flavour=rust # Debian ships no C ax88796b
dongle_modules_load "$flavour"
module_loaded phylink && log "phylink is already loaded: its sites are armed at start"

remove_truth
echo >"$TRACEFS/trace"
# x86-64: speed and duplex are the fifth and sixth arguments.
echo 'p:truth/up asix:ax88772_mac_link_up speed=%r8:s32 duplex=%r9:s32' >>"$TRACEFS/kprobe_events"
echo 'p:truth/down asix:ax88772_mac_link_down' >>"$TRACEFS/kprobe_events"
echo 1 >"$TRACEFS/events/truth/enable"

cap=$PHYTRACE_OUT/mac-callsite.ptrace
start_record "$cap" --mac-probes callsite
dongle_start --an-delay-ms 100 --partner all,pause
wait_dongle_netdev 30
dev=$(dongle_netdev)
ip link set dev "$dev" up
wait_mode "$dev" 100 full 30
dongle_ctl cable out >/dev/null
wait_carrier "$dev" 0
dongle_ctl cable in >/dev/null
wait_mode "$dev" 100 full 30
ip link set dev "$dev" down
"$PHYTRACE_BIN" probes >"$PHYTRACE_OUT/mac-callsite.probes" 2>&1 || true
stop_record "$cap"
echo 0 >"$TRACEFS/events/truth/enable"
cp "$TRACEFS/trace" "$cap.truth"
events_json "$cap"

sed -n '/phylink_mac_ops/,/^$/p' "$PHYTRACE_OUT/mac-callsite.probes"
grep -q "mac_link_up .*target == pl->mac_ops->mac_link_up" "$PHYTRACE_OUT/mac-callsite.probes" ||
    fail "phytrace probes lists no checked mac_link_up call site"
if grep -q "MAC call site .* no longer traced" "$cap.stderr"; then
    fail "a MAC call site failed its check: $(cat "$cap.stderr")"
fi
refused=$(sed -nE "s/.*the MAC call site ([^ ]+) \(mac_link_[a-z]+\) is not traced: the kernel's kprobes cannot take an indirect call through memory.*/\1/p" "$cap.stderr")
if grep -q "MAC ops are not traced at phylink's call sites" "$cap.stderr"; then
    [[ -n $refused ]] || fail "the MAC side fell back to asix by name for another reason: $(cat "$cap.stderr")"
    for place in $refused; do
        if echo "p:truth/site $place" >>"$TRACEFS/kprobe_events" 2>/dev/null; then
            echo "-:truth/site" >>"$TRACEFS/kprobe_events"
            fail "the kernel takes a kprobe at $place, which phytrace says it refuses"
        fi
    done
    ok "the kernel refuses kprobes at all $(wc -w <<<"$refused") MAC call sites (calls through memory): asix's MAC ops by name"
else
    [[ -z $refused ]] || fail "MAC call sites refused, yet no fallback said: $(cat "$cap.stderr")"
    ok "the MAC side traced at phylink's call sites"
fi

truth_up=$(grep -o 'up: ([^)]*) speed=[0-9-]* duplex=[0-9-]*' "$cap.truth" | sed -E 's/.*speed=([0-9-]*) duplex=([0-9-]*)/\1\/\2/' || true)
truth_down=$(grep -c 'down: (' "$cap.truth" || true)
ours_up=$(jq -r 'select(.kind == "mac" and .change.op == "link_up") | "\(.change.speed)/\(.change.duplex)"' "$cap.json")
ours_down=$(jq -r 'select(.kind == "mac" and .change.op == "link_down")' "$cap.json" | jq -s length)
log "kernel: $(wc -l <<<"$truth_up") mac_link_up ($(tr '\n' ' ' <<<"$truth_up")), $truth_down mac_link_down"
[[ -n $truth_up && $truth_down -gt 0 ]] || fail "the kernel's kprobes saw no link up and down"
expect_eq "mac_link_up events, count for count" "$(wc -l <<<"$truth_up")" "$(grep -c . <<<"$ours_up" || true)"
expect_eq "mac_link_down events, count for count" "$truth_down" "$ours_down"
# The kernel's duplex is DUPLEX_FULL (1); the capture names it.
expect_eq "mac_link_up speeds" "$(cut -d/ -f1 <<<"$truth_up")" "$(cut -d/ -f1 <<<"$ours_up")"
expect_eq "mac_link_up duplex" "$(sed 's#.*/1$#full#; s#.*/0$#half#' <<<"$truth_up")" "$(cut -d/ -f2 <<<"$ours_up")"
assert_clean_dmesg mac-callsite
