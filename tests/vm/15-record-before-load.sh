#!/bin/bash
# `phytrace record` started before the driver module loads, then RELOADS reloads of it
# (modprobe from the guest's module tree): every callback the kernel ran is recorded, counted
# per callback against the kernel's own kprobe events on the same symbols (tracefs, group
# `truth`, read from the ftrace buffer), and every load is reported where it happened. The symbol
# probes' machinery (`--callback-probes symbol`): armed from the module file before the module
# loads; call sites are armed before any driver loads (18-record-callsite.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
RELOADS=${RELOADS:-10}
trap_cleanup
cleanup_also remove_truth
mark_dmesg before-load
unload_all
ko=$(modinfo -n ax88796b_rust) || fail "ax88796b_rust is not in the module tree"
ok "module file from the module tree: $ko"

# The ground truth: the kernel's own kprobe events on every callback, pending until the load.
remove_truth
echo >"$TRACEFS/trace"
n=0
while read -r symbol; do
    n=$((n + 1))
    echo "p:truth/cb$n ax88796b_rust:$symbol" >>"$TRACEFS/kprobe_events"
    name=$(sed -E 's/.*[0-9]+([a-z_]+)_callback.*/\1/' <<<"$symbol")
    echo "cb$n $name"
done < <(nm --defined-only "$ko" | awk '$2 ~ /^[tT]$/ && $3 ~ /^_R.*Adapter.*_callback/ { print $3 }') >"$PHYTRACE_OUT/truth-names"
((n > 0)) || fail "no callbacks in $ko"
echo 1 >"$TRACEFS/events/truth/enable"
ok "$n ground-truth events defined before the module loads"

cap=$PHYTRACE_OUT/record-before-load.ptrace
start_record "$cap" --callback-probes symbol --module ax88796b_rust
jq -e --arg ko "$ko" '.arming[] | select(.module == "ax88796b_rust" and .guarantee == "first_callback" and .source == $ko)' \
    <(head -n 1 "$cap") >/dev/null || fail "the capture header does not say the module is armed before it loads"
ok "header: armed from $ko, first_callback"

for round in $(seq 0 "$RELOADS"); do
    modprobe ax88796b_rust
    load_sim
    a=$(simdev ax88772a)
    link_up "$a"
    wait_mode "$a" 100 full
    if ((round < RELOADS)); then
        rmmod phy_sim
        modprobe -r ax88796b_rust
    fi
done
# Polling stops once the interface is down (phy_stop is synchronous): both tracers have seen
# the same calls when they stop.
link_down "$a"
echo 0 >"$TRACEFS/events/truth/enable"
stop_record "$cap"
for stats in "$TRACEFS"/per_cpu/cpu*/stats; do
    grep -q '^overrun: 0$' "$stats" || fail "the ftrace buffer overran ($stats): the ground truth is incomplete"
done

events_json "$cap"
# Count for count, per callback: phytrace's entries vs the kernel's.
while read -r event name; do
    want=$(grep -c " $event: " "$TRACEFS/trace" || true)
    got=$(jq -r --arg n "$name" 'select(.kind == "callback_enter" and .callback.name == $n) | 1' "$cap.json" | wc -l)
    expect_eq "$name: entries recorded vs the kernel's kprobe events" "$want" "$got"
done <"$PHYTRACE_OUT/truth-names"
total=$(grep -c ' cb[0-9]*: ' "$TRACEFS/trace" || true)
((total > 0)) || fail "the ground truth saw no callback"

loads=$(jq -r 'select(.kind == "attached" and .module == "ax88796b_rust") | .reattached' "$cap.json" | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')
expect_eq "attachments: the first load and every reload" "false=1 true=$RELOADS " "$loads"
guarantees=$(jq -r 'select(.kind == "attached") | .guarantee' "$cap.json" | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')
expect_eq "each attachment's guarantee" "first_callback=$((RELOADS + 1)) " "$guarantees"
frees=$(jq -r 'select(.kind == "detached" and .module == "ax88796b_rust") | 1' "$cap.json" | wc -l)
expect_eq "detachments" "$RELOADS" "$frees"
result "\"reloads\":$RELOADS,\"callbacks\":$total,\"missed\":0"

# Every load's first callback comes after its attachment: the probe-time soft_reset.
firsts=$(jq -r 'select(.kind == "attached" or .kind == "callback_enter") |
                if .kind == "attached" then "A" else .callback.name end' "$cap.json" |
         awk '$0 == "A" { want = 1; next } want { print; want = 0 }' | sort | uniq -c | awk '{print $2 "=" $1}')
expect_eq "the first callback after each load" "soft_reset=$((RELOADS + 1))" "$firsts"

capture_expect "$cap.json" cpu_order

"$PHYTRACE_BIN" check --spec "$PHYTRACE_ROOT/specs/ax88796b.spec" "$cap" || fail "the shipped spec fails on the reload capture"
assert_clean_dmesg before-load

# Without the module file (an empty module tree): the attach-on-load fallback, said so in the
# header, and the callbacks after the attachment still recorded.
unload_all
empty=$(mktemp -d)
rm -f "$cap"
cap=$PHYTRACE_OUT/record-after-load.ptrace
start_record "$cap" --callback-probes symbol --module ax88796b_rust --module-tree "$empty"
jq -e '.arming[] | select(.module == "ax88796b_rust" and .guarantee == "after_load")' \
    <(head -n 1 "$cap") >/dev/null || fail "the header does not say the module is attached after it loads"
jq -e -n '[inputs | select(.status == "recording") | .arming[] |
           select(.module == "ax88796b_rust" and .guarantee == "after_load")] | length == 1' \
    "$cap.status" >/dev/null || fail "record's status does not say the module is attached after it loads"
ok "header and record's status: after_load without a module file"
modprobe ax88796b_rust
load_sim
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
wait_for 10 capture_has "$cap" exit read_status || fail "no read_status recorded after the late attachment"
link_down "$a"
stop_record "$cap"
ok "callbacks recorded after the late attachment"
"$PHYTRACE_BIN" dump --format json "$cap" --kind attached | jq -e -n '[inputs | .guarantee] == ["after_load"]' >/dev/null ||
    fail "the late attachment does not say its first callbacks are missed"
