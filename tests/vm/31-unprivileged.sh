#!/bin/bash
# As an unprivileged user: the subcommands that trace say which capability is missing and exit 3
# (no backtrace); `probes` works and names the capability that shows addresses; the ones that
# only read captures (dump, check, diff, export, the TUI's replay) work; a capture the user may
# not read is a clear error with exit status 2. phytrace, the spec and the capture are copies
# nobody can reach, run from their directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
data=$(reachable_copies "$PHYTRACE_BIN" "$PHYTRACE_ROOT/specs/ax88796b.spec" \
    "$PHYTRACE_ROOT/phytrace/tests/data/rust-plug-unplug.ptrace")
bin=$data/phytrace
cd "$data"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
run_status() { set +e; out=$(as_nobody "$@" 2>&1); status=$?; set -e; }

run_status "$bin" record -o /tmp/unpriv.ptrace --duration 1s
echo "$out"
expect_eq "record as nobody: exit status" 3 "$status"
grep -q "CAP_BPF, CAP_PERFMON, CAP_DAC_OVERRIDE and CAP_SYSLOG" <<<"$out" || fail "record does not name the missing capabilities"
! grep -qi panicked <<<"$out" || fail "record panicked"
run_status "$bin" doctor
echo "$out"
expect_eq "doctor as nobody: exit status" 3 "$status"
grep -q "CAP_BPF, CAP_PERFMON, CAP_DAC_OVERRIDE and CAP_SYSLOG" <<<"$out" || fail "doctor does not name the missing capabilities"
! grep -qi panicked <<<"$out" || fail "doctor panicked"
# probes only reads /proc/kallsyms: it works, and says which capability shows the addresses.
setup rust
run_status "$bin" probes
echo "$out"
expect_eq "probes as nobody: exit status" 0 "$status"
grep -q "read_status" <<<"$out" || fail "probes as nobody lists no callback"
grep -q "CAP_SYSLOG" <<<"$out" || fail "probes does not say which capability shows the addresses"
unload_all

run_status "$bin" dump "$data/rust-plug-unplug.ptrace"
expect_eq "dump as nobody" 0 "$status"
run_status "$bin" check --spec "$data/ax88796b.spec" "$data/rust-plug-unplug.ptrace"
expect_eq "check as nobody (the capture violates one rule)" 1 "$status"
grep -q 'FAIL "no callback returns an error"' <<<"$out" || fail "check report missing"
run_status "$bin" diff "$data/rust-plug-unplug.ptrace" "$data/rust-plug-unplug.ptrace"
expect_eq "diff as nobody" 0 "$status"
run_status "$bin" export --format perfetto "$data/rust-plug-unplug.ptrace" -o /tmp/unpriv.json
expect_eq "export as nobody" 0 "$status"
python3 -c 'import json,sys; json.load(open("/tmp/unpriv.json"))' || fail "export output is not JSON"
ok "dump, check, diff and export work without privileges"

cp "$data/rust-plug-unplug.ptrace" /tmp/private.ptrace
chmod 600 /tmp/private.ptrace
run_status "$bin" dump /tmp/private.ptrace
expect_eq "dump of an unreadable capture: exit status" 2 "$status"
{ grep -q "/tmp/private.ptrace" <<<"$out" && grep -q "Permission denied" <<<"$out"; } ||
    fail "no clear message for an unreadable capture: $out"
ok "an unreadable capture: exit 2, file and reason named"

sock=/tmp/nobody.tmux
as_nobody env HOME=/tmp SHELL=/bin/sh tmux -S "$sock" new-session -d -x 100 -y 30 \
    "$bin tui 2>/tmp/nobody-live.err; echo \$? >/tmp/nobody-live-exit"
wait_for 20 test -s /tmp/nobody-live-exit || fail "the live TUI as nobody did not exit"
expect_eq "live tui as nobody: exit status" 3 "$(cat /tmp/nobody-live-exit)"
grep -q "CAP_BPF, CAP_PERFMON, CAP_DAC_OVERRIDE and CAP_SYSLOG" /tmp/nobody-live.err ||
    fail "the live TUI does not name the missing capabilities: $(cat /tmp/nobody-live.err)"
as_nobody env HOME=/tmp SHELL=/bin/sh tmux -S "$sock" new-session -d -x 100 -y 30 \
    "$bin tui $data/rust-plug-unplug.ptrace --speed 50; echo \$? >/tmp/nobody-tui-exit"
shows() { as_nobody tmux -S "$sock" capture-pane -p | grep -q -- "$1"; }
wait_for 20 shows "phy_sim-0:01" || fail "the replay TUI as nobody shows no PHY: $(as_nobody tmux -S "$sock" capture-pane -p)"
as_nobody tmux -S "$sock" send-keys q
wait_for 10 test -s /tmp/nobody-tui-exit || fail "the replay TUI did not quit on q"
expect_eq "tui CAPTURE as nobody: exit status" 0 "$(cat /tmp/nobody-tui-exit)"
ok "the TUI's replay works without privileges"
result "\"ok\":true"
