# shellcheck shell=bash
# Helpers for the VM tests with the emulated AX88772A USB dongle (ax88772a-emulator, see
# docs/dongle.md). Source after lib.sh. Runs in the guest as root.
#
# Environment: DONGLE_BIN (the emulator, default $PHYTRACE_TARGET/debug/ax88772a-emulator,
# PHYTRACE_TARGET being cargo's target directory, which `cargo xtask vm` passes),
# DONGLE_SOCK (its control socket). Modules come from the guest's module tree (/lib/modules).

DONGLE_BIN=${DONGLE_BIN:-${PHYTRACE_TARGET:-$PHYTRACE_ROOT/target}/debug/ax88772a-emulator}
DONGLE_SOCK=${DONGLE_SOCK:-/run/ax88772a-emulator-$$.sock}
DONGLE_EVENTS=$PHYTRACE_OUT/dongle-$$.events # the emulator's stdout: one JSON event a line
DONGLE_LOG=$PHYTRACE_OUT/dongle-$$.log       # its stderr
DONGLE_PID=""

# The Asix PHY driver modprobe does not load by alias (both, outside the dongle tests).
ASIX_BLACKLIST=/run/modprobe.d/phytrace-asix.conf

# dongle_modules_load [PHY_DRIVER]: as on a real system. Only the USB host and gadget side
# (dummy_hcd, raw_gadget) is loaded here, by modprobe from the guest's module tree; at plug-in
# the uevent helper loads asix (and usbnet, phylink, mii) by the device's modalias, and phylib's
# request_module loads the PHY driver by the PHY's mdio: alias. PHY_DRIVER (c: the in-tree
# ax88796b, rust: our ax88796b_rust) is the one /run/modprobe.d lets that alias load.
dongle_modules_load() {
    local flavour=${1:-c}
    [[ -n ${DRIVER_MOD[$flavour]:-} ]] || fail "dongle_modules_load: PHY driver must be c or rust, not $flavour"
    local other=${DRIVER_MOD[c]}
    [[ $flavour == c ]] && other=${DRIVER_MOD[rust]}
    echo "blacklist $other" >"$ASIX_BLACKLIST"
    modprobe dummy_hcd || fail "modprobe dummy_hcd failed"
    if modprobe -q raw_gadget; then
        [[ -c /dev/raw-gadget ]] || wait_for 5 test -c /dev/raw-gadget || fail "/dev/raw-gadget did not appear"
        return 0
    fi
    # A kernel without raw-gadget (Debian's): the emulator's FunctionFS backend, on configfs.
    if ! modprobe libcomposite || ! modprobe usb_f_fs; then
        fail "neither raw_gadget nor libcomposite + usb_f_fs could be loaded"
    fi
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config ||
        fail "cannot mount configfs"
    [[ -d /sys/kernel/config/usb_gadget ]] || fail "no /sys/kernel/config/usb_gadget"
}

# The Asix PHY driver this kernel ships (c or rust): ax88796b_rust where the kernel has Rust, else
# the C ax88796b (Debian 13).
kernel_phy_driver() { if modinfo -n "${DRIVER_MOD[rust]}" >/dev/null 2>&1; then echo rust; else echo c; fi; }

# The emulator's backend on this kernel: raw-gadget or functionfs.
dongle_backend() { if [[ -c /dev/raw-gadget ]]; then echo raw-gadget; else echo functionfs; fi; }

# Removes what the dongle loaded (asix and its PHY driver included; phylink has a module_init
# and no module_exit: it stays), and lets neither Asix PHY driver load by alias again.
dongle_modules_unload() {
    local m
    for m in asix usbnet mii ax88796b ax88796b_rust raw_gadget usb_f_fs libcomposite dummy_hcd; do
        module_loaded "$m" || continue
        rmmod "$m" ||
            echo "[$TEST_NAME] warning: cannot unload $m: $(lsmod | grep "^$m ")" >&2
    done
    printf 'blacklist %s\nblacklist %s\n' "${DRIVER_MOD[c]}" "${DRIVER_MOD[rust]}" >"$ASIX_BLACKLIST"
}

