#!/bin/bash
# The dongle unplugged and plugged in again on Debian's kernels (their own Asix PHY driver, libphy
# loaded first where it is a module, as in 51-dongle-record.sh) while `phytrace record`
# and the TUI (in tmux, as tests/vm/41-dongle-record.sh on ours) run: both keep running through
# the unplug, the TUI still shows the unplugged PHY and then the replugged one under its new
# bus name, and quits cleanly; the capture reads back (dump, stats), every callback of the
# unplugged PHY returned, and the replugged PHY is traced from its first callback (the
# probe-time soft_reset) to its link up, with its MDIO per register equal to the kernel's
# mdio:mdio_access, as the first PHY's is, and the driver's spec holding on it.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
kernel_only stock debian13 debian14
dongle_test_begin
cleanup_first tui_kill
recording() { kill -0 "$RECORD_PID" 2>/dev/null && record_status "$cap.status" recording; }

mark_dmesg unplug
dongle_modules_load "$(kernel_phy_driver)"
modprobe libphy || fail "modprobe libphy failed"
mdio_trace_start
cap=$PHYTRACE_OUT/stock-unplug.ptrace
start_record "$cap"
dongle_plug_link_up --an-delay-ms 100 --partner all
bus=$DONGLE_BUS dev=$DONGLE_DEV

tui_start 120 30
wait_for 120 tui_shows "$bus" || { tui_screen; fail "the TUI does not show the dongle's PHY $bus:10"; }
t0=${EPOCHREALTIME/./}
dongle_ctl unplug >/dev/null
wait_for 15 no_dongle_netdev || fail "the netdev is still there after the unplug"
wait_for 5 eval '! has_dongle_phy' || fail "PHY $bus:10 still on the MDIO bus after the unplug"
t1=${EPOCHREALTIME/./}
tui_running || fail "the TUI ended when the dongle was unplugged"
recording || fail "phytrace record ended when the dongle was unplugged"
tui_shows "$bus" || { tui_screen; fail "the TUI lost the unplugged PHY $bus:10"; }
ok "record and the TUI run on after the unplug ($(((t1 - t0) / 1000)) ms to the PHY's removal); the TUI still shows $bus:10"

dongle_ctl plug >/dev/null
wait_dongle_netdev 30
wait_for 10 has_dongle_phy || fail "no PHY after the replug"
t2=${EPOCHREALTIME/./}
bus2=$(dongle_mdio_bus)
[[ $bus2 != "$bus" ]] || fail "the replugged dongle's MDIO bus has the old name $bus (a new USB device number expected)"
dev=$(dongle_netdev)
ip link set dev "$dev" up
wait_mode "$dev" 100 full 30
wait_for 10 tui_shows "$bus2" || { tui_screen; fail "the TUI does not show the replugged PHY $bus2:10"; }
tui_running || fail "the TUI ended after the replug"
recording || fail "phytrace record ended after the replug"
screen=$(tui_screen)
echo "$screen"
expect_eq "the TUI's status line is the terminal's last row" LIVE "$(tail -n 1 <<<"$screen" | cut -c1-4)"
grep -q -- "$bus:10 " <<<"$screen" || fail "the TUI dropped the unplugged PHY $bus:10 after the replug"
ok "the TUI shows the unplugged $bus:10 and the replugged $bus2:10"
result "\"unplug_to_phy_gone_ms\":$(((t1 - t0) / 1000)),\"replug_to_phy_ms\":$(((t2 - t1) / 1000))"
tui_quit
ip link set dev "$dev" down
expect_eq "requests the emulator did not know (plug-in, unplug, replug)" 0 "$(dongle_status '["unknown"]')"
stop_record "$cap"
mdio_trace_stop

# The capture reads back, and nothing of the unplugged PHY is left open.
events_json "$cap"
"$PHYTRACE_BIN" stats --format json "$cap" >"$cap.stats.json" || fail "phytrace stats failed on $cap"
expect_eq "events lost (stats)" 0 "$(jq '[.captures[].stats.lost_events] | add' "$cap.stats.json")"
capture_expect "$cap.json" cpu_order
capture_expect "$cap.json" 'all_returned($bus; 16; 1)' --arg bus "$bus"
for b in "$bus" "$bus2"; do
    expect_eq "MDIO of $b:10 per register (reg reads writes): phytrace vs mdio:mdio_access" \
        "$(mdio_trace_counts "$b" 0x10 | sort -n)" "$(capture_mdio_counts "$cap" "$b")"
done

# The replugged PHY, from its first callback.
second=$(jq -c --arg bus "$bus2" 'select(.phy.bus == $bus and .phy.addr == 16)' "$cap.json")
expect_eq "the replugged PHY's first callback" soft_reset \
    "$(jq -r 'select(.kind == "callback_enter") | .callback.name' <<<"$second" | head -n 1)"
first_up=$(jq -r 'select(.kind == "mac" and .change.op == "link_up") | .ts_ns' <<<"$second" | head -n 1)
[[ -n $first_up ]] || fail "no mac_link_up of the replugged PHY $bus2:10"
before_up=$(jq -r --argjson t "$first_up" 'select(.kind == "callback_enter" and .ts_ns < $t) | .callback.name' <<<"$second" |
    uniq | paste -sd ' ')
log "$bus2:10's callbacks before its link up: $before_up"
[[ " $before_up " == *" resume "* ]] || fail "no resume of the replugged PHY before its link up: $before_up"
scoped_spec ax88796b "$bus2" "$cap.ax88796b.spec"
"$PHYTRACE_BIN" check --spec "$cap.ax88796b.spec" "$cap" || fail "specs/ax88796b.spec fails on the replugged PHY"
ok "specs/ax88796b.spec holds on $bus2:10"
dongle_stop
dongle_modules_unload
assert_clean_dmesg "stock unplug"
