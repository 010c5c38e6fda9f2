# shellcheck shell=dash
# What the arm64 guest's scripts share (POSIX sh, busybox's applets only). A script sets TAG
# (its log prefix) and defines fail_context (what to print on a failure, before the kernel log).

TRACEFS=/sys/kernel/tracing

say() { echo "[$TAG] $*"; }
fail() {
    echo "[$TAG] FAIL: $*" >&2
    fail_context >&2
    dmesg | tail -n 20 >&2
    exit 1
}

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_until() {
    limit=$(($1 * 10)) what=$2 n=0
    shift 2
    until "$@"; do
        n=$((n + 1))
        [ "$n" -le "$limit" ] || fail "$what (not within $((limit / 10)) s)"
        sleep 0.1
    done
}

# remove_truth: disables and removes the `truth` kprobe events.
remove_truth() {
    [ ! -e "$TRACEFS/events/truth/enable" ] || echo 0 >"$TRACEFS/events/truth/enable"
    for event in $(grep -o '^[pr][0-9]*:truth/[^ ]*' "$TRACEFS/kprobe_events" || true); do
        echo "-:${event#*:}" >>"$TRACEFS/kprobe_events"
    done
}

# truth_on_callbacks PREFIX: a kprobe and a kretprobe event (group `truth`) on every callback
# of the loaded ax88796b_rust; its symbols go to PREFIX.symbols, "cbN OP" lines (what the
# host's tests/vm/callsite_truth.py reads) to PREFIX.truth-names. Sets CALLBACKS.
truth_on_callbacks() {
    CALLBACKS=0
    : >"$1.truth-names"
    awk '$4 == "[ax88796b_rust]" && $2 ~ /^[tT]$/ && $3 ~ /^_R.*Adapter.*_callback/ { print $3 }' /proc/kallsyms >"$1.symbols"
    while read -r symbol; do
        CALLBACKS=$((CALLBACKS + 1))
        echo "p:truth/cb$CALLBACKS ax88796b_rust:$symbol" >>"$TRACEFS/kprobe_events"
        echo "r:truth/cb${CALLBACKS}r ax88796b_rust:$symbol ret=\$retval:s32" >>"$TRACEFS/kprobe_events"
        echo "cb$CALLBACKS $(echo "$symbol" | sed -E 's/.*[0-9]+([a-z_]+)_callback.*/\1/')" >>"$1.truth-names"
    done <"$1.symbols"
    [ "$CALLBACKS" -gt 0 ] || fail "no callbacks of ax88796b_rust in /proc/kallsyms"
}

# truth_save FILE: stops the `truth` events, checks that no CPU's ftrace buffer overran (the
# ground truth would be incomplete), copies the buffer to FILE and removes the events.
truth_save() {
    echo 0 >"$TRACEFS/events/truth/enable"
    for stats in "$TRACEFS"/per_cpu/cpu*/stats; do
        grep -q '^overrun: 0$' "$stats" || fail "the ftrace buffer overran ($stats): the ground truth is incomplete"
    done
    cp "$TRACEFS/trace" "$1"
    remove_truth
}
