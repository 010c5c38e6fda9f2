#!/bin/bash
# `phytrace record` killed with SIGKILL at random moments while the link flaps, KILL_ROUNDS times
# (default 10; the soak runs 20): every capture reads back up to its last whole record (at least
# what a reader saw in the file before the kill) and says it was not closed cleanly, nothing of
# phytrace stays armed in the kernel (kprobe, BPF program), and the kprobe event definitions a
# killed phytrace leaves are removed by the next one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
rounds=${KILL_ROUNDS:-10}
setup rust
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
assert_no_probes_left "before recording"
flap() { while :; do sim_set "$a" cable 0; sleep 0.3; sim_set "$a" cable 1; sleep 0.7; done; }
# events_in CAPTURE: how many events a reader finds in CAPTURE now (it may be being written).
events_in() { "$PHYTRACE_BIN" dump --format json "$1" 2>/dev/null | wc -l; }
has_events() { (($(events_in "$1") > 0)); }
flap &
flapper=$!
cleanup_also "kill $flapper"
total=0
for ((round = 1; round <= rounds; round++)); do
    cap=$PHYTRACE_OUT/kill9-$round.ptrace
    "$PHYTRACE_BIN" record -o "$cap" --status "$cap.status" 2>"$cap.stderr" &
    pid=$!
    wait_for 20 record_status "$cap.status" recording || fail "round $round: record did not start"
    [[ -n $(probes_left) ]] || fail "round $round: no kprobe armed while recording"
    # Records reach the file within a flush interval; from the first one on, the kill may
    # lose only what was not flushed yet.
    wait_for 10 has_events "$cap" || fail "round $round: no event reached the file"
    seen=$(events_in "$cap")
    # A random moment in the next 2 s: mid-callback, mid-write, mid-poll.
    sleep "$((RANDOM % 2)).$((RANDOM % 1000))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    assert_nothing_armed "round $round: after SIGKILL"
    set +e
    out=$("$PHYTRACE_BIN" dump --format json "$cap" 2>&1 >"$cap.json")
    status=$?
    set -e
    expect_eq "round $round: dump of the killed capture" 0 "$status"
    grep -q "not closed cleanly" <<<"$out" || fail "round $round: the missing trailer is not reported: $out"
    events=$(wc -l <"$cap.json")
    ((events >= seen)) || fail "round $round: $events events read back, $seen were in the file before the kill"
    total=$((total + events))
    ok "round $round: $events events read back, truncation reported, nothing armed in the kernel"
    rm -f "$cap" "$cap.stderr" "$cap.json"
done
kill "$flapper"
wait "$flapper" 2>/dev/null || true
ok "$rounds kills, $total events read back"
# The next phytrace removes what the killed ones left defined, and leaves nothing itself.
"$PHYTRACE_BIN" record -o "$PHYTRACE_OUT/kill9-after.ptrace" --duration 1s 2>"$PHYTRACE_OUT/kill9-after.stderr" ||
    fail "record after the kills failed: $(cat "$PHYTRACE_OUT/kill9-after.stderr")"
assert_no_probes_left "after the next clean recording"
result "\"rounds\":$rounds,\"events\":$total"
assert_clean_dmesg kill9
