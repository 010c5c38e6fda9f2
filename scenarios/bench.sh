#!/bin/bash
# bench: what `cargo xtask bench` runs in the guest. Measures, side by side in one boot, on the
# simulated AX88772A with the Rust driver (links down: no phylib polling adds noise):
#   P1 cost per MDIO access: N synchronous mdiobus_read()s untraced; with `phytrace record`
#      (MDIO accessors on fentry/fexit, and with --mdio-probes kprobe); with the strongest
#      bpftrace peers, the same fields: Debian forky's bpftrace (BPFTRACE_ROOT, entered with
#      chroot; scenarios/bench-bpftrace27.bt: fentry+fexit on the accessors, kprobes at phylib's
#      call sites as `phytrace probes` lists them) and bookworm's (scenarios/bench-kfunc.bt:
#      kfunc+kretfunc, kprobes on the callbacks' symbols); with bpftrace copying phytrace's
#      kprobe design (scenarios/bench.bt); with empty programs on the same attach points (the
#      floors: bench-floor-fentry.bt, bench-floor-kprobe.bt); and with the same-fields floor
#      (FLOOR_BIN, phytrace::probe::floor: fentry+fexit reading the clock twice and committing
#      one ring record);
#   P2 start-to-attached: process start until the first event can be recorded, in STARTS rounds
#      of their own (each starts and stops every tracer once, after one warm-up start each):
#      phytrace on the same probes as bookworm's bpftrace (the callbacks' symbols), phytrace on
#      phylib's call sites from the boot's cache (the default), both bpftrace scripts; and the
#      boot's first call-site start, which searches the kernel text;
#   C1 cost per driver callback: N synchronous phy_resume() calls (each runs the Rust driver's
#      resume through phylib, and its MDIO read of BMCR) untraced; with `phytrace record` probing
#      callbacks at phylib's call sites and on the Rust symbols; with an empty kprobe+kretprobe
#      on the driver's resume callback (bpftrace), forky's bpftrace script on the call sites,
#      and an empty program on every call site phytrace probes (scenarios/kprobe_floor.py);
#   P3 drop-free rate: the highest MDIO rate at which phytrace (default ring, binary capture)
#      loses nothing, and exact loss accounting above it (recorded + lost = generated); the top
#      rate again with a JSON Lines capture, and with `--metrics` served and scraped every second;
#   where the reading thread's time goes: CPU samples (perf) of a long burst untraced, with
#      phytrace, with the bpftrace kfunc script and with the empty fentry+fexit pair;
#   TUI CPU share idle and at 10k / 100k events/s;
#   C45 a QT2025 firmware load: in REPEATS rounds, phy_sim loaded with a QT2025 alone, untraced and
#      with `phytrace record` (its defaults, a binary capture): the time of the QT2025 driver's
#      probe (24,576 Clause 45 MDIO writes of a firmware file of our own) as the kernel's driver
#      core measures it (initcall_debug), the simulator's count of the firmware writes, and in
#      each traced round the capture's count of them and its lost events.
# Results: one JSON object per line in $PHYTRACE_OUT/bench.jsonl.
#   REPEATS=5 STARTS=9 READS=20000 CALLS=20000 RATES="10000 20000 50000 100000 200000 2000000" SECS=3
#   SAMPLE_READS=2000000 BIN=$PHYTRACE_BIN FLOOR_BIN=(required) BPFTRACE_ROOT=(required)
# (the last rate is beyond what a CPU can issue: the simulator then reads back to back)
set -euo pipefail
. "$(dirname "$0")/common.sh"
# shellcheck source=tests/vm/record_lib.sh
. "$PHYTRACE_ROOT/tests/vm/record_lib.sh"
REPEATS=${REPEATS:-5} STARTS=${STARTS:-9} READS=${READS:-20000} CALLS=${CALLS:-20000} SECS=${SECS:-3}
RATES=${RATES:-10000 20000 50000 100000 200000 2000000}
SAMPLE_READS=${SAMPLE_READS:-2000000}
BIN=${BIN:-$PHYTRACE_BIN}
[[ -x ${FLOOR_BIN:-} ]] || { echo "FLOOR_BIN: the same-fields floor's runner is required" >&2; exit 2; }
OUT=$PHYTRACE_OUT/bench.jsonl
work=$(mktemp -d)
: >"$OUT"
# shellcheck source=scenarios/bench_lib.sh
. "$PHYTRACE_ROOT/scenarios/bench_lib.sh"

