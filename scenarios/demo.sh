#!/bin/bash
# demo: what `cargo xtask demo` runs in the guest. phytrace starts first, as on a board where
# the dongle is plugged in later. HARDWARE=dongle (the default): the emulated AX88772A USB
# dongle is plugged in (asix loads by its USB id, our Rust PHY driver by the PHY's mdio:
# alias), the link comes up, ping goes through, and every PERIOD seconds the cable is pulled
# and put back; once the partner drops to 10/half, once the dongle itself is unplugged and
# plugged in again. HARDWARE=sim: the Rust driver and the simulated PHYs (phy_sim) load, and
# the AX88772A's cable is unplugged and replugged, once with the "LPA reads 0" quirk on.
# HARDWARE=usb-host: a real ASIX dongle passed into the VM (`cargo xtask demo --usb-host
# 0b95:772a`, docs/dongle.md; not tested here): no emulator; its plug-in is replayed (asix and
# the Rust PHY driver load as at a plug-in), the link comes up and you pull the Ethernet cable
# and put it back by hand, CYCLES times (each waited for up to 120 s).
#   MODE=tui|headless HARDWARE=dongle|sim|usb-host CYCLES=6 PERIOD=3 OUT=$PHYTRACE_OUT/demo.ptrace
#   DONGLE_BIN=target/debug/ax88772a-emulator
# MODE=tui runs `phytrace tui` on this terminal (q quits); MODE=headless records the same
# scenario to OUT and prints the decoded end of it and a summary.
set -euo pipefail
. "$(dirname "$0")/common.sh"
MODE=${MODE:-tui} HARDWARE=${HARDWARE:-dongle} CYCLES=${CYCLES:-6} PERIOD=${PERIOD:-3}
OUT=${OUT:-$PHYTRACE_OUT/demo.ptrace}
BIN=${PHYTRACE_BIN:?PHYTRACE_BIN must name the phytrace binary}
unload_all

# The dongle story: plug-in, link, ping, cable pulls, a slower partner, an unplug.
dongle_story() {
    . "$PHYTRACE_ROOT/tests/vm/dongle_lib.sh"
    local dev i
    dongle_modules_load rust
    sleep 2
    log "plugging in the AX88772A dongle"
    dongle_start --an-delay-ms 500 --partner all
    wait_dongle_netdev 60
    dev=$(dongle_netdev)
    ip link set dev "$dev" up
    wait_mode "$dev" 100 full 30
    ip addr add 192.168.77.1/24 dev "$dev"
    busybox ping -c 3 -W 2 192.168.77.2 || log "ping failed"
    for ((i = 1; i <= CYCLES; i++)); do
        sleep "$PERIOD"
        if ((i == 2)); then
            log "cycle $i: the partner drops to 10/half"
            dongle_ctl partner 10half >/dev/null
        fi
        if ((i == 4)); then
            log "cycle $i: unplugging the dongle itself"
            dongle_ctl unplug >/dev/null
            sleep "$PERIOD"
            log "cycle $i: plugging it in again"
            dongle_ctl plug >/dev/null
            wait_dongle_netdev 60
            dev=$(dongle_netdev)
            ip link set dev "$dev" up
            continue
        fi
        log "cycle $i: cable out"
        dongle_ctl cable out >/dev/null
        sleep "$PERIOD"
        log "cycle $i: cable in"
        dongle_ctl cable in >/dev/null
        ((i != 3)) || dongle_ctl partner all >/dev/null
    done
    sleep "$PERIOD"
    ip link set dev "$dev" down
    dongle_stop
    dongle_modules_unload
    log "story done"
}

# The netdev asix registered for a USB device (any ASIX chip it drives), or nothing.
asix_netdev() {
    local d l
    for d in /sys/class/net/*; do
        l=$(readlink "$d/device/driver" 2>/dev/null) || continue
        if [[ ${l##*/} == asix ]]; then
            echo "${d##*/}"
            return 0
        fi
    done
    return 1
}
has_asix_netdev() { asix_netdev >/dev/null; }

