#!/bin/bash
# demo: what `cargo xtask demo` runs in the guest. phytrace starts first and waits for the
# driver, as on a board where the dongle is plugged in later; then the Rust driver and the
# simulated PHYs load, the links come up, and the AX88772A's cable is unplugged and replugged
# every PERIOD seconds, once with the "LPA reads 0" quirk on.
#   MODE=tui|headless CYCLES=6 PERIOD=3 OUT=$PHYTRACE_OUT/demo.ptrace
# MODE=tui runs `phytrace tui` on this terminal (q quits); MODE=headless records the same
# scenario to OUT and prints the decoded end of it and a summary.
set -euo pipefail
. "$(dirname "$0")/common.sh"
MODE=${MODE:-tui} CYCLES=${CYCLES:-6} PERIOD=${PERIOD:-3}
OUT=${OUT:-$PHYTRACE_OUT/demo.ptrace}
BIN=${PHYTRACE_BIN:?PHYTRACE_BIN must name the phytrace binary}
unload_all

# The cable story, logged to a file in TUI mode so that it does not draw over the screen.
story() {
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

case $MODE in
headless)
    "$BIN" record -o "$OUT" --module ax88796b_rust &
    record_pid=$!
    story
    kill -INT "$record_pid"
    wait "$record_pid"
    echo
    echo "--- the last NOLINK reset, decoded ($BIN dump $OUT):"
    "$BIN" dump "$OUT" | grep -B3 -A12 'link_change_notify  NOLINK' | tail -n 16
    ;;
tui)
    story >"$PHYTRACE_OUT/demo-story.log" 2>&1 &
    story_pid=$!
    "$BIN" tui --module ax88796b_rust || true
    kill "$story_pid" 2>/dev/null || true
    wait "$story_pid" 2>/dev/null || true
    ;;
*)
    echo "MODE must be tui or headless" >&2
    exit 2
    ;;
esac
