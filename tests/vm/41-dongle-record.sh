#!/bin/bash
# phytrace on the emulated AX88772A dongle, for each PHY driver (DONGLE_DRIVERS, default
# $PHYTRACE_DRIVERS): `record` starts before anything of the dongle is loaded; the dongle is
# plugged in (asix by modalias, the PHY driver by its mdio: alias), the link comes up, ping
# works, the cable is pulled and put back, then the dongle itself is unplugged and plugged in
# again with `record` and the TUI running. The capture is checked against the kernel's and the
# emulator's own records: MDIO accesses per register equal the emulator's counters, the PHY's
# probe-time callbacks come first (Rust driver), MDIO over USB takes as long as the kernel's
# kprobes say, the MAC side (phylink_resolve, mac_link_up/down, carrier) follows the link, the
# shipped spec passes from the very first callback, an MDIO timeout shows as ETIMEDOUT, and the
# unplugged PHY ends with nothing left open in the capture, `dump`, the Perfetto export, `diff`
# and the TUI, which goes on and shows the replugged PHY under its new bus name. The cable flap
# is asserted end to end, not only by `after` rules (which hold when nothing happens): NOLINK,
# (Rust driver) link_change_notify → soft_reset → BMCR writes over USB, carrier and MAC down,
# then link up, mac_link_up at the partner's speed, duplex and pause (a partner with pause,
# then one without), carrier up. Both drivers show the same MAC-side story and modes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
dongle_test_begin
cleanup_first tui_kill
ping_ok() { busybox ping -c 2 -W 2 192.168.77.2 >/dev/null 2>&1; }

