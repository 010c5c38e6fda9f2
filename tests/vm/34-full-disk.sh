#!/bin/bash
# A full disk: `phytrace record` into a tiny tmpfs while the simulator keeps the bus busy stops
# with a clear message and exit status 4, leaves nothing in the kernel, and what it wrote reads
# back (the tail cut by the full disk is reported). Output commands on a full disk exit 4 too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
data=$PHYTRACE_ROOT/phytrace/tests/data
disk=/tmp/full-disk
mkdir -p "$disk"
mount -t tmpfs -o size=256k tmpfs "$disk"
cleanup_also "umount $disk"
setup rust
a=$(simdev ax88772a)

sim_set "$a" load "rate 20000 30 BMSR"
run_status timeout 60 "$PHYTRACE_BIN" record -o "$disk/cap.ptrace"
sim_set "$a" load stop
echo "$out"
expect_eq "record on a full disk: exit status" 4 "$status"
grep -q "No space left on device" <<<"$out" || fail "record does not say the disk is full"
grep -q "$disk/cap.ptrace" <<<"$out" || fail "record does not name the file"
! grep -qi panicked <<<"$out" || fail "record panicked"
assert_no_probes_left "after record failed on a full disk"
run_status "$PHYTRACE_BIN" dump "$disk/cap.ptrace"
expect_eq "dump of the capture cut by the full disk" 0 "$status"
grep -qE "not closed cleanly|truncated" <<<"$out" || fail "the cut tail is not reported"
events=$("$PHYTRACE_BIN" dump --format json "$disk/cap.ptrace" 2>/dev/null | wc -l)
((events > 1000)) || fail "only $events events read back from $(stat -c %s "$disk/cap.ptrace") bytes"
ok "record stopped on the full disk with exit 4; $events events read back"
result "\"events\":$events"

rm -f "$disk/cap.ptrace"
head -c 1M /dev/zero >"$disk/filler" 2>/dev/null || true # fills it up
for cmd in "export --format perfetto $data/rust-plug-unplug.ptrace -o $disk/out.json" \
    "check --spec $PHYTRACE_ROOT/specs/ax88796b.spec --junit $disk/junit.xml $data/c-plug-unplug.ptrace"; do
    # shellcheck disable=SC2086  # word splitting intended
    run_status "$PHYTRACE_BIN" $cmd
    expect_eq "phytrace ${cmd%% *} on a full disk: exit status" 4 "$status"
    grep -q "No space left on device" <<<"$out" || fail "${cmd%% *}: no clear message: $out"
done
run_status bash -c "'$PHYTRACE_BIN' dump '$data/rust-plug-unplug.ptrace' >'$disk/dump.txt'"
expect_eq "phytrace dump to a full disk: exit status" 4 "$status"
grep -q "No space left on device" <<<"$out" || fail "dump: no clear message: $out"
ok "export, check --junit and dump exit 4 on a full disk"
