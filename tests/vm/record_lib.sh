# shellcheck shell=bash
# Helpers for the `phytrace record` VM tests: start a recording in the background, stop it,
# and check the capture: its order and nesting with `phytrace check` rules (check_rules), the
# facts the rule language does not state with jq over `phytrace dump --format json`
# (capture_expect, capture.jq).

CAPTURE_JQ_DIR=$(dirname "${BASH_SOURCE[0]}")

# capture_expect CAPTURE.json JQ_EXPR [JQ ARGS...]: JQ_EXPR, a check of capture.jq given the
# events as one array, holds (its line is reported, and kept in CAPTURE_SAID) or the test fails
# with its message.
# shellcheck disable=SC2034  # read by the tests
CAPTURE_SAID=""
capture_expect() {
    local json=$1 expr=$2 said
    shift 2
    said=$(jq -s -r -L "$CAPTURE_JQ_DIR" "$@" "include \"capture\"; $expr" "$json" 2>&1) ||
        fail "${said#jq: error (at *): }"
    # shellcheck disable=SC2034
    CAPTURE_SAID=$said
    ok "$said"
}

# check_rules CAPTURE: the `phytrace check` rules on standard input (kept in CAPTURE.spec) hold
# on CAPTURE, and each rule's scope matched a PHY (a rule reported n/a would hold vacuously).
check_rules() {
    cat >"$1.spec"
    "$PHYTRACE_BIN" check --spec "$1.spec" --junit "$1.junit.xml" "$1" || fail "check rules failed on $1"
    if grep -q '<skipped' "$1.junit.xml"; then fail "a rule matched no PHY in $1 (see $1.spec)"; fi
}

# simulator_counters COUNTERS: a phy_sim counters file as {"REG": [reads, writes, rd_err, wr_err]}.
simulator_counters() {
    local reg _name reads writes rd_err wr_err rest sep="" json="{"
    while read -r reg _name reads writes rd_err wr_err rest; do
        [[ $reg == 0x* && -n $wr_err && -z $rest ]] || continue
        json+="$sep\"$((reg))\":[$reads,$writes,$rd_err,$wr_err]"
        sep=,
    done <"$1"
    echo "$json}"
}

# record_status FILE STATUS: FILE (record's --status) says STATUS (an empty file says nothing:
# `jq -e` alone would succeed on it).
record_status() {
    jq -e -n --arg s "$2" '[inputs | select(.status == $s)] | length > 0' "$1" >/dev/null 2>&1
}

# recording_or_gone CAPTURE: the record started by start_record records, or has exited.
recording_or_gone() { record_status "$1.status" recording || ! kill -0 "$RECORD_PID" 2>/dev/null; }

# start_record CAPTURE [RECORD ARGS...]: records in the background until stop_record; returns
# once record says (in CAPTURE.status) that it records.
start_record() {
    local capture=$1
    shift
    rm -f "$capture.status"
    "$PHYTRACE_BIN" record -o "$capture" --status "$capture.status" "$@" 2>"$capture.stderr" &
    RECORD_PID=$!
    wait_for 20 recording_or_gone "$capture" || true
    cat "$capture.stderr"
    record_status "$capture.status" recording || fail "phytrace record did not start"
}

# trailer_field CAPTURE FIELD: a field of the trailer record said in CAPTURE.status (jq path).
trailer_field() { jq -r "select(.status == \"finished\") | .trailer.$2" "$1.status"; }

# stop_record CAPTURE: SIGINT, wait, print the summary; fails if record failed.
stop_record() {
    kill -INT "$RECORD_PID"
    wait "$RECORD_PID" || fail "phytrace record exited with status $?"
    cat "$1.stderr"
}

# The ground truth tests compare with: the kernel's own kprobe events, group `truth`.
TRACEFS=/sys/kernel/tracing

# remove_truth: disables and removes every `truth` kprobe event (entry or return).
remove_truth() {
    if [[ -e $TRACEFS/events/truth/enable ]]; then echo 0 >"$TRACEFS/events/truth/enable"; fi
    local line
    for line in $(grep -o '^[pr][0-9]*:truth/[^ ]*' "$TRACEFS/kprobe_events" || true); do
        echo "-:${line#*:}" >>"$TRACEFS/kprobe_events"
    done
}

