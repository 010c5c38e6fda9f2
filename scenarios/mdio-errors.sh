#!/bin/bash
# mdio-errors: inject MDIO errors into a running link.
#   MODE=read   a BMSR read fails (ERRNO, COUNT times): read_status fails, phylib goes to
#               PHY_ERROR (WARNING in dmesg), carrier off; RECOVER=1 then does ip link down/up.
#   MODE=write  a BMCR write fails, then the cable is unplugged: the AX88772A's NOLINK reset
#               path hits it (the driver ignores it); then replug.
#   MODE=custom REG, ERRNO, COUNT, OPS (r|w|rw) as given, held for HOLD seconds.
#   MODEL=ax88772a MODE=read ERRNO=5 COUNT=1 RECOVER=1 REG= OPS=r HOLD=3 DRIVER=rust|c KEEP=0
set -euo pipefail
. "$(dirname "$0")/common.sh"
MODEL=${MODEL:-ax88772a} MODE=${MODE:-read} ERRNO=${ERRNO:-5} COUNT=${COUNT:-1} RECOVER=${RECOVER:-1}
HOLD=${HOLD:-3}

ensure_loaded
dev=$(simdev "$MODEL")
bring_up "$dev"
reset_counters
case $MODE in
read)
    sim_set "$dev" inject "BMSR $ERRNO $COUNT r"
    wait_state "$dev" ERROR 15
    log "$dev: state ERROR, carrier $(carrier "$dev"), BMSR read errors $(counter "$dev" BMSR rd_err)"
    if [[ $RECOVER == 1 ]]; then
        sim_set "$dev" inject clear
        link_down "$dev"
        link_up "$dev"
        wait_carrier "$dev" 1 15
        log "$dev: recovered, state $(sim_info "$dev" state)"
    fi
    ;;
write)
    sim_set "$dev" inject "BMCR $ERRNO $COUNT w"
    sim_set "$dev" cable 0
    wait_carrier "$dev" 0 15
    sleep 1
    log "$dev: unplugged, state $(sim_info "$dev" state), BMCR write errors $(counter "$dev" BMCR wr_err), resets $(counter_total "$dev" resets)"
    sim_set "$dev" inject clear
    sim_set "$dev" cable 1
    wait_carrier "$dev" 1 15
    log "$dev: replugged"
    ;;
custom)
    sim_set "$dev" inject "${REG:?REG=} $ERRNO $COUNT ${OPS:-r}"
    sleep "$HOLD"
    log "$dev: state $(sim_info "$dev" state), carrier $(carrier "$dev")"
    sim_set "$dev" inject clear
    ;;
*)
    echo "MODE must be read, write or custom" >&2
    exit 2
    ;;
esac
