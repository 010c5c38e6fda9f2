#!/bin/bash
# The emulated AX88772A on Debian's stock kernel, recorded: the emulator runs on FunctionFS
# (the kernel has no raw-gadget); at plug-in Debian's asix loads by the device's modalias and
# phylib loads Debian's own ax88796b_rust by the PHY's mdio: alias. The scenario every kernel
# records (dongle_lib.sh: dongle_scenario, also tests/vm/42-dongle-twin.sh on ours): `phytrace
# record` from before the plug-in through link up, a cable flap, a partner change (the link
# renegotiates to 10/full) and link down, callbacks at phylib's call sites. Its checks are the
# same on every kernel (dongle_scenario_check): MDIO per register equal to the kernel's
# mdio:mdio_access and the emulator's counters, carrier changes as the kernel counted them, the
# MAC side and read_status at the modes sysfs showed, the first callback the probe-time
# soft_reset, the shipped specs on the dongle's PHY. The capture is kept as twin-dongle-stock
# for the host's cross-kernel comparison (xtask/src/twin.rs).
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
stock_only
dongle_test_begin

mark_dmesg plug
dongle_modules_load rust
expect_eq "the emulator's backend on this kernel" functionfs "$(dongle_backend)"
module_loaded ax88796b_rust && fail "ax88796b_rust is loaded before the dongle is plugged in"
cap=$PHYTRACE_OUT/twin-dongle-stock.ptrace
rm -f "$cap"*
dongle_scenario "$cap" --callback-probes callsite
expect_eq "Debian's ax88796b_rust, loaded by alias at plug-in" \
    "/lib/modules/$(uname -r)/kernel/drivers/net/phy/ax88796b_rust.ko.xz" "$(modinfo -n ax88796b_rust)"
drv=$(readlink "$MDIO_DEVS/$DONGLE_BUS:10/driver")
expect_eq "the PHY's driver" "Asix Electronics AX88772A" "${drv##*/}"
dongle_scenario_check "$cap"
expect_eq "requests the emulator did not know" 0 "$(dongle_status '["unknown"]')"
dongle_stop
dongle_modules_unload
assert_clean_dmesg "stock dongle"
