#!/bin/bash
# Callbacks traced at phylib's call sites (`record --callback-probes callsite`), against the
# kernel's own kprobe and kretprobe events on the Rust driver's callback symbols (tracefs group
# `truth`, defined before the module loads: this kernel has KPROBE_EVENTS_ON_NOTRACE): the same
# calls, callback for callback, in each thread's order, with the same return values, over the
# simulator's scenario (load, links up, a cable flap, links down) and a reload of the driver and
# the simulator (plug-in: the sites are armed before the driver loads). Then the same for the C
# driver, against kprobes on its own functions, and the shipped spec on both captures. The first
# session searches the kernel text (read from /proc/kcore) and keeps the sites in its cache
# (XDG_CACHE_HOME); the second takes them from there, and must find the same ones. Between them, a
# session without CAP_SYS_RAWIO and without a cache reads the kernel text through BPF, and must
# find the same ones too, and the same calls of inlined MDIO accessors.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
trap_cleanup
cleanup_also remove_truth
mark_dmesg callsite
unload_all

# the_scenario DRIVER: the simulated PHYs on DRIVER, links up, a cable flap, links down; then
# driver and simulator unloaded.
the_scenario() {
    load_driver "$1"
    load_sim
    a=$(simdev ax88772a) c=$(simdev ax88772c) b=$(simdev ax88796b)
    link_up "$a" "$c" "$b"
    for dev in $a $c $b; do wait_mode "$dev" 100 full; done
    sim_set "$a" cable 0
    wait_state "$a" NOLINK
    sim_set "$a" cable 1
    wait_mode "$a" 100 full
    link_down "$a" "$c" "$b"
    rmmod phy_sim
    rmmod "${DRIVER_MOD[$1]}"
}

# compare_with_truth CAPTURE NAMES PREFIX KEY: stops the ground truth and compares it with the
# capture (callsite_truth.py), then checks attribution, time order and the shipped spec.
compare_with_truth() {
    local cap=$1
    stop_truth "$cap.truth"
    events_json "$cap"
    python3 "$here/callsite_truth.py" "$2" "$cap.truth" "$cap.json" "$3" "$4" ||
        fail "the call-site stream differs from the kernel's kprobes"
    capture_expect "$cap.json" attribution
    capture_expect "$cap.json" cpu_order
    "$PHYTRACE_BIN" check --spec "$PHYTRACE_ROOT/specs/ax88796b.spec" "$cap" ||
        fail "the shipped spec fails on $cap"
}

names=$PHYTRACE_OUT/callsite-truth-names
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
define_truth ax88796b_rust "$names" '^_R.*Adapter.*_callback'
cap=$PHYTRACE_OUT/record-callsite.ptrace
start_record "$cap" --callback-probes callsite
jq -e 'select(.status == "recording") | .callback_probes == "callsite" and .call_sites > 0' "$cap.status" >/dev/null ||
    fail "record does not say it probes callbacks at call sites"
sites=$(jq -r 'select(.status == "recording") | .call_sites' "$cap.status")
ok "$sites call sites armed"
# Every kprobe inside a function is the call or the return of a site the header names (a PHY
# op's, or an inlined MDIO accessor's bus-op call where clang copied the accessors: our 7.3): a
# site the kernel's kprobes cannot take (phy_interrupt's call through memory) gets none, and one
# whose call the kernel refused keeps no return probe (removed on another thread once the
# session has started, as removing a kprobe waits for an RCU grace period: waited for).
ensure_debugfs
stray_kprobes() {
    comm -23 <(awk '$2 == "k" && $3 !~ /[+]0x0$/ { print $3 }' /sys/kernel/debug/kprobes/list | sort -u) \
        <(head -n 1 "$1" | jq -r '(.call_sites[] | .call, (.ret // empty)), (.mdio_sites[]? | .call, .ret)' | sort -u)
}
no_stray_kprobes() { [[ -z $(stray_kprobes "$1") ]]; }
wait_for 10 no_stray_kprobes "$cap" ||
    fail "kprobes at no armed site's call or return: $(stray_kprobes "$cap")"
ok "every kprobe placed is an armed site's call or return"
jq -e '.callback_probes == "callsite" and (.call_sites | length > 0)' <(head -n 1 "$cap") >/dev/null ||
    fail "the capture header does not name the call sites"
expect_eq "call sites from the cache (the first session)" false \
    "$(jq -r 'select(.status == "recording") | .call_sites_cached' "$cap.status")"
expect_eq "the reader of the kernel's code (the first session)" kcore \
    "$(jq -r 'select(.status == "recording") | .kernel_code_reader' "$cap.status")"
searched=$(head -n 1 "$cap" | jq -c .call_sites)
surveyed=$(head -n 1 "$cap" | jq -c .mdio_sites)
the_scenario rust
# Plug-in: the driver loads again into a running session.
the_scenario rust
stop_record "$cap"
compare_with_truth "$cap" "$names" ax88796b_rust:: op

# The same call sites read through BPF: root without CAP_SYS_RAWIO, which /proc/kcore needs, and
# with a cache of its own (empty), once the first session's kprobes are gone from the code.
bpf=$PHYTRACE_OUT/record-callsite-bpf
XDG_CACHE_HOME=$(mktemp -d) setpriv --inh-caps=-sys_rawio --bounding-set=-sys_rawio \
    "$PHYTRACE_BIN" record -o "$bpf.ptrace" --status "$bpf.status" --duration 1s 2>"$bpf.stderr" ||
    { cat "$bpf.stderr"; fail "record without CAP_SYS_RAWIO failed"; }
cat "$bpf.stderr"
expect_eq "the reader of the kernel's code without CAP_SYS_RAWIO" bpf \
    "$(jq -r 'select(.status == "recording") | .kernel_code_reader' "$bpf.status")"
expect_eq "the call sites found through BPF" "$searched" "$(head -n 1 "$bpf.ptrace" | jq -c .call_sites)"
expect_eq "the inlined MDIO accessors' calls found through BPF" "$surveyed" \
    "$(head -n 1 "$bpf.ptrace" | jq -c .mdio_sites)"

# The C driver: its callbacks named by its functions.
define_truth ax88796b "$names" '^asix_'
cap=$PHYTRACE_OUT/record-callsite-c.ptrace
start_record "$cap" --callback-probes callsite
expect_eq "call sites from the cache (the second session)" true \
    "$(jq -r 'select(.status == "recording") | .call_sites_cached' "$cap.status")"
expect_eq "the cached call sites" "$searched" "$(head -n 1 "$cap" | jq -c .call_sites)"
the_scenario c
stop_record "$cap"
compare_with_truth "$cap" "$names" asix_ function
result "\"callsite_sites\":$sites"
assert_clean_dmesg callsite
