# shellcheck shell=bash
# Shared helpers for the VM tests (tests/vm/NN-*.sh) and the scenarios (scenarios/*.sh).
# Source it after `set -euo pipefail`. Runs in the guest as root.
#
# Environment: PHYTRACE_ROOT (workspace), PHYTRACE_MODULES (ax88796b_rust.ko, phy_sim.ko,
# ax88796b.ko), PHYTRACE_OUT (writable). PHYTRACE_DRIVERS limits the drivers a test runs
# with (default "rust c").

PHYTRACE_ROOT=${PHYTRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PHYTRACE_MODULES=${PHYTRACE_MODULES:-$PHYTRACE_ROOT/target/modules}
PHYTRACE_OUT=${PHYTRACE_OUT:-/tmp}
PHYTRACE_DRIVERS=${PHYTRACE_DRIVERS:-rust c}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
# The guest's home is the host's root, read-only: phytrace keeps the call sites it found for the
# boot's next sessions here instead (docs/probes.md, "The cache"). A tmpfs: new at every boot.
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/phytrace-cache}

SIM_DBG=/sys/kernel/debug/phy_sim
MDIO_DEVS=/sys/bus/mdio_bus/devices
TEST_NAME=$(basename "$0" .sh)
DMESG_MARK=""

# The upstream driver names, by model.
# shellcheck disable=SC2034  # used by the tests
declare -A ASIX_NAME=(
    [ax88772a]="Asix Electronics AX88772A"
    [ax88772c]="Asix Electronics AX88772C"
    [ax88796b]="Asix Electronics AX88796B"
)
# Module file and module name, by driver flavour.
declare -A DRIVER_KO=([rust]=ax88796b_rust.ko [c]=ax88796b.ko)
declare -A DRIVER_MOD=([rust]=ax88796b_rust [c]=ax88796b)

T0_US=${EPOCHREALTIME/./}
# Seconds since the script started, to 0.1 s (no fork: cheap under TCG).
stamp() {
    local ds=$(((${EPOCHREALTIME/./} - T0_US) / 100000))
    echo "$((ds / 10)).$((ds % 10))"
}
log() { echo "[$TEST_NAME +$(stamp)s] $*"; }
ok() { echo "[$TEST_NAME +$(stamp)s] ok: $*"; }

fail() {
    echo "[$TEST_NAME +$(stamp)s] FAIL: $*" >&2
    dump_state >&2 || true
    exit 1
}

# check DESCRIPTION COMMAND...: run COMMAND, fail with DESCRIPTION if it fails.
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}

# run_status COMMAND...: runs COMMAND, failing or not; sets `out` (its output, stderr
# included) and `status` (its exit status).
# shellcheck disable=SC2034  # out and status are the caller's
run_status() { set +e; out=$("$@" 2>&1); status=$?; set -e; }

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
    if [[ "$2" == "$3" ]]; then ok "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}

dump_state() {
    local d
    [[ -d $SIM_DBG ]] || return 0
    for d in "$SIM_DBG"/sim*; do
        [[ -d $d ]] || continue
        echo "--- $(basename "$d") info"
        cat "$d/info" 2>/dev/null || true
        echo "--- $(basename "$d") regs"
        cat "$d/regs" 2>/dev/null || true
    done
    echo "--- dmesg (since test start)"
    dmesg_since_mark | tail -40 || true
}

ensure_debugfs() {
    mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
}

# --- kernel log ---

# Marks the kernel log; dmesg_since_mark prints what came after the last mark.
mark_dmesg() {
    DMESG_MARK="phytrace-test: $TEST_NAME $1 $$ $RANDOM"
    echo "$DMESG_MARK" >/dev/kmsg
}

dmesg_since_mark() {
    if [[ -z $DMESG_MARK ]]; then dmesg; return; fi
    dmesg | awk -v m="$DMESG_MARK" 'found { print } index($0, m) { found = 1 }'
}

# shellcheck source=tests/vm/kernel_log.sh
. "$(dirname "${BASH_SOURCE[0]}")/kernel_log.sh"

# WARN() only prints (and taints) with CONFIG_BUG=y; debugfs has clear_warn_once only then.
kernel_warns() { [[ -e /sys/kernel/debug/clear_warn_once ]]; }

