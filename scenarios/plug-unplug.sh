#!/bin/bash
# plug-unplug: bring the AX88772A link up, then unplug and replug the cable COUNT times, every
# PERIOD seconds (the cable stays out PERIOD s and in PERIOD s). Each unplug runs the driver's
# link_change_notify NOLINK reset path.
#   COUNT=5 PERIOD=2 MODEL=ax88772a DRIVER=rust|c KEEP=0 WAIT=1
#   WAIT=1: also wait for carrier off/on at each step (prints the time it took)
set -euo pipefail
. "$(dirname "$0")/common.sh"
COUNT=${COUNT:-5} PERIOD=${PERIOD:-2} MODEL=${MODEL:-ax88772a} WAIT=${WAIT:-1}

ensure_loaded
dev=$(simdev "$MODEL")
bring_up "$dev"
reset_counters
for ((i = 1; i <= COUNT; i++)); do
    t0=$(date +%s.%N)
    sim_set "$dev" cable 0
    [[ $WAIT != 1 ]] || wait_carrier "$dev" 0 30
    log "$i/$COUNT unplugged (carrier off after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
    sleep "$PERIOD"
    t0=$(date +%s.%N)
    sim_set "$dev" cable 1
    [[ $WAIT != 1 ]] || wait_carrier "$dev" 1 30
    log "$i/$COUNT replugged (carrier on after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
    sleep "$PERIOD"
done
log "counters: resets=$(counter_total "$dev" resets) aneg_restarts=$(counter_total "$dev" aneg_restarts) BMCR writes=$(counter "$dev" BMCR writes) BMSR reads=$(counter "$dev" BMSR reads)"
