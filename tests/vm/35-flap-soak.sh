#!/bin/bash
# Soak: the cables of all simulated PHYs flap (and the link partner changes) for SOAK_SECS
# (default 60; the soak runs 3600) while `phytrace record` and the live TUI (in tmux) run. Every
# SAMPLE_SECS (default 10; the soak: 60) the RSS and open file descriptors of both are sampled
# into $PHYTRACE_OUT/soak-samples.jsonl. Both must stay flat over the second half of the run, and
# nothing may be lost at this rate.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
secs=${SOAK_SECS:-60} every=${SAMPLE_SECS:-10}
TUI_SOCK=/tmp/soak.tmux
samples=$PHYTRACE_OUT/soak-samples.jsonl
: >"$samples"
trap_cleanup
soak_cleanup() {
    if [[ -n ${FLAPPER:-} ]]; then kill "$FLAPPER"; fi
    tmux -S "$TUI_SOCK" kill-server 2>/dev/null
}
cleanup_also soak_cleanup
mark_dmesg soak
setup rust
mapfile -t devs < <(sim_devs)
link_up "${devs[@]}"
cap=$PHYTRACE_OUT/soak.ptrace
start_record "$cap"
# The TUI keeps 20000 events, reached within the first minutes: memory must level off there.
tmux -S "$TUI_SOCK" new-session -d -x 120 -y 40 "$PHYTRACE_BIN tui --keep 20000"
wait_for 20 pgrep -f "^$PHYTRACE_BIN tui" >/dev/null || fail "the TUI did not start"
tui=$(pgrep -f "^$PHYTRACE_BIN tui" | head -1)
wait_for 30 tui_shows "ax88796b_rust attached" || fail "the TUI did not attach"
partners=(all '100half 10full 10half' '10full 10half' 10half)
flap() {
    while :; do
        d=${devs[RANDOM % ${#devs[@]}]}
        ((RANDOM % 4 == 0)) && sim_set "$d" partner "${partners[RANDOM % 4]}"
        sim_set "$d" cable 0
        sleep "0.$((RANDOM % 5 + 3))"
        sim_set "$d" cable 1
        sleep "0.$((RANDOM % 5 + 3))"
    done
}
flap &
FLAPPER=$!
started=$SECONDS
next=0
while ((SECONDS - started < secs)); do
    if ((SECONDS - started >= next)); then
        kill -0 "$RECORD_PID" || fail "record exited"
        kill -0 "$tui" || fail "the TUI exited"
        printf '{"t":%d,"record_rss_kib":%d,"record_fds":%d,"tui_rss_kib":%d,"tui_fds":%d}\n' \
            $((SECONDS - started)) "$(rss_kib "$RECORD_PID")" "$(fds "$RECORD_PID")" \
            "$(rss_kib "$tui")" "$(fds "$tui")" | tee -a "$samples"
        next=$((next + every))
    fi
    sleep 1
done
kill "$FLAPPER"
wait "$FLAPPER" 2>/dev/null || true
FLAPPER=
tui_shows "ax88796b_rust" || fail "the TUI screen lost the driver"
tmux -S "$TUI_SOCK" send-keys q
wait_for 10 bash -c "! kill -0 $tui 2>/dev/null" || fail "the TUI did not quit on q"
stop_record "$cap"
expect_eq "events lost while flapping" 0 "$(trailer_field "$cap" lost)"
events=$("$PHYTRACE_BIN" dump --format json "$cap" | wc -l)
python3 - "$samples" "$PHYTRACE_OUT/results.jsonl" "$TEST_NAME" "$secs" "$events" <<'PY'
import json, sys
samples, results, test, secs, events = sys.argv[1:]
rows = [json.loads(l) for l in open(samples)]
late = rows[len(rows) // 2:]
result = {"test": test, "secs": int(secs), "events": int(events), "samples": len(rows)}
failures = []
for who in ("record", "tui"):
    rss = [r[f"{who}_rss_kib"] for r in late]
    fds = sorted({r[f"{who}_fds"] for r in rows})
    # A file read now and then (kprobe_profile, kallsyms) may be open as a sample is taken: a
    # leak is the second half holding more than the first ever did.
    early_fds = max(r[f"{who}_fds"] for r in rows[: len(rows) - len(late)] or rows[:1])
    late_fds = max(r[f"{who}_fds"] for r in late)
    growth = rss[-1] - min(rss)
    result[who] = {"rss_first_kib": rows[0][f"{who}_rss_kib"], "rss_late_min_kib": min(rss),
                   "rss_late_max_kib": max(rss), "rss_end_kib": rss[-1], "fds": fds}
    print(f"{who}: RSS {min(rss)}..{max(rss)} KiB over the second half (end - min = {growth}), fds {fds}")
    if growth > 1024:
        failures.append(f"{who} RSS grew by {growth} KiB over the second half")
    if late_fds > early_fds:
        failures.append(f"{who} open file descriptors grew: {early_fds} then {late_fds} ({fds})")
with open(results, "a") as f:
    f.write(json.dumps(result) + "\n")
if failures:
    sys.exit("FAIL: " + "; ".join(failures))
PY
ok "$secs s of flapping: $events events recorded, none lost; memory and fds flat"
assert_clean_dmesg soak
