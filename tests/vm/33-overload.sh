#!/bin/bash
# Overload: MDIO reads from a simulator thread as fast as one CPU can issue them for
# OVERLOAD_SECS (default 6; the soak runs 30), far above the drop-free rate, while `phytrace
# record` runs with its default ring. Loss is counted exactly (recorded + lost = generated, the
# simulator's counters being the truth), record's memory stays bounded, and once the load falls
# to a rate it can keep up with, it loses nothing again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
secs=${OVERLOAD_SECS:-6}
mark_dmesg overload
setup rust # links stay down: no phylib polling, only the load touches the bus
a=$(simdev ax88772a)
reset_counters
cap=$PHYTRACE_OUT/overload.ptrace
start_record "$cap"
sim_set "$a" load "rate 2000000 $secs BMSR"
samples=()
while grep -q "running=1" "$SIM_DBG/$a/load"; do
    samples+=("$(rss_kib "$RECORD_PID")")
    sleep 1
done
overload=$(sim_get "$a" load)
log "overload: $overload"
log "record RSS (KiB) each second: ${samples[*]}"
# Recovery: once record has written out what the ring held (the capture stops growing), a
# rate well below the drop-free rate, on another register.
drained() {
    local before
    before=$(stat -c %s "$cap")
    sleep 1
    [[ $(stat -c %s "$cap") == "$before" ]]
}
# wait_for polls 10 times per second unit: 60 tries of 1 s here.
wait_for 6 drained || fail "record did not catch up within 60 s after the overload"
sim_set "$a" load "rate 2000 2 PHYSID1"
wait_for 30 grep -q "running=0" "$SIM_DBG/$a/load" || fail "recovery load did not finish"
sleep 1
stop_record "$cap"

bmsr=$(counter "$a" BMSR reads)
physid1=$(counter "$a" PHYSID1 reads)
generated=$(counter_total "$a" total_reads)
expect_eq "generated reads = BMSR + PHYSID1 (nothing else touched the bus)" "$generated" $((bmsr + physid1))
recorded=$(trailer_field "$cap" counts.mdio)
lost=$(trailer_field "$cap" lost)
((lost > 0)) || fail "no loss at $((generated / secs)) reads/s: the load was not an overload"
expect_eq "recorded + lost = generated ($recorded + $lost)" "$generated" $((recorded + lost))
# Counted by `stats` (the reads per register): a JSON dump of every event takes minutes under TCG.
recovered=$("$PHYTRACE_BIN" stats --format json "$cap" |
    jq '[.captures[0].stats.phys[].mdio.registers[] | select(.reg == 2) | .reads] | add // 0')
expect_eq "PHYSID1 reads recorded after the overload (no loss once the load fell)" "$physid1" "$recovered"
lost_events=$("$PHYTRACE_BIN" dump --format json "$cap" --kind lost | wc -l)
((lost_events > 0)) || fail "the capture does not say where events were lost"
max=0
for s in "${samples[@]}"; do ((s > max)) && max=$s; done
((max < 65536)) || fail "record RSS reached $max KiB under overload"
half=$((${#samples[@]} / 2))
early=0
for s in "${samples[@]:0:half}"; do ((s > early)) && early=$s; done
((max <= early + 4096)) || fail "record RSS kept growing: ${samples[*]}"
result "\"secs\":$secs,\"generated\":$generated,\"recorded\":$recorded,\"lost\":$lost,\"recovery_reads\":$physid1,\"rss_max_kib\":$max"
ok "overload: $generated generated, $recorded recorded, $lost lost ($lost_events loss marks), RSS ≤ $max KiB"
assert_clean_dmesg overload
