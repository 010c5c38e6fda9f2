#!/bin/bash
# module-reload: with the links up, unload the simulator and the driver, and load them again,
# COUNT times (PAUSE seconds between steps). A tracer sees the driver module go and come back.
# ALTERNATE=1 switches between the Rust and the C driver at each reload.
#   COUNT=3 PAUSE=1 ALTERNATE=0 DRIVER=rust|c KEEP=0
set -euo pipefail
. "$(dirname "$0")/common.sh"
COUNT=${COUNT:-3} PAUSE=${PAUSE:-1} ALTERNATE=${ALTERNATE:-0}

drv=$DRIVER
unload_all
for ((i = 1; i <= COUNT; i++)); do
    load_driver "$drv"
    load_sim
    devs=$(sim_devs)
    # shellcheck disable=SC2086
    link_up $devs
    for d in $devs; do wait_carrier "$d" 1 15; done
    log "$i/$COUNT: ${DRIVER_MOD[$drv]} loaded, links up on ${devs//$'\n'/ }"
    sleep "$PAUSE"
    rmmod phy_sim
    rmmod "${DRIVER_MOD[$drv]}"
    log "$i/$COUNT: unloaded with the links up"
    sleep "$PAUSE"
    if [[ $ALTERNATE == 1 ]]; then
        [[ $drv == rust ]] && drv=c || drv=rust
    fi
done
if [[ $KEEP == 1 ]]; then
    load_driver "$drv"
    load_sim
fi
