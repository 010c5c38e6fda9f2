#!/bin/bash
# The BMCR reset-toggle quirk (X-Surf 100): the simulated PHY only resets on a 0->1 toggle of the
# written RESET bit. A PHY reset requested through SIOCSMIIREG makes phylib write BMCR.RESET and
# then call phy_init_hw() -> the driver's soft_reset, which clears BMCR first: so the second
# reset in a row still happens (one write ignored by the PHY, the driver's reset performed).
# Every Asix PHY has soft_reset = asix_soft_reset; the AX88772C is used here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
here=$(cd "$(dirname "$0")" && pwd)

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    SIM_RESET_MS=150 setup "$CUR_DRIVER"
    c=$(simdev ax88772c)
    link_up "$c"
    wait_mode "$c" 100 full
    for n in 1 2; do
        sleep 0.3
        reset_counters
        python3 "$here/mii.py" "$c" write 0 0x8000
        r=$(counter_total "$c" resets) i=$(counter_total "$c" resets_ignored)
        log "reset request $n: resets=$r resets_ignored=$i BMCR writes=$(counter "$c" BMCR writes)"
        (( r >= 1 )) || fail "$c: the driver's soft reset did not reset the PHY"
        expect_eq "$c: reset bit cleared after the request" 0 \
            $(( $(python3 "$here/mii.py" "$c" read 0) & 0x8000 ))
        record "request$n" "resets=$r ignored=$i"
        wait_mode "$c" 100 full
    done
    # The ioctl's own RESET write right after a reset (RESET still latched in the PHY) is
    # ignored; the driver's BMCR clear + RESET is what resets it.
    expect_eq "$c: second request: the PHY ignored the ioctl's RESET write" 1 "$(counter_total "$c" resets_ignored)"
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
