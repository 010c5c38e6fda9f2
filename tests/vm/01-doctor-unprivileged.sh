#!/bin/bash
# Without privileges, doctor names each missing capability with what is lost without it, and
# exits 3 — no backtrace.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
# A copy nobody can reach: the clone may sit where only root can go (under /root).
bin=$(reachable_copies "$PHYTRACE_BIN")/phytrace
cd "${bin%/*}"
json=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin" doctor --format json 2>&1)
status=$?
echo "$json"
set -e
expect_eq "doctor as nobody: exit status" 3 "$status"
jq -e '.can_trace == false' <<<"$json" >/dev/null || fail "doctor as nobody says it can trace"
privileges=$(jq -c '.checks[] | select(.name == "privileges")' <<<"$json")
jq -e '.status == "fail" and (.fix | test("^run as root"))' <<<"$privileges" >/dev/null || fail "no privileges failure with its fix"
for cap in CAP_BPF CAP_PERFMON CAP_DAC_OVERRIDE CAP_SYSLOG; do
    jq -e --arg c "$cap" '[.items[] | select(startswith("without " + $c + ": "))] | length == 1' <<<"$privileges" >/dev/null ||
        fail "doctor does not say what is lost without $cap"
done
ok "each missing capability named with what is lost"
! grep -qi 'panicked' <<<"$json"
