#!/bin/bash
# The BMCR reset-toggle quirk (X-Surf 100): the simulated PHY only resets on a 0->1 toggle of the
# written RESET bit, and the written bit stays latched after a reset. A PHY reset requested
# through SIOCSMIIREG makes phylib write BMCR.RESET, which the PHY ignores (the previous reset's
# RESET write is still latched: no BMCR write came in between), then call phy_init_hw() -> the
# driver's soft_reset, which clears BMCR first: so the reset happens all the same, every time.
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
        expect_eq "$c: resets performed (the driver's)" 1 "$r"
        expect_eq "$c: RESET writes ignored (phylib's raw write)" 1 "$i"
        expect_eq "$c: reset bit cleared after the request" 0 \
            $(( $(python3 "$here/mii.py" "$c" read 0) & 0x8000 ))
        record "request$n" "resets=$r ignored=$i"
        wait_mode "$c" 100 full
    done
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
