#!/bin/bash
# record's command-line conventions on a live kernel: `-o -` writes a complete capture (its
# trailer included) to standard output, COMMAND's own output going to standard error;
# `--status -` writes the status lines there; a ring size takes a suffix; and a COMMAND that
# fails makes record, and check, exit 6 once the capture is complete, COMMAND's own status in
# --status: it never passes for one of phytrace's own codes (1 to 5).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
trap_cleanup
setup rust
a=$(simdev ax88772a)
out=$PHYTRACE_OUT/conventions

# complete CAPTURE: dump reads CAPTURE without a warning, to its trailer.
complete() {
    local err
    err=$("$PHYTRACE_BIN" dump "$1" 2>&1 >"$1.txt") || fail "dump $1 failed: $err"
    [[ -z $err ]] || fail "$1 is damaged or not closed: $err"
    grep -q '^# end ' "$1.txt" || fail "$1 has no trailer"
}

"$PHYTRACE_BIN" record -o - --ring-size 1M --module ax88796b_rust -- \
    bash -c "ip link set dev $a up && echo said-by-command" >"$out.ptrace" 2>"$out.err" ||
    { cat "$out.err"; fail "record -o - failed"; }
grep -q said-by-command "$out.err" || fail "COMMAND's standard output did not go to standard error"
complete "$out.ptrace"
grep -q "^phytrace: recording to standard output " "$out.err" || fail "record does not say where it records"
ok "record -o -: a complete capture on standard output, COMMAND's output on standard error"

"$PHYTRACE_BIN" record -o "$out-status.ptrace" --status - --duration 1s >"$out-status.jsonl" 2>"$out.err" ||
    { cat "$out.err"; fail "record --status - failed"; }
{ record_status "$out-status.jsonl" recording && record_status "$out-status.jsonl" finished; } ||
    fail "--status - did not write the recording and finished lines: $(cat "$out-status.jsonl")"
ok "record --status -: the status lines on standard output"

# record_command NAME COMMAND...: records while COMMAND runs; sets status (record's exit status).
record_command() {
    local name=$1
    shift
    set +e
    "$PHYTRACE_BIN" record -o "$out-$name.ptrace" --status "$out-$name.status" -- "$@" 2>"$out.err"
    status=$?
    set -e
    cat "$out.err"
}

# command_said NAME JSON: record's --status says that COMMAND ended as JSON, and stopped it.
command_said() {
    jq -e --argjson said "$2" 'select(.status == "finished") | .stop == "command" and .command == $said' \
        "$out-$1.status" >/dev/null || fail "--status does not say $2: $(cat "$out-$1.status")"
}

record_command exit3 sh -c 'exit 3'
expect_eq "record -- a command exiting 3: exit status" 6 "$status"
command_said exit3 '{"exit_code":3}'
grep -q "phytrace: error: .sh -c exit 3. failed (exit status: 3)" "$out.err" ||
    fail "record does not say how COMMAND failed"
complete "$out-exit3.ptrace"
# shellcheck disable=SC2016  # $$ is the command's own shell
record_command killed sh -c 'kill -TERM $$'
expect_eq "record -- a command killed by SIGTERM: exit status" 6 "$status"
command_said killed '{"signal":15}'
complete "$out-killed.ptrace"
record_command fine true
expect_eq "record -- a command exiting 0: exit status" 0 "$status"
command_said fine '{"exit_code":0}'
ok "a failed COMMAND: record exits 6, COMMAND's own status in --status, the capture complete"

echo 'rule "read_status never writes BMCR": never write BMCR inside read_status' >"$out.spec"
set +e
"$PHYTRACE_BIN" check --spec "$out.spec" -- sh -c 'exit 3' >"$out-check.txt" 2>"$out.err"
status=$?
set -e
cat "$out-check.txt" "$out.err"
expect_eq "check -- a command exiting 3, every rule holding: exit status" 6 "$status"
grep -q "1 rules, 0 failed" "$out-check.txt" || fail "check's report is not on standard output"
ok "check -- a failed COMMAND: exit 6 when every rule holds"
