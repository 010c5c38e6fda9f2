#!/bin/bash
# `record --metrics` scraped by a real Prometheus server (Debian's, `cargo xtask setup`) on the
# guest's loopback every second, with the alert rules of contrib/prometheus loaded, through the
# dongle scenario: plug-in, link up, cable flap, partner change to 10/full, unplug. Once the
# server has scraped past the scenario's end, its HTTP API's counts of the dongle's PHY equal
# the capture's own (`stats --format json`: callbacks per op, MDIO accesses and errors, link
# and phy_state changes, carrier changes, events) and the emulator's (MDIO reads and writes
# answered); each Grafana panel's query of contrib/grafana/phytrace.json runs on the server,
# and those the scenario feeds answer series. `promtool check metrics` reads each exposition.
# Then phytrace restarts: a new record (the dongle plugged in again), killed with SIGKILL, then
# another: the server goes on scraping, sees the killed target down, and the counters' resets
# are visible as such (`resets()`).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
dongle_test_begin
for tool in prometheus promtool curl jq; do
    command -v "$tool" >/dev/null || fail "$tool missing (cargo xtask setup installs Debian's prometheus)"
done

METRICS=127.0.0.1:19479
PROM=http://127.0.0.1:19090
# The configuration and the log where the host can read them; the database in the guest's
# tmpfs (the server maps files, which the shared filesystem refuses).
prom_dir=$(mktemp -d "$PHYTRACE_OUT/prometheus.XXXXXX")
prom_data=$(mktemp -d /tmp/prometheus-data.XXXXXX)
cat >"$prom_dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $PHYTRACE_ROOT/contrib/prometheus/phytrace.rules.yml
scrape_configs:
  - job_name: phytrace
    static_configs:
      - targets: ["$METRICS"]
EOF
ip link set dev lo up
prometheus --config.file="$prom_dir/prometheus.yml" --storage.tsdb.path="$prom_data" \
    --web.listen-address="${PROM#http://}" >"$prom_dir/log" 2>&1 &
prom_pid=$!
cleanup_first "kill $prom_pid 2>/dev/null || true; kill -KILL \${RECORD_PID:-} 2>/dev/null || true; rm -rf $prom_data"

# prom_query EXPR [TIME]: the result array of the instant query EXPR (at TIME, Unix seconds);
# fails unless the API answers status success.
prom_query() {
    local args=(--data-urlencode "query=$1")
    [[ -z ${2:-} ]] || args+=(--data-urlencode "time=$2")
    curl -fsS "$PROM/api/v1/query" "${args[@]}" | jq -ce 'select(.status == "success") | .data.result'
}
# prom_value EXPR [TIME]: the value of EXPR's only series, or nothing.
prom_value() { prom_query "$@" | jq -r '.[0].value[1] // empty'; }
# prom_ready: the server answers queries.
prom_ready() { curl -fsS "$PROM/-/ready" >/dev/null 2>&1; }
prom_ready_or_gone() { prom_ready || ! kill -0 "$prom_pid" 2>/dev/null; }
# scraped_after T: the server holds a scrape of phytrace taken after T (Unix seconds).
scraped_after() {
    local at
    at=$(prom_value 'timestamp(phytrace_events_total)') || return 1
    [[ -n $at ]] && awk -v a="$at" -v t="$1" 'BEGIN { exit !(a > t) }'
}
# target_up 1|0: the server's last scrape of phytrace succeeded (1) or failed (0).
target_up() { [[ $(prom_value 'up{job="phytrace"}') == "$1" ]]; }
now() { echo "${EPOCHREALTIME}"; }

# check_exposition NAME: promtool reads phytrace's exposition as fetched now. It reads
# Prometheus's text format, where a counter's HELP names its sample (X_total), not its family
# (X) as OpenMetrics does: those lint lines (exit 3) are the only problems allowed.
check_exposition() {
    local file=$prom_dir/$1.txt rc=0 problem name
    curl -fsS "http://$METRICS/metrics" >"$file" || fail "no exposition at http://$METRICS/metrics"
    promtool check metrics <"$file" >"$file.lint" 2>&1 || rc=$?
    ((rc == 0 || rc == 3)) || { cat "$file.lint"; fail "promtool check metrics: status $rc on the $1 exposition"; }
    while read -r problem; do
        name=${problem%% *}
        if ! [[ $name == *_total && $problem == "$name no help text" ]] ||
            ! grep -qx "# TYPE ${name%_total} counter" "$file"; then
            fail "promtool check metrics on the $1 exposition: $problem"
        fi
    done <"$file.lint"
    ok "promtool check metrics reads the $1 exposition ($(grep -c '^phytrace_' "$file") samples)"
}

mark_dmesg metrics
dongle_modules_load rust
wait_for 60 prom_ready_or_gone || true
prom_ready || fail "prometheus did not start: $(tail -5 "$prom_dir/log")"
t_start=$(now)

