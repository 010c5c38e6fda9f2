#!/bin/bash
# MDIO access from user space (SIOCGMIIREG via phy_do_ioctl: mii-tool, mii.py) and the debugfs
# load generator; the simulator's access counters are the ground truth for both.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
here=$(cd "$(dirname "$0")" && pwd)

start_outcomes
for CUR_DRIVER in $PHYTRACE_DRIVERS; do
    log "driver: $CUR_DRIVER"
    mark_dmesg "$CUR_DRIVER"
    setup "$CUR_DRIVER"
    a=$(simdev ax88772a)
    link_up "$a"
    wait_mode "$a" 100 full

    out=$(mii-tool -v "$a" 2>&1) || fail "mii-tool: $out"
    if ! grep -q "negotiated 100baseTx-FD" <<<"$out" || ! grep -q "link ok" <<<"$out"; then
        fail "mii-tool: $out"
    fi
    ok "mii-tool: negotiated 100baseTx-FD, link ok"
    expect_eq "PHYSID2 through SIOCGMIIREG" 0x1861 "$(python3 "$here/mii.py" "$a" read 3)"

    before=$(counter "$a" PHYSID1 reads)
    out=$(python3 "$here/mii.py" "$a" loop 2 500)
    expect_eq "PHYSID1 reads after 500 ioctl reads" $((before + 500)) "$(counter "$a" PHYSID1 reads)"
    log "ioctl loop: $out"

    before=$(counter "$a" BMSR reads)
    sim_set "$a" load "2000 BMSR"
    res=$(sim_get "$a" load)
    log "load: $res"
    grep -q "mode=sync .*reads=2000 errors=0" <<<"$res" || fail "load result: $res"
    after=$(counter "$a" BMSR reads)
    (( after - before >= 2000 && after - before < 2100 )) || fail "BMSR reads went $before -> $after"
    ok "sync load: 2000 BMSR reads counted ($before -> $after)"

    sim_set "$a" load "rate 2000 1 PHYSID2"
    grep -q "running=1" <<<"$(sim_get "$a" load)" || fail "rate load not running"
    wait_for 5 grep -q "running=0" "$SIM_DBG/$a/load" || fail "rate load did not finish"
    res=$(sim_get "$a" load)
    log "rate load: $res"
    n=$(sed -n 's/.* reads=\([0-9]*\) .*/\1/p' <<<"$res")
    (( n >= 1600 && n <= 2100 )) || fail "rate 2000/s for 1 s did $n reads"
    ok "rate load: $n reads in about 1 s"
    sim_set "$a" load "rate 1000 60"
    sim_set "$a" load stop
    grep -q "running=0" <<<"$(sim_get "$a" load)" || fail "load stop"
    ok "load stop"
    record "ioctl" "$(python3 "$here/mii.py" "$a" read 1)"
    assert_clean_dmesg "$CUR_DRIVER"
    unload_all
done
compare_outcomes
