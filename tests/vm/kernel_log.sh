# shellcheck shell=bash
# What in the kernel's log is trouble, for the test runners (run.sh) and the tests (lib.sh).
#
# One warning is the kernel's own and expected where a test unplugs a USB dongle: a transfer
# cut by the removal fails with -EPROTO (-71) or -ESHUTDOWN (-108), the USB statuses of a
# disconnection (Documentation/driver-api/usb/error-codes.rst), before the device is gone;
# phylib's state machine tolerates only -ENODEV there, and phy_error() warns
# ("phy_check_link_status+0x0/0xf0: returned: -71", then "WARNING: CPU: 0 PID: 42 at
# _phy_state_machine+0x16a/0x290" on 6.12, "WARNING: at _phy_state_machine+..." on 7.3).
# That block is left out of the checks and counted; every other warning, BUG or oops is trouble.

UNPLUG_WARNING='WARNING: (CPU: [0-9]+ PID: [0-9]+ )?at _phy_state_machine[+]'
KERNEL_TROUBLE='WARNING:|BUG:|Oops|general protection|Call Trace:|refcount_t:|kernel BUG|UBSAN|KASAN|list_del corruption'

# Reads a kernel log on stdin and prints it without the unplug's warning blocks.
without_unplug_warning() {
    awk -v warning="$UNPLUG_WARNING" '/-+\[ cut here \]-+/ { block = $0 "\n"; held = 1; next }
        held {
            block = block $0 "\n"
            if (/---\[ end trace/) {
                if (!(block ~ /returned: -(71|108)\n/ && block ~ warning)) printf "%s", block
                held = 0
            }
            next
        }
        { print }
        END { if (held) printf "%s", block }'
}

# Reads a kernel log on stdin and prints its trouble lines (none: nothing).
kernel_trouble() {
    without_unplug_warning | grep -E "$KERNEL_TROUBLE" || true
}

# Reads a kernel log on stdin and prints how many unplug warning blocks
# without_unplug_warning leaves out of it.
unplug_warnings() {
    local log all kept
    log=$(cat)
    all=$(grep -cE "$UNPLUG_WARNING" <<<"$log" || true)
    kept=$(without_unplug_warning <<<"$log" | grep -cE "$UNPLUG_WARNING" || true)
    echo $((all - kept))
}
