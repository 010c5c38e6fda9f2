# shellcheck shell=bash
# Helpers for the VM tests with the emulated AX88772A USB dongle (ax88772a-emulator, see
# docs/dongle.md). Source after lib.sh. Runs in the guest as root.
#
# Environment: DONGLE_BIN (the emulator, default target/debug/ax88772a-emulator),
# DONGLE_SOCK (its control socket). Modules come from the guest's module tree (/lib/modules).

DONGLE_BIN=${DONGLE_BIN:-$PHYTRACE_ROOT/target/debug/ax88772a-emulator}
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
# kretprobe on __mdiobus_read (their time difference: the read latency the kernel sees).
mdio_trace_start() {
    echo 0 >"$TRACEFS/tracing_on"
    echo >"$TRACEFS/trace"
    grep -q "^p:dongle/rd " "$TRACEFS/kprobe_events" 2>/dev/null || {
        echo 'p:dongle/rd __mdiobus_read addr=%si:u32 reg=%dx:u32' >>"$TRACEFS/kprobe_events"
        echo "r:dongle/rd_ret __mdiobus_read ret=\$retval:s32" >>"$TRACEFS/kprobe_events"
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

# mdio_trace_latency: "n=N median_us=M max_us=X" of __mdiobus_read calls since
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