# The scenario, recorded and served.
cap=$PHYTRACE_OUT/metrics-dongle.ptrace
rm -f "$cap"*
start_record "$cap" --metrics "$METRICS"
wait_for 20 target_up 1 || fail "prometheus does not scrape record --metrics at $METRICS"
ok "prometheus scrapes phytrace at $METRICS"
dongle_plug_link_up --an-delay-ms 100 --partner all,pause
bus=$DONGLE_BUS
check_exposition "link-up"
dongle_ctl cable out >/dev/null
wait_carrier "$DONGLE_DEV" 0
dongle_ctl cable in >/dev/null
wait_mode "$DONGLE_DEV" 100 full 30
dongle_ctl partner 10full >/dev/null
wait_mode "$DONGLE_DEV" 10 full 30
dongle_ctl unplug >/dev/null
wait_for 15 no_dongle_netdev || fail "the netdev is still there after unplug"
wait_for 5 eval '! has_dongle_phy' || fail "PHY $bus:10 still on the MDIO bus after unplug"
t_end=$(now)
wait_for 20 scraped_after "$t_end" || fail "prometheus scraped nothing after the scenario's end"
t_final=$(prom_value 'timestamp(phytrace_events_total)')
ok "a scrape at $t_final, after the scenario's end at $t_end"
check_exposition "final"
emulator=$(dongle_mdio_counts 0x10 | awk '{ r += $2; w += $3 } END { print r + 0, w + 0 }')
stop_record "$cap"

# The server's counts at its last scrape, against the capture's and the emulator's.
stats=$("$PHYTRACE_BIN" stats --format json "$cap" | jq -c --arg k "$bus:10" '.captures[0].stats')
phy=$(jq -c --arg k "$bus:10" '.phys[] | select(.key == $k)' <<<"$stats")
[[ -n $phy ]] || fail "stats has no PHY $bus:10"
sel="phy=\"$bus:10\""
# by LABEL METRIC: "LABEL VALUE" lines of METRIC of the PHY summed by LABEL, sorted.
by() {
    prom_query "sum by ($1) ($2{$sel})" "$t_final" |
        jq -r --arg l "$1" '.[] | "\(.metric[$l]) \(.value[1])"' | sort
}
expect_eq "callbacks per op: prometheus vs stats" \
    "$(jq -r '.callbacks[] | "\(.name) \(.calls)"' <<<"$phy" | sort)" "$(by op phytrace_callbacks_total)"
expect_eq "callback errors per op and errno: prometheus vs stats" \
    "$(jq -r '.callbacks[] | .name as $n | .errors[] | "\($n)/\(.errno // .ret) \(.count)"' <<<"$phy" | sort)" \
    "$(prom_query "sum by (op, errno) (phytrace_callback_errors_total{$sel})" "$t_final" |
        jq -r '.[] | "\(.metric.op)/\(.metric.errno) \(.value[1])"' | sort)"
expect_eq "MDIO accesses and errors: prometheus vs stats" \
    "$(jq -r '"\(.mdio.accesses) \([.mdio.registers[].errors] | add)"' <<<"$phy")" \
    "$(prom_value "sum(phytrace_mdio_accesses_total{$sel})" "$t_final") $(prom_value "sum(phytrace_mdio_errors_total{$sel})" "$t_final")"
expect_eq "MDIO reads and writes the emulator answered: prometheus (accesses - errors) vs the emulator" \
    "$emulator" "$(prom_value "sum(phytrace_mdio_accesses_total{$sel,op=\"read\"}) - sum(phytrace_mdio_errors_total{$sel,op=\"read\"})" "$t_final") $(prom_value "sum(phytrace_mdio_accesses_total{$sel,op=\"write\"}) - sum(phytrace_mdio_errors_total{$sel,op=\"write\"})" "$t_final")"
expect_eq "link changes (down up): prometheus vs stats" \
    "$(jq -r '"down \([.link.intervals[] | select(.up | not)] | length)\nup \(.link.ups | length)"' <<<"$phy")" \
    "$(by to phytrace_link_changes_total)"
expect_eq "phy_state entries per state: prometheus vs stats" \
    "$(jq -r '.states[] | "\(.state) \(.periods)"' <<<"$phy" | sort)" "$(by to phytrace_phy_state_transitions_total)"
events_json "$cap"
expect_eq "MAC-side events of the PHY: prometheus vs the capture's events" \
    "$(jq -r --arg bus "$bus" 'select(.kind == "mac" and .phy.bus == $bus and .phy.addr == 16) | .change |
        if .op == "carrier" then (if .up then "carrier_on" else "carrier_off" end)
        elif .op == "resolve" then "phylink_resolve" else "mac_\(.op)" end' "$cap.json" |
        sort | uniq -c | awk '{ print $2, $1 }')" \
    "$(by event phytrace_mac_events_total)"
