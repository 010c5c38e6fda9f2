#!/bin/bash
# Module churn: the Rust driver unloaded and reloaded CHURN_ROUNDS times (default 10; the soak
# runs 100) while `phytrace record` runs and the cable flaps. No kernel warning or oops, record
# keeps going, every load is re-attached, and the capture bounds each gap with a detached and an
# attached event. With the symbol probes (`--callback-probes symbol`), whose kprobes live and die
# with each module instance: the call sites, in phylib, outlive every reload.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
rounds=${CHURN_ROUNDS:-10}
mark_dmesg churn
setup rust
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
cap=$PHYTRACE_OUT/churn.ptrace
start_record "$cap" --callback-probes symbol
kprobes=/sys/kernel/debug/kprobes/list
armed() { grep -c '_callback.*ax88796b_rust' "$kprobes" || true; }
wait_for 10 bash -c "grep -q '_callback.*ax88796b_rust' $kprobes" || fail "callbacks not attached"
want=$(armed) # a kprobe and a kretprobe per callback
# Every callback of the current module instance is probed again.
callbacks_armed() { (($(armed) == want)) && ! grep -q "GONE" "$kprobes"; }
started=$SECONDS
for ((round = 1; round <= rounds; round++)); do
    rmmod phy_sim
    rmmod ax88796b_rust
    wait_for 10 bash -c "! grep -q _callback $kprobes" ||
        fail "round $round: callback probes outlive the module"
    load_driver rust
    wait_for 30 callbacks_armed || fail "round $round: the reloaded module was not re-attached"
    load_sim
    a=$(simdev ax88772a)
    link_up "$a"
    wait_mode "$a" 100 full
    sim_set "$a" cable 0
    wait_carrier "$a" 0
    sim_set "$a" cable 1
    wait_mode "$a" 100 full
    kill -0 "$RECORD_PID" || fail "round $round: record exited"
    ((round % 10 == 0)) && log "round $round: record RSS $(rss_kib "$RECORD_PID") KiB, $(fds "$RECORD_PID") fds"
done
elapsed=$((SECONDS - started))
stop_record "$cap"
expect_eq "events lost" 0 "$(trailer_field "$cap" lost)"
events_json "$cap"
capture_expect "$cap.json" 'sessions("ax88796b_rust"; $n)' --argjson n $((rounds + 1))
capture_expect "$cap.json" attribution
capture_expect "$cap.json" cpu_order
capture_expect "$cap.json" no_loss
ok "$rounds reloads in ${elapsed} s, each re-attached"
result "\"rounds\":$rounds,\"secs\":$elapsed,\"events\":$(wc -l <"$cap.json")"
assert_clean_dmesg churn