# A real dongle passed through by QEMU's usb-host: it was enumerated at boot, before anything
# chose the PHY driver. asix is unbound, the Rust PHY driver is the one its mdio: alias may
# load, and the devices' "add" uevents are replayed: asix loads by modalias and phylib loads
# the PHY driver, as at a plug-in. The cable is the user's.
usb_host_story() {
    . "$PHYTRACE_ROOT/tests/vm/dongle_lib.sh"
    local dev i u
    ! module_loaded asix || rmmod asix || fail "cannot unload asix (bound at boot)"
    echo "blacklist ${DRIVER_MOD[c]}" >"$ASIX_BLACKLIST"
    sleep 2
    log "replaying the plug-in of the host's USB devices"
    for u in /sys/bus/usb/devices/*; do
        if [[ -w $u/uevent ]]; then echo add >"$u/uevent"; fi
    done
    wait_for 60 has_asix_netdev || fail "no asix netdev: is the dongle passed in (--usb-host)?"
    dev=$(asix_netdev)
    ip link set dev "$dev" up
    wait_for 30 is_carrier "$dev" 1 || log "$dev: no carrier yet: is the cable in?"
    for ((i = 1; i <= CYCLES; i++)); do
        log "cycle $i: pull the Ethernet cable out of the dongle"
        wait_for 120 is_carrier "$dev" 0 || { log "no cable pull within 120 s: done"; break; }
        log "cycle $i: carrier off; put the cable back"
        wait_for 120 is_carrier "$dev" 1 || { log "no carrier within 120 s: done"; break; }
        log "cycle $i: carrier back at $(speed "$dev")/$(duplex "$dev")"
    done
    ip link set dev "$dev" down
    log "story done"
}

story() {
    case $HARDWARE in
    dongle) dongle_story ;;
    sim) sim_story ;;
    usb-host) usb_host_story ;;
    *)
        echo "HARDWARE must be dongle, sim or usb-host" >&2
        exit 2
        ;;
    esac
}

# The cable story, logged to a file in TUI mode so that it does not draw over the screen.
sim_story() {
    sleep 2
    load_driver rust
    load_sim
    local a c b i
    a=$(simdev ax88772a) c=$(simdev ax88772c) b=$(simdev ax88796b)
    link_up "$a" "$c" "$b"
    wait_mode "$a" 100 full 20
    for ((i = 1; i <= CYCLES; i++)); do
        sleep "$PERIOD"
        if ((i == 2)); then
            log "cycle $i: AX88772A LPA reads 0 from now on (the quirk read_status works around)"
            sim_set "$a" lpa_zero 1
        fi
        log "cycle $i: unplug $a"
        sim_set "$a" cable 0
        sleep "$PERIOD"
        log "cycle $i: replug $a"
        sim_set "$a" cable 1
        ((i != 3)) || sim_set "$a" lpa_zero 0
    done
    sleep "$PERIOD"
    log "story done"
}

# Sets this terminal's size to what the terminal itself says: a serial console, as the VM's,
# knows only the size it was told at boot. The cursor is sent as far down and right as it goes
# and the terminal is asked where it is (a cursor position report, as `resize` does).
learn_terminal_size() {
    local saved reply=
    [[ -t 0 && -t 1 ]] || return 0
    saved=$(stty -g)
    stty raw -echo
    printf '\e7\e[999;999H\e[6n\e8'
    IFS= read -r -s -d R -t 1 reply || true
    stty "$saved"
    # The answer: ESC [ ROW ; COLUMN R
    if [[ $reply =~ \[([0-9]+)\;([0-9]+)$ ]]; then
        stty rows "${BASH_REMATCH[1]}" cols "${BASH_REMATCH[2]}"
    fi
}

case $MODE in
headless)
    "$BIN" record -o "$OUT" &
    record_pid=$!
    story
    kill -INT "$record_pid"
    wait "$record_pid"
    echo
    echo "--- the last NOLINK reset, decoded ($BIN dump $OUT):"
    "$BIN" dump "$OUT" | grep -B3 -A12 'link_change_notify  NOLINK' | tail -n 16
    ;;
tui)
    if [[ $HARDWARE == usb-host ]]; then
        echo "When the dongle's PHY shows up, pull its Ethernet cable and put it back; q quits."
        echo "The story's log: $PHYTRACE_OUT/demo-story.log"
        sleep 3
    fi
    story >"$PHYTRACE_OUT/demo-story.log" 2>&1 &
    story_pid=$!
    # The kernel's console may be this terminal: while the TUI owns it, only emergencies are
    # printed there. The other lines are not lost: they are in the TUI's kernel messages pane
    # (and in dmesg).
    read -r console_level _ </proc/sys/kernel/printk
    echo 1 >/proc/sys/kernel/printk
    learn_terminal_size
    "$BIN" tui || true
    echo "$console_level" >/proc/sys/kernel/printk
    kill "$story_pid" 2>/dev/null || true
    wait "$story_pid" 2>/dev/null || true
    ;;
*)
    echo "MODE must be tui or headless" >&2
    exit 2
    ;;
esac
