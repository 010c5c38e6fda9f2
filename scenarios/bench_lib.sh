# shellcheck shell=bash
# What the benchmarks share (bench.sh on our kernel, bench-start.sh on Debian's): the results,
# forky's bpftrace in its root with its script on the call sites `phytrace probes` lists, and
# starting a tracer until it is attached. Needs BIN, FLOOR_BIN, BPFTRACE_ROOT, work (a
# directory of the guest's /tmp) and OUT (the results file); sets SITE_PROBES, TRACER_PID,
# DRAIN_PID and ATTACH_MS for it.
# shellcheck disable=SC2034,SC2154  # the variables it reads and sets are the sourcing script's
[[ -x ${BPFTRACE_ROOT:-}/usr/bin/bpftrace ]] || { echo "BPFTRACE_ROOT: a root with bpftrace is required" >&2; exit 2; }
emit() { echo "$1" | tee -a "$OUT"; }

# forky's bpftrace runs in its root, which sees this guest's kernel interfaces and /tmp.
for dir in proc sys dev tmp; do mount --rbind "/$dir" "$BPFTRACE_ROOT/$dir"; done
bench_end() {
    local rc=$?
    for dir in proc sys dev tmp; do umount -R "$BPFTRACE_ROOT/$dir" || true; done
    (exit "$rc")
    scenario_end
}
trap bench_end EXIT
# bpftrace27 ARGS: forky's bpftrace, in the place of the subshell that runs it (in a pipeline,
# or started with `&`: $! is then bpftrace, which the signal that stops a tracer must reach).
# Never in the script's own shell.
bpftrace27() { exec "${PIN[@]}" chroot "$BPFTRACE_ROOT" bpftrace "$@"; }

# pin_cpus, unpin_cpus: in P1, C1 and the samples, the reading shell runs on the last CPU and
# the tracers it starts on the others (with one CPU, nothing is pinned): the reader's time per
# access is then what the probes cost it, not also what a tracer's reading of its records takes
# from it on a shared CPU. Start-up times run unpinned. PIN: the prefix start_tracer runs each
# tracer with.
PIN=()
pin_cpus() {
    local last=$(($(nproc) - 1))
    ((last > 0)) || return 0
    taskset -p -c "$last" $$ >/dev/null
    PIN=(taskset -c "0-$((last - 1))")
}
unpin_cpus() {
    taskset -p -c "0-$(($(nproc) - 1))" $$ >/dev/null
    PIN=()
}

# decode_call_sites: `phytrace probes` decodes this boot's call sites into $work/probes.json,
# with a cache of its own, left empty again: the boot's first call-site start still decodes.
decode_call_sites() {
    XDG_CACHE_HOME=$work/probes-cache "$BIN" probes --format json >"$work/probes.json"
    jq -e '.call_sites.source == "kernel_text"' "$work/probes.json" >/dev/null ||
        fail "the call sites were not decoded: $(jq -c .call_sites "$work/probes.json")"
    rm -rf "$work/probes-cache"
}

# site_probes: forky's bpftrace on the driver callbacks, written from `phytrace probes`: a kprobe
# at each of phylib's call sites of an op that the kernel can probe (rdi: the phy_device) and one
# at its return (rax: the op's result), or, for a tail call, a kretprobe of the enclosing
# function (once per function).
site_probes() {
    local call op ret function probe value
    local entry='{ @entered[tid] = nsecs; @phydev[tid] = reg("di"); @before[tid] = ((struct phy_device *)reg("di"))->state; }'
    # '|' separates the fields: read would merge a tab with the empty field after it.
    jq -r '.call_sites.sites[] | select(.not_traced == null) | [.call, .op, (.ret // ""), .function] | join("|")' "$work/probes.json" |
        while IFS='|' read -r call op ret function; do
            echo "kprobe:$call $entry"
            if [[ -n $ret ]]; then
                probe=kprobe:$ret value='(int32)reg("ax")'
            else
                probe=kretprobe:$function value='(int32)retval' op=$function
            fi
            printf '%s /@entered[tid]/ { $phy = (struct phy_device *)@phydev[tid]; printf("%%llu %s %%p %%d %%d %%d %%llu\\n", nsecs, $phy, @before[tid], $phy->state, %s, nsecs - @entered[tid]); delete(@entered[tid]); delete(@phydev[tid]); delete(@before[tid]); }\n' \
                "$probe" "$op" "$value"
        done | awk '!/^kretprobe:/ || !seen[$1]++'
}

# write_bpftrace27_script: forky's bpftrace's script, $work/bench-bpftrace27.bt; SITE_PROBES: its
# probes at the call sites.
write_bpftrace27_script() {
    {
        cat "$PHYTRACE_ROOT/scenarios/bench-bpftrace27.bt"
        site_probes
        echo 'END { clear(@start); clear(@entered); clear(@phydev); clear(@before); }'
    } >"$work/bench-bpftrace27.bt"
    SITE_PROBES=$(grep -c '^kprobe:\|^kretprobe:' "$work/bench-bpftrace27.bt")
}

