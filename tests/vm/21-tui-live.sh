#!/bin/bash
# The live TUI on the real kernel, driven through tmux: it waits for the driver, attaches when it
# loads, shows the PHYs with their IDs and drivers, follows the AX88772A into NOLINK when its
# cable is pulled, and quits cleanly on `q`.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TUI_SOCK=$PHYTRACE_OUT/tui-live.tmux
cleanup_tui() { tmux -S "$TUI_SOCK" kill-server 2>/dev/null || true; unload_all; }
trap cleanup_tui EXIT
unload_all
rm -f "$PHYTRACE_OUT/tui-exit"
tmux -S "$TUI_SOCK" new-session -d -x 100 -y 30 \
    "$PHYTRACE_BIN tui --module ax88796b_rust; echo \$? >$PHYTRACE_OUT/tui-exit"
wait_screen "ax88796b_rust armed, waiting for it to load"
load_driver rust
wait_screen "ax88796b_rust attached"
load_sim
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full
wait_screen "phy_sim-0:01 *003b1861 AX88772A"
wait_screen "phy_sim-0:03 *003b1841 AX88796B"
sim_set "$a" cable 0
wait_state "$a" NOLINK
wait_screen "RUNNING→NOLINK"
tui_screen
tmux -S "$TUI_SOCK" send-keys q
wait_for 10 test -s "$PHYTRACE_OUT/tui-exit" || fail "the TUI did not quit on q"
expect_eq "TUI exit status" 0 "$(cat "$PHYTRACE_OUT/tui-exit")"
