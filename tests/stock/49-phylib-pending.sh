#!/bin/bash
# phylib as a module not loaded yet, as on a Debian 13 machine whose first PHY comes with a
# dongle (6.12: CONFIG_PHYLIB=m, no Rust, the C ax88796b). Before libphy loads, doctor finds the
# machine traceable and `probes` decodes phylib's call sites from libphy's file (and keeps them
# in the cache). A session started before the plug-in arms them, and the MDIO accessors, as
# trace events the kernel places as it loads libphy: the dongle's PHY is traced from its first callback, the probe-time
# soft_reset, through link up, a cable flap, link down and asix unbound (the PHY's detach
# suspends it). Its callbacks are the kernel's own kprobes and kretprobes on the C driver's
# functions and on libphy's genphy_suspend and genphy_resume, its suspend and resume ops
# (tracefs group `truth`, defined before either module loads), call for call, in each
# thread's order, with the same return values; its MDIO accesses per register are the
# emulator's counts, through the MDIO accessors' move from their pending kprobes to libphy's
# trampolines. Once libphy is loaded, `probes` decodes its code from /proc/kcore: the same
# call sites as its file.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
kernel_only debian13
here=$(cd "$(dirname "$0")/../vm" && pwd)
module_loaded libphy && fail "libphy is loaded before the test: an earlier one left it"
work=$(mktemp -d)
XDG_CACHE_HOME=$work/cache
export XDG_CACHE_HOME
dongle_test_begin
cleanup_also "dongle_stop; remove_truth; dongle_modules_unload"

# doctor with a cache of its own: `probes` below must decode the file itself.
json=$(XDG_CACHE_HOME=$work/doctor-cache "$PHYTRACE_BIN" doctor --format json) ||
    { echo "$json"; fail "doctor finds the machine untraceable before libphy loads"; }
jq -r '.checks[] | "\(.status) \(.name): \(.detail)"' <<<"$json"
status_of() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' <<<"$json"; }
expect_eq "doctor's callbacks before libphy loads" ok "$(status_of callbacks)"
jq -e '.checks[] | select(.name == "callbacks") | .detail | contains("libphy, not loaded yet")' <<<"$json" >/dev/null ||
    fail "doctor does not say the call sites come from libphy's file"
expect_eq "doctor's MDIO probes before libphy loads" warn "$(status_of 'MDIO probes')"

sites() { jq -r '.call_sites.sites[] | "\(.call) \(.op) \(.ret // "tail")"' "$1" | sort; }
"$PHYTRACE_BIN" probes --format json >"$work/file.json"
expect_eq "where the call sites come from before libphy loads" "module_file libphy" \
    "$(jq -r '"\(.call_sites.source) \(.call_sites.pending_module)"' "$work/file.json")"
ok "$(sites "$work/file.json" | wc -l) call sites in libphy's file"

dongle_modules_load c
names=$work/truth-names
define_truth ax88796b "$names" '^asix_'
# Its suspend and resume ops are phylib's own genphy_suspend and genphy_resume.
also_truth "$names" libphy genphy_suspend genphy_resume
cap=$PHYTRACE_OUT/phylib-pending.ptrace
rm -f "$cap"*
start_record "$cap" --callback-probes callsite
expect_eq "the module record armed the call sites in before it loads" libphy \
    "$(jq -r 'select(.status == "recording") | .call_sites_pending' "$cap.status")"
module_loaded libphy && fail "libphy loaded before the plug-in"
dongle_plug_link_up --an-delay-ms 100 --partner all,pause
# Once libphy is live with its BTF, the MDIO accessors move to its trampolines, and their kprobes
# go: each access is still reported once (the emulator's counts, below).
mdio_moved() { [[ $(jq -r 'select(.status == "mdio_probes") | .mdio_probes' "$cap.status") == fentry ]]; }
wait_for 60 mdio_moved || fail "the MDIO accessors did not move to fentry/fexit as libphy loaded"
expect_eq "phytrace's MDIO kprobes left once the trampolines are attached" 0 \
    "$(grep -c '^[pr]:phytrace_[0-9]*/mdio_' "$TRACEFS/kprobe_events" || true)"
dongle_cable_flap
# Synchronous: phylib's polling has stopped when it returns.
ip link set dev "$DONGLE_DEV" down
# asix unbound with the dongle still plugged in: phylink detaches the PHY, which suspends it
# (genphy_suspend) while the device still answers.
intf=$(basename "$(readlink -f "/sys/class/net/$DONGLE_DEV/device")")
echo "$intf" >/sys/bus/usb/drivers/asix/unbind
dongle_mdio_counts 0x10 | sort -n >"$cap.emulator"
stop_record "$cap"
stop_truth "$cap.truth"
events_json "$cap"

python3 "$here/callsite_truth.py" "$names" "$cap.truth" "$cap.json" asix_,genphy_ function ||
    fail "the callbacks at libphy's call sites differ from the kernel's kprobes on the C driver"
expect_eq "the dongle's first callback" soft_reset \
    "$(usb_json "$cap" | jq -r 'select(.kind == "callback_enter") | .callback.name' | head -n 1)"
[[ -s $cap.emulator ]] || fail "the emulator counted no MDIO access"
expect_eq "MDIO per register (reg reads writes): phytrace vs the emulator" \
    "$(<"$cap.emulator")" "$(capture_mdio_counts "$cap" "$DONGLE_BUS")"

"$PHYTRACE_BIN" probes --format json >"$work/live.json"
expect_eq "where the call sites come from once libphy is loaded" kernel_text \
    "$(jq -r .call_sites.source "$work/live.json")"
expect_eq "phylib's call sites: libphy's file vs its code as loaded" \
    "$(sites "$work/file.json")" "$(sites "$work/live.json")"
result "\"phylib_file_sites\":$(sites "$work/file.json" | wc -l)"

json=$("$PHYTRACE_BIN" doctor --format json --module ax88796b) || { echo "$json"; fail "doctor --module ax88796b fails once libphy is loaded"; }
jq -r '.checks[] | "\(.status) \(.name): \(.detail)"' <<<"$json"
expect_eq "doctor's callbacks once libphy is loaded" ok "$(status_of callbacks)"
expect_eq "doctor's MDIO probes once libphy is loaded" ok "$(status_of 'MDIO probes')"
expect_eq "doctor --module ax88796b" ok "$(status_of 'driver module')"
