# Assertions on a capture for the VM tests, over `phytrace dump --format json` read with
# `jq -s` (the events as one array, in capture order). Each check yields the line the test
# reports, or fails with error(MESSAGE). Callback order and nesting rules are `phytrace check`
# specs instead (record_lib.sh: check_rules); these are the facts the rule language does not
# state: session markers, identities, counts against the simulator, attribution, link modes.

def of($bus; $addr): select(.phy.bus == $bus and .phy.addr == $addr);
def show: .[:10] | map("\n    " + tojson) | add // "";

# One step of the per-thread callback stacks ({TID: [entry events]}) rebuilt from entries and
# returns: an entry is pushed, a return pops its own entry when it is the innermost one.
def stack_step($e):
  ($e.tid | tostring) as $t
  | if $e.kind == "callback_enter" then .[$t] += [$e]
    elif $e.kind == "callback_exit" and (.[$t] // [] | last | .callback.name) == $e.callback.name then .[$t] |= .[:-1]
    else . end;

# The first `attached` of MODULE precedes every callback.
def attached($mod):
  (map(select(.kind == "attached" and .module == $mod and (.reattached | not))) | first) as $a
  | (map(select(.kind == "callback_enter")) | first) as $cb
  | if $a == null then error("no attachment of \($mod)" + (map(select(.kind | test("ached"))) | show))
    elif $cb != null and $cb.ts_ns < $a.ts_ns then error("a callback precedes the attachment" + ([$cb, $a] | show))
    else "\($mod) attached with \($a.callbacks) callbacks" end;

# MODULE was attached again after a reload, and callbacks were recorded after that.
def reattached($mod):
  (map(select(.kind == "attached" and .module == $mod and .reattached)) | first) as $a
  | if $a == null then error("no re-attachment of \($mod)") else
      (map(select(.kind == "callback_enter" and .ts_ns > $a.ts_ns)) | length) as $n
      | if $n == 0 then error("no callback recorded after \($mod) was re-attached")
        else "\($mod) re-attached with \($a.callbacks) callbacks; \($n) callback entries after it" end
    end;

def detached($mod):
  if any(.[]; .kind == "detached" and .module == $mod) then "\($mod) detached"
  else error("no detachment of \($mod)") end;

# Events of the PHY at BUS:ADDR carry PHY_ID (or 0: bus-scan reads before the phy_device
# exists) and name DRIVER.
def ids($bus; $addr; $phy_id; $driver):
  map(of($bus; $addr)) as $mine
  | ($mine | map(select(.phy.phy_id != 0 and .phy.phy_id != $phy_id))) as $wrong
  | if $mine == [] then error("no events for \($bus):\($addr)")
    elif $wrong != [] then error("\($bus):\($addr): events with another PHY ID than \($phy_id)" + ($wrong | show))
    elif all($mine[]; .phy.driver != $driver) then error("\($bus):\($addr): no event names the driver \($driver)" + ($mine[-3:] | show))
    else "\($bus):\($addr): \($mine | length) events, PHY ID \($phy_id), driver \($driver)" end;

# MDIO reads, writes and their failures per register of BUS:ADDR equal WANT, the simulator's
# counters ({"REG": [reads, writes, rd_err, wr_err]}).
def exactly_once($bus; $addr; $want):
  (reduce (.[] | select(.kind == "mdio") | of($bus; $addr)) as $e ({};
      ($e.reg | tostring) as $r
      | (if $e.op == "read" then 0 else 1 end) as $i
      | .[$r] //= [0, 0, 0, 0]
      | .[$r][$i] += 1
      | if $e.error then .[$r][$i + 2] += 1 else . end)) as $got
  | ([$want, $got] | map(keys) | add | unique | map(select(($want[.] // [0, 0, 0, 0]) != ($got[.] // [0, 0, 0, 0])))) as $bad
  | ([$want[] | .[0] + .[1]] | add // 0) as $total
  | if $bad != [] then
      error("\($bus):\($addr) reg \($bad[0]): the simulator counted reads/writes/rd_err/wr_err \($want[$bad[0]] // [0, 0, 0, 0]), the capture has \($got[$bad[0]] // [0, 0, 0, 0])")
    elif $total == 0 then error("\($bus):\($addr): the simulator counted no accesses")
    else "\($bus):\($addr): all \($total) MDIO accesses the simulator counted are in the capture exactly once" end;

# Every MDIO access with a caller happened while that callback was the innermost one running
# on the same thread (the stack rebuilt from the entries and returns).
def attribution:
  reduce .[] as $e ({stacks: {}, n: 0, bad: null};
      (.stacks[$e.tid | tostring] // [] | map(.callback.name)) as $running
      | if .bad != null then .
        elif $e.kind == "mdio" and $e.caller != null then
          .n += 1
          | if ($running | last) != $e.caller.name then .bad = {event: $e, stack: $running} else . end
        else .stacks |= stack_step($e) end)
  | if .bad != null then
      error("access attributed to \(.bad.event.caller.name) while thread \(.bad.event.tid) runs \(.bad.stack)" + ([.bad.event] | show))
    elif .n == 0 then error("no MDIO access is attributed to a callback")
    else "\(.n) MDIO accesses attributed to the callback running on their thread" end;

# A read_status of BUS:ADDR that read LPA = 0 still reported the link up at SPEED/DUPLEX (the
# AX88772A workaround: the mode comes from BMCR), and none reported it up at another mode.
def lpa_quirk($bus; $addr; $speed; $duplex):
  reduce (.[] | of($bus; $addr)) as $e ({zero: {}, good: 0, bad: null};
      ($e.tid | tostring) as $t
      | if $e.kind == "callback_enter" and $e.callback.name == "read_status" then .zero[$t] = false
        elif $e.kind == "mdio" and $e.op == "read" and $e.reg == 5 and $e.value == 0 and $e.caller.name == "read_status" then .zero[$t] = true
        elif $e.kind == "callback_exit" and $e.callback.name == "read_status" then
          (.zero[$t] // false) as $lpa_zero
          | del(.zero[$t])
          | if ($lpa_zero | not) or ($e.link.up | not) then .
            elif $e.link.speed == $speed and $e.link.duplex == $duplex then .good += 1
            else .bad //= $e end
        else . end)
  | if .bad != null then error("\($bus):\($addr): read_status read LPA=0 and reported \(.bad.link)" + ([.bad] | show))
    elif .good == 0 then error("\($bus):\($addr): no read_status that read LPA=0 reported the link up")
    else "\($bus):\($addr): \(.good) read_status calls read LPA=0 and still reported \($speed)/\($duplex)" end;

def no_loss:
  map(select(.kind == "lost")) as $lost
  | if $lost == [] then "no events lost"
    else error("\($lost | map(.count) | add) events lost" + ($lost | show)) end;

# MODULE was attached COUNT times, detached in between, and each session recorded callbacks.
def sessions($mod; $count):
  . as $events
  | map(select((.kind == "attached" or .kind == "detached") and .module == $mod)) as $marks
  | ($marks | map(.kind)) as $got
  | ([range($count - 1) | "attached", "detached"] + ["attached"]) as $want
  | ([$marks[].ts_ns] + [infinite]) as $bounds
  # bsearch of a time strictly between bounds K and K+1 gives -K-2; sessions start at even K.
  | ([$events[] | select(.kind == "callback_exit") | .ts_ns as $t | -($bounds | bsearch($t)) - 2
      | select(. >= 0 and . % 2 == 0)] | unique) as $busy
  | [range(0; $marks | length; 2) | select(. as $k | $busy | index([$k]) | not)] as $idle
  | [range(1; ($marks | length) - 1; 2) as $k | ($bounds[$k + 1] - $bounds[$k]) / 1e6 | floor] as $gaps
  | if $got[:($want | length)] != $want or ($got | length) > ($want | length) + 1 then
      error("\($mod): expected \($count) sessions alternating attached/detached, got \($got)")
    elif $idle != [] then error("\($mod): \($idle | length) of \($count) sessions recorded no callback" + ([$marks[$idle[]]] | show))
    else "\($mod): \($count) sessions, each with callbacks" + (if $gaps == [] then "" else ", gaps \($gaps | min)-\($gaps | max) ms" end) end;

# Every CPU's records, session events included, in time order.
def cpu_order:
  reduce .[] as $e ({last: {}, bad: null};
      ($e.cpu | tostring) as $c
      | if .bad != null then .
        elif (.last[$c] // 0) > $e.ts_ns then .bad = {event: $e, after: .last[$c]}
        else .last[$c] = $e.ts_ns end)
  | if .bad != null then error("CPU \(.bad.event.cpu): a record stamped \(.bad.event.ts_ns) after one stamped \(.bad.after)" + ([.bad.event] | show))
    else "every CPU's records in time order (\(.last | length) CPUs)" end;

# The pause mode of a mac_link_up change: "tx+rx", "tx", "rx" or "none".
def pause_of: if .tx_pause and .rx_pause then "tx+rx" elif .tx_pause then "tx" elif .rx_pause then "rx" else "none" end;
def mac_op: if .change.op == "carrier" then (if .change.up then "carrier_on" else "carrier_off" end) else .change.op end;

# The first cable flap of the PHY at BUS:ADDR, end to end: the MAC was up (mac_link_up at
# SPEED/DUPLEX with PAUSE, then carrier_on); the cable went out (carrier_off, then
# mac_link_down); while phy_state was NOLINK the PHY was re-initialised over its own MDIO bus
# (BMCR written 0, then with RESET; inside the callback CALLER unless it is null: the C
# driver's callbacks are not traced); and the link came back (mac_link_up at the same mode,
# then carrier_on). Every one of those after the previous one, the BMCR writes between the two
# mac_link_up. The line reported names no driver: it is the same with either.
def cable_flap($bus; $addr; $speed; $duplex; $pause; $caller):
  [.[] | of($bus; $addr)] as $e
  | [range($e | length) as $i | $e[$i] | select(.kind == "mac" and .change.op != "resolve")
      | {i: $i, op: mac_op, change}] as $mac
  | def next($op; $after): $mac | map(select(.op == $op and .i > $after)) | first;
    def mode: "\(.change.speed)/\(.change.duplex) pause \(.change | pause_of)";
  (next("link_up"; -1)) as $up1
  | (if $up1 then next("carrier_on"; $up1.i) else null end) as $on1
  | (if $on1 then next("carrier_off"; $on1.i) else null end) as $off
  | (if $off then next("link_down"; $off.i) else null end) as $down
  | (if $down then next("link_up"; $down.i) else null end) as $up2
  | (if $up2 then next("carrier_on"; $up2.i) else null end) as $on2
  | ($mac | map("\n    \(.op)") | add // " none") as $seen
  | if $on2 == null then
      error("\($bus):\($addr): no mac_link_up, carrier_on, carrier_off, mac_link_down, mac_link_up, carrier_on in that order; MAC events:\($seen)")
    else
      [range($up1.i; $up2.i) as $i | $e[$i] | select(.kind == "mdio" and .op == "write" and .reg == 0
          and .state.name == "NOLINK" and ($caller == null or .caller.name == $caller))] as $w
      | ($w | map(select(.value == 0)) | first) as $zero
      # RESET is bit 15: the value is at least 0x8000.
      | ($w | map(select(.value >= 32768 and .ts_ns >= $zero.ts_ns)) | first) as $reset
      | [$up1, $up2 | mode] as $modes
      | "\($speed)/\($duplex) pause \($pause)" as $want
      | if $zero == null or $reset == null then
          error("\($bus):\($addr): no BMCR write of 0, then with RESET, while NOLINK\(if $caller then " by \($caller)" else "" end) between the two mac_link_up"
            + ([range($up1.i; $up2.i) as $i | $e[$i] | select(.kind == "mdio" and .reg == 0)] | show))
        elif $modes != [$want, $want] then error("\($bus):\($addr): mac_link_up at \($modes), expected \($want) both times")
        else "\($bus):\($addr): cable flap: mac_link_up \($want), carrier_on, carrier_off, mac_link_down; NOLINK re-init over \($bus): BMCR \($zero.value) then \($reset.value)\(if $caller then " (\($caller))" else "" end); mac_link_up \($want), carrier_on"
        end
    end;

# No callback of the PHY at BUS:ADDR is left without its return (per thread, innermost first),
# and at least MIN were called.
def all_returned($bus; $addr; $min):
  reduce (.[] | of($bus; $addr)) as $e ({stacks: {}, n: 0};
      .stacks |= stack_step($e) | if $e.kind == "callback_enter" then .n += 1 else . end)
  | ([.stacks[][]]) as $open
  | if $open != [] then error("\($bus):\($addr): \($open | length) callbacks entered without a return" + ($open | show))
    elif .n < $min then error("\($bus):\($addr): \(.n) callbacks, expected at least \($min)")
    else "\($bus):\($addr): all \(.n) callbacks returned" end;

# Clause 45: the SRAM half a QT2025 access falls in ("sram3", "sram4"), else "DEVAD.REG".
def c45_key:
  if .devad == 3 and .reg >= 32768 and .reg < 49152 then "sram3"
  elif .devad == 4 and .reg >= 32768 and .reg < 40960 then "sram4"
  else "\(.devad).\(.reg)" end;

# Clause 45 reads, writes and their failures of BUS:ADDR per MMD and register (the SRAM per
# half) equal WANT, the simulator's counters (record_lib.sh: simulator_c45_counters); no Clause
# 22 access of it came after the bus scan.
def c45_exactly_once($bus; $addr; $want):
  (reduce (.[] | select(.kind == "mdio" and .devad != null) | of($bus; $addr)) as $e ({};
      ($e | c45_key) as $r
      | (if $e.op == "read" then 0 else 1 end) as $i
      | .[$r] //= [0, 0, 0, 0]
      | .[$r][$i] += 1
      | if $e.error then .[$r][$i + 2] += 1 else . end)) as $got
  | ([$want, $got] | map(keys) | add | unique | map(select(($want[.] // [0, 0, 0, 0]) != ($got[.] // [0, 0, 0, 0])))) as $bad
  | ([$want[] | .[0] + .[1]] | add // 0) as $total
  | if $bad != [] then
      error("\($bus):\($addr) \($bad[0]): the simulator counted reads/writes/rd_err/wr_err \($want[$bad[0]] // [0, 0, 0, 0]), the capture has \($got[$bad[0]] // [0, 0, 0, 0])")
    elif $total == 0 then error("\($bus):\($addr): the simulator counted no Clause 45 accesses")
    else "\($bus):\($addr): all \($total) Clause 45 accesses the simulator counted, per MMD and register, are in the capture exactly once" end;

# The firmware load of the QT2025 at BUS:ADDR, in the capture's order: byte I of the file
# ($bytes) written to 3.0x8000+I (the first 16 KiB), then to 4.0x8000+I-16384, during probe.
def firmware_writes($bus; $addr; $bytes):
  [.[] | select(.kind == "mdio" and .op == "write" and .devad != null) | of($bus; $addr)
       | select(c45_key | startswith("sram"))] as $w
  | [range($bytes | length) | if . < 16384 then [3, 32768 + ., $bytes[.]] else [4, 32768 + . - 16384, $bytes[.]] end] as $want
  | [$w[] | [.devad, .reg, .value]] as $got
  | (first(range([$want, $got] | map(length) | max) | select($want[.] != $got[.])) // null) as $i
  | ($w | map(select(.caller.name != "probe")) | length) as $outside
  | if $i != null then error("firmware write \($i): the file has \($want[$i] // "nothing"), the capture \($got[$i] // "nothing")")
    elif $outside > 0 then error("\($outside) firmware writes outside probe")
    else "the firmware's \($bytes | length) bytes written in order, byte for byte, to 3.0x8000… and 4.0x8000…, all in probe" end;