expect_eq "events: prometheus vs stats" "$(jq -r .events <<<"$stats")" \
    "$(prom_value 'phytrace_events_total' "$t_final")"
expect_eq "events lost: prometheus vs stats" "$(jq -r '.lost_events // 0' <<<"$stats")" \
    "$(prom_value 'sum(phytrace_events_lost_total) or vector(0)' "$t_final")"
expect_eq "the link at the end: down" "0" \
    "$(prom_value "max(phytrace_link_up{$sel})" "$t_final")"
result "\"callbacks\":$(prom_value "sum(phytrace_callbacks_total{$sel})" "$t_final"),\"mdio\":$(prom_value "sum(phytrace_mdio_accesses_total{$sel})" "$t_final")"

# The rules loaded and evaluated; probes were armed.
expect_eq "alert rules loaded, all healthy" "6 ok" \
    "$(curl -fsS "$PROM/api/v1/rules" | jq -r '[.data.groups[].rules[]] | "\(length) \(map(.health) | unique | join(","))"')"
armed=$(prom_value 'sum(phytrace_probes_armed{kind=~"call_site|callback"})' "$t_final")
((armed > 0)) || fail "phytrace_probes_armed says no callback probe"

# Each Grafana panel's query, its variables filled in: its window the whole scenario.
window=$(awk -v a="$t_start" -v b="$t_final" 'BEGIN { printf "%ds", b - a + 2 }')
# Every panel but "Events lost" has series of this scenario, in one of its queries at least.
declare -A answered
n=0
while IFS=$'\t' read -r title expr; do
    expr=${expr//\$__rate_interval/$window}
    expr=${expr//\$instance/.+}
    expr=${expr//\$phy/.+}
    series=$(prom_query "$expr" "$t_final") || fail "panel '$title': the query fails: $expr"
    [[ $series == "[]" ]] || answered[$title]=1
    n=$((n + 1))
done < <(jq -r '.panels[] | .title as $t | .targets[] | [$t, .expr] | @tsv' \
    "$PHYTRACE_ROOT/contrib/grafana/phytrace.json")
while read -r title; do
    [[ $title == "Events lost per second" || -n ${answered[$title]:-} ]] || fail "panel '$title': no series"
done < <(jq -r '.panels[].title' "$PHYTRACE_ROOT/contrib/grafana/phytrace.json")
ok "$n Grafana panel queries run on the server; ${#answered[@]} panels answer series"

# Restarts: a new record sees the dongle plugged in again, is killed with SIGKILL, and another
# takes its place. The server survives, sees the killed target down, and the counters reset.
before=$(prom_value 'phytrace_events_total' "$t_final")
cap2=$PHYTRACE_OUT/metrics-restart.ptrace
rm -f "$cap2"*
start_record "$cap2" --metrics "$METRICS"
t_restart=$(now)
dongle_ctl plug >/dev/null
wait_dongle_netdev 30
wait_for 10 has_dongle_phy || fail "no PHY after replug"
t_plugged=$(now)
wait_for 20 scraped_after "$t_plugged" || fail "prometheus did not scrape the restarted phytrace"
check_exposition "restarted"
killed=$(prom_value 'phytrace_events_total')
((killed > 0)) || fail "the restarted phytrace counted no event of the replug"
kill -KILL "$RECORD_PID"
wait "$RECORD_PID" 2>/dev/null || true
t_killed=$(now)
wait_for 20 target_up 0 || fail "prometheus does not see the killed phytrace down"
ok "prometheus sees the killed phytrace down"
cap3=$PHYTRACE_OUT/metrics-after-kill.ptrace
rm -f "$cap3"*
start_record "$cap3" --metrics "$METRICS"
wait_for 20 scraped_after "$t_killed" || fail "prometheus did not scrape phytrace after the kill"
check_exposition "after-kill"
prom_ready || fail "prometheus is not ready after the kill"
last=$(prom_value 'phytrace_events_total')
t_now=$(now)
resets=$(prom_value "resets(phytrace_events_total[$(awk -v a="$t_start" -v b="$t_now" 'BEGIN { printf "%ds", b - a + 2 }')])")
((resets >= 2)) ||
    fail "resets(phytrace_events_total) is $resets: the restarts ($before -> restarted, $killed -> $last) are not resets"
ok "events_total $before, restarted, $killed, killed, restarted at $last: prometheus counts $resets resets"
[[ $(prom_value "min_over_time(up{job=\"phytrace\"}[$(awk -v a="$t_restart" -v b="$t_now" 'BEGIN { printf "%ds", b - a + 1 }')])") == 0 ]] ||
    fail "up{job=\"phytrace\"} never 0 while phytrace was killed"
stop_record "$cap3"
kill "$prom_pid"
wait "$prom_pid" 2>/dev/null || true
dongle_stop
dongle_modules_unload
assert_clean_dmesg metrics
