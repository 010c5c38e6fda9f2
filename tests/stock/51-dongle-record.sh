#!/bin/bash
# The emulated AX88772A on Debian's kernels, recorded: the emulator runs on FunctionFS (they
# have no raw-gadget); at plug-in asix loads by the device's modalias and phylib loads the
# kernel's own Asix PHY driver by the PHY's mdio: alias: ax88796b_rust on 7.3 and Debian 14's
# 7.2, the C ax88796b on Debian 13's 6.12. Where phylib is a module (Debian 13 and 14), libphy
# is loaded first, so that its mdio:mdio_access tracepoint is there before the plug-in (a
# libphy the plug-in loads is tests/stock/49's). The scenario every kernel records
# (dongle_lib.sh: dongle_scenario, also tests/vm/42-dongle-twin.sh on ours): `phytrace record`
# from before the plug-in through link up, a cable flap, a partner change (the link
# renegotiates to 10/full) and link down, callbacks at phylib's call sites. Its checks are the
# same on every kernel (dongle_scenario_check): MDIO per register equal to the kernel's
# mdio:mdio_access and the emulator's counters, carrier changes as the kernel counted them, the
# MAC side and read_status at the modes sysfs showed, the first callback the probe-time
# soft_reset, the shipped specs on the dongle's PHY. The capture is kept as
# twin-dongle-KERNEL for the host's cross-kernel comparison (xtask/src/twin.rs).
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
kernel_only stock debian13 debian14
dongle_test_begin

mark_dmesg plug
flavour=$(kernel_phy_driver)
driver=${DRIVER_MOD[$flavour]}
dongle_modules_load "$flavour"
modprobe libphy || fail "modprobe libphy failed"
expect_eq "the emulator's backend on this kernel" functionfs "$(dongle_backend)"
module_loaded "$driver" && fail "$driver is loaded before the dongle is plugged in"
cap=$PHYTRACE_OUT/twin-dongle-$PHYTRACE_VM_KERNEL.ptrace
rm -f "$cap"*
dongle_scenario "$cap" --callback-probes callsite
expect_eq "Debian's $driver, loaded by alias at plug-in" \
    "/lib/modules/$(uname -r)/kernel/drivers/net/phy/$driver.ko.xz" "$(modinfo -n "$driver")"
drv=$(readlink "$MDIO_DEVS/$DONGLE_BUS:10/driver")
expect_eq "the PHY's driver" "Asix Electronics AX88772A" "${drv##*/}"
dongle_scenario_check "$cap"
expect_eq "requests the emulator did not know" 0 "$(dongle_status '["unknown"]')"
dongle_stop
dongle_modules_unload
assert_clean_dmesg "stock dongle"
