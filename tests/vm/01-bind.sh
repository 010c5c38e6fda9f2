#!/bin/bash
# The right driver binds to each of the three PHY IDs; modinfo shows the three mdio aliases.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

aliases='mdio:00000000001110110001100001100001
mdio:00000000001110110001100010000001
mdio:0000000000111011000110000100????'

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    got=$(modinfo -F alias "$PHYTRACE_MODULES/${DRIVER_KO[$CUR_DRIVER]}" | sort)
    expect_eq "modinfo aliases of ${DRIVER_KO[$CUR_DRIVER]}" "$(sort <<<"$aliases")" "$got"
    [[ $CUR_DRIVER != rust ]] ||
        expect_eq "module name" ax88796b_rust "$(modinfo -F name "$PHYTRACE_MODULES/ax88796b_rust.ko")"

    mark_dmesg "$CUR_DRIVER"
    setup "$CUR_DRIVER"
    for model in ax88772a ax88772c ax88796b; do
        dev=$(simdev "$model")
        expect_eq "$dev ($model) bound driver" "${ASIX_NAME[$model]}" "$(bound_driver "$dev")"
        expect_eq "$dev ($model) driver module" "${DRIVER_MOD[$CUR_DRIVER]}" "$(bound_module "$dev")"
        expect_eq "$dev ($model) phydev driver" "${ASIX_NAME[$model]}" "$(sim_info "$dev" driver)"
        expect_eq "$dev phy_id in sysfs" "$(sim_info "$dev" phy_id)" \
            "$(cat "$MDIO_DEVS/$(sim_info "$dev" mdio_device)/phy_id")"
        record "$model" "$(bound_driver "$dev")"
    done
    assert_clean_dmesg "$CUR_DRIVER: load"
    unload_all
done
compare_outcomes
