#!/bin/bash
# profile-bpf: where the time of phytrace's eBPF programs goes, per program, from the kernel's
# own BPF statistics (kernel.bpf_stats_enabled: run count and time inside each program, the
# trampoline's own cost excluded). Runs one burst of READS synchronous MDIO reads on the
# simulated AX88772A while `phytrace record` runs, then prints one JSON object per program:
#   {"program":NAME,"runs":N,"ns_per_run":T}
# Options: READS=20000 PROBES=fentry|kprobe BIN=$PHYTRACE_BIN.
set -euo pipefail
. "$(dirname "$0")/common.sh"
READS=${READS:-20000} PROBES=${PROBES:-fentry}
BIN=${BIN:-$PHYTRACE_BIN}
work=$(mktemp -d)
ensure_loaded
dev=$(simdev ax88772a)
"$BIN" record -o "$work/profile.ptrace" --mdio-probes "$PROBES" 2>"$work/record.err" &
pid=$!
wait_for 60 grep -q "recording to" "$work/record.err" || fail "phytrace record did not start"
sysctl -q kernel.bpf_stats_enabled=1
bpftool --json prog show >"$work/before.json"
sim_set "$dev" load "$READS BMSR"
bpftool --json prog show >"$work/after.json"
sysctl -q kernel.bpf_stats_enabled=0
kill -INT "$pid"
wait "$pid"
jq -c --slurpfile before "$work/before.json" '
    .[] | select(.name | test("^(mdio|callback)")) | . as $p
    | ($before[0][] | select(.id == $p.id)) as $b
    | (($p.run_cnt // 0) - ($b.run_cnt // 0)) as $runs
    | select($runs > 0)
    | {program: .name, runs: $runs, ns_per_run: (((($p.run_time_ns // 0) - ($b.run_time_ns // 0)) / $runs) | floor)}
' "$work/after.json"
echo "{\"burst_ns_per_read\":$(sim_get "$dev" load | sed 's/.*ns_per_read=\([0-9]*\).*/\1/')}"
rm -rf "$work"