ensure_loaded
dev=$(simdev ax88772a)

# bpftrace gets the callbacks phytrace finds: the driver's `_callback` symbols in kallsyms.
mapfile -t callbacks < <(awk '$4 == "[ax88796b_rust]" && $3 ~ /_callback/ { print $3 }' /proc/kallsyms)
((${#callbacks[@]} > 0)) || fail "no ax88796b_rust callbacks in /proc/kallsyms"
entries=$(printf 'kprobe:%s, ' "${callbacks[@]}")
returns=$(printf 'kretprobe:%s, ' "${callbacks[@]}")
for script in bench bench-kfunc; do
    sed "s/@ENTRIES@/${entries%, }/; s/@RETURNS@/${returns%, }/" \
        "$PHYTRACE_ROOT/scenarios/$script.bt" >"$work/$script.bt"
done
cp "$PHYTRACE_ROOT"/scenarios/bench-floor-*.bt "$work/"

# The boot's first call-site start searches the kernel text; the next take the cache.
export XDG_CACHE_HOME=$work/cache
decode_call_sites
write_bpftrace27_script

emit "{\"bench\":\"probes\",\"mdio_functions\":2,\"callbacks\":${#callbacks[@]},\"site_probes\":$SITE_PROBES,\"bpftrace\":\"$(bpftrace --version | awk '{ print $2 }')\",\"bpftrace27\":\"$(bpftrace27 --version | awk '{ print $2 }')\",\"repeats\":$REPEATS,\"starts\":$STARTS,\"reads\":$READS}"

# ns per read of one synchronous burst of READS reads, as the simulator measured it.
burst_ns() {
    sim_set "$dev" load "$READS BMSR"
    load_ns_per_read "$dev"
}

TRACERS="phytrace phytrace-kprobe bpftrace27 bpftrace-kfunc bpftrace-kprobe floor-fields bpftrace-floor-fentry bpftrace-floor-kprobe"
log "P1: $REPEATS rounds of $READS reads: untraced, then with each of $TRACERS"
pin_cpus
burst_ns >/dev/null # warm-up
for ((r = 1; r <= REPEATS; r++)); do
    emit "{\"bench\":\"p1\",\"tracer\":\"none\",\"round\":$r,\"ns_per_access\":$(burst_ns)}"
    for tracer in $TRACERS; do
        start_tracer "$tracer"
        # Steady state: the first burst after a start (buffers used for the first time) is a
        # warm-up, for every tracer alike.
        burst_ns >/dev/null
        ns=$(burst_ns)
        stop_tracer
        emit "{\"bench\":\"p1\",\"tracer\":\"$tracer\",\"round\":$r,\"ns_per_access\":$ns}"
    done
done

unpin_cpus

# resume_ns: ns per call of one synchronous burst of CALLS phy_resume() calls.
resume_ns() {
    sim_set "$dev" load "resume $CALLS"
    load_ns_per_read "$dev"
}

# The floor of the symbol probes: an empty kprobe+kretprobe on the driver's resume callbacks.
mapfile -t resumes < <(printf '%s\n' "${callbacks[@]}" | grep -E '[0-9]resume_callback')
((${#resumes[@]} > 0)) || fail "no resume callback in /proc/kallsyms"
{
    printf '%s\n' 'BEGIN { printf("ready\n"); }'
    echo "$(printf 'kprobe:%s, ' "${resumes[@]}" | sed 's/, $//') {}"
    echo "$(printf 'kretprobe:%s, ' "${resumes[@]}" | sed 's/, $//') {}"
} >"$work/bench-floor-symbol.bt"
# The boot's first call-site start searches the kernel text (a cache of its own); the next take
# the cache.
start_tracer phytrace-callsite
emit "{\"bench\":\"p2-cold\",\"tracer\":\"phytrace-callsite\",\"attach_ms\":$ATTACH_MS}"
stop_tracer
emit "{\"bench\":\"c1-probes\",\"calls\":$CALLS,\"call_sites\":$(head -n 1 "$work/bench.ptrace" | jq '.call_sites | length')}"
# The floor of the call-site probes: an empty program on every place phytrace probed (a call,
# its return: `function+0xOFF`, or the enclosing function's return for a tail call).
mapfile -t call_site_places < <(head -n 1 "$work/bench.ptrace" |
    jq -r '.call_sites[] | .call, (.ret // ((.call | sub("\\+.*"; "")) + "%return"))')
((${#call_site_places[@]} > 0)) || fail "phytrace armed no call site"

p2_rounds "phytrace phytrace-callsite bpftrace27 bpftrace-kfunc"

CB_TRACERS="phytrace-callsite phytrace-symbol bpftrace27 floor-callsite bpftrace-floor-symbol"
log "C1: $REPEATS rounds of $CALLS phy_resume() calls: untraced, then with each of $CB_TRACERS"
pin_cpus
resume_ns >/dev/null # warm-up
for ((r = 1; r <= REPEATS; r++)); do
    emit "{\"bench\":\"c1\",\"tracer\":\"none\",\"round\":$r,\"ns_per_call\":$(resume_ns)}"
    for tracer in $CB_TRACERS; do
        start_tracer "$tracer"
        resume_ns >/dev/null
        ns=$(resume_ns)
        stop_tracer
        emit "{\"bench\":\"c1\",\"tracer\":\"$tracer\",\"round\":$r,\"ns_per_call\":$ns}"
    done
done

unpin_cpus
log "Profile: time inside each of phytrace's programs (kernel.bpf_stats_enabled)"
# Diagnostic only: the benchmark goes on without it.
{ KEEP=1 bash "$PHYTRACE_ROOT/scenarios/profile-bpf.sh" ROUNDS="$REPEATS" READS="$READS" BIN="$BIN" ||
    log "the profile failed (see $PHYTRACE_OUT/profile-record.err)"; } | grep '^{' | tee -a "$OUT" || true

# samples TRACER ROUND: where the CPU goes during one burst of SAMPLE_READS reads with TRACER running
# ("none": untraced): perf's cpu-clock samples of the thread making the reads, counted per
# kernel symbol, and the burst's ns per read. Samples come at most once per timer tick (the
# guest kernel has no high-resolution timers). perf starts with its events disabled and this shell
# enables them for the burst alone, through perf's control FIFO (each command acknowledged).
samples() {
    local tracer=$1 ctl=$work/perf.ctl ack=$work/perf.ack perf_pid ns
    [[ $tracer == none ]] || start_tracer "$tracer"
    burst_ns >/dev/null # warm-up, as in P1
    rm -f "$ctl" "$ack"
    mkfifo "$ctl" "$ack"
    exec 4<>"$ctl" 5<>"$ack"
    "${PIN[@]}" perf record -q -a -e cpu-clock -F 1000 -D -1 --control "fifo:$ctl,$ack" \
        -o "$work/perf.data" 2>"$work/perf.err" &
    perf_pid=$!
    echo enable >&4
    read -r -t 60 -u 5 _ || fail "perf did not start: $(cat "$work/perf.err")"
    sim_set "$dev" load "$SAMPLE_READS BMSR"
    echo disable >&4
    read -r -t 60 -u 5 _ || fail "perf did not stop sampling"
    exec 4>&- 5>&-
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    ns=$(load_ns_per_read "$dev")
    [[ $tracer == none ]] || stop_tracer
    emit "{\"bench\":\"samples\",\"tracer\":\"$tracer\",\"round\":$2,\"reads\":$SAMPLE_READS,\"ns_per_access\":$ns}"
    perf script -i "$work/perf.data" -F pid,ip,sym 2>/dev/null |
        awk -v pid=$$ -v tracer="$tracer" -v round="$2" '
            $1 == pid { n[$3 == "" ? "[unknown]" : $3]++ }
            END { for (s in n) printf "{\"bench\":\"samples\",\"tracer\":\"%s\",\"round\":%d,\"symbol\":\"%s\",\"samples\":%d}\n", tracer, round, s, n[s] }
        ' | tee -a "$OUT"
}

SAMPLE_TRACERS="none phytrace bpftrace27 bpftrace-kfunc floor-fields bpftrace-floor-fentry"
log "Samples: where the CPU goes per access, with each of $SAMPLE_TRACERS"
pin_cpus
for ((r = 1; r <= REPEATS; r++)); do
    for tracer in $SAMPLE_TRACERS; do samples "$tracer" "$r"; done
done
unpin_cpus

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# load_done: the simulator's load has finished. Bash builtins only, and it is polled only once
# the load should be over: every exec costs tens of ms of CPU in a TCG guest, which would be
# taken from the consumer being measured.
load_done() {
    local line
    read -r line <"$SIM_DBG/$dev/load"
    [[ $line == *running=0* ]]
}

METRICS=127.0.0.1:19480

# scrape_metrics: GETs record's /metrics at $METRICS once a second until killed, as a
# Prometheus server would, and appends each exposition's last line to $work/scrapes. Bash
# builtins only (/dev/tcp, read): a process forked per scrape would take CPU from the consumer.
scrape_metrics() {
    local line last tick=$work/scrape.tick
    rm -f "$tick"
    mkfifo "$tick"
    exec 9<>"$tick"
    while :; do
        if exec 8<>"/dev/tcp/${METRICS%:*}/${METRICS#*:}"; then
            printf 'GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$METRICS" >&8
            while IFS= read -r -u 8 line; do last=$line; done
            exec 8<&-
            echo "$last" >>"$work/scrapes"
        fi
        # A second's wait on a FIFO no one writes to.
        read -r -t 1 -u 9 _ || true
    done
}

# p3_round ROW RATE ENCODING ROUND [metrics]: `record --encoding ENCODING` while the simulator
# reads at RATE for SECS seconds (with `metrics`: serving --metrics, scraped every second);
# emits one result of type ROW.
p3_round() {
    local row=$1 rate=$2 encoding=$3 round=$4 serve=${5:-} pid ticks achieved generated recorded lost reads elapsed
    local scraper="" extra=()
    reset_counters
    rm -f "$work/rate.status" "$work/scrapes"
    [[ -z $serve ]] || extra=(--metrics "$METRICS")
    "$BIN" record --encoding "$encoding" -o "$work/rate.ptrace" --status "$work/rate.status" "${extra[@]}" 2>"$work/rate.err" &
    pid=$!
    until grep -q '"status":"recording"' "$work/rate.status" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || fail "$row: record exited: $(cat "$work/rate.err")"
        sleep 0.01
    done
    if [[ -n $serve ]]; then
        scrape_metrics &
        scraper=$!
    fi
    ticks=$(cpu_ticks "$pid")
    sim_set "$dev" load "rate $rate $SECS BMSR"
    sleep "$SECS"
    wait_for 60 load_done || fail "load did not finish"
    achieved=$(sim_get "$dev" load | sed 's/.*reads=\([0-9]*\).*elapsed_ns=\([0-9]*\).*/\1 \2/')
    sleep 1
    ticks=$(($(cpu_ticks "$pid") - ticks))
    if [[ -n $scraper ]]; then
        kill "$scraper"
        wait "$scraper" 2>/dev/null || true
        # Every scrape got a whole exposition, and there was one at least per second of load.
        (($(grep -c . "$work/scrapes") >= SECS)) || fail "$row: $(grep -c . "$work/scrapes") scrapes in $SECS s"
        ! grep -qvx '# EOF' "$work/scrapes" || fail "$row: a scrape got no whole exposition"
    fi
    kill -INT "$pid"
    wait "$pid"
    generated=$(counter "$dev" BMSR reads)
    recorded=$("$BIN" dump --format json "$work/rate.ptrace" --kind mdio | grep -c '"reg":1,' || true)
    lost=$(jq -r 'select(.status == "finished") | .trailer.lost' "$work/rate.status")
    read -r reads elapsed <<<"$achieved"
    emit "{\"bench\":\"$row\",\"rate\":$rate,\"encoding\":\"$encoding\",\"round\":$round,\"achieved_per_s\":$((reads * 1000000000 / elapsed)),\"generated\":$generated,\"recorded\":$recorded,\"lost\":$lost,\"consumer_ns_per_event\":$((ticks * 1000000000 / hz / (recorded > 0 ? recorded : 1)))}"
}

log "P3: drop-free rate with the default ring, $REPEATS rounds per rate"
for rate in $RATES; do
    for ((r = 1; r <= REPEATS; r++)); do p3_round p3 "$rate" binary "$r"; done
done
top_rate=${RATES##* }
log "P3 with JSON Lines captures at $top_rate /s"
for ((r = 1; r <= REPEATS; r++)); do p3_round p3-jsonl "$top_rate" jsonl "$r"; done
log "P3 with --metrics scraped every second at $top_rate /s"
ip link set dev lo up
for ((r = 1; r <= REPEATS; r++)); do p3_round p3-metrics "$top_rate" binary "$r" metrics; done

log "TUI CPU share"
sock=$work/tmux
tmux -S "$sock" new-session -d -x 100 -y 30 "$BIN tui"
sleep 4
tui_pid=$(pgrep -f "^$BIN tui" | head -1)
for rate in 0 10000 100000; do
    [[ $rate == 0 ]] || sim_set "$dev" load "rate $rate $((SECS + 2)) BMSR"
    sleep 1
    t0=$(cpu_ticks "$tui_pid")
    sleep "$SECS"
    t1=$(cpu_ticks "$tui_pid")
    emit "{\"bench\":\"tui\",\"rate\":$rate,\"cpu_percent\":$(((t1 - t0) * 100 * 100 / hz / SECS / 100))}"
    wait_for 30 load_done || true
done
tmux -S "$sock" send-keys q
sleep 1
tmux -S "$sock" kill-server 2>/dev/null || true

# The QT2025's probe: its firmware load. The kernel times each probe itself while initcall_debug is
# on ("probe of DEV returned RET after N usecs", drivers/base/dd.c): a truth phytrace does not
# write, of the probe alone (not the simulator's load, nor the module request before it).
QT2025_ADDR=4
qt2025_dev=phy_sim-0:$(printf %02x "$QT2025_ADDR")
# probe_us: the kernel's time of the QT2025's probe since the last mark, which returned 0.
probe_us() {
    local -a times
    mapfile -t times < <(dmesg_since_mark | sed -n "s/.*probe of $qt2025_dev returned 0 after \([0-9]*\) usecs.*/\1/p")
    ((${#times[@]} == 1)) || fail "the kernel timed ${#times[@]} successful probes of $qt2025_dev"
    echo "${times[0]}"
}
# qt2025_load: phy_sim with a QT2025 alone. insmod returns once the bus is scanned, its PHY
# probed (the driver core binds synchronously) and the firmware loaded; checks the QT2025's
# driver is bound, and sets WRITTEN (the simulator's count of SRAM writes) and PROBE_US.
qt2025_load() {
    mark_dmesg c45
    load_sim phys="qt2025@$QT2025_ADDR"
    local q
    q=$(simdev qt2025)
    [[ $(sim_info "$q" driver) == "QT2025 10Gpbs SFP+" ]] || fail "the QT2025's driver is not bound: $(sim_info "$q" driver)"
    WRITTEN=$(simulator_c45_counters "$SIM_DBG/$q/counters" | jq '.sram3[1] + .sram4[1]')
    PROBE_US=$(probe_us)
    rmmod phy_sim
}

log "C45: $REPEATS rounds of a QT2025 firmware load, untraced and with phytrace record"
rmmod phy_sim
qt2025_firmware
old_initcall_debug=$(</sys/module/kernel/parameters/initcall_debug)
echo 1 >/sys/module/kernel/parameters/initcall_debug
qt2025_load # warm-up: loads qt2025 by its mdio: alias, the firmware file in the page cache
for ((r = 1; r <= REPEATS; r++)); do
    qt2025_load
    emit "{\"bench\":\"c45\",\"tracer\":\"none\",\"round\":$r,\"probe_us\":$PROBE_US,\"written\":$WRITTEN}"
    start_tracer phytrace-default
    qt2025_load
    stop_tracer
    # The capture's firmware writes (3.0x8000-0xBFFF, 4.0x8000-0x9FFF) and its lost events.
    read -r recorded lost < <("$BIN" dump --format json "$work/bench.ptrace" | jq -rn '
        reduce inputs as $e ([0, 0];
            if $e.kind == "mdio" and $e.op == "write" and $e.reg >= 32768
               and (($e.devad == 3 and $e.reg < 49152) or ($e.devad == 4 and $e.reg < 40960)) then .[0] += 1
            elif $e.kind == "lost" then .[1] += $e.count else . end) | "\(.[0]) \(.[1])"')
    emit "{\"bench\":\"c45\",\"tracer\":\"phytrace\",\"round\":$r,\"probe_us\":$PROBE_US,\"written\":$WRITTEN,\"recorded\":$recorded,\"lost\":$lost}"
done
echo "$old_initcall_debug" >/sys/module/kernel/parameters/initcall_debug
rmmod qt2025
qt2025_firmware_remove
rm -rf "$work"
log "results in $OUT"
