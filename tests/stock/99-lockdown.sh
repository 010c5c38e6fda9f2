#!/bin/bash
# Lockdown, as the boot set it (`lockdown=` on the kernel's command line). The stock stage boots
# with lockdown=integrity, which Debian's kernel sets under Secure Boot: every test before this
# one ran under it, and doctor must call it fine. A second boot runs this test alone under
# lockdown=confidentiality, where the kernel refuses every read of its memory and tracefs:
# doctor and record must name the lockdown as the cause and exit 3.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
stock_only
lockdown=/sys/kernel/security/lockdown
# As systemd does at boot: the lockdown LSM shows its mode in securityfs.
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
booted=$(sed -n 's/.*\<lockdown=\([a-z]*\).*/\1/p' /proc/cmdline)
status=0
json=$("$PHYTRACE_BIN" doctor --format json) || status=$?
case $booted in
integrity)
    expect_eq "the boot's lockdown" "none [integrity] confidentiality" "$(<"$lockdown")"
    expect_eq "doctor under integrity: exit status" 0 "$status"
    jq -e '.can_trace and (.checks[] | select(.name == "lockdown") | .status == "ok" and .detail == "integrity")' \
        <<<"$json" >/dev/null || { echo "$json"; fail "doctor does not report lockdown integrity as fine"; }
    ok "doctor traces under lockdown=integrity"
    ;;
confidentiality)
    expect_eq "the boot's lockdown" "none integrity [confidentiality]" "$(<"$lockdown")"
    expect_eq "doctor under confidentiality: exit status" 3 "$status"
    jq -e '(.can_trace | not) and (.checks[] | select(.name == "lockdown") | .status == "fail" and (.detail | startswith("confidentiality")))' \
        <<<"$json" >/dev/null || { echo "$json"; fail "doctor does not name the lockdown"; }
    run_status "$PHYTRACE_BIN" record -o /tmp/locked.ptrace --duration 1s
    echo "$out"
    expect_eq "record under confidentiality: exit status" 3 "$status"
    # The refusal names its cause for the person reading it: that is what is checked here.
    grep -q "locked down" <<<"$out" || fail "record does not name the lockdown"
    [[ ! -e /tmp/locked.ptrace ]] || fail "record left a capture behind though it never started"
    ok "confidentiality: doctor and record name the lockdown, exit 3"
    ;;
*) fail "booted without lockdown= on the command line ($(</proc/cmdline))" ;;
esac
