#!/bin/bash
# The MAC side traced at phylink's call sites of `pl->mac_ops->mac_link_up/down` (the default,
# `--mac-probes callsite`), asix's MAC ops by name beside them for the calls no site reported:
# phylink is not loaded when record starts, so its sites are found and armed as it goes live
# (the dongle's plug-in loads asix, which loads phylink). Compared, count for count and speed
# for speed, with the kernel's own kprobe events on asix's `ax88772_mac_link_up` and
# `ax88772_mac_link_down` (tracefs group `truth`, defined before asix loads), over plug-in, link
# up, a cable flap and link down: each call once, whichever probe reported it. Where the kernel
# refuses a kprobe on those calls (x86 kprobes do not take `call *OFF(%reg)`: kernels without
# retpolines), phytrace must say so, and the kernel itself must refuse a kprobe there; an op
# with a site the kernel takes must have had calls reported there (the `finished` status line's
# `mac_site_calls`).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
dongle_test_begin
cleanup_first remove_truth
mark_dmesg mac-callsite
flavour=c
[[ ${PHYTRACE_VM_KERNEL:-} == stock ]] && flavour=rust # Debian ships no C ax88796b
dongle_modules_load "$flavour"
module_loaded phylink && log "phylink is already loaded: its sites are armed at start"

remove_truth
echo >"$TRACEFS/trace"
# x86-64: speed and duplex are the fifth and sixth arguments.
echo 'p:truth/up asix:ax88772_mac_link_up speed=%r8:s32 duplex=%r9:s32' >>"$TRACEFS/kprobe_events"
echo 'p:truth/down asix:ax88772_mac_link_down' >>"$TRACEFS/kprobe_events"
echo 1 >"$TRACEFS/events/truth/enable"
echo 1 >"$TRACEFS/tracing_on" # a test before may have left it off

cap=$PHYTRACE_OUT/mac-callsite.ptrace
start_record "$cap"
if module_loaded phylink; then
    # Its sites are found on the side as record starts: the dongle waits until the search is
    # over and the sites it found armed (none, if none could be), so that its calls are theirs
    # to report.
    wait_for 60 record_status "$cap.status" mac_sites_armed ||
        fail "record did not say that the search for phylink's MAC call sites ended"
fi
dongle_plug_link_up --an-delay-ms 100 --partner all,pause
dongle_cable_flap
ip link set dev "$DONGLE_DEV" down
stop_record "$cap"
# Listed once record's kprobes are gone: a breakpoint in phylink's code hides the call under it.
"$PHYTRACE_BIN" probes >"$PHYTRACE_OUT/mac-callsite.probes" 2>&1 || true
echo 0 >"$TRACEFS/events/truth/enable"
cp "$TRACEFS/trace" "$cap.truth"
events_json "$cap"

sed -n '/phylink_mac_ops/,/^$/p' "$PHYTRACE_OUT/mac-callsite.probes"
if grep -q "MAC call site .* no longer traced" "$cap.stderr"; then
    fail "a MAC call site failed its check: $(cat "$cap.stderr")"
fi
# The ops phytrace said it probes by name, every other one at phylink's call sites.
by_name=$(sed -nE "s/.*phylink's calls of mac_ops->(mac_link_[a-z]+) are not traced at a call site: asix's by name.*/\1/p" "$cap.stderr")
grep -q "MAC ops are not traced at phylink's call sites" "$cap.stderr" && by_name="mac_link_up mac_link_down"
# The kernel decides which sites can be probed: a tracefs kprobe at each site listed, checked or
# said to be a call through memory (which the kernel must refuse too). An op with a site the
# kernel takes must have been traced there; one with none, by name, and said.
mapfile -t sites < <(sed -n '/phylink_mac_ops/,/^$/p' "$PHYTRACE_OUT/mac-callsite.probes" |
    awk '$1 ~ /^phylink[a-z_]*\+0x[0-9a-f]+$/ && $3 == "target" { print $1, $2, "checked" }
         $1 ~ /^phylink[a-z_]*\+0x[0-9a-f]+$/ && /through memory/ { print $1, $2, "memory" }')
((${#sites[@]} > 0)) || fail "phytrace probes lists no MAC call site it checks or says is a call through memory"
takes=""
for site in "${sites[@]}"; do
    read -r place op kind <<<"$site"
    if echo "p:truth/site $place" >>"$TRACEFS/kprobe_events" 2>/dev/null; then
        echo "-:truth/site" >>"$TRACEFS/kprobe_events"
        [[ $kind == checked ]] || fail "the kernel takes a kprobe at $place, which phytrace says it cannot take"
        takes+=" $op"
    fi
done
for op in mac_link_up mac_link_down; do
    at_site=$(jq -r --arg op "$op" 'select(.status == "finished") | [.mac_site_calls[] | select(.op == $op) | .calls] | add // 0' "$cap.status")
    if grep -qw "$op" <<<"$takes"; then
        grep -qw "$op" <<<"$by_name" && fail "the kernel takes a kprobe at a site of $op, yet phytrace said it does not trace it at one: $(cat "$cap.stderr")"
        ((at_site > 0)) || fail "the kernel takes a kprobe at a site of $op, yet no call of it was reported at a site"
        log "$op: $at_site calls reported at phylink's call sites"
    else
        expect_eq "$op calls reported at a call site the kernel refuses" 0 "$at_site"
        grep -qw "$op" <<<"$by_name" || fail "the kernel takes no kprobe at a site of $op, yet phytrace did not say it probes it by name: $(cat "$cap.stderr")"
    fi
done
at_sites=$(for op in mac_link_up mac_link_down; do grep -qw "$op" <<<"$by_name" || echo "$op"; done)
log "MAC ops at phylink's call sites: ${at_sites//$'\n'/ }${at_sites:+;}${at_sites:-none;} by name on asix: ${by_name:-none} (${#sites[@]} sites listed, the kernel takes kprobes at sites of:${takes:- none})"

truth_up=$(grep -o 'up: ([^)]*) speed=[0-9-]* duplex=[0-9-]*' "$cap.truth" | sed -E 's/.*speed=([0-9-]*) duplex=([0-9-]*)/\1\/\2/' || true)
truth_down=$(grep -c 'down: (' "$cap.truth" || true)
ours_up=$(jq -r 'select(.kind == "mac" and .change.op == "link_up") | "\(.change.speed)/\(.change.duplex)"' "$cap.json")
ours_down=$(jq -r 'select(.kind == "mac" and .change.op == "link_down")' "$cap.json" | jq -s length)
log "kernel: $(wc -l <<<"$truth_up") mac_link_up ($(tr '\n' ' ' <<<"$truth_up")), $truth_down mac_link_down"
[[ -n $truth_up && $truth_down -gt 0 ]] || fail "the kernel's kprobes saw no link up and down"
expect_eq "mac_link_up events, count for count" "$(wc -l <<<"$truth_up")" "$(grep -c . <<<"$ours_up" || true)"
expect_eq "mac_link_down events, count for count" "$truth_down" "$ours_down"
# The kernel's duplex is DUPLEX_FULL (1); the capture names it.
expect_eq "mac_link_up speeds" "$(cut -d/ -f1 <<<"$truth_up")" "$(cut -d/ -f1 <<<"$ours_up")"
expect_eq "mac_link_up duplex" "$(sed 's#.*/1$#full#; s#.*/0$#half#' <<<"$truth_up")" "$(cut -d/ -f2 <<<"$ours_up")"
assert_clean_dmesg mac-callsite