# dongle_test_begin: what a dongle test does first. The emulator must be built; on exit, failed
# or not, the emulator stops, the MDIO tracepoint and kprobes go and the dongle's modules are
# unloaded (after what the test adds with cleanup_first).
dongle_test_begin() {
    trap_cleanup
    cleanup_also "dongle_stop; mdio_trace_remove; dongle_modules_unload"
    [[ -x $DONGLE_BIN ]] || fail "$DONGLE_BIN missing: cargo build -p ax88772a-emulator"
}

# dongle_start [RUN OPTIONS...]: starts the emulator in the background, waits for its socket.
dongle_start() {
    : >"$DONGLE_EVENTS"
    "$DONGLE_BIN" run --socket "$DONGLE_SOCK" "$@" >"$DONGLE_EVENTS" 2>"$DONGLE_LOG" &
    DONGLE_PID=$!
    wait_for 10 dongle_has_event started || fail "emulator did not start: $(cat "$DONGLE_LOG")"
}

# Stops the emulator (SIGTERM: the kernel closes raw-gadget, the host sees an unplug).
dongle_stop() {
    [[ -n $DONGLE_PID ]] || return 0
    kill "$DONGLE_PID" 2>/dev/null || true
    wait "$DONGLE_PID" 2>/dev/null || true
    DONGLE_PID=""
    rm -f "$DONGLE_SOCK"
    wait_for 15 no_dongle_netdev || echo "[$TEST_NAME] warning: the dongle's netdev outlived the emulator" >&2
}

# dongle_ctl WORDS...: one control command; its JSON result on stdout.
dongle_ctl() { "$DONGLE_BIN" ctl --socket "$DONGLE_SOCK" "$@"; }

# dongle_has_event NAME: the emulator printed {"event":"NAME",...}.
dongle_has_event() { grep -q "\"event\":\"$1\"" "$DONGLE_EVENTS"; }

# dongle_event_count NAME
dongle_event_count() { grep -c "\"event\":\"$1\"" "$DONGLE_EVENTS" || true; }

# dongle_status FILTER: one field of `ctl status` (a jq-like path in python syntax, e.g.
# '["mdio"]["phy_reads"]').
dongle_status() {
    dongle_ctl status | python3 -c "import json,sys; v=json.load(sys.stdin); print(json.dumps(v$1) if isinstance(v$1,(dict,list)) else v$1)"
}

# sysread FILE: the first line of FILE, or nothing if it is gone (a failed `$(<FILE)` would
# end the script under `set -e` even inside a condition, and sysfs files vanish on unplug).
sysread() {
    local v=""
    { read -r v <"$1"; } 2>/dev/null || true
    echo "$v"
}

# The netdev asix registered for the dongle (via the USB device 0b95:772a), or nothing.
dongle_netdev() {
    local d
    for d in /sys/class/net/*; do
        if [[ $(sysread "$d/device/../idVendor") == 0b95 && $(sysread "$d/device/../idProduct") == 772a ]]; then
            echo "${d##*/}"
            return 0
        fi
    done
    return 1
}
has_dongle_netdev() { dongle_netdev >/dev/null; }
no_dongle_netdev() { ! dongle_netdev >/dev/null; }

# The dongle's MDIO bus id (usb-BUS:DEV) from the netdev's PHY, or nothing.
dongle_mdio_bus() {
    local d
    for d in "$MDIO_DEVS"/usb-*:10; do
        [[ -e $d ]] && { basename "${d%:10}"; return 0; }
    done
    return 1
}
has_dongle_phy() { dongle_mdio_bus >/dev/null; }

# wait_dongle_netdev [TIMEOUT]: the dongle enumerated, asix bound and its netdev registered.
wait_dongle_netdev() {
    wait_for "${1:-30}" has_dongle_netdev || fail "no netdev for 0b95:772a within ${1:-30} s"
}