declare -A STORY FLAP
for CUR_DRIVER in ${DONGLE_DRIVERS:-$PHYTRACE_DRIVERS}; do
    log "PHY driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    dongle_modules_load "$CUR_DRIVER"
    cap=$PHYTRACE_OUT/dongle-$CUR_DRIVER.ptrace
    start_record "$cap"
    if [[ $CUR_DRIVER == rust ]]; then
        jq -e '.arming[] | select(.module == "ax88796b_rust" and .guarantee == "first_callback")' \
            <(head -n 1 "$cap") >/dev/null || fail "ax88796b_rust is not armed before it loads"
    fi

    # Plug-in, link, ping, cable: the part counted against the emulator.
    # A partner with symmetric pause: asix's MAC and the PHY advertise both pause bits.
    dongle_start --an-delay-ms 100 --partner all,pause
    wait_dongle_netdev 30
    dev=$(dongle_netdev)
    ip link set dev "$dev" up
    wait_mode "$dev" 100 full 30
    ip addr add 192.168.77.1/24 dev "$dev"
    check "ping through the dongle" ping_ok
    dongle_ctl cable out >/dev/null
    wait_carrier "$dev" 0
    dongle_ctl cable in >/dev/null
    wait_mode "$dev" 100 full 30
    # Synchronous: phylib's polling has stopped when it returns.
    ip link set dev "$dev" down
    counts=$(dongle_mdio_counts 0x10)
    bus=$(dongle_mdio_bus)

    stop_record "$cap"
    events_json "$cap"

    # An MDIO timeout on the USB side, then unplug and replug with record and the TUI running.
    cap2=$PHYTRACE_OUT/dongle-$CUR_DRIVER-unplug.ptrace
    start_record "$cap2"
    # From here on a partner without pause (it stays across the dongle's unplug).
    dongle_ctl partner all >/dev/null
    ip link set dev "$dev" up
    wait_mode "$dev" 100 full 30
    expect_eq "mdio-timeout: the read fails with ETIMEDOUT" "errno 110" "$(dongle_inject_mii "$dev" read 2 mdio-timeout 1)"
    tui_start 120 30
    wait_for 30 tui_shows "$bus" || { tui_screen; fail "the TUI does not show the dongle's PHY $bus:10"; }
    unplug_mark="phytrace-test: unplug $CUR_DRIVER $$ $RANDOM"
    echo "$unplug_mark" >/dev/kmsg
    unplug_unix=$(date +%s%N)
    dongle_ctl unplug >/dev/null
    wait_for 15 no_dongle_netdev || fail "the netdev is still there after unplug"
    wait_for 5 eval '! has_dongle_phy' || fail "PHY $bus:10 still on the MDIO bus after unplug"
    tui_running || fail "the TUI ended when the dongle was unplugged"
    tui_shows "$bus" || { tui_screen; fail "the TUI lost the unplugged PHY $bus:10"; }
    ok "the TUI runs on after the unplug and still shows $bus:10"
    plug_unix=$(date +%s%N)
    dongle_ctl plug >/dev/null
    wait_dongle_netdev 30
    dev=$(dongle_netdev)
    wait_for 10 has_dongle_phy || fail "no PHY after replug"
    bus2=$(dongle_mdio_bus)
    [[ $bus2 != "$bus" ]] || fail "the replugged dongle's MDIO bus has the old name $bus (a new USB device number expected)"
    ip link set dev "$dev" up
    wait_mode "$dev" 100 full 30
    wait_for 10 tui_shows "$bus2" || { tui_screen; fail "the TUI does not show the replugged PHY $bus2:10"; }
    tui_running || fail "the TUI ended after the replug"
    ok "the TUI shows the replugged PHY as $bus2:10"
    tui_screen
    tui_quit
    ip link set dev "$dev" down
    expect_eq "requests the emulator did not know (probe, open, rx-mode, ping, cable, timeout, replug)" 0 \
        "$(dongle_status '["unknown"]')"
    dongle_stop
    stop_record "$cap2"
    events_json "$cap2"

    # asix's complaint at the unplug, in the capture: as often as the kernel logged it, between
    # the unplug and the replug, on the unplugged dongle's PHY.
    mii='Failed to enable software MII access'
    logged=$(dmesg | awk -v m="$unplug_mark" 'found { print } index($0, m) { found = 1 }' |
        grep -cF "$mii" || true)
    ((logged >= 1)) || fail "the kernel did not log '$mii' at the unplug"
    # The header pairs the monotonic clock of the events with the wall clock.
    clock=$(head -n 1 "$cap2" | jq -r '"\(.clock.mono_ns) \(.clock.unix_ns)"')
    mono() { echo $(($1 - ${clock#* } + ${clock% *})); }
    captured=$(jq -c --arg t "$mii" 'select(.kind == "kmsg" and (.text | contains($t)))' "$cap2.json")
    expect_eq "'$mii' in the capture, count for count with the kernel's log" \
        "$logged" "$(grep -c . <<<"$captured" || true)"
    placed=$(jq -r --argjson from "$(mono "$unplug_unix")" --argjson to "$(mono "$plug_unix")" \
        --arg bus "$bus" 'select(.ts_ns > $from and .ts_ns < $to and .phy.bus == $bus and .phy.addr == 16
            and .level == 3) | 1' <<<"$captured" | wc -l)
    expect_eq "'$mii' at level err, after the unplug, before the replug, on $bus:10" "$logged" "$placed"
    "$PHYTRACE_BIN" check --spec <(echo "rule \"no MII failure\" for phy \"$bus\": never kmsg \"Failed to\"") "$cap2" \
        >"$cap2.kmsg-check" && fail "check: 'never kmsg \"Failed to\"' holds on the unplug capture"
    grep -qF "$mii" "$cap2.kmsg-check" || { cat "$cap2.kmsg-check"; fail "check does not name asix's line"; }
    ok "asix's '$mii' is in the capture ($logged), in its place, on $bus:10, and check sees it"

    # The plug-in capture, per register, against the emulator's counters.
    first=$(jq -c --arg bus "$bus" 'select(.phy.bus == $bus and .phy.addr == 16)' "$cap.json")
    want=$(sort -n <<<"$counts")
    got=$(jq -r 'select(.kind == "mdio" and .error == null) | "\(.reg) \(.op)"' <<<"$first" |
        awk '{ n[$1] += 0; if ($2 == "read") r[$1]++; else w[$1]++ }
             END { for (k in n) print k, r[k] + 0, w[k] + 0 }' | sort -n)
    expect_eq "MDIO accesses per register (reg reads writes) vs the emulator's counters" "$want" "$got"

    # Plug-in seen from the first callback: the probe-time soft_reset comes first.
    if [[ $CUR_DRIVER == rust ]]; then
        firstcb=$(jq -r 'select(.kind == "callback_enter") | .callback.name' <<<"$first" | head -n 1)
        expect_eq "the dongle's first callback" soft_reset "$firstcb"
        "$PHYTRACE_BIN" check --spec "$PHYTRACE_ROOT/specs/ax88796b.spec" "$cap" ||
            fail "the shipped spec fails on the dongle capture"
    fi

    # MDIO over USB as slow as the kernel makes it (four control transfers on dummy_hcd's timer).
    median=$(jq -r 'select(.kind == "mdio" and .error == null) | .latency_ns' <<<"$first" | sort -n |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }')
    ((median > 1000000)) || fail "median MDIO latency over USB is only $median ns"
    ok "median MDIO latency over USB: $((median / 1000)) µs"
    result "\"driver\":\"$CUR_DRIVER\",\"usb_mdio_median_us\":$((median / 1000))"

    # The timeout, as the driver returned it.
    timeouts=$(usb_json "$cap2" | jq -r 'select(.kind == "mdio" and .error == -110) | 1' | wc -l)
    expect_eq "MDIO reads that failed with ETIMEDOUT" 1 "$timeouts"

    # The MAC side follows the link, and the unplugged PHY's callbacks are all closed.
    "$PHYTRACE_BIN" check --spec "$PHYTRACE_ROOT/specs/dongle.spec" "$cap" ||
        fail "the MAC side does not follow the link (specs/dongle.spec)"
    expect_eq "mac_link_up at the partner's mode and pause (partner all,pause)" \
        "100/full/tx_pause=true/rx_pause=true " "$(mac_modes "$cap")"
    expect_eq "mac_link_up of both PHYs, partner without pause" \
        "100/full/tx_pause=false/rx_pause=false " "$(mac_modes "$cap2")"
    n_up=$(usb_json "$cap2" | jq -r --arg b "$bus2" 'select(.kind == "mac" and .change.op == "link_up" and .phy.bus == $b) | 1' | wc -l)
    ((n_up >= 1)) || fail "no mac_link_up of the replugged PHY $bus2:10"

    # The cable flap end to end, not only by `after` rules: each of these has to happen.
    if [[ $CUR_DRIVER == rust ]]; then
        check_rules "$cap" <<EOF
rule "cable out: NOLINK, link_change_notify resets the PHY over USB, link back" for phy "$bus:10": sequence link down then state RUNNING -> NOLINK then enter link_change_notify while state NOLINK then enter soft_reset inside link_change_notify then write BMCR = 0 inside soft_reset then write BMCR has RESET inside soft_reset then link up within 10s
rule "cable out: carrier and MAC down; link back: MAC up, carrier up" for phy "$bus:10": sequence link down then carrier down then mac_link_down then link up then mac_link_up then carrier up within 10s
EOF
        caller='"soft_reset"'
    else
        check_rules "$cap" <<EOF
rule "cable out: carrier and MAC down; link back: MAC up, carrier up" for phy "$bus:10": sequence mac_link_up then carrier up then carrier down then mac_link_down then mac_link_up then carrier up
EOF
        caller=null
    fi
    ok "cable flap rules hold on $bus:10 (see $cap.spec)"
    capture_expect "$cap.json" "cable_flap(\$bus; 16; 100; \"full\"; \"tx+rx\"; $caller)" --arg bus "$bus"
    FLAP[$CUR_DRIVER]=${CAPTURE_SAID//$bus/usb-BUS}
    # USB MDIO accesses sleep: each record is still in its CPU's time order.
    capture_expect "$cap.json" cpu_order
    capture_expect "$cap2.json" cpu_order

    # The unplugged PHY, in every view: nothing left open.
    open=$("$PHYTRACE_BIN" stats --format json "$cap2" |
        jq '[.captures[].stats.phys[] | select(.key | startswith("usb-")) | (.callbacks // [])[] | .lost_returns.total] | add // 0')
    expect_eq "callbacks left open on the unplugged PHY (stats)" 0 "$open"
    min_calls=0
    [[ $CUR_DRIVER == c ]] || min_calls=1
    capture_expect "$cap2.json" 'all_returned($bus; 16; $min)' --arg bus "$bus" --argjson min "$min_calls"
    "$PHYTRACE_BIN" export --format perfetto "$cap2" -o "$cap2.perfetto.json" ||
        fail "phytrace export --format perfetto failed on the unplug capture"
    jq -e --arg k "$bus:10" '
        ([.traceEvents[] | select(.name == "process_name" and (.args.name | startswith($k))) | .pid] | first) as $pid
        | $pid != null and ([.traceEvents[] | select(.pid == $pid and .args.unfinished)] | length) == 0' \
        "$cap2.perfetto.json" >/dev/null ||
        fail "the Perfetto export lacks $bus:10 or has an unfinished callback on it"
    ok "perfetto export: $bus:10 with no unfinished callback"
    "$PHYTRACE_BIN" diff "$cap2" "$cap2" >"$cap2.diff" || fail "phytrace diff of the unplug capture with itself: status $?"
    rc=0
    "$PHYTRACE_BIN" diff "$cap" "$cap2" >"$cap2.diff2" || rc=$?
    ((rc <= 1)) || fail "phytrace diff of the two dongle captures failed (status $rc)"
    ok "phytrace diff runs on the unplug capture (equal to itself; vs the plug-in capture: status $rc)"
    STORY[$CUR_DRIVER]=$(mac_story "$cap")
    log "MAC side: ${STORY[$CUR_DRIVER]}"
    dongle_modules_unload
    assert_clean_dmesg "$CUR_DRIVER"
done
if [[ -n ${STORY[rust]:-} && -n ${STORY[c]:-} ]]; then
    expect_eq "the MAC side tells the same story with either PHY driver" "${STORY[c]}" "${STORY[rust]}"
    expect_eq "the cable flap (MAC, carrier, NOLINK BMCR writes, modes) is the same with either PHY driver" \
        "${FLAP[c]}" "${FLAP[rust]/ (soft_reset)/}"
fi
