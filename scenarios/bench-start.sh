#!/bin/bash
# bench-start: what `cargo xtask bench` runs on Debian's stock kernel, as packaged: P2, start to
# attached, the same as bench.sh's on our kernel, with no simulated hardware (Debian's kernel
# cannot load our modules). In STARTS rounds of their own, after one warm-up start each:
# `phytrace record` with its defaults (phylib's call sites from this boot's cache), forky's
# bpftrace on the same work (scenarios/bench-bpftrace27.bt: the MDIO accessors' trampolines, the
# call sites `phytrace probes` lists); and the boot's first call-site start, which decodes the
# kernel text. Results: one JSON object per line in $PHYTRACE_OUT/bench-start.jsonl.
#   STARTS=9 BIN=$PHYTRACE_BIN BPFTRACE_ROOT=(required)
set -euo pipefail
. "$(dirname "$0")/common.sh"
STARTS=${STARTS:-9}
BIN=${BIN:-$PHYTRACE_BIN}
OUT=$PHYTRACE_OUT/bench-start.jsonl
work=$(mktemp -d)
: >"$OUT"
# shellcheck source=scenarios/bench_lib.sh
. "$PHYTRACE_ROOT/scenarios/bench_lib.sh"

export XDG_CACHE_HOME=$work/cache
decode_call_sites
write_bpftrace27_script
emit "{\"bench\":\"start-probes\",\"kernel\":\"$(uname -r)\",\"site_probes\":$SITE_PROBES,\"bpftrace27\":\"$(bpftrace27 --version | awk '{ print $2 }')\",\"starts\":$STARTS}"

start_tracer phytrace-default
emit "{\"bench\":\"p2-cold\",\"tracer\":\"phytrace-default\",\"attach_ms\":$ATTACH_MS}"
stop_tracer

P2_TRACERS="phytrace-default bpftrace27"
log "P2: $STARTS rounds of starting and stopping each of $P2_TRACERS"
for tracer in $P2_TRACERS; do # warm-up: the binaries and their libraries in the page cache
    start_tracer "$tracer"
    stop_tracer
done
for ((r = 1; r <= STARTS; r++)); do
    for tracer in $P2_TRACERS; do
        start_tracer "$tracer"
        stop_tracer
        emit "{\"bench\":\"p2\",\"tracer\":\"$tracer\",\"round\":$r,\"attach_ms\":$ATTACH_MS}"
    done
done
rm -rf "$work"
log "results in $OUT"
