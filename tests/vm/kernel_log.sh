# shellcheck shell=bash
# What in the kernel's log is trouble, for the test runners (run.sh) and the tests (lib.sh).
#
# One warning is the kernel's own and expected where a test unplugs a USB dongle: a transfer
# cut by the removal fails with -EPROTO (-71) before the device is gone, phylib's state machine
# tolerates only -ENODEV there, and phy_error() warns ("phy_check_link_status+0x0/0xf0:
# returned: -71", WARNING at _phy_state_machine). That block is left out of the checks and
# counted; every other warning, BUG or oops is trouble.

KERNEL_TROUBLE='WARNING:|BUG:|Oops|general protection|Call Trace:|refcount_t:|kernel BUG|UBSAN|KASAN|list_del corruption'

# Reads a kernel log on stdin and prints it without the unplug's -EPROTO warning blocks.
without_unplug_warning() {
    awk '/-+\[ cut here \]-+/ { block = $0 "\n"; held = 1; next }
        held {
            block = block $0 "\n"
            if (/---\[ end trace/) {
                if (!(block ~ /returned: -71\n/ && block ~ /WARNING: at _phy_state_machine/)) printf "%s", block
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

# Reads a kernel log on stdin and prints how many unplug -EPROTO warning blocks
# without_unplug_warning leaves out of it.
unplug_warnings() {
    local log all kept
    log=$(cat)
    all=$(grep -c 'WARNING: at _phy_state_machine' <<<"$log" || true)
    kept=$(without_unplug_warning <<<"$log" | grep -c 'WARNING: at _phy_state_machine' || true)
    echo $((all - kept))
}