# Fails if the kernel logged a warning, a BUG or an oops since the last mark.
assert_clean_dmesg() {
    local what=${1:-kernel log}
    local log bad unplug
    log=$(dmesg_since_mark)
    bad=$(kernel_trouble <<<"$log")
    [[ -z $bad ]] || fail "$what: kernel trouble in dmesg: $bad"
    unplug=$(unplug_warnings <<<"$log")
    ((unplug == 0)) || log "$what: the kernel's own phy_error warning at the unplug (-EPROTO or -ESHUTDOWN), $unplug time(s): expected"
    if kernel_warns; then
        ok "$what: no WARNING/BUG/Oops in dmesg"
    else
        ok "$what: no BUG/Oops in dmesg (kernel without CONFIG_BUG: WARN() is silent)"
    fi
}

# --- modules ---

module_loaded() { [[ -e /sys/module/$1/refcnt ]]; }

unload_all() {
    local m d
    for d in /sys/class/net/sim*; do
        if [[ -e $d ]]; then ip link set dev "${d##*/}" down 2>/dev/null || true; fi
    done
    for m in phy_sim qt2025 ax88796b_rust ax88796b; do
        module_loaded "$m" || continue
        rmmod "$m" 2>/dev/null || { sleep 0.5; rmmod "$m"; } || echo "[$TEST_NAME] warning: cannot unload $m" >&2
    done
}

# load_driver rust|c
load_driver() {
    local ko=${DRIVER_KO[$1]:?driver must be rust or c}
    module_loaded "${DRIVER_MOD[$1]}" && return 0
    insmod "$PHYTRACE_MODULES/$ko"
}

# load_sim [PARAM=VALUE...]: loads phy_sim (test defaults: short delays) and waits for debugfs.
load_sim() {
    local i
    ensure_debugfs
    insmod "$PHYTRACE_MODULES/phy_sim.ko" aneg_delay_ms="${SIM_ANEG_MS:-50}" \
        reset_delay_ms="${SIM_RESET_MS:-5}" "$@"
    for i in $(seq 50); do
        [[ -d $SIM_DBG ]] && return 0
        sleep 0.1
    done
    fail "phy_sim loaded but $SIM_DBG did not appear"
}

# setup DRIVER [SIM PARAMS...]: clean slate, driver first (else genphy binds), then the sim.
setup() {
    unload_all
    load_driver "$1"
    shift
    load_sim "$@"
}

cleanup() {
    local rc=$?
    # Test-specific clean-up first (set with cleanup_also).
    if [[ -n ${CLEANUP_EXTRA:-} ]]; then eval "$CLEANUP_EXTRA" || true; fi
    # A recording started by start_record (record_lib.sh) must not outlive a failed test.
    if [[ -n ${RECORD_PID:-} ]]; then kill -9 "$RECORD_PID" 2>/dev/null || true; fi
    unload_all || true
    return $rc
}

# Install the cleanup trap (unloads everything on exit).
trap_cleanup() { trap cleanup EXIT; }

# cleanup_also COMMANDS: run COMMANDS too on exit, before the modules are unloaded.
cleanup_also() { CLEANUP_EXTRA=$1; }
# cleanup_first COMMAND: runs COMMAND before the clean-up already set.
cleanup_first() { CLEANUP_EXTRA="$1${CLEANUP_EXTRA:+; $CLEANUP_EXTRA}"; }

# stock_only: skips the test (exit 77) unless the guest runs Debian's stock kernel.
stock_only() { kernel_only stock; }
# kernel_only NAME...: skips the test unless the guest's kernel is one of NAME (PHYTRACE_VM_KERNEL).
kernel_only() {
    local name
    for name; do [[ ${PHYTRACE_VM_KERNEL:-} == "$name" ]] && return 0; done
    echo "SKIP: test: not on ${PHYTRACE_VM_KERNEL:-this kernel} (only $*)"
    exit 77
}

# --- the simulated PHYs ---