# define_truth MODULE NAMES AWK_NAME: kprobe and kretprobe events (tracefs group `truth`) on
# MODULE's functions that AWK_NAME (an awk pattern on the symbol) selects, defined before the
# module loads; writes "cbN NAME" lines to NAMES, where NAME is the callback (Rust: the op in the
# symbol) or the function (C).
define_truth() {
    local module=$1 names=$2 pattern=$3 ko symbols
    ko=$(modinfo -n "$module") || fail "$module is not in the module tree"
    remove_truth
    echo >"$TRACEFS/trace"
    : >"$names"
    mapfile -t symbols < <(module_symbols "$ko" | awk -v p="$pattern" '$2 ~ /^[tT]$/ && $3 ~ p { print $3 }')
    ((${#symbols[@]} > 0)) || fail "no functions of $module to compare with"
    also_truth "$names" "$module" "${symbols[@]}"
    echo 1 >"$TRACEFS/tracing_on" # a test before may have left it off
    ok "${#symbols[@]} ground-truth entry and return events on $module, defined before it loads"
}

# also_truth NAMES MODULE SYMBOL...: ground-truth events on more functions (of MODULE, loaded or
# not), numbered on from the NAMES define_truth wrote.
also_truth() {
    local names=$1 module=$2 n symbol name
    shift 2
    n=$(wc -l <"$names")
    for symbol; do
        n=$((n + 1))
        echo "p:truth/cb$n $module:$symbol" >>"$TRACEFS/kprobe_events"
        echo "r:truth/cb${n}r $module:$symbol ret=\$retval:s32" >>"$TRACEFS/kprobe_events"
        case $symbol in
            _R*) name=$(sed -E 's/.*[0-9]+([a-z_]+)_callback.*/\1/' <<<"$symbol") ;;
            *) name=$symbol ;;
        esac
        echo "cb$n $name" >>"$names"
    done
    echo 1 >"$TRACEFS/events/truth/enable"
}

# module_symbols KO: `nm --defined-only` of the module file KO, decompressed if it is (`.ko.xz`
# and `.ko.zst`, as distributions ship them).
module_symbols() {
    local elf
    case $1 in
        *.xz | *.zst)
            elf=$(mktemp)
            case $1 in *.xz) xz -dc "$1" ;; *) zstd -dcq "$1" ;; esac >"$elf"
            nm --defined-only "$elf"
            rm -f "$elf"
            ;;
        *) nm --defined-only "$1" ;;
    esac
}

# stop_truth FILE: stops the ground-truth events and copies the trace buffer to FILE; fails if
# the buffer overran (the truth would be incomplete).
stop_truth() {
    local stats
    echo 0 >"$TRACEFS/events/truth/enable"
    for stats in "$TRACEFS"/per_cpu/cpu*/stats; do
        grep -q '^overrun: 0$' "$stats" || fail "the ftrace buffer overran ($stats): the ground truth is incomplete"
    done
    cp "$TRACEFS/trace" "$1"
}

# simulator_c45_counters COUNTERS: a Clause 45 PHY's phy_sim counters as {"DEVAD.REG": [reads,
# writes, rd_err, wr_err]} (REG decimal), its SRAM halves as "sram3" and "sram4".
simulator_c45_counters() {
    local kind where reads writes rd_err wr_err sep="" json="{" key
    while read -r kind where reads writes rd_err wr_err; do
        case $kind in
            c45) key="${where%%.*}.$((${where#*.}))" ;;
            sram) key="sram${where%%.*}" ;;
            *) continue ;;
        esac
        json+="$sep\"$key\":[$reads,$writes,$rd_err,$wr_err]"
        sep=,
    done <"$1"
    echo "$json}"
}

# capture_has CAPTURE KIND TEXT: the capture, decoded as JSON, has a KIND event containing TEXT.
capture_has() {
    "$PHYTRACE_BIN" dump --format json "$1" --kind "$2" 2>/dev/null | grep -q -- "$3"
}

# events_json CAPTURE: the decoded events as JSON lines in CAPTURE.json.
events_json() {
    "$PHYTRACE_BIN" dump --format json "$1" >"$1.json" || fail "phytrace dump failed on $1"
}

# capture_has_n CAPTURE KIND TEXT N: at least N KIND events containing TEXT.
capture_has_n() {
    local n
    n=$("$PHYTRACE_BIN" dump --format json "$1" --kind "$2" 2>/dev/null | grep -c -- "$3" || true)
    ((n >= $4))
}
