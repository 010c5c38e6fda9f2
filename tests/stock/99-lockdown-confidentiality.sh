#!/bin/bash
# Lockdown. The stock stage boots with lockdown=integrity, which Debian's kernel sets under
# Secure Boot: every test before this one ran under it, and doctor says so. This last test
# raises the lockdown to confidentiality (it cannot be lowered again in this boot), under which
# the kernel refuses every read of its memory and tracefs: doctor and record must name the
# lockdown as the cause and exit 3.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
stock_only
lockdown=/sys/kernel/security/lockdown
# As systemd does at boot: the lockdown LSM shows its mode in securityfs.
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
expect_eq "the boot's lockdown" "none [integrity] confidentiality" "$(<"$lockdown")"
json=$("$PHYTRACE_BIN" doctor --format json) || { echo "$json"; fail "doctor cannot trace under lockdown=integrity"; }
jq -e '.checks[] | select(.name == "lockdown") | .status == "ok" and .detail == "integrity"' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor does not report lockdown integrity as fine"; }
ok "doctor traces under lockdown=integrity"

echo confidentiality >"$lockdown"
expect_eq "the raised lockdown" "none integrity [confidentiality]" "$(<"$lockdown")"
status=0
json=$("$PHYTRACE_BIN" doctor --format json) || status=$?
expect_eq "doctor under confidentiality: exit status" 3 "$status"
jq -e '.checks[] | select(.name == "lockdown") | .status == "fail" and (.detail | startswith("confidentiality"))' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor does not name the lockdown"; }
run_status "$PHYTRACE_BIN" record -o /tmp/locked.ptrace --duration 1s
echo "$out"
expect_eq "record under confidentiality: exit status" 3 "$status"
grep -q "locked down" <<<"$out" || fail "record does not name the lockdown"
ok "confidentiality: doctor and record name the lockdown, exit 3"