# dongle_mii_read DEV REG: one SIOCGMIIREG (phylib → mdiobus_read → asix → the emulator);
# prints the value (0xVVVV) or "errno N" as the kernel returned it.
dongle_mii_read() {
    python3 - "$1" "$2" <<'PY'
import fcntl, socket, struct, sys
dev, reg = sys.argv[1], int(sys.argv[2], 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def ioctl(cmd, phy=0):
    req = struct.pack("16sHHHH", dev.encode(), phy, reg, 0, 0).ljust(40, b"\0")
    return struct.unpack("16sHHHH", fcntl.ioctl(s.fileno(), cmd, req)[:24])
phy = ioctl(0x8947)[1]
try:
    print("0x%04x" % ioctl(0x8948, phy)[4])
except OSError as e:
    print("errno %d" % e.errno)
PY
}

# --- kernel-side MDIO observation (tracefs) ---

TRACEFS=/sys/kernel/tracing

# mdio_trace_start: clears the trace buffer and enables mdio:mdio_access plus a kprobe and
# kretprobe on asix's MDIO bus read op, asix_mdio_bus_read (their time difference: the read
# latency the kernel sees). The op, not phylib's __mdiobus_read: every read reaches the bus's
# op through its function pointer, whereas a compiler may inline __mdiobus_read into its
# callers in mdio_bus.c (clang does on 7.3: mdiobus_read, which phy_read and the MII ioctls
# use, then never calls it). asix must be loaded.
mdio_trace_start() {
    echo 0 >"$TRACEFS/tracing_on"
    echo >"$TRACEFS/trace"
    grep -q "^p:dongle/rd " "$TRACEFS/kprobe_events" 2>/dev/null || {
        echo 'p:dongle/rd asix:asix_mdio_bus_read addr=%si:u32 reg=%dx:u32' >>"$TRACEFS/kprobe_events"
        echo "r:dongle/rd_ret asix:asix_mdio_bus_read ret=\$retval:s32" >>"$TRACEFS/kprobe_events"
    }
    echo 1 >"$TRACEFS/events/mdio/mdio_access/enable"
    echo 1 >"$TRACEFS/events/dongle/enable"
    echo 1 >"$TRACEFS/tracing_on"
}

# mdio_trace_stop: stops tracing (the buffer stays for mdio_trace_* readers).
mdio_trace_stop() {
    echo 0 >"$TRACEFS/tracing_on"
    echo 0 >"$TRACEFS/events/mdio/mdio_access/enable"
    echo 0 >"$TRACEFS/events/dongle/enable"
}

# mdio_trace_remove: removes the kprobe events.
mdio_trace_remove() {
    mdio_trace_stop 2>/dev/null || true
    echo '-:dongle/rd' >>"$TRACEFS/kprobe_events" 2>/dev/null || true
    echo '-:dongle/rd_ret' >>"$TRACEFS/kprobe_events" 2>/dev/null || true
}

# mdio_trace_counts BUS ADDR: "REG reads writes" lines (decimal REG) of mdio_access events on
# BUS at ADDR (e.g. 0x10) since mdio_trace_start, for registers with any access.
mdio_trace_counts() {
    python3 - "$1" "$2" "$TRACEFS/trace" <<'PY'
import collections, sys
bus, addr, path = sys.argv[1], int(sys.argv[2], 0), sys.argv[3]
rd, wr = collections.Counter(), collections.Counter()
for line in open(path):
    f = line.split()
    if "mdio_access:" not in f:
        continue
    i = f.index("mdio_access:")
    if f[i + 1] != bus or int(f[i + 3].split(":")[1], 16) != addr:
        continue
    reg = int(f[i + 4].split(":")[1], 16)
    (rd if f[i + 2] == "read" else wr)[reg] += 1
for reg in sorted(set(rd) | set(wr)):
    print(reg, rd[reg], wr[reg])
PY
}

# mdio_trace_latency: "n=N median_us=M max_us=X" of the bus's read op calls since
# mdio_trace_start (kprobe to kretprobe, per task).
mdio_trace_latency() {
    python3 - "$TRACEFS/trace" <<'PY'
import sys
start, lat = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    ev = next((x for x in f if x in ("rd:", "rd_ret:")), None)
    ts = next((x for x in f if x.endswith(":") and x[:-1].replace(".", "", 1).isdigit()), None)
    if ev is None or ts is None:
        continue
    task, t = f[0], float(ts[:-1])
    if ev == "rd:":
        start[task] = t
    elif task in start:
        lat.append((t - start.pop(task)) * 1e6)
lat.sort()
if lat:
    print("n=%d median_us=%.0f max_us=%.0f" % (len(lat), lat[(len(lat) - 1) // 2], lat[-1]))
else:
    print("n=0 median_us=0 max_us=0")
PY
}

# dongle_mdio_counts ADDR: the emulator's "REG reads writes" lines for PHY address ADDR, in
# mdio_trace_counts' format.
dongle_mdio_counts() {
    dongle_ctl status | python3 -c '
import json, sys
addr = int(sys.argv[1], 0)
for e in json.load(sys.stdin)["mdio"]["regs"]:
    if e["addr"] == addr and e["reads"] + e["writes"]:
        print(e["reg"], e["reads"], e["writes"])
' "$1"
}

# dongle_inject_mii DEV read REG COMMAND... / dongle_inject_mii DEV write REG VALUE COMMAND...:
# waits for one of phylib's 1 s polls to pass (the emulator's READ_MII_REG count moves, then
# stays), then
# sends COMMAND to the emulator and at once, from the same process, reads REG with SIOCGMIIREG
# (prints the value) or writes it with SIOCSMIIREG (prints "ok"), or prints "errno N" as the
# kernel returned it. So the injected fault meets this access, not the next poll.
dongle_inject_mii() {
    local dev=$1 op=$2 reg=$3 val=0
    shift 3
    if [[ $op == write ]]; then val=$1; shift; fi
    python3 - "$DONGLE_SOCK" "$dev" "$op" "$reg" "$val" "$*" <<'PY'
import fcntl, json, socket, struct, sys, time
path, dev, op, reg, val, cmd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 0), int(sys.argv[5], 0), sys.argv[6]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def ioctl(c, phy=0):
    req = struct.pack("16sHHHH", dev.encode(), phy, reg, val, 0).ljust(40, b"\0")
    return struct.unpack("16sHHHH", fcntl.ioctl(s.fileno(), c, req)[:24])
phy = ioctl(0x8947)[1]
def ctl(line):
    u = socket.socket(socket.AF_UNIX)
    u.connect(path)
    u.sendall((line + "\n").encode())
    reply = json.loads(u.makefile().readline())
    if not reply["ok"]:
        sys.exit("emulator refused %r: %s" % (line, reply["error"]))
    return reply["result"]
# One poll is a burst of accesses (BMSR, BMCR, LPA, ...): wait for one to start, then for the
# bus to be quiet for 150 ms (an access takes about 36 ms under TCG).
reads = lambda: ctl("status")["requests"].get("READ_MII_REG", 0)
n, t0 = reads(), time.monotonic()
while reads() == n and time.monotonic() - t0 < 3:
    time.sleep(0.02)
n, quiet = reads(), time.monotonic()
while time.monotonic() - quiet < 0.15 and time.monotonic() - t0 < 5:
    time.sleep(0.03)
    m = reads()
    if m != n:
        n, quiet = m, time.monotonic()
ctl(cmd)
try:
    if op == "read":
        print("0x%04x" % ioctl(0x8948, phy)[4])
    else:
        ioctl(0x8949, phy)
        print("ok")
except OSError as e:
    print("errno %d" % e.errno)
PY
}

# What a failing test prints (replaces lib.sh's, which shows the simulator): the dongle's
# netdev and PHY as the kernel sees them, the emulator's status and log, the kernel log.
dump_state() {
    local dev
    if dev=$(dongle_netdev); then
        echo "--- $dev: carrier $(carrier "$dev") speed $(speed "$dev") duplex $(duplex "$dev")"
    fi
    if [[ -n $DONGLE_PID ]]; then
        echo "--- emulator status"
        dongle_ctl status 2>&1 || true
    fi
    echo "--- emulator log (last 20 lines)"
    tail -20 "$DONGLE_LOG" 2>/dev/null || true
    echo "--- dmesg (since the last mark)"
    dmesg_since_mark | tail -40 || true
}

# --- the dongle's events in a capture (CAPTURE.json: `phytrace dump --format json`) ---

# usb_json CAPTURE: the capture's events of the dongle's PHYs (bus usb-*), as JSON lines.
usb_json() { jq -c 'select(.phy.bus // "" | startswith("usb-"))' "$1.json"; }

# mac_modes CAPTURE: the distinct speed/duplex/pause of the dongle's mac_link_up events.
mac_modes() {
    usb_json "$1" | jq -r 'select(.kind == "mac" and .change.op == "link_up") | .change |
        "\(.speed)/\(.duplex)/tx_pause=\(.tx_pause)/rx_pause=\(.rx_pause)"' | sort -u | tr '\n' ' '
}

# mac_story CAPTURE: the dongle's MAC side in order (phylink_resolve left out), repeats merged.
mac_story() {
    usb_json "$1" | jq -r 'select(.kind == "mac" and .change.op != "resolve") | .change |
        if .op == "carrier" then (if .up then "carrier_on" else "carrier_off" end) else .op end' |
        uniq | tr '\n' ' '
}

# capture_mdio_counts CAPTURE BUS: "REG reads writes" lines (decimal, sorted) of the successful
# MDIO accesses of BUS:10 in the capture, in mdio_trace_counts' format.
capture_mdio_counts() {
    jq -r --arg bus "$2" 'select(.kind == "mdio" and .error == null and .phy.bus == $bus and .phy.addr == 16) |
        "\(.reg) \(.op)"' "$1.json" |
        awk '{ n[$1] += 0; if ($2 == "read") r[$1]++; else w[$1]++ }
             END { for (k in n) print k, r[k] + 0, w[k] + 0 }' | sort -n
}

# scoped_spec SPEC BUS OUT: the shipped specs/SPEC.spec with every rule scoped to the PHY
# BUS:10, written to OUT. phylink_resolve and carrier events recorded before phylink has a PHY
# (`phy: null`) would otherwise make a PHY of their own in `check`, on which "up, down and up
# again" fails (seen on Debian's 7.3, depending on timing).
scoped_spec() {
    sed -E "s/^(rule \"[^\"]*\"):/\1 for phy \"$2:10\":/" "$PHYTRACE_ROOT/specs/$1.spec" >"$3"
}

# --- phytrace's TUI in tmux, beside a dongle test ---

TUI_SOCK=$PHYTRACE_OUT/tmux-tui-$$.sock
TUI_EXIT=$PHYTRACE_OUT/tui-exit-$$

# tui_start COLUMNS ROWS: `phytrace tui` in a detached tmux session of that size; its exit
# status goes to $TUI_EXIT.
tui_start() {
    rm -f "$TUI_EXIT"
    tmux -S "$TUI_SOCK" new-session -d -x "$1" -y "$2" "$PHYTRACE_BIN tui; echo \$? >$TUI_EXIT"
}
tui_screen() { tmux -S "$TUI_SOCK" capture-pane -p; }
# tui_shows BUS: a row for the PHY at BUS:10 with the AX88772A's PHY ID.
tui_shows() { tui_screen | grep -q -- "$1:10 .*003b1861"; }
tui_running() { [[ ! -e $TUI_EXIT ]] && tmux -S "$TUI_SOCK" has-session 2>/dev/null; }
# tui_quit: `q`; the TUI must end with status 0 within 10 s.
tui_quit() {
    tmux -S "$TUI_SOCK" send-keys q
    wait_for 10 test -s "$TUI_EXIT" || fail "the TUI did not quit"
    expect_eq "the TUI's exit status" 0 "$(<"$TUI_EXIT")"
    rm -f "$TUI_EXIT"
}
tui_kill() { tmux -S "$TUI_SOCK" kill-server 2>/dev/null || true; }

# dongle_plug_link_up [RUN OPTIONS...]: plugs the emulated dongle in (dongle_start's options),
# waits for its netdev and its PHY, sets DONGLE_BUS and DONGLE_DEV, and brings the link up at
# 100/full.
dongle_plug_link_up() {
    dongle_start "$@"
    wait_dongle_netdev 30
    wait_for 10 has_dongle_phy || fail "no PHY on the dongle's MDIO bus"
    DONGLE_BUS=$(dongle_mdio_bus)
    DONGLE_DEV=$(dongle_netdev)
    ip link set dev "$DONGLE_DEV" up
    wait_mode "$DONGLE_DEV" 100 full 30
}

# dongle_cable_flap: the cable out until the carrier drops, then in until the link is up at
# 100/full again.
dongle_cable_flap() {
    dongle_ctl cable out >/dev/null
    wait_carrier "$DONGLE_DEV" 0
    dongle_ctl cable in >/dev/null
    wait_mode "$DONGLE_DEV" 100 full 30
}

# --- the dongle scenario every kernel records (the cross-kernel twin: xtask/src/twin.rs) ---

# dongle_scenario CAPTURE [RECORD ARGS...]: with the dongle's modules loaded (dongle_modules_load
# rust), `phytrace record` from before the plug-in (the PHY driver loads by alias at plug-in)
# through link up at 100/full with a partner with pause, a cable flap, a new partner with
# 10/full only (the link drops and renegotiates to 10/full without pause) and link down. What
# the kernel and the emulator say of the same run is kept beside the capture: CAPTURE.tracepoint
# and CAPTURE.emulator (MDIO of the dongle's PHY per register: the kernel's mdio:mdio_access and
# the emulator's counters), CAPTURE.sysfs (the netdev's carrier_up_count and
# carrier_down_count, then its speed and duplex after each step); CAPTURE.json is the decoded
# capture. Sets DONGLE_BUS and DONGLE_DEV; the emulator still runs (dongle_stop).
dongle_scenario() {
    local cap=$1 t0 t1 t2 modes
    shift
    mdio_trace_start
    start_record "$cap" "$@"
    t0=${EPOCHREALTIME/./}
    dongle_start --an-delay-ms 100 --partner all,pause
    wait_dongle_netdev 30
    t1=${EPOCHREALTIME/./}
    DONGLE_DEV=$(dongle_netdev)
    wait_for 10 has_dongle_phy || fail "no PHY on the dongle's MDIO bus"
    DONGLE_BUS=$(dongle_mdio_bus)
    ip link set dev "$DONGLE_DEV" up
    wait_mode "$DONGLE_DEV" 100 full 30
    t2=${EPOCHREALTIME/./}
    ok "plug-in to netdev $(((t1 - t0) / 1000)) ms, link up $(((t2 - t1) / 1000)) ms later"
    result "\"plug_to_netdev_ms\":$(((t1 - t0) / 1000)),\"up_to_link_ms\":$(((t2 - t1) / 1000))"
    modes="$(speed "$DONGLE_DEV")/$(duplex "$DONGLE_DEV")"
    dongle_cable_flap
    modes+=" $(speed "$DONGLE_DEV")/$(duplex "$DONGLE_DEV")"
    dongle_ctl partner 10full >/dev/null
    wait_mode "$DONGLE_DEV" 10 full 30
    modes+=" $(speed "$DONGLE_DEV")/$(duplex "$DONGLE_DEV")"
    # Synchronous: phylib's polling has stopped when it returns.
    ip link set dev "$DONGLE_DEV" down
    echo "$(netfile "$DONGLE_DEV" carrier_up_count) $(netfile "$DONGLE_DEV" carrier_down_count) $modes" >"$cap.sysfs"
    dongle_mdio_counts 0x10 | sort -n >"$cap.emulator"
    stop_record "$cap"
    mdio_trace_stop
    mdio_trace_counts "$DONGLE_BUS" 0x10 | sort -n >"$cap.tracepoint"
    events_json "$cap"
}

# dongle_scenario_check CAPTURE: what must hold of dongle_scenario's capture on every kernel.
# MDIO: the capture's accesses of the dongle's PHY equal, register by register, the kernel's
# mdio:mdio_access and the emulator's counters. Carrier: the capture's netif_carrier_on/off
# calls on the netdev, repeats merged, are as many changes as the kernel counted (a driver may
# call them more than once per change: said, not hidden). The MAC side follows the link
# (link_up, carrier_on, link_down, carrier_off) at the modes sysfs showed, and so does the PHY's
# read_status where callbacks were traced; the dongle's first callback is the probe-time
# soft_reset; the shipped specs hold on its PHY.
dongle_scenario_check() {
    local cap=$1 bus=$DONGLE_BUS dev=$DONGLE_DEV
    [[ -s $cap.emulator ]] || fail "the emulator counted no MDIO access"
    expect_eq "MDIO per register (reg reads writes): mdio:mdio_access vs the emulator" \
        "$(<"$cap.emulator")" "$(<"$cap.tracepoint")"
    expect_eq "MDIO per register (reg reads writes): phytrace vs mdio:mdio_access" \
        "$(<"$cap.tracepoint")" "$(capture_mdio_counts "$cap" "$bus")"
    result "\"mdio_accesses\":$(awk '{ s += $2 + $3 } END { print s }' "$cap.tracepoint")"

    local ups downs modes calls changes
    read -r ups downs modes <"$cap.sysfs"
    expect_eq "the link's modes in sysfs (up, after the flap, after the partner change)" \
        "100/full 100/full 10/full" "$modes"
    # The kernel counts a call that flips the carrier, once the netdev is registered: a new
    # netdev has carrier, calls before registration (its name still a pattern, usb%d) flip it
    # uncounted, a call that leaves it as it was counts nothing. The capture's calls replayed so
    # must give the kernel's counts.
    calls=$(jq -r --arg dev "$dev" 'select(.kind == "mac" and .change.op == "carrier" and
        (.change.netdev == $dev or (.change.netdev | contains("%")))) |
        "\(.change.netdev) \(if .change.up then "on" else "off" end)"' "$cap.json")
    changes=$(awk -v dev="$dev" 'BEGIN { state = "on"; n["on"] = 0; n["off"] = 0 }
        $2 != state { state = $2; if ($1 == dev) n[state]++ } END { print n["on"], n["off"] }' <<<"$calls")
    expect_eq "carrier changes (up down): the capture's netif_carrier_on/off calls replayed vs the kernel's carrier_up_count/carrier_down_count" \
        "$ups $downs" "$changes"
    calls=$(grep -c " " <<<"$calls" || true)
    log "carrier: $calls netif_carrier_on/off calls for $((ups + downs)) changes"
    result "\"carrier_calls\":$calls,\"carrier_changes\":$((ups + downs))"

    local story
    story=$(mac_story "$cap")
    log "MAC side: $story"
    for step in link_up carrier_on link_down carrier_off; do
        [[ " $story" == *" $step "* ]] || fail "no $step of the dongle's MAC in the capture: $story"
    done
    expect_eq "mac_link_up's modes (partner all,pause, then 10full)" \
        "10/full/tx_pause=false/rx_pause=false 100/full/tx_pause=true/rx_pause=true " "$(mac_modes "$cap")"
    expect_eq "the last mac_link_up" "10/full" "$(usb_json "$cap" |
        jq -r 'select(.kind == "mac" and .change.op == "link_up") | "\(.change.speed)/\(.change.duplex)"' | tail -n 1)"

    local callbacks specs=(dongle)
    callbacks=$(usb_json "$cap" | jq -r 'select(.kind == "callback_enter") | .callback.name' | wc -l)
    if ((callbacks == 0)); then
        echo "SKIP: callbacks: record traced none on this kernel ($(jq -r '.callback_probes // "?"' "$cap.status" | head -n 1) probes)"
    else
        expect_eq "the dongle's first callback" soft_reset \
            "$(usb_json "$cap" | jq -r 'select(.kind == "callback_enter") | .callback.name' | head -n 1)"
        # From the first link up (before it, how many polls see the link down depends on timing).
        expect_eq "the link read_status reported, in order (repeats merged)" "100/full down 100/full down 10/full" \
            "$(usb_json "$cap" | jq -r 'select(.kind == "callback_exit" and .callback.name == "read_status") |
                if .link.up then "\(.link.speed)/\(.link.duplex)" else "down" end' |
                uniq | sed '1{/^down$/d}' | paste -sd ' ')"
        ok "$callbacks callbacks of the dongle's PHY recorded"
        specs+=(ax88796b)
    fi
    for spec in "${specs[@]}"; do
        scoped_spec "$spec" "$bus" "$cap.$spec.spec"
        "$PHYTRACE_BIN" check --spec "$cap.$spec.spec" "$cap" || fail "specs/$spec.spec fails on the dongle's PHY"
        ok "specs/$spec.spec holds on $bus:10"
    done
}
