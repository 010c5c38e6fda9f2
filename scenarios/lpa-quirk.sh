#!/bin/bash
# lpa-quirk: the AX88772A "LPA reads 0" quirk. Brings the AX88772A and the AX88772C up with
# LPA forced to 0, cycles the partner through PARTNERS, and shows what each reports: the
# AX88772A's read_status falls back to BMCR (right speed/duplex), the AX88772C's
# genphy_read_status cannot resolve (unknown).
#   PARTNERS="all 10half 100half 10full" HOLD=1 DRIVER=rust|c KEEP=0
set -euo pipefail
. "$(dirname "$0")/common.sh"
PARTNERS=${PARTNERS:-all 10half 100half 10full} HOLD=${HOLD:-1}

ensure_loaded
a=$(simdev ax88772a) c=$(simdev ax88772c)
for d in $a $c; do sim_set "$d" lpa_zero 1; done
link_up "$a" "$c"
wait_carrier "$a" 1 15
for p in $PARTNERS; do
    for d in $a $c; do sim_set "$d" partner "$p"; done
    sleep 0.5
    wait_carrier "$a" 1 15
    wait_carrier "$c" 1 15
    sleep "$HOLD"
    log "partner $p: $a (AX88772A) $(speed "$a")/$(duplex "$a"), $c (AX88772C) $(speed "$c")/$(duplex "$c"), LPA $(awk '$2 == "LPA" { print $3 }' "$SIM_DBG/$a/regs")"
done
for d in $a $c; do sim_set "$d" lpa_zero 0; sim_set "$d" partner all; done
