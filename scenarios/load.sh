#!/bin/bash
# load: MDIO load for benchmarks. Brings the AX88772A link up, then reads REG through the MDIO
# bus at RATE reads/s for DURATION s (a kernel thread of phy_sim: debugfs "load"), or, with
# RATE=max, COUNT back-to-back reads in the debugfs write handler. Prints the result line of
# the load file and the simulator's counters; LINK=0 skips the link (no phylib polling).
#   RATE=1000 DURATION=10 COUNT=100000 REG=BMSR MODEL=ax88772a LINK=1 DRIVER=rust|c KEEP=0
# The result is also written to $PHYTRACE_OUT/load.result.
set -euo pipefail
. "$(dirname "$0")/common.sh"
RATE=${RATE:-1000} DURATION=${DURATION:-10} COUNT=${COUNT:-100000} REG=${REG:-BMSR}
MODEL=${MODEL:-ax88772a} LINK=${LINK:-1}

ensure_loaded
dev=$(simdev "$MODEL")
[[ $LINK != 1 ]] || bring_up "$dev"
reset_counters
if [[ $RATE == max ]]; then
    sim_set "$dev" load "$COUNT $REG"
else
    sim_set "$dev" load "rate $RATE $DURATION $REG"
    wait_for $((DURATION + 30)) grep -q "running=0" "$SIM_DBG/$dev/load" || fail "load did not finish"
fi
result=$(sim_get "$dev" load)
log "$dev: $result"
log "$dev: $REG reads counted by the simulator: $(counter "$dev" "$REG" reads), all reads: $(counter_total "$dev" total_reads)"
echo "$result" >"$PHYTRACE_OUT/load.result"
