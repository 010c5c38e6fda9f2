#!/bin/bash
# The live TUI while the QT2025's driver loads its firmware, 24,576 MDIO writes in one `probe`
# that reach the TUI as one burst: keys pressed from the bus scan on (the stats view and back,
# the log folded and unfolded) are answered as it takes the burst in; after it, the folded
# log holds one line per SRAM window whose counts are the simulator's, and unfolding shows the
# writes again. The folded screen is kept in $PHYTRACE_OUT/tui-qt2025-folded.txt (the screen
# in docs/tui.md).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TUI_SOCK=$PHYTRACE_OUT/tui-qt2025.tmux
q=
cleanup_tui() {
    tmux -S "$TUI_SOCK" kill-server 2>/dev/null || true
    wait
    unload_all
    qt2025_firmware_remove
}
trap cleanup_tui EXIT
unload_all
qt2025_firmware
rm -f "$PHYTRACE_OUT/tui-qt2025-exit"
tmux -S "$TUI_SOCK" new-session -d -x 160 -y 48 \
    "$PHYTRACE_BIN tui --module qt2025; echo \$? >$PHYTRACE_OUT/tui-qt2025-exit"
# sram_writes: the firmware writes the simulator has taken, both SRAM windows.
sram_writes() { awk '$1 == "sram" { n += $4 } END { print n + 0 }' "$SIM_DBG/$q/counters"; }
# held_events: the events the TUI holds, as its event log's title says.
held_events() { tui_screen | grep -o 'Events [0-9]*' | head -n 1 | grep -o '[0-9]*$'; }
some_events() { local n; n=$(held_events) && ((n > 0)); }
# thousands N: N grouped as phytrace prints counts (24,576).
thousands() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

wait_screen "qt2025 armed, waiting for it to load"
# The driver probes inside insmod (phylib loads it by its mdio: alias as the bus is scanned).
load_sim phys=qt2025@4 &
load_pid=$!
started=$(date +%s%N)
wait_for 30 some_events || { tui_screen; fail "the TUI took in no event of the bus scan"; }
answered() { tmux -S "$TUI_SOCK" send-keys "$1"; wait_screen "$2" 10; }
answered s "Latencies"
answered s "Events "
answered o "runs folded]"
tmux -S "$TUI_SOCK" send-keys o
wait_for 10 eval '! tui_shows "runs folded]"' || { tui_screen; fail "o did not unfold the log"; }
ok "the TUI answered s, s, o, o $((($(date +%s%N) - started) / 1000000)) ms after the load began"
wait "$load_pid" || fail "phy_sim did not load"
q=$(simdev qt2025)
expect_eq "the QT2025's driver" "QT2025 10Gpbs SFP+" "$(sim_info "$q" driver)"
expect_eq "SRAM writes the simulator took" 24576 "$(sram_writes)"
pcs=$(awk '$1 == "sram" && $2 ~ /^3\./ { print $4 }' "$SIM_DBG/$q/counters")
phyxs=$(awk '$1 == "sram" && $2 ~ /^4\./ { print $4 }' "$SIM_DBG/$q/counters")
wait_screen "qt2025 attached" 10
tmux -S "$TUI_SOCK" send-keys o
wait_screen "… $(thousands "$pcs") writes to pcs 3.0x8000…0xBFFF in probe" 20
wait_screen "… $(thousands "$phyxs") writes to phyxs 4.0x8000…0x9FFF in probe" 20
tui_screen | tee "$PHYTRACE_OUT/tui-qt2025-folded.txt"
tmux -S "$TUI_SOCK" send-keys o
wait_for 10 eval '! tui_shows "runs folded]"' || { tui_screen; fail "o did not unfold the log"; }
wait_screen "probe → write phyxs." 10
tmux -S "$TUI_SOCK" send-keys q
wait_for 10 test -s "$PHYTRACE_OUT/tui-qt2025-exit" || fail "the TUI did not quit on q"
expect_eq "TUI exit status" 0 "$(cat "$PHYTRACE_OUT/tui-qt2025-exit")"
