#!/bin/sh
# shellcheck shell=dash
# The emulated AX88772A USB dongle in the arm64 guest (`cargo xtask test`'s arm64 stage,
# docs/arm64.md): the emulator (its static aarch64 build) on raw-gadget and dummy_hcd, asix and
# the Rust PHY driver loaded, `phytrace record` with its defaults (callbacks at phylib's call
# sites, the MAC side at phylink's or by name) from before the plug-in through link up, a cable
# flap and link down, beside the kernel's own kprobe and kretprobe events on the driver's
# callbacks and on asix's mac_link_up/down (tracefs group `truth`). The capture goes to
# $PHYTRACE_OUT/dongle-ARCH.ptrace, the kernel's events to .truth (callback names in
# .truth-names), the emulator's MDIO counters to .emulator; the host compares them
# (xtask/src/twin.rs).
#
# POSIX sh only, no program but busybox's applets, phytrace and the emulator.
set -eu
: "${PHYTRACE_BIN:?}" "${PHYTRACE_MODULES:?}" "${PHYTRACE_OUT:?}" "${PHYTRACE_TARGET:?}"
. "$(dirname "$0")/lib.sh"
ARCH=${PHYTRACE_ARCH:-$(uname -m)}
TAG="dongle $ARCH"
EMULATOR=$PHYTRACE_TARGET/$ARCH-unknown-linux-musl/release/ax88772a-emulator
CAPTURE=$PHYTRACE_OUT/dongle-$ARCH.ptrace
SOCK=/run/ax88772a-emulator.sock
TREE=$PHYTRACE_MODULES/tree/lib/modules/$(uname -r)/kernel/drivers
RECORD_PID=''
EMULATOR_PID=''

fail_context() {
    [ ! -e "$CAPTURE.stderr" ] || cat "$CAPTURE.stderr"
    [ ! -e "$CAPTURE.emulator-log" ] || tail -n 20 "$CAPTURE.emulator-log"
}
cleanup() {
    [ -z "$RECORD_PID" ] || kill -9 "$RECORD_PID" 2>/dev/null || true
    [ -z "$EMULATOR_PID" ] || kill "$EMULATOR_PID" 2>/dev/null || true
    remove_truth
}
trap cleanup EXIT

# The dongle's netdev (USB 0b95:772a), or nothing.
netdev() {
    for d in /sys/class/net/*; do
        [ "$(cat "$d/device/../idVendor" 2>/dev/null)" = 0b95 ] || continue
        [ "$(cat "$d/device/../idProduct" 2>/dev/null)" = 772a ] && { echo "${d##*/}"; return 0; }
    done
    return 1
}
has_netdev() { netdev >/dev/null; }
carrier_is() { [ "$(cat "/sys/class/net/$DEV/carrier" 2>/dev/null)" = "$1" ]; }
link_is_up() { carrier_is 1 && [ "$(cat "/sys/class/net/$DEV/speed")" = 100 ]; }
recording() { grep -q '"status":"recording"' "$CAPTURE.status" 2>/dev/null; }
# Whether record's search of phylink's code for MAC call sites ended (busybox has no jq: the
# line's fixed key and value).
mac_settled() { grep -q '"status":"mac_sites_armed"' "$CAPTURE.status" 2>/dev/null; }
emulator_started() { grep -q '"event":"started"' "$CAPTURE.emulator-events" 2>/dev/null; }
ctl() { "$EMULATOR" ctl --socket "$SOCK" "$@" >/dev/null; }

[ -x "$EMULATOR" ] || fail "$EMULATOR missing: cargo build --release --target $ARCH-unknown-linux-musl -p ax88772a-emulator"
mkdir -p "$PHYTRACE_OUT"
rm -f "$CAPTURE" "$CAPTURE".*
# phylink is built into the arm64 kernel (kernel/phytrace-arm64.config): no file to load, and
# record searches vmlinux for its MAC call sites as it starts.
for module in usb/gadget/udc/dummy_hcd usb/gadget/legacy/raw_gadget net/mii net/usb/usbnet \
    net/phy/phylink net/usb/asix; do
    if [ "$module" = net/phy/phylink ] && [ ! -f "$TREE/$module.ko" ]; then
        continue
    fi
    insmod "$TREE/$module.ko"
done
insmod "$PHYTRACE_MODULES/ax88796b_rust.ko"
wait_until 5 "/dev/raw-gadget" test -c /dev/raw-gadget

# The ground truth: the kernel's own events on every callback of the driver, and on asix's MAC
# ops (arm64: speed and duplex are the fifth and sixth arguments, x4 and x5).
truth_on_callbacks "$CAPTURE"
echo 'p:truth/up asix:ax88772_mac_link_up speed=%x4:s32 duplex=%x5:s32' >>"$TRACEFS/kprobe_events"
echo 'p:truth/down asix:ax88772_mac_link_down' >>"$TRACEFS/kprobe_events"
echo >"$TRACEFS/trace"
echo 1 >"$TRACEFS/events/truth/enable"
echo 1 >"$TRACEFS/tracing_on"

"$PHYTRACE_BIN" record -o "$CAPTURE" --status "$CAPTURE.status" 2>"$CAPTURE.stderr" &
RECORD_PID=$!
wait_until 60 "phytrace record started" recording
wait_until 60 "record's search for phylink's MAC call sites ended" mac_settled
say "recording with $("$PHYTRACE_BIN" --version) (the kernel's own events on its $CALLBACKS callbacks and asix's MAC ops)"

"$EMULATOR" run --socket "$SOCK" --an-delay-ms 100 --partner all,pause \
    >"$CAPTURE.emulator-events" 2>"$CAPTURE.emulator-log" &
EMULATOR_PID=$!
wait_until 10 "the emulator started" emulator_started
wait_until 60 "the dongle's netdev" has_netdev
DEV=$(netdev)
say "ok: plugged in, $DEV"
ip link set dev "$DEV" up
wait_until 60 "link up at 100" link_is_up
say "ok: link up at 100/full"
ctl cable out
wait_until 30 "carrier off after the cable is pulled" carrier_is 0
ctl cable in
wait_until 60 "link up again" link_is_up
say "ok: cable pulled and put back, link up"
ip link set dev "$DEV" down
"$EMULATOR" ctl --socket "$SOCK" status >"$CAPTURE.emulator"
kill -INT "$RECORD_PID"
wait "$RECORD_PID" || fail "phytrace record exited with status $?"
RECORD_PID=
truth_save "$CAPTURE.truth"
kill "$EMULATOR_PID"
wait "$EMULATOR_PID" || true
EMULATOR_PID=
cat "$CAPTURE.stderr"
say "ok: $("$PHYTRACE_BIN" dump --format json "$CAPTURE" | wc -l) events in $CAPTURE"
