#!/bin/bash
# compare: what `cargo xtask bench --against REV` runs in the guest. Two release builds of
# phytrace, A (REV) and B (the working tree), alternated in one boot, round after round, on the
# simulated AX88772A with the Rust driver (links down), each with record's defaults, in
# ABBA order:
#   p1 ns per MDIO access: a synchronous burst of READS mdiobus_read()s while recording (after one
#      warm-up burst);
#   c1 ns per driver callback: a burst of CALLS phy_resume() calls while recording;
#   p2 start to attached (ms): process start until its `--status` line says `recording`, the
#      call sites from this boot's cache (the first start of each, which fills it, not counted).
# Boot-to-boot noise is larger than most differences between builds: only rounds of one boot
# compare them.
# Results: one JSON object per line in $PHYTRACE_OUT/compare.jsonl:
#   {"bench":"compare","build":"a|b","figure":"p1|c1|p2","round":N,"value":X}
#   REPEATS=5 READS=20000 CALLS=20000 BIN_A=... BIN_B=...
set -euo pipefail
. "$(dirname "$0")/common.sh"
REPEATS=${REPEATS:-5} READS=${READS:-20000} CALLS=${CALLS:-20000}
: "${BIN_A:?the build compared against, which cargo xtask bench --against passes}"
: "${BIN_B:?the working tree build, which cargo xtask bench --against passes}"
OUT=$PHYTRACE_OUT/compare.jsonl
work=$(mktemp -d)
: >"$OUT"
export XDG_CACHE_HOME=$work/cache
emit() { echo "$1" | tee -a "$OUT"; }

ensure_loaded
dev=$(simdev ax88772a)

# burst_ns LOAD: ns per operation of one synchronous simulator load (`N BMSR`, `resume N`).
burst_ns() {
    sim_set "$dev" load "$1"
    load_ns_per_read "$dev"
}

# start BIN: starts BIN recording and waits, blocked on the FIFO its status goes to, until it
# says it is recording; sets TRACER_PID and ATTACH_MS (wall clock from bash's own clock: `date`
# would fork within the time measured).
start() {
    local t0 line attached='' fifo=$work/status.fifo
    rm -f "$fifo"
    mkfifo "$fifo"
    exec 3<>"$fifo"
    t0=${EPOCHREALTIME/./}
    "$1" record -o "$work/compare.ptrace" --status "$fifo" 2>"$work/record.err" &
    TRACER_PID=$!
    while IFS= read -r -t 120 -u 3 line; do
        [[ $line == *'"status":"recording"'* ]] && { attached=1; break; }
    done
    [[ -n $attached ]] || { cat "$work/record.err"; fail "$1 did not attach"; }
    ATTACH_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
    drain_tracer /dev/null
}

log "compare: $REPEATS rounds of A ($BIN_A) and B ($BIN_B) in turn"
for bin in "$BIN_A" "$BIN_B"; do # the first start fills this boot's call-site cache
    start "$bin"
    stop_tracer
done
burst_ns "$READS BMSR" >/dev/null
for ((r = 1; r <= REPEATS; r++)); do
    # A first in odd rounds, B first in even ones: what a stop leaves behind (kprobes removed
    # after an RCU grace period) slows whichever comes next.
    order="a b"
    ((r % 2 == 1)) || order="b a"
    for build in $order; do
        bin=BIN_${build^^}
        start "${!bin}"
        emit "{\"bench\":\"compare\",\"build\":\"$build\",\"figure\":\"p2\",\"round\":$r,\"value\":$ATTACH_MS}"
        burst_ns "$READS BMSR" >/dev/null
        emit "{\"bench\":\"compare\",\"build\":\"$build\",\"figure\":\"p1\",\"round\":$r,\"value\":$(burst_ns "$READS BMSR")}"
        emit "{\"bench\":\"compare\",\"build\":\"$build\",\"figure\":\"c1\",\"round\":$r,\"value\":$(burst_ns "resume $CALLS")}"
        stop_tracer
    done
done