# simdev MODEL: the netdev of the first PHY of that model (ax88772a|ax88772c|ax88796b|qt2025).
simdev() {
    local d want=${1^^}
    [[ $want == QT* ]] || want=AX${want#AX}
    for d in "$SIM_DBG"/sim*; do
        if [[ $(sim_info "${d##*/}" model) == "$want" ]]; then
            echo "${d##*/}"
            return 0
        fi
    done
    fail "no simulated PHY of model $1"
}

sim_devs() { local d; for d in "$SIM_DBG"/sim*; do [[ -d $d ]] && echo "${d##*/}"; done; }

# sim_set DEV FILE VALUE / sim_get DEV FILE
sim_set() { echo "$3" >"$SIM_DBG/$1/$2"; }
sim_get() {
    local line
    while IFS= read -r line; do echo "$line"; done <"$SIM_DBG/$1/$2"
}

# The helpers below use bash builtins only: every exec is expensive in a TCG guest.

# The TUI run in tmux on the socket TUI_SOCK: tui_screen prints its screen, tui_shows PATTERN
# says whether it shows PATTERN (grep), wait_screen PATTERN [SECS] waits until it does.
tui_screen() { tmux -S "$TUI_SOCK" capture-pane -p; }
tui_shows() { tui_screen | grep -q -- "$1"; }
wait_screen() {
    wait_for "${2:-20}" tui_shows "$1" || { tui_screen; fail "the screen never showed '$1'"; }
    ok "screen shows '$1'"
}

# The QT2025's firmware, a file of our own: a deterministic pattern as large as its driver takes
# (16 KiB + 8 KiB). The kernel opens firmware paths from init's root, which need not be the
# tests' (the VM runs them chrooted): the file goes there through /proc/1/root.
FIRMWARE_PATH=/sys/module/firmware_class/parameters/path
QT2025_FW_DIR=/proc/1/root/tmp/phytrace-qt2025
QT2025_FW=$QT2025_FW_DIR/qt2025-2.0.3.3.fw

# qt2025_firmware: writes QT2025_FW and points the kernel's firmware path at its directory.
qt2025_firmware() {
    [[ -e $FIRMWARE_PATH ]] || fail "no $FIRMWARE_PATH: the kernel lacks CONFIG_FW_LOADER"
    OLD_FIRMWARE_PATH=$(<"$FIRMWARE_PATH")
    mkdir -p "$QT2025_FW_DIR"
    python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + (i >> 8) + 1) & 0xff for i in range(24576)))' >"$QT2025_FW"
    printf '%s' "${QT2025_FW_DIR#/proc/1/root}" >"$FIRMWARE_PATH"
}

# qt2025_firmware_remove: the file gone, the kernel's firmware path as it was.
qt2025_firmware_remove() {
    if [[ -n ${OLD_FIRMWARE_PATH+set} ]]; then printf '%s' "$OLD_FIRMWARE_PATH" >"$FIRMWARE_PATH"; fi
    rm -rf "$QT2025_FW_DIR"
}

# sim_info DEV KEY: one field of the info file (state, driver, phy_speed, ...).
sim_info() {
    local line
    while IFS= read -r line; do
        if [[ $line == "$2: "* ]]; then
            echo "${line#*: }"
            return 0
        fi
    done <"$SIM_DBG/$1/info"
}

# counter DEV REG COLUMN: COLUMN is reads, writes, rd_err or wr_err; REG a name (BMSR) or 0x01.
counter() {
    local -a f hdr
    local i col=-1
    {
        read -r -a hdr
        for i in "${!hdr[@]}"; do [[ ${hdr[i]} == "$3" ]] && col=$i; done
        while read -r -a f; do
            if [[ ${f[0]} == "$2" || ${f[1]^^} == "${2^^}" ]]; then
                ((col >= 0)) && echo "${f[col]}"
                return 0
            fi
        done
    } <"$SIM_DBG/$1/counters"
}

# counter_total DEV KEY: total_reads, total_writes, resets, resets_ignored, aneg_restarts.
counter_total() {
    local k v
    while read -r k v; do
        if [[ $k == "$2" ]]; then
            echo "$v"
            return 0
        fi
    done <"$SIM_DBG/$1/counters"
}

reset_counters() { echo 0 >"$SIM_DBG/counters"; }

# --- links ---

link_up() { local d; for d in "$@"; do ip link set dev "$d" up; done; }
link_down() { local d; for d in "$@"; do ip link set dev "$d" down; done; }

# netfile DEV FILE: /sys/class/net/DEV/FILE, or "?" (e.g. speed while the link is down).
netfile() {
    local v
    { read -r v <"/sys/class/net/$1/$2"; } 2>/dev/null || v="?"
    echo "$v"
}
carrier() { netfile "$1" carrier; }
speed() { netfile "$1" speed; }
duplex() { netfile "$1" duplex; }

# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
    local secs=$1 i
    shift
    for ((i = 0; i < secs * 10; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    "$@"
}

is_carrier() { [[ $(carrier "$1") == "$2" ]]; }
is_state() { [[ $(sim_info "$1" state) == "$2" ]]; }
is_mode() { [[ $(carrier "$1") == 1 && $(speed "$1") == "$2" && $(duplex "$1") == "$3" ]]; }

# wait_carrier DEV 1|0 [TIMEOUT]
wait_carrier() {
    wait_for "${3:-10}" is_carrier "$1" "$2" ||
        fail "$1: carrier did not become $2 within ${3:-10} s (state $(sim_info "$1" state))"
}

# wait_mode DEV SPEED DUPLEX [TIMEOUT]: link up at that speed and duplex.
wait_mode() {
    wait_for "${4:-10}" is_mode "$1" "$2" "$3" ||
        fail "$1: expected link up at $2/$3, got carrier $(carrier "$1") $(speed "$1")/$(duplex "$1")"
    ok "$1: link up at $2/$3"
}

# wait_state DEV STATE [TIMEOUT]: phylib state (UP, NOLINK, RUNNING, ERROR, HALTED...).
wait_state() {
    wait_for "${3:-10}" is_state "$1" "$2" ||
        fail "$1: phylib state did not become $2 (is $(sim_info "$1" state))"
}

# The driver bound to a PHY, from sysfs (the phy_driver's name).
bound_driver() {
    local addr
    addr=$(sim_info "$1" addr)
    local link
    link=$(readlink "$MDIO_DEVS/phy_sim-0:$(printf %02x "$addr")/driver")
    echo "${link##*/}"
}

# The module behind that driver.
bound_module() {
    local drv
    drv=$(bound_driver "$1")
    drv=$(readlink "/sys/bus/mdio_bus/drivers/$drv/module")
    echo "${drv##*/}"
}

# record KEY VALUE: observable outcomes, compared between the drivers by compare_outcomes.
record() { echo "$1 $2" >>"$PHYTRACE_OUT/$TEST_NAME.$CUR_DRIVER.outcome"; }

start_outcomes() { local d; for d in $PHYTRACE_DRIVERS; do rm -f "$PHYTRACE_OUT/$TEST_NAME.$d.outcome"; done; }

# Fails unless every driver recorded the same outcomes.
compare_outcomes() {
    local first="" d
    for d in $PHYTRACE_DRIVERS; do
        if [[ -z $first ]]; then first=$d; continue; fi
        if ! diff -u "$PHYTRACE_OUT/$TEST_NAME.$first.outcome" "$PHYTRACE_OUT/$TEST_NAME.$d.outcome"; then
            fail "drivers $first and $d differ (see diff above)"
        fi
    done
    [[ -z $first ]] || ok "same observable outcome with: $PHYTRACE_DRIVERS"
}

ensure_debugfs

# --- phytrace's footprint in the kernel ---

# probes_left: phytrace's kprobes, tracefs probe events and BPF programs still in the kernel.
# armed_probes: phytrace's kprobes that can fire and its BPF programs.
armed_probes() {
    grep -E '__mdiobus_(read|write)|_callback' /sys/kernel/debug/kprobes/list | grep -v '\[DISABLED\]' || true
    bpftool prog show 2>/dev/null | grep -E 'name (callback_e|mdio_(read|write)_e|selftest_e|module_load)' || true
}
# probes_left: everything of phytrace in the kernel, event definitions included.
probes_left() {
    armed_probes
    grep -E '__mdiobus_(read|write)|_callback' /sys/kernel/tracing/kprobe_events || true
}

# assert_no_probes_left WHAT: nothing of phytrace is left in the kernel (freed within 5 s).
no_probes_left() { [[ -z $(probes_left) ]]; }
assert_no_probes_left() {
    wait_for 5 no_probes_left || fail "$1: left in the kernel: $(probes_left)"
}
# assert_nothing_armed WHAT: after a SIGKILL, phytrace's kprobe event definitions stay (disabled,
# removed by the next phytrace), but nothing of it fires and no program is left.
nothing_armed() { [[ -z $(armed_probes) ]]; }
assert_nothing_armed() {
    wait_for 5 nothing_armed || fail "$1: armed in the kernel: $(armed_probes)"
}

# rss_kib PID / fds PID: resident memory and open file descriptors of a process.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# result JSON_FIELDS: appends {"test":"NAME",JSON_FIELDS} to $PHYTRACE_OUT/results.jsonl, the
# figures `cargo xtask soak` puts in docs/reliability.md.
result() { echo "{\"test\":\"$TEST_NAME\",$1}" >>"$PHYTRACE_OUT/results.jsonl"; }

# --- another user ---

# reachable_copies FILE...: copies each FILE into a new directory that every user can enter and
# prints its path, for running phytrace (and what it reads) as another user: the clone may sit
# where only its owner can go (under /root, mode 700).
reachable_copies() {
    local dir
    dir=$(mktemp -d /tmp/reachable.XXXXXX)
    chmod 755 "$dir"
    cp "$@" "$dir/"
    echo "$dir"
}
