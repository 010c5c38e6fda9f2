#!/bin/bash
# The documented non-root set-up on Debian's stock kernel, as a user follows it: a copy of
# phytrace holding exactly the capabilities `phytrace generate capabilities` prints, run as
# `nobody` with a cache of its own (so the call sites are found as nobody, in the kernel's
# code). Debian's kernel.perf_event_paranoid 3 refuses perf events, so every kprobe, to a
# process without CAP_SYS_ADMIN: doctor and record must say so and how to fix it. With the
# documented `sysctl kernel.perf_event_paranoid=2`, the dongle scenario recorded as nobody
# passes the same checks as root's (51-dongle-record.sh), callbacks at phylib's call sites from
# the probe-time soft_reset included.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
stock_only
dongle_test_begin
paranoid=$(sysctl -n kernel.perf_event_paranoid)
cleanup_first "sysctl -q kernel.perf_event_paranoid=$paranoid"
expect_eq "Debian's kernel.perf_event_paranoid" 3 "$paranoid"

dir=$(reachable_copies "$PHYTRACE_BIN")
caps=$("$dir/phytrace" generate capabilities)
setcap "$caps" "$dir/phytrace" || fail "setcap refused on $(stat -f -c %T "$dir")"
home=$(mktemp -d /tmp/nobody-home.XXXXXX)
chmod 1777 "$home"
# Runs phytrace as nobody in its own process (exec: a signal to its pid reaches phytrace).
wrapper=$dir/as-nobody
cat >"$wrapper" <<WRAPPER
#!/bin/sh
exec env XDG_CACHE_HOME=$home/cache setpriv --reuid=nobody --regid=nogroup --clear-groups $dir/phytrace "\$@"
WRAPPER
chmod 755 "$wrapper"

json=$("$wrapper" doctor --format json || true)
jq -e '.can_trace == false' <<<"$json" >/dev/null || { echo "$json"; fail "doctor says nobody can trace at paranoid 3"; }
jq -e '.checks[] | select(.name == "perf events") | .status == "fail" and (.fix | test("perf_event_paranoid=2"))' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor does not name perf_event_paranoid and its fix"; }
jq -e '.checks[] | select(.name == "privileges") | .status == "ok"' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor does not accept $caps"; }
run_status "$wrapper" record -o "$home/refused.ptrace" --duration 1s
refusal=$out
echo "$refusal"
expect_eq "record as nobody at paranoid 3: exit status" 3 "$status"
grep -q "perf_event_paranoid=2" <<<"$refusal" || fail "record's refusal does not say how to fix the paranoid level"
ok "paranoid 3: doctor and record name the sysctl"

sysctl -q kernel.perf_event_paranoid=2
json=$("$wrapper" doctor --format json) || { echo "$json"; fail "doctor as nobody with $caps at paranoid 2 cannot trace"; }
jq -e '.checks[] | select(.name == "callbacks") | .status == "ok"' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor as nobody: callbacks not at call sites"; }

dongle_modules_load rust
rm -rf "$home/cache" # what doctor kept: record must find the call sites itself, as nobody
cap=$home/nobody-dongle.ptrace
PHYTRACE_BIN=$wrapper dongle_scenario "$cap" --callback-probes callsite
started=$(jq -c 'select(.status == "recording")' "$cap.status")
echo "$started"
expect_eq "record as nobody: callback probes" callsite "$(jq -r .callback_probes <<<"$started")"
expect_eq "record as nobody: call sites from a cache" false "$(jq -r .call_sites_cached <<<"$started")"
dongle_scenario_check "$cap"
dongle_stop
dongle_modules_unload
assert_clean_dmesg "stock dongle as nobody"
result "\"ok\":true"
