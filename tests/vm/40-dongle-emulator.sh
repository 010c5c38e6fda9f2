#!/bin/bash
# The emulated AX88772A USB dongle (ax88772a-emulator on raw-gadget + dummy_hcd) under the
# kernel's own asix driver, checked against what the KERNEL reports: asix binds 0b95:772a and
# registers a netdev, the PHY driver attaches on usb-BUS:DEV:10, the link comes up at the
# partner's mode, ping works through it, cable out/in drops/restores carrier, the MDIO
# accesses the mdio:mdio_access tracepoint saw equal the emulator's per-register counters, an
# injected timeout/stall makes an MDIO read fail with the errno asix returns, and USB unplug /
# replug removes and brings back eth0 cleanly, and no request asix sent (at probe or later) was
# unknown to the emulator. DONGLE_DRIVERS: PHY drivers to run with
# (default $PHYTRACE_DRIVERS: "rust", our ax88796b_rust.ko, and "c", the in-tree ax88796b.ko).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
dongle_test_begin

# Counters of both sides agree (the tracepoint records successful accesses only; no faults
# are active while this is asked).
counts_match() { [[ "$(mdio_trace_counts "$BUS" 0x10)" == "$(dongle_mdio_counts 0x10)" ]]; }
rx_packets() { netfile "$DEV" statistics/rx_packets; }
ping_ok() { busybox ping -c 3 -W 2 192.168.77.2 >"$PHYTRACE_OUT/$TEST_NAME.ping" 2>&1; }
phy_driver() { local l; l=$(readlink "$MDIO_DEVS/$BUS:10/driver") && echo "${l##*/}"; }
phy_module() { local l; l=$(readlink "/sys/bus/mdio_bus/drivers/$(phy_driver)/module") && echo "${l##*/}"; }

for CUR_DRIVER in ${DONGLE_DRIVERS:-$PHYTRACE_DRIVERS}; do
    log "PHY driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    dongle_modules_load "$CUR_DRIVER"
    for m in asix "${DRIVER_MOD[$CUR_DRIVER]}"; do
        ! module_loaded "$m" || fail "$m is loaded before the dongle is plugged in"
    done
    dongle_start --an-delay-ms 100 --partner all
    wait_for 30 dongle_has_event configured || fail "the host did not configure the device"
    wait_dongle_netdev 30
    DEV=$(dongle_netdev)
    wait_for 10 has_dongle_phy || fail "no PHY at address 0x10 on a usb-* MDIO bus"
    BUS=$(dongle_mdio_bus)
    ok "asix registered $DEV, PHY on $BUS:10"

    # --- probe, as the kernel sees it ---
    usbdev=$(readlink -f "/sys/class/net/$DEV/device/..")
    expect_eq "USB id (sysfs)" "0b95:772a" "$(sysread "$usbdev/idVendor"):$(sysread "$usbdev/idProduct")"
    expect_eq "USB speed" 480 "$(sysread "$usbdev/speed")"
    expect_eq "interface driver" asix "$(basename "$(readlink "/sys/class/net/$DEV/device/driver")")"
    expect_eq "PHY id (sysfs)" 0x003b1861 "$(sysread "$MDIO_DEVS/$BUS:10/phy_id")"
    expect_eq "PHY driver" "${ASIX_NAME[ax88772a]}" "$(phy_driver)"
    expect_eq "PHY driver module, loaded at plug-in by its mdio: alias" "${DRIVER_MOD[$CUR_DRIVER]}" "$(phy_module)"
    expect_eq "MAC address (READ_NODE_ID)" 00:0e:c6:87:72:01 "$(sysread "/sys/class/net/$DEV/address")"
    dmesg_since_mark | grep -q "register 'asix' at usb-dummy_hcd.0-1, ASIX AX88772 USB 2.0 Ethernet" ||
        fail "no \"register 'asix'\" line in dmesg"
    ok "dmesg: asix registered the dongle"
    expect_eq "requests the emulator did not know" 0 "$(dongle_status '["unknown"]')"

    # --- link, ping, partner, cable: MDIO counted on both sides ---
    dongle_ctl reset-counters >/dev/null
    mdio_trace_start
    rx0=$(rx_packets)
    ip link set dev "$DEV" up
    wait_mode "$DEV" 100 full
    ip addr add 192.168.77.1/24 dev "$DEV"
    check "ping 192.168.77.2 through the dongle" ping_ok
    rx=$(($(rx_packets) - rx0))
    ((rx >= 4)) || fail "rx_packets grew by $rx, expected >= 4 (1 ARP + 3 echo replies)"
    ok "kernel counted $rx received packets; emulator answered $(dongle_status '["frames"]["icmp_replies"]') echo requests"
    dongle_ctl partner 10half >/dev/null
    wait_mode "$DEV" 10 half
    dongle_ctl partner all >/dev/null
    wait_mode "$DEV" 100 full
    dongle_ctl cable out >/dev/null
    wait_carrier "$DEV" 0
    ok "cable out: carrier off"
    dongle_ctl cable in >/dev/null
    wait_mode "$DEV" 100 full
    ok "cable in: carrier back"
    check "ping after replug of the cable" ping_ok
    out=$(ethtool -t "$DEV" 2>&1) || true
    grep -q "The test result is PASS" <<<"$out" || fail "ethtool -t (net_selftest, PHY loopback): $out"
    ok "ethtool -t: net_selftest passes (frames looped back in the emulated PHY)"
    wait_mode "$DEV" 100 full
    ip link set dev "$DEV" down
    wait_for 5 counts_match ||
        fail "MDIO counts differ: tracepoint (reg reads writes):
