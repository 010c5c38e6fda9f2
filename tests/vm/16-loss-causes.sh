#!/bin/bash
# Attribution that heals, and every loss counted by its cause: each cause is forced in turn and
# phytrace's capture is compared, callback for callback, with the kernel's own kprobe and
# kretprobe events on the same symbols (tracefs group `truth`, room for 64 calls in flight):
#   too_deep       --callback-depth 1: the soft_reset and read_status the AX88772A's
#                  link_change_notify nests on every NOLINK are not recorded but counted; the
#                  outer callback is still right;
#   missed_return  --max-active 1 with four AX88772As on a slow bus (their read_status overlap),
#                  with the symbol probes (kretprobes; a call site's return is a plain kprobe):
#                  the returns the kernel could not report are its kprobe_profile misses;
#   (map_full, a thread's state the kernel could not allocate, is not forced: task-local
#   storage has no capacity to fill.)
# After each, no record is mis-nested: every recorded callback is at depth 1 and every return
# follows its own entry on its thread.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
cleanup_also remove_truth

# define_loss_truth: entry and return events on every callback of the loaded driver; names in
# $PHYTRACE_OUT/loss-truth-names as "N CALLBACK".
define_loss_truth() {
    local n=0 symbol name
    remove_truth
    echo >"$TRACEFS/trace"
    while read -r symbol; do
        n=$((n + 1))
        echo "p:truth/c$n ax88796b_rust:$symbol" >>"$TRACEFS/kprobe_events"
        echo "r64:truth/r$n ax88796b_rust:$symbol" >>"$TRACEFS/kprobe_events"
        name=$(sed -E 's/.*[0-9]+([a-z_]+)_callback.*/\1/' <<<"$symbol")
        echo "$n $name"
    done < <(nm --defined-only "$PHYTRACE_MODULES/ax88796b_rust.ko" |
        awk '$2 ~ /^[tT]$/ && $3 ~ /^_R.*Adapter.*_callback/ { print $3 }') >"$PHYTRACE_OUT/loss-truth-names"
    ((n > 0)) || fail "no callbacks in ax88796b_rust.ko"
    echo 1 >"$TRACEFS/events/truth/enable"
}

# end_truth: stops the ground truth; fails if it is incomplete itself.
end_truth() {
    echo 0 >"$TRACEFS/events/truth/enable"
    local stats
    for stats in "$TRACEFS"/per_cpu/cpu*/stats; do
        grep -q '^overrun: 0$' "$stats" || fail "the ftrace buffer overran: the ground truth is incomplete"
    done
    local misses
    misses=$(awk '$1 ~ /^r[0-9]+$/ { m += $3 } END { print m + 0 }' "$TRACEFS/kprobe_profile")
    expect_eq "returns the ground truth itself missed" 0 "$misses"
}

truth_count() { grep -c " $1: " "$TRACEFS/trace" || true; }

# phytrace_misses: kprobe_profile misses of this session's callback return events.
phytrace_misses() {
    awk '$1 ~ /^ax88796b_rust_.*_r$/ { m += $3 } END { print m + 0 }' "$TRACEFS/kprobe_profile"
}

# recorded CAPTURE KIND CALLBACK: callback_enter or callback_exit records of CALLBACK.
recorded() {
    jq -r --arg k "$2" --arg n "$3" 'select(.kind == $k and .callback.name == $n) | 1' "$1.json" | wc -l
}

# lost CAPTURE CAUSE: the trailer's count of CAUSE.
lost() { trailer_field "$1" "lost_by_cause.$2"; }

# well_nested CAPTURE: every callback at depth 1 and every return right after its own entry on
# its thread; prints how many entries were never closed (their return not recorded).
well_nested() {
    jq -r 'select(.kind == "callback_enter" or .kind == "callback_exit") | [.tid, .kind, .callback.name, .depth] | @tsv' "$1.json" |
        awk -F'\t' '$4 != 1 { print "depth " $4 ": " $0 > "/dev/stderr"; bad = 1 }
            $2 == "callback_enter" { if (open[$1] != "") unclosed++; open[$1] = $3 }
            $2 == "callback_exit" { if (open[$1] != $3) { print "tid " $1 ": " $3 " returned inside " open[$1] > "/dev/stderr"; bad = 1 } open[$1] = "" }
            END { for (t in open) if (open[t] != "") unclosed++; print unclosed + 0; exit bad }'
}

