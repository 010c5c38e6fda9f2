# shellcheck shell=bash
# Helpers for the VM tests with the emulated AX88772A USB dongle (ax88772a-emulator, see
# docs/dongle.md). Source after lib.sh. Runs in the guest as root.
#
# Environment: DONGLE_BIN (the emulator, default target/debug/ax88772a-emulator),
# DONGLE_SOCK (its control socket), DONGLE_KERNEL_TREE (the built kernel tree whose .ko files
# are loaded; default: the tree under ~/.cache/phytrace/kernel whose release is `uname -r`).

DONGLE_BIN=${DONGLE_BIN:-$PHYTRACE_ROOT/target/debug/ax88772a-emulator}
DONGLE_SOCK=${DONGLE_SOCK:-/run/ax88772a-emulator-$$.sock}
DONGLE_EVENTS=$PHYTRACE_OUT/dongle-$$.events # the emulator's stdout: one JSON event a line
DONGLE_LOG=$PHYTRACE_OUT/dongle-$$.log       # its stderr
DONGLE_PID=""
# Modules dongle_modules_load inserted, in load order (dongle_modules_unload removes them).
DONGLE_MODULES=()

# The kernel tree of the running kernel.
dongle_kernel_tree() {
    local t rel
    if [[ -n ${DONGLE_KERNEL_TREE:-} ]]; then echo "$DONGLE_KERNEL_TREE"; return 0; fi
    for t in /root/.cache/phytrace/kernel/*/linux-source-*; do
        [[ -r $t/include/config/kernel.release ]] || continue
        read -r rel <"$t/include/config/kernel.release"
        if [[ $rel == "$(uname -r)" ]]; then echo "$t"; return 0; fi
    done
    return 1
}

# dongle_modules_load [PHY_DRIVER]: the USB host/gadget side, usbnet and asix, with the PHY
# driver (c: the in-tree ax88796b.ko, rust: ours) loaded before asix can probe a PHY (else
# genphy binds). One function, so that it can become `modprobe asix dummy_hcd raw_gadget`.
dongle_modules_load() {
    local flavour=${1:-c} tree m name
    tree=$(dongle_kernel_tree) || fail "no kernel tree for $(uname -r): set DONGLE_KERNEL_TREE"
    local -a kos=(lib/bitrev.ko lib/crc32.ko drivers/net/mii.ko drivers/net/phy/phylink.ko)
    case $flavour in
        c) kos+=(drivers/net/phy/ax88796b.ko) ;;
        rust) kos+=("$PHYTRACE_MODULES/ax88796b_rust.ko") ;;
        *) fail "dongle_modules_load: PHY driver must be c or rust, not $flavour" ;;
    esac
    kos+=(drivers/net/usb/usbnet.ko drivers/net/usb/asix.ko
        drivers/usb/gadget/udc/dummy_hcd.ko drivers/usb/gadget/legacy/raw_gadget.ko)
    for m in "${kos[@]}"; do
        [[ $m == /* ]] || m=$tree/$m
        name=$(basename "$m" .ko)
        name=${name//-/_}
        module_loaded "$name" && continue
        insmod "$m" || fail "insmod $m failed"
        DONGLE_MODULES+=("$name")
    done
    [[ -c /dev/raw-gadget ]] || wait_for 5 test -c /dev/raw-gadget || fail "/dev/raw-gadget did not appear"
}

# Removes what dongle_modules_load inserted, last first.
dongle_modules_unload() {
    local i
    for ((i = ${#DONGLE_MODULES[@]} - 1; i >= 0; i--)); do
        rmmod "${DONGLE_MODULES[i]}" 2>/dev/null ||
            echo "[$TEST_NAME] warning: cannot unload ${DONGLE_MODULES[i]}" >&2
    done
    DONGLE_MODULES=()
}

# dongle_start [RUN OPTIONS...]: starts the emulator in the background, waits for its socket.
dongle_start() {
    : >"$DONGLE_EVENTS"
    "$DONGLE_BIN" run --socket "$DONGLE_SOCK" "$@" >"$DONGLE_EVENTS" 2>"$DONGLE_LOG" &
    DONGLE_PID=$!
    wait_for 10 dongle_has_event started || fail "emulator did not start: $(cat "$DONGLE_LOG")"
}

# Stops the emulator (SIGTERM: the kernel closes raw-gadget, the host sees an unplug).
dongle_stop() {
    [[ -n $DONGLE_PID ]] || return 0
    kill "$DONGLE_PID" 2>/dev/null || true
    wait "$DONGLE_PID" 2>/dev/null || true
    DONGLE_PID=""
    rm -f "$DONGLE_SOCK"
}

# dongle_ctl WORDS...: one control command; its JSON result on stdout.
dongle_ctl() { "$DONGLE_BIN" ctl --socket "$DONGLE_SOCK" "$@"; }

# dongle_has_event NAME: the emulator printed {"event":"NAME",...}.
dongle_has_event() { grep -q "\"event\":\"$1\"" "$DONGLE_EVENTS"; }

# dongle_event_count NAME
dongle_event_count() { grep -c "\"event\":\"$1\"" "$DONGLE_EVENTS" || true; }

# dongle_status FILTER: one field of `ctl status` (a jq-like path in python syntax, e.g.
# '["mdio"]["phy_reads"]').
dongle_status() {
    dongle_ctl status | python3 -c "import json,sys; v=json.load(sys.stdin); print(json.dumps(v$1) if isinstance(v$1,(dict,list)) else v$1)"
}

# The netdev asix registered for the dongle (via the USB device 0b95:772a), or nothing.
dongle_netdev() {
    local d
    for d in /sys/class/net/*; do
        [[ -e $d/device/../idVendor ]] || continue
        if [[ $(<"$d/device/../idVendor") == 0b95 && $(<"$d/device/../idProduct") == 772a ]]; then
            echo "${d##*/}"
            return 0
        fi
    done
    return 1
}
has_dongle_netdev() { dongle_netdev >/dev/null; }
no_dongle_netdev() { ! dongle_netdev >/dev/null; }

# The dongle's MDIO bus id (usb-BUS:DEV) from the netdev's PHY, or nothing.
dongle_mdio_bus() {
    local d
    for d in "$MDIO_DEVS"/usb-*:10; do
        [[ -e $d ]] && { basename "${d%:10}"; return 0; }
    done
    return 1
}
has_dongle_phy() { dongle_mdio_bus >/dev/null; }

# wait_dongle_netdev [TIMEOUT]: the dongle enumerated, asix bound and its netdev registered.
wait_dongle_netdev() {
    wait_for "${1:-30}" has_dongle_netdev || fail "no netdev for 0b95:772a within ${1:-30} s"
}
