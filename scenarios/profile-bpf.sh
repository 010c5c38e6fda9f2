#!/bin/bash
# profile-bpf: where the time of phytrace's eBPF programs goes, per program, from the kernel's
# own BPF statistics (kernel.bpf_stats_enabled: run count and time inside each program, the
# trampoline's own cost excluded). Runs one burst of READS synchronous MDIO reads on the
# simulated AX88772A while `phytrace record` runs, for each attach of the MDIO probes in turn,
# ROUNDS times, and prints one JSON object per program and round:
#   {"probes":"fentry","round":1,"program":NAME,"runs":N,"ns_per_run":T}
# and the burst's own time per read ({"probes":…,"round":…,"burst_ns_per_read":T}). Statistics
# add two clock reads per run; compare programs with each other, in one boot.
# Options: READS=20000 ROUNDS=3 BIN=$PHYTRACE_BIN.
set -euo pipefail
. "$(dirname "$0")/common.sh"
READS=${READS:-20000} ROUNDS=${ROUNDS:-3}
BIN=${BIN:-$PHYTRACE_BIN}
work=$(mktemp -d)
ensure_loaded
dev=$(simdev ax88772a)
# profile PROBES ROUND: one burst under `record --mdio-probes PROBES`.
profile() {
    rm -f "$work/profile.status"
    "$BIN" record -o "$work/profile.ptrace" --mdio-probes "$1" --status "$work/profile.status" \
        2>"$work/record.err" &
    local pid=$!
    started() { grep -q '"status":"recording"' "$work/profile.status" 2>/dev/null; }
    wait_for 60 started || {
        cp "$work/record.err" "$PHYTRACE_OUT/profile-record.err"
        fail "phytrace record did not start"
    }
    sysctl -q kernel.bpf_stats_enabled=1
    bpftool --json prog show >"$work/before.json"
    sim_set "$dev" load "$READS BMSR"
    bpftool --json prog show >"$work/after.json"
    sysctl -q kernel.bpf_stats_enabled=0
    kill -INT "$pid"
    wait "$pid"
    jq -cM --arg probes "$1" --argjson round "$2" --slurpfile before "$work/before.json" '
        .[] | select((.name // "") | test("^(mdio|callback)")) | . as $p
        | ($before[0][] | select(.id == $p.id)) as $b
        | (($p.run_cnt // 0) - ($b.run_cnt // 0)) as $runs
        | select($runs > 0)
        | {bench: "profile", probes: $probes, round: $round, program: .name, runs: $runs,
           ns_per_run: (((($p.run_time_ns // 0) - ($b.run_time_ns // 0)) / $runs) | floor)}
    ' "$work/after.json"
    echo "{\"bench\":\"profile\",\"probes\":\"$1\",\"round\":$2,\"burst_ns_per_read\":$(load_ns_per_read "$dev")}"
}
for ((round = 1; round <= ROUNDS; round++)); do
    for probes in fentry kprobe; do profile "$probes" "$round"; done
done
rm -rf "$work"