$(mdio_trace_counts "$BUS" 0x10)
emulator:
$(dongle_mdio_counts 0x10)"
    mdio_trace_stop
    n_trace=$(mdio_trace_counts "$BUS" 0x10 | awk '{ n += $2 + $3 } END { print n + 0 }')
    ok "mdio:mdio_access and the emulator agree per register ($n_trace accesses at 0x10)"
    ops=$(dongle_ctl status | python3 -c '
import json, sys
r = json.load(sys.stdin)["requests"]
print(r.get("SET_SW_MII", 0), r.get("READ_MII_REG", 0) + r.get("WRITE_MII_REG", 0), r.get("SET_HW_MII", 0))')
read -r sw mii hw <<<"$ops"
expect_eq "one SET_SW_MII and one SET_HW_MII per MII request" "$mii $mii" "$sw $hw"
expect_eq "MII requests = traced accesses (no other MDIO user)" "$n_trace" "$mii"

    # --- latency of one MDIO read as the kernel sees it ---
    ip link set dev "$DEV" up
    wait_mode "$DEV" 100 full
    mdio_trace_start
    python3 "$PHYTRACE_ROOT/tests/vm/mii.py" "$DEV" loop 2 20 >/dev/null
    mdio_trace_stop
    lat0=$(mdio_trace_latency)
    # dummy_hcd completes transfers on its timer (a jiffy, 4 ms at HZ=250): an added delay D
    # shows as at least D minus one tick.
    dongle_ctl mdio-delay-us 10000 >/dev/null
    mdio_trace_start
    python3 "$PHYTRACE_ROOT/tests/vm/mii.py" "$DEV" loop 2 20 >/dev/null
    mdio_trace_stop
    lat1=$(mdio_trace_latency)
    dongle_ctl mdio-delay-us 0 >/dev/null
    log "MDIO read latency (asix_mdio_bus_read): $lat0 (no delay), $lat1 (mdio-delay-us 10000)"
    m0=${lat0#*median_us=} m0=${m0%% *} m1=${lat1#*median_us=} m1=${m1%% *}
    ((m1 - m0 >= 6000)) || fail "a 10 ms MII delay added only $((m1 - m0)) µs to the median read"
    ok "mdio-delay-us 10000 adds $((m1 - m0)) µs to a read (kernel view)"
    result "\"driver\":\"$CUR_DRIVER\",\"mdio_read_median_us\":$m0,\"mdio_read_median_us_delay10ms\":$m1"

    # --- injected faults: the errno asix returns to phylib ---
    mark_dmesg "$CUR_DRIVER-faults"
    mdio_trace_start
    expect_eq "mdio-timeout 1: read fails with ETIMEDOUT" "errno 110" "$(dongle_inject_mii "$DEV" read 2 mdio-timeout 1)"
    mdio_trace_stop
    tmax=$(mdio_trace_latency) tmax=${tmax#*max_us=}
    ((tmax > 30000)) || fail "the timed-out read took only $tmax µs (30 HOST_EN rounds expected)"
    ok "the timed-out read took $tmax µs in the bus's read op (30 rounds of SET_SW_MII + 1 ms + STATMNGSTS)"
    result "\"driver\":\"$CUR_DRIVER\",\"mdio_timeout_read_us\":$tmax"
    expect_eq "emulator: one timed-out access" 1 "$(dongle_status '["mdio"]["timeouts"]')"
    expect_eq "next read works" 0x003b "$(dongle_mii_read "$DEV" 2)"
    # __asix_mdio_write gives up on -ENODEV only: after a timeout it still writes, and succeeds.
    expect_eq "mdio-timeout 1: a write still succeeds" ok "$(dongle_inject_mii "$DEV" write 0x1e 0x1234 mdio-timeout 1)"
    expect_eq "the write reached the PHY" 0x1234 "$(dongle_mii_read "$DEV" 0x1e)"
    expect_eq "emulator: two timed-out accesses" 2 "$(dongle_status '["mdio"]["timeouts"]')"
    expect_eq "mdio-error read PHYSID1 1: read fails with EPIPE (stall)" "errno 32" \
        "$(dongle_inject_mii "$DEV" read 2 mdio-error read PHYSID1 1)"
    wait_for 5 grep -q "Failed to read reg index 0x0002: -32" < <(dmesg_since_mark) ||
        fail "asix did not log the failed read"
    ok "dmesg: asix logged 'Failed to read reg index 0x0002: -32'"
    expect_eq "next read works" 0x1861 "$(dongle_mii_read "$DEV" 3)"
    wait_mode "$DEV" 100 full 3

    # --- USB unplug and replug ---
    mark_dmesg "$CUR_DRIVER-unplug"
    dongle_ctl unplug >/dev/null
    wait_for 15 no_dongle_netdev || fail "$DEV still there after unplug"
    wait_for 5 eval '! has_dongle_phy' || fail "PHY $BUS:10 still on the MDIO bus after unplug"
    dmesg_since_mark | grep -q "USB disconnect" || fail "no USB disconnect in dmesg"
    ok "unplug: USB disconnect, $DEV and $BUS:10 gone"
    assert_clean_dmesg "unplug"
    dongle_ctl plug >/dev/null
    configured_again() { (($(dongle_event_count configured) >= 2)); }
    wait_for 30 configured_again || fail "not configured again after plug"
    wait_dongle_netdev 30
    DEV=$(dongle_netdev)
    wait_for 10 has_dongle_phy || fail "no PHY after replug"
    BUS=$(dongle_mdio_bus)
    expect_eq "PHY driver after replug" "${ASIX_NAME[ax88772a]}" "$(phy_driver)"
    ip link set dev "$DEV" up
    wait_mode "$DEV" 100 full
    ip addr add 192.168.77.1/24 dev "$DEV"
    check "ping after USB replug" ping_ok
    expect_eq "emulator sessions" 2 "$(dongle_status '["sessions"]')"
    ip link set dev "$DEV" down
    assert_clean_dmesg "replug"
    # Since reset-counters (right after the probe check above): open, rx-mode, ping, partner
    # and cable changes, ethtool -t, faults, unplug, the second probe and open.
    expect_eq "requests the emulator did not know (open, rx-mode, ethtool -t, ping, replug)" 0 \
        "$(dongle_status '["unknown"]')"

    dongle_stop
    wait_for 15 no_dongle_netdev || fail "$DEV still there after the emulator ended"
    mdio_trace_remove
    dongle_modules_unload
    assert_clean_dmesg "$CUR_DRIVER"
done
