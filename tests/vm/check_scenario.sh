#!/bin/bash
# The scenario `13-check` records with `phytrace check -- …` (the Rust driver is loaded before,
# so that phytrace attaches at start and sees the PHYs' first callbacks): the simulated PHYs
# load, links come up, the AX88772A's cable is unplugged and replugged, links go down.
# INJECT=1 makes the AX88772A's next BMCR write fail (-EIO) just before the unplug, so the
# soft_reset of the NOLINK re-init fails.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
load_sim
a=$(simdev ax88772a) c=$(simdev ax88772c) b=$(simdev ax88796b)
link_up "$a" "$c" "$b"
for dev in $a $c $b; do wait_mode "$dev" 100 full; done
[[ ${INJECT:-0} != 1 ]] || sim_set "$a" inject "BMCR 5 1 w"
resets=$(counter_total "$a" resets) refused=$(counter "$a" BMCR wr_err)
sim_set "$a" cable 0
wait_state "$a" NOLINK
# The NOLINK re-init has reached the PHY: one more soft reset, or (INJECT) its write refused.
reinit_done() {
    if [[ ${INJECT:-0} == 1 ]]; then
        (($(counter "$a" BMCR wr_err) > refused))
    else
        (($(counter_total "$a" resets) > resets))
    fi
}
wait_for 5 reinit_done || fail "no NOLINK re-init reached the PHY"
sim_set "$a" cable 1
wait_mode "$a" 100 full
# phy_stop is synchronous: no callback runs once the links are down.
link_down "$a" "$c" "$b"
