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

p2_rounds "phytrace-default bpftrace27"
rm -rf "$work"
log "results in $OUT"
