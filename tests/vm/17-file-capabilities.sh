#!/bin/bash
# The set-up the documentation gives for non-root users works: a copy of phytrace holding
# exactly the capabilities `phytrace generate capabilities` prints (privileges.rs' one list),
# run as `nobody` with no cache of this boot's call sites, passes doctor's checks and records
# the driver's callbacks at phylib's call sites, decoded from the kernel's code as nobody: read
# through BPF (record's status says so), as the set has no CAP_SYS_RAWIO for /proc/kcore. The
# MDIO accesses are on trampolines. With CAP_SYSLOG taken away, doctor says what is lost; with
# CAP_DAC_OVERRIDE taken away, record names it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup
setup rust
a=$(simdev ax88772a)
dir=$(reachable_copies "$PHYTRACE_BIN")
bin=$dir/phytrace
caps=$("$bin" generate capabilities)
setcap "$caps" "$bin" || fail "setcap refused on $(stat -f -c %T "$dir")"
getcap "$bin"
as_nobody() { XDG_CACHE_HOME=/nonexistent setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

json=$(as_nobody "$bin" doctor --format json) || { echo "$json"; fail "doctor as nobody with $caps cannot trace"; }
status_of() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' <<<"$json"; }
expect_eq "doctor as nobody: privileges" ok "$(status_of privileges)"
expect_eq "doctor as nobody: callbacks" ok "$(status_of callbacks)"
jq -e '.checks[] | select(.name == "MDIO probes") | .detail | test("fentry")' <<<"$json" >/dev/null ||
    fail "doctor as nobody: no fentry"

cap=/tmp/caps.ptrace status_file=/tmp/caps.status
rm -f "$cap" "$status_file"
# Not through the as_nobody function: `&` would run it in a subshell, which $! names and which
# would not pass the SIGINT on; setpriv executes phytrace itself. JSON Lines, so that the file
# can be watched as it grows (this test also keeps that encoding covered). No cache: the call
# sites and the accessors' survey are this session's own, found as nobody.
XDG_CACHE_HOME=/nonexistent setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin" record \
    -o "$cap" --encoding jsonl --status "$status_file" 2>/tmp/caps.err &
pid=$!
# The clean-up kills it should the test fail: its probes must not reach the next test.
RECORD_PID=$pid
started() {
    grep -q '"type":"header"' "$cap" 2>/dev/null &&
        jq -e -n '[inputs | select(.status == "recording")] | length > 0' "$status_file" >/dev/null 2>&1
}
wait_for 60 started || { cat /tmp/caps.err; fail "record as nobody did not start"; }
jq -e '.callback_probes == "callsite" and (.call_sites | length > 0)' <(head -n 1 "$cap") >/dev/null ||
    { cat /tmp/caps.err; fail "record as nobody does not trace at phylib's call sites"; }
expect_eq "the reader of the kernel's code as nobody" bpf \
    "$(jq -r 'select(.status == "recording") | .kernel_code_reader' "$status_file")"
link_up "$a"
wait_mode "$a" 100 full
has_read_status() { grep -q '"name":"read_status"' "$cap" && grep -q '"kind":"callback_exit"' "$cap"; }
keep() { cp "$cap" /tmp/caps.err "$PHYTRACE_OUT/" 2>/dev/null || true; }
wait_for 20 has_read_status || { keep; cat /tmp/caps.err; fail "no read_status recorded as nobody"; }
link_down "$a"
kill -INT "$pid"
wait "$pid" || fail "record as nobody exited with status $?"
cat /tmp/caps.err
jq -e '.mdio_probes == "fentry"' <(head -n 1 "$cap") >/dev/null || fail "the header does not say fentry"
n=$("$PHYTRACE_BIN" dump --format json "$cap" --kind mdio | grep -c '"reg":1,' || true)
((n > 0)) || fail "no MDIO access recorded as nobody"
ok "record as nobody with $caps: callbacks at call sites found through BPF and $n BMSR reads"

setcap cap_bpf,cap_perfmon,cap_dac_override+ep "$bin"
json=$(as_nobody "$bin" doctor --format json || true)
jq -e '.checks[] | select(.name == "privileges") | [.items[] | select(startswith("without CAP_SYSLOG: "))] | length == 1' \
    <<<"$json" >/dev/null || { echo "$json"; fail "doctor does not say what is lost without CAP_SYSLOG"; }
ok "without CAP_SYSLOG, doctor says what is lost"

setcap cap_bpf,cap_perfmon,cap_syslog+ep "$bin"
set +e
out=$(as_nobody "$bin" record -o /tmp/caps2.ptrace --duration 1s 2>&1)
status=$?
set -e
echo "$out"
expect_eq "record without CAP_DAC_OVERRIDE: exit status" 3 "$status"
grep -q "CAP_DAC_OVERRIDE" <<<"$out" || fail "the refusal does not name CAP_DAC_OVERRIDE"
result "\"ok\":true"
