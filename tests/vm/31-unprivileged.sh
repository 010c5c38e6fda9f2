#!/bin/bash
# As an unprivileged user: the subcommands that trace say which capability is missing and exit 3
# (no backtrace); the ones that only read captures (dump, check, diff, export) work.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
data=$PHYTRACE_ROOT/phytrace/tests/data
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
run_status() { set +e; out=$(as_nobody "$@" 2>&1); status=$?; set -e; }

run_status "$PHYTRACE_BIN" record -o /tmp/unpriv.ptrace --duration 1s
echo "$out"
expect_eq "record as nobody: exit status" 3 "$status"
grep -q "CAP_BPF and CAP_PERFMON" <<<"$out" || fail "record does not name the missing capabilities"
! grep -qi panicked <<<"$out" || fail "record panicked"

run_status "$PHYTRACE_BIN" dump "$data/rust-plug-unplug.ptrace"
expect_eq "dump as nobody" 0 "$status"
run_status "$PHYTRACE_BIN" check --spec "$PHYTRACE_ROOT/specs/ax88796b.spec" "$data/rust-plug-unplug.ptrace"
expect_eq "check as nobody (the capture violates one rule)" 1 "$status"
grep -q 'FAIL "no callback returns an error"' <<<"$out" || fail "check report missing"
run_status "$PHYTRACE_BIN" diff "$data/rust-plug-unplug.ptrace" "$data/rust-plug-unplug.ptrace"
expect_eq "diff as nobody" 0 "$status"
run_status "$PHYTRACE_BIN" export --format perfetto "$data/rust-plug-unplug.ptrace" -o /tmp/unpriv.json
expect_eq "export as nobody" 0 "$status"
python3 -c 'import json,sys; json.load(open("/tmp/unpriv.json"))' || fail "export output is not JSON"
ok "dump, check, diff and export work without privileges"
