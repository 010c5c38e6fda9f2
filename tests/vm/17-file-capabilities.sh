#!/bin/bash
# The set-up the documentation gives for non-root users works: a copy of phytrace holding
# exactly the advertised file capabilities (cap_bpf,cap_perfmon,cap_dac_override), run as
# `nobody`, passes doctor's privilege check and records the driver's callbacks by name, with
# the MDIO accesses on trampolines; with one capability less, it says which one is missing.
# Where the kernel's compiler inlined the MDIO accessors into their wrappers (clang builds of
# 7.3), finding the copies reads the kernel's code, which needs CAP_SYS_RAWIO: there phytrace
# must say that such accesses are missed, and the MDIO count is skipped (said).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
setup rust
a=$(simdev ax88772a)
bin=/tmp/phytrace-caps
cp "$PHYTRACE_BIN" "$bin"
setcap cap_bpf,cap_perfmon,cap_dac_override+ep "$bin" || fail "setcap refused on $(stat -f -c %T /tmp)"
getcap "$bin"

inlined=false
"$PHYTRACE_BIN" doctor 2>&1 | grep -q '^\[ok  \] MDIO probes .*inlined' && inlined=true
out=$(as_nobody "$bin" doctor 2>&1) || true
echo "$out"
grep -q '^\[ok  \] privileges .*CAP_BPF, CAP_PERFMON and CAP_DAC_OVERRIDE' <<<"$out" ||
    fail "doctor does not accept the advertised capabilities"
grep -qE '^\[(ok  |warn)\] MDIO probes .*fentry' <<<"$out" || fail "doctor as nobody: no fentry"
grep -q '^\[warn\] MDIO probes .*inlined the MDIO accessors .* could not be checked' <<<"$out" ||
    fail "doctor as nobody does not say that inlined MDIO accessors could not be checked"
ok "doctor as nobody with the file capabilities: privileges ok"

cap=/tmp/caps.ptrace
rm -f "$cap"
# Not through the as_nobody function: `&` would run it in a subshell, which $! names and which
# would not pass the SIGINT on; setpriv executes phytrace itself. JSON Lines, so that the file
# can be watched as it grows (this test also keeps that encoding covered). No cache: this boot's
# survey of the accessors, kept by a root session, would spare it the kernel's code.
XDG_CACHE_HOME=/nonexistent setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin" record \
    -o "$cap" --encoding jsonl --module ax88796b_rust 2>/tmp/caps.err &
pid=$!
started() { grep -q '"type":"header"' "$cap" 2>/dev/null; }
wait_for 60 started || { cat /tmp/caps.err; fail "record as nobody did not start"; }
link_up "$a"
wait_mode "$a" 100 full
# The capture names read_status (a definition record) and has returned from a callback.
has_read_status() { grep -q '"name":"read_status"' "$cap" && grep -q '"kind":"callback_exit"' "$cap"; }
keep() { cp "$cap" /tmp/caps.err "$PHYTRACE_OUT/" 2>/dev/null || true; }
wait_for 20 has_read_status || { keep; cat /tmp/caps.err; fail "no named read_status recorded as nobody"; }
link_down "$a"
kill -INT "$pid"
wait "$pid" || fail "record as nobody exited with status $?"
cat /tmp/caps.err
jq -e '.mdio_probes == "fentry"' <(head -n 1 "$cap") >/dev/null || fail "the header does not say fentry"
grep -q 'inlined the MDIO accessors .* could not be checked' /tmp/caps.err ||
    fail "record as nobody does not say that inlined MDIO accessors could not be checked"
n=$("$PHYTRACE_BIN" dump --format json "$cap" --kind mdio | grep -c '"reg":1,' || true)
if $inlined; then
    echo "SKIP: MDIO accesses as nobody: this kernel inlined its MDIO accessors, whose copies are found by reading its code (CAP_SYS_RAWIO); said by record, $n BMSR reads"
else
    ((n > 0)) || fail "no MDIO access recorded as nobody"
fi
ok "record as nobody with the file capabilities: named callbacks and $n BMSR reads"

setcap cap_bpf,cap_perfmon+ep "$bin"
set +e
out=$(as_nobody "$bin" record -o /tmp/caps2.ptrace --duration 1s 2>&1)
status=$?
set -e
echo "$out"
expect_eq "record without CAP_DAC_OVERRIDE: exit status" 3 "$status"
grep -q "CAP_DAC_OVERRIDE" <<<"$out" || fail "the refusal does not name CAP_DAC_OVERRIDE"
rm -f "$bin"
result "\"ok\":true"