# attach_failed WHAT: says where the tracer that did not attach is (its kernel stack, its
# errors, the kernel's last messages), kills it, and fails.
attach_failed() {
    {
        log "$1 did not attach; its kernel stack:"
        cat "/proc/$TRACER_PID/stack" 2>/dev/null || true
        cat "$work/tracer.err"
        dmesg | tail -n 20
    } >&2
    kill -KILL "$TRACER_PID" 2>/dev/null || true
    wait "$TRACER_PID" 2>/dev/null || true
    fail "$1 did not attach"
}

# wait_line PATTERN: reads the tracer's lines (fd 3) until one matches the glob PATTERN; fails
# if the tracer exits first or 120 s pass. Each read blocks until a line comes: no poll.
wait_line() {
    local line deadline=$((SECONDS + 120))
    while ((SECONDS < deadline)); do
        if IFS= read -r -t 1 -u 3 line; then
            # shellcheck disable=SC2053  # a glob, on purpose
            [[ $line == $1 ]] && return 0
        elif ! kill -0 "$TRACER_PID" 2>/dev/null; then
            return 1
        fi
    done
    return 1
}

# start_tracer KIND: starts phytrace or bpftrace in the background and waits until attached,
# blocked on a FIFO that carries phytrace's status or bpftrace's output: a poll would fork a
# process per look, and the forks would take CPU from the tracer being timed. Sets TRACER_PID,
# DRAIN_PID (what copies the rest of the tracer's lines to $work/tracer.out) and ATTACH_MS
# (process start to attached, wall clock).
start_tracer() {
    local t0 script fifo=$work/tracer.fifo
    rm -f "$fifo"
    mkfifo "$fifo"
    # Read-write: opening it does not wait for the tracer, and the tracer's writes never fail.
    exec 3<>"$fifo"
    # Microseconds from a bash builtin: `date` would fork and exec (tens of ms under TCG) within
    # the time measured.
    t0=${EPOCHREALTIME/./}
    case $1 in
    phytrace*)
        # P1 and P2 compare the same probes as bpftrace's scripts: the callbacks' symbols.
        # phytrace-default: record's own defaults.
        local -a options=(--mdio-probes fentry --callback-probes symbol)
        case $1 in
        phytrace-kprobe) options=(--mdio-probes kprobe --callback-probes symbol) ;;
        phytrace-callsite) options=(--mdio-probes fentry --callback-probes callsite) ;;
        phytrace-default) options=() ;;
        esac
        "${PIN[@]}" "$BIN" record -o "$work/bench.ptrace" "${options[@]}" --status "$fifo" 2>"$work/tracer.err" &
        TRACER_PID=$!
        wait_line '*"status":"recording"*' || attach_failed phytrace
        ;;
    bpftrace-*)
        case $1 in
        bpftrace-kfunc) script=bench-kfunc ;;
        bpftrace-kprobe) script=bench ;;
        bpftrace-floor-fentry) script=bench-floor-fentry ;;
        bpftrace-floor-kprobe) script=bench-floor-kprobe ;;
        bpftrace-floor-symbol) script=bench-floor-symbol ;;
        esac
        "${PIN[@]}" bpftrace -B line "$work/$script.bt" >"$fifo" 2>"$work/tracer.err" &
        TRACER_PID=$!
        wait_line ready || attach_failed "$1"
        ;;
    bpftrace27)
        bpftrace27 -B line "$work/bench-bpftrace27.bt" >"$fifo" 2>"$work/tracer.err" &
        TRACER_PID=$!
        wait_line ready || attach_failed "$1"
        ;;
    floor-fields)
        "${PIN[@]}" "$FLOOR_BIN" >"$fifo" 2>"$work/tracer.err" &
        TRACER_PID=$!
        wait_line ready || attach_failed "the same-fields floor"
        ;;
    floor-callsite)
        "${PIN[@]}" python3 "$PHYTRACE_ROOT/scenarios/kprobe_floor.py" "${call_site_places[@]}" >"$fifo" 2>"$work/tracer.err" &
        TRACER_PID=$!
        wait_line ready || attach_failed "the empty call-site probes"
        ;;
    esac
    ATTACH_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
    drain_tracer "$work/tracer.out"
}

# p2_rounds TRACERS: start to attached, STARTS rounds of starting and stopping each of TRACERS
# (after one warm-up start each: the binaries and their libraries in the page cache).
p2_rounds() {
    local tracer r
    log "P2: $STARTS rounds of starting and stopping each of $1"
    for tracer in $1; do
        start_tracer "$tracer"
        stop_tracer
    done
    for ((r = 1; r <= STARTS; r++)); do
        for tracer in $1; do
            start_tracer "$tracer"
            stop_tracer
            emit "{\"bench\":\"p2\",\"tracer\":\"$tracer\",\"round\":$r,\"attach_ms\":$ATTACH_MS}"
        done
    done
}
