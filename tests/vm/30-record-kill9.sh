#!/bin/bash
# `phytrace record` killed with SIGKILL at random moments while the link flaps (short version of
# the reliability run): every capture reads back up to its last whole record and says it was not
# closed cleanly, and no kprobe of phytrace stays armed in the kernel afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
setup rust
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
kprobes=/sys/kernel/debug/kprobes/list
probed() { grep -cE '__mdiobus_(read|write)|_callback' "$kprobes" || true; }
expect_eq "kprobes on MDIO/callbacks before recording" 0 "$(probed)"
for round in 1 2 3 4 5; do
    cap=$PHYTRACE_OUT/kill9-$round.ptrace
    "$PHYTRACE_BIN" record -o "$cap" 2>"$cap.stderr" &
    pid=$!
    wait_for 20 grep -q "recording to" "$cap.stderr" || fail "record did not start"
    (($(probed) > 0)) || fail "no kprobe armed while recording"
    sim_set "$a" cable 0
    sleep "0.$((RANDOM % 9 + 1))"
    sim_set "$a" cable 1
    sleep "0.$((RANDOM % 9 + 1))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    wait_for 5 bash -c "(( \$(grep -cE '__mdiobus_(read|write)|_callback' $kprobes || true) == 0 ))" ||
        fail "round $round: kprobes left armed after SIGKILL: $(grep -E '__mdiobus|_callback' "$kprobes")"
    set +e
    out=$("$PHYTRACE_BIN" dump "$cap" 2>&1 >/dev/null)
    status=$?
    set -e
    expect_eq "round $round: dump of the killed capture" 0 "$status"
    grep -q "not closed cleanly" <<<"$out" || fail "round $round: the missing trailer is not reported: $out"
    events=$("$PHYTRACE_BIN" dump --format json "$cap" 2>/dev/null | wc -l)
    ((events > 0)) || fail "round $round: no event read back"
    ok "round $round: $events events read back, truncation reported, no kprobe left"
    wait_mode "$a" 100 full
done
assert_clean_dmesg kill9
