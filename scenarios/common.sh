# shellcheck shell=bash
# Shared set-up for the scenarios: the helpers of tests/vm/lib.sh, plus option parsing.
# Every scenario takes DRIVER=rust|c (default rust) and KEEP=1 (leave the modules loaded at
# the end, e.g. for a tracer to detach first). Options are environment variables or
# NAME=VALUE arguments: `scenarios/plug-unplug.sh COUNT=5 PERIOD=1`.
for arg in "$@"; do
    case $arg in
    *=*) export "${arg?}" ;;
    -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *)
        echo "$(basename "$0"): unknown argument '$arg' (use NAME=VALUE)" >&2
        exit 2
        ;;
    esac
done
. "${PHYTRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/tests/vm/lib.sh"
DRIVER=${DRIVER:-rust}
KEEP=${KEEP:-0}
[[ -n ${DRIVER_KO[$DRIVER]:-} ]] || { echo "DRIVER must be rust or c" >&2; exit 2; }

scenario_end() {
    local rc=$?
    if [[ $KEEP == 1 ]]; then
        log "KEEP=1: modules left loaded"
    else
        unload_all || true
    fi
    return $rc
}
trap scenario_end EXIT

# ensure_loaded: unless phy_sim is loaded, unload all, load DRIVER, then phy_sim with SIM_PARAMS.
ensure_loaded() {
    if ! module_loaded phy_sim; then
        # shellcheck disable=SC2086  # SIM_PARAMS: several NAME=VALUE words
        setup "$DRIVER" ${SIM_PARAMS:-}
    fi
}

# bring_up DEV...: ensure_loaded, links up at 100/full.
bring_up() {
    ensure_loaded
    link_up "$@"
    local d
    for d in "$@"; do wait_mode "$d" 100 full 15; done
}

# drain_tracer FILE: once a tracer started in the background ($TRACER_PID) is attached, copies the
# rest of what it writes on fd 3 to FILE in the background ($DRAIN_PID), and closes fd 3 here.
drain_tracer() {
    cat <&3 >"$1" &
    DRAIN_PID=$!
    exec 3>&-
}

# stop_tracer: interrupts the tracer ($TRACER_PID) and waits for it and its drain ($DRAIN_PID).
stop_tracer() {
    kill -INT "$TRACER_PID"
    wait "$TRACER_PID" || true
    kill "$DRAIN_PID" 2>/dev/null || true
    wait "$DRAIN_PID" 2>/dev/null || true
}

# load_ns_per_read DEV: ns per read of DEV's last simulator load, as the simulator measured it.
load_ns_per_read() {
    sim_get "$1" load | sed 's/.*ns_per_read=\([0-9]*\).*/\1/'
}