# accounted CAPTURE CAUSE: over all callbacks, recorded returns plus the losses of CAUSE match
# the kernel's returns; for too_deep (neither entry nor return recorded) the entries too, and no
# callback has more records than the kernel ran.
accounted() {
    local cap=$1 cause=$2 n name entries=0 enters=0 exits=0 returns=0 lost_n want got
    lost_n=$(lost "$cap" "$cause")
    while read -r n name; do
        want=$(truth_count "c$n")
        got=$(recorded "$cap" callback_enter "$name")
        ((got <= want)) || fail "$name: $got entries recorded, the kernel ran $want"
        entries=$((entries + want))
        enters=$((enters + got))
        exits=$((exits + $(recorded "$cap" callback_exit "$name")))
        returns=$((returns + $(truth_count "r$n")))
    done <"$PHYTRACE_OUT/loss-truth-names"
    ((returns > 0)) || fail "the ground truth saw no return"
    if [[ $cause == too_deep ]]; then
        expect_eq "$cause: entries recorded + lost ($lost_n) vs the kernel's" "$entries" "$((enters + lost_n))"
    fi
    expect_eq "$cause: returns recorded + lost ($lost_n) vs the kernel's" "$returns" "$((exits + lost_n))"
}

# --- too deep ---
# too_deep PROBES: the too-deep losses with callbacks probed as PROBES (symbol, callsite).
too_deep() {
    local probes=$1 cap too_deep unclosed
    setup rust
    a=$(simdev ax88772a)
    define_loss_truth
    cap=$PHYTRACE_OUT/loss-too-deep-$probes.ptrace
    start_record "$cap" --module ax88796b_rust --callback-depth 1 --callback-probes "$probes"
    link_up "$a"
    wait_mode "$a" 100 full
    for _ in 1 2 3; do
        sim_set "$a" cable 0
        wait_carrier "$a" 0
        sim_set "$a" cable 1
        wait_mode "$a" 100 full
    done
    link_down "$a"
    end_truth
    stop_record "$cap"
    events_json "$cap"
    too_deep=$(lost "$cap" too_deep)
    ((too_deep >= 3)) || fail "$probes: the nested soft_resets were not counted as too deep ($too_deep)"
    accounted "$cap" too_deep
    expect_eq "too_deep: other losses" "0 0 0" "$(lost "$cap" ring_full) $(lost "$cap" map_full) $(lost "$cap" missed_return)"
    unclosed=$(well_nested "$cap") || fail "$probes: records mis-nested after too-deep callbacks"
    expect_eq "too_deep: entries without their return" 0 "$unclosed"
    ok "too deep ($probes probes): $too_deep nested callbacks counted, their returns consumed the count, the rest right"
}
too_deep symbol
# At call sites, a return site is also reached without the call: only the return at a
# too-deep call's own stack pointer consumes the count.
too_deep callsite

# --- missed returns: four PHYs whose callbacks overlap on a slow bus ---
# start CAPTURE ARGS...: four AX88772As (one read_status symbol) links up on a 30 ms bus,
# recording with ARGS.
start_overlapping() {
    local cap=$1 d
    shift
    setup rust phys=ax88772a@1,ax88772a@2,ax88772a@3,ax88772a@4
    define_loss_truth
    start_record "$cap" --module ax88796b_rust "$@"
    for d in $(sim_devs); do sim_set "$d" mdio_delay_us 30000; done
    # shellcheck disable=SC2046  # one word per device
    link_up $(sim_devs)
}
stop_overlapping() {
    # shellcheck disable=SC2046
    link_down $(sim_devs)
    end_truth
}
misses_at_least() { (($(phytrace_misses) >= $1)); }

cap=$PHYTRACE_OUT/loss-missed-return.ptrace
start_overlapping "$cap" --callback-probes symbol --max-active 1
wait_for 90 misses_at_least 3 || fail "no returns missed with one kretprobe instance: $(phytrace_misses)"
stop_overlapping
kernel_misses=$(phytrace_misses)
stop_record "$cap"
events_json "$cap"
expect_eq "missed returns: the capture's count vs kprobe_profile" "$kernel_misses" "$(lost "$cap" missed_return)"
accounted "$cap" missed_return
unclosed=$(well_nested "$cap") || fail "records mis-nested after missed returns"
expect_eq "missed returns: entries without their return" "$kernel_misses" "$unclosed"
ok "missed returns: $kernel_misses counted as the kernel counted them, later callbacks nested right"

# --- ring full: a small ring and a burst: recorded + lost = the simulator's count ---
setup rust
a=$(simdev ax88772a)
cap=$PHYTRACE_OUT/loss-ring-full.ptrace
start_record "$cap" --module ax88796b_rust --ring-size 16K
reset_counters
sim_set "$a" load "20000 BMSR"
stop_record "$cap"
generated=$(counter "$a" BMSR reads)
got=$("$PHYTRACE_BIN" dump --format json "$cap" --kind mdio | grep -c '"reg":1,' || true)
ring_full=$(lost "$cap" ring_full)
((ring_full > 0)) || fail "a 16 KiB ring lost nothing in a 20000-read burst"
expect_eq "ring full: recorded + lost vs the simulator's reads" "$generated" "$((got + ring_full))"
ok "ring full: $ring_full lost, counted exactly"
result "\"ok\":true"
