#!/bin/sh
# shellcheck shell=dash
# The scenario recorded on both architectures and compared afterwards on the host (`cargo xtask
# test`, docs/arm64.md): the Rust Asix driver binds to one simulated AX88772A, its link comes up,
# the cable is unplugged (phylib NOLINK: link_change_notify re-initialises the PHY) and
# replugged, then unplugged again with the next BMCR write failing (-EIO) and replugged.
# `phytrace doctor` must find the kernel traceable first.
# `phytrace record` ($PHYTRACE_BIN) captures it all to $PHYTRACE_OUT/twin-ARCH.ptrace; a second
# one, probing callbacks at phylib's call sites, to twin-ARCH-callsite.ptrace, beside the
# kernel's own kprobe and kretprobe events on the driver's callbacks (tracefs group `truth`,
# copied to twin-ARCH-callsite.ptrace.truth), which the host compares it with.
#
# POSIX sh only, no program but busybox's applets and phytrace: the arm64 guest runs static
# arm64 binaries only (busybox sh and `cargo xtask dist`'s phytrace).
set -eu
: "${PHYTRACE_BIN:?}" "${PHYTRACE_MODULES:?}" "${PHYTRACE_OUT:?}"
. "$(dirname "$0")/lib.sh"
ARCH=${PHYTRACE_ARCH:-$(uname -m)}
TAG="twin $ARCH"
CAPTURE="$PHYTRACE_OUT/twin-$ARCH.ptrace"
SITES="$PHYTRACE_OUT/twin-$ARCH-callsite.ptrace"
SIM=/sys/kernel/debug/phy_sim/sim0
RECORD_PID=''
SITES_PID=''

fail_context() { [ ! -e "$SIM/info" ] || cat "$SIM/info"; }
cleanup() {
    [ -z "$RECORD_PID" ] || kill -9 "$RECORD_PID" 2>/dev/null || true
    [ -z "$SITES_PID" ] || kill -9 "$SITES_PID" 2>/dev/null || true
    remove_truth
    [ ! -e /sys/class/net/sim0 ] || ip link set dev sim0 down 2>/dev/null || true
    for module in phy_sim ax88796b_rust; do rmmod "$module" 2>/dev/null || true; done
}
trap cleanup EXIT

info() { sed -n "s/^$1: //p" "$SIM/info"; }
total() { sed -n "s/^$1 //p" "$SIM/counters"; }
# wr_err REG: the register's failed writes (counters: reg, name, reads, writes, rd_err, wr_err).
wr_err() { awk -v r="$1" '$2 == r { print $6 }' "$SIM/counters"; }
is() { [ "$(info "$1")" = "$2" ]; }
at_least() { [ "$($1 "$2")" -ge "$3" ]; }
link_is_up() { is carrier 1 && is phy_speed 100 && is phy_duplex full && is state RUNNING; }
link_is_down() { is carrier 0 && is state NOLINK; }
# record's --status file (JSON lines; busybox has no jq: the line's fixed key and value).
recording() { grep -q '"status":"recording"' "$1.status" 2>/dev/null; }
resets_done() { at_least total resets "$1" && [ "$(sed -n 's/^0x00 BMCR *//p' "$SIM/regs")" = 0x3100 ]; }

cleanup
mkdir -p "$PHYTRACE_OUT"
rm -f "$CAPTURE" "$CAPTURE.stderr" "$CAPTURE.status" "$CAPTURE.doctor" "$SITES" "$SITES".*
"$PHYTRACE_BIN" doctor >"$CAPTURE.doctor" 2>&1 || { cat "$CAPTURE.doctor"; fail "phytrace doctor"; }
say "ok: $(tail -n 1 "$CAPTURE.doctor")"
insmod "$PHYTRACE_MODULES/ax88796b_rust.ko"
# The ground truth of the call-site session: the kernel's own events on every callback.
truth_on_callbacks "$SITES"
echo >"$TRACEFS/trace"
echo 1 >"$TRACEFS/events/truth/enable"
"$PHYTRACE_BIN" record -o "$CAPTURE" --status "$CAPTURE.status" 2>"$CAPTURE.stderr" &
RECORD_PID=$!
"$PHYTRACE_BIN" record --callback-probes callsite -o "$SITES" --status "$SITES.status" 2>"$SITES.stderr" &
SITES_PID=$!
wait_until 60 "phytrace record started" recording "$CAPTURE"
wait_until 60 "phytrace record --callback-probes callsite started" recording "$SITES"
say "recording with $("$PHYTRACE_BIN" --version), callbacks at call sites too (the kernel's own events on its $CALLBACKS callbacks)"

insmod "$PHYTRACE_MODULES/phy_sim.ko" phys=ax88772a@1 aneg_delay_ms=50 reset_delay_ms=5
wait_until 10 "phy_sim's debugfs" test -e "$SIM/info"
driver=$(info driver)
[ "$driver" = "Asix Electronics AX88772A" ] || fail "bound driver: $driver"
module=$(readlink "/sys/bus/mdio_bus/drivers/$driver/module")
[ "${module##*/}" = ax88796b_rust ] || fail "bound module: ${module##*/}"
say "ok: bound to $driver (${module##*/})"

# The probe-time reset restarted autonegotiation: bring the link up once it is done, so that
# phylib's first poll finds the link on either architecture (not a race with the training).
wait_until 10 "the probe-time autonegotiation" is sim_link 1
ip link set dev sim0 up
wait_until 20 "link up at 100/full" link_is_up
say "ok: link up at 100/full"

echo 0 >"$SIM/counters"
echo 0 >"$SIM/cable"
wait_until 20 "NOLINK after the unplug" link_is_down
wait_until 20 "the NOLINK re-init (one soft reset, BMCR back to 0x3100)" resets_done 1
say "ok: unplugged, NOLINK, PHY re-initialised"
echo 1 >"$SIM/cable"
wait_until 20 "link up again after the replug" link_is_up
say "ok: replugged, link up"

echo 0 >"$SIM/counters"
echo "BMCR -5 1 w" >"$SIM/inject"
echo 0 >"$SIM/cable"
wait_until 20 "NOLINK after the second unplug" link_is_down
wait_until 20 "the injected BMCR write error" at_least wr_err BMCR 1
say "ok: unplugged, the BMCR write failed with -EIO"
echo 1 >"$SIM/cable"
wait_until 20 "link up after the failed re-init" link_is_up
echo clear >"$SIM/inject"
say "ok: replugged, link up"

ip link set dev sim0 down
wait_until 20 "PHY halted" is state HALTED
kill -INT "$RECORD_PID" "$SITES_PID"
wait "$RECORD_PID" || fail "phytrace record exited with status $?"
RECORD_PID=
wait "$SITES_PID" || fail "phytrace record --callback-probes callsite exited with status $?"
SITES_PID=
truth_save "$SITES.truth"
cat "$CAPTURE.stderr" "$SITES.stderr"
events=$("$PHYTRACE_BIN" dump --format json "$CAPTURE" | wc -l)
[ "$events" -gt 20 ] || fail "only $events events in $CAPTURE"
"$PHYTRACE_BIN" dump --format json "$CAPTURE" | grep -q '"op":"write".*"error":-5' ||
    fail "no MDIO write with errno -5 in $CAPTURE"
say "ok: $events events in $CAPTURE, the failed write among them"
