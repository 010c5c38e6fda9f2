#!/usr/bin/env python3
"""Assertions on a phytrace capture, for the VM tests of `phytrace record`.

  capture_check.py EVENTS_JSONL CHECK [ARGS...] [-- CHECK [ARGS...]]...

EVENTS_JSONL is `phytrace dump --format json` output. Checks (each prints what it verified and
exits 1 with the offending events on failure):

  attached MODULE [reattached]    an `attached` event for MODULE (a re-attachment if asked)
  detached MODULE                 a `detached` event for MODULE
  ids BUS ADDR=PHYID:DRIVER...    events of each PHY carry that PHY ID and bound driver name
  order BUS:ADDR FIRST THEN       the first FIRST exit comes before the first THEN entry
  nolink-reset BUS:ADDR           link_change_notify entered in NOLINK runs soft_reset nested,
                                  which writes BMCR=0 first (the AX88772A reset path)
  exactly-once BUS ADDR COUNTERS  MDIO reads/writes/errors per register equal the simulator's
                                  counters file COUNTERS for the PHY at ADDR
  attribution                     every MDIO access with a caller happened inside that callback
                                  on the same thread (stack rebuilt from enter/exit events)
  caller BUS:ADDR OP REG CALLBACK an access OP (read|write) to REG attributed to CALLBACK
  error BUS:ADDR REG ERRNO CALLBACK  an access to REG failed with ERRNO and CALLBACK returned it
  lpa-quirk BUS:ADDR SPEED DUPLEX a read_status that read LPA=0 still reported link up at
                                  SPEED/DUPLEX (the AX88772A workaround, speed from BMCR)
  no-callbacks                    no callback events (C driver)
  no-loss                         no `lost` events
  sessions MODULE N               MODULE attached N times, detached in between (each gap
                                  bounded by a detached and an attached event), and callbacks
                                  recorded in every session
"""
import json
import sys
from collections import Counter, defaultdict


def fail(message, events=()):
    print(f"FAIL: {message}")
    for event in list(events)[:10]:
        print("   ", json.dumps(event, sort_keys=True))
    sys.exit(1)


def ok(message):
    print(f"ok: {message}")


def key(event):
    phy = event.get("phy")
    return f"{phy['bus']}:{phy['addr']:02x}" if phy else None


def parse_key(text):
    bus, addr = text.rsplit(":", 1)
    return f"{bus}:{int(addr, 16):02x}"


def callbacks(events, kind, name=None, phy=None):
    return [
        e for e in events
        if e["kind"] == kind and (name is None or e["callback"]["name"] == name)
        and (phy is None or key(e) == phy)
    ]


def check_attached(events, module, *flags):
    want_re = "reattached" in flags
    found = [e for e in events if e["kind"] == "attached" and e["module"] == module
             and e["reattached"] == want_re]
    if not found:
        fail(f"no {'re-' if want_re else ''}attachment of {module}",
             [e for e in events if e["kind"] in ("attached", "detached")])
    if want_re:
        later = [e for e in events if e["ts_ns"] > found[0]["ts_ns"] and e["kind"] == "callback_enter"]
        if not later:
            fail(f"no callback recorded after {module} was re-attached")
        ok(f"{module} re-attached with {found[0]['callbacks']} callbacks; "
           f"{len(later)} callback entries recorded after it")
    else:
        first_cb = next((e for e in events if e["kind"] == "callback_enter"), None)
        if first_cb and first_cb["ts_ns"] < found[0]["ts_ns"]:
            fail("a callback event precedes the attachment", [first_cb, found[0]])
        ok(f"{module} attached with {found[0]['callbacks']} callbacks")


def check_detached(events, module):
    if not any(e["kind"] == "detached" and e["module"] == module for e in events):
        fail(f"no detachment of {module}")
    ok(f"{module} detached")


def check_ids(events, bus, *specs):
    for spec in specs:
        addr, rest = spec.split("=", 1)
        phy_id, driver = rest.split(":", 1)
        k = f"{bus}:{int(addr):02x}"
        mine = [e for e in events if key(e) == k]
        cbs = [e for e in mine if e["kind"].startswith("callback")]
        if not mine:
            fail(f"no events for {k}")
        # PHY ID 0: accesses before the phy_device exists (bus scan), nothing to identify yet.
        wrong = [e for e in mine if e["phy"]["phy_id"] not in (0, int(phy_id, 16))]
        if wrong:
            fail(f"{k}: events with another PHY ID than {phy_id}", wrong)
        named = [e for e in mine if e["phy"].get("driver") == driver]
        if not named:
            fail(f"{k}: no event names the driver {driver!r}", mine[-3:])
        types = sorted({e["callback"]["driver_type"] for e in cbs})
        ok(f"{k}: {len(mine)} events, PHY ID {phy_id}, driver {driver!r}, callback code of {types}")


def check_order(events, phy, first, then):
    phy = parse_key(phy)
    done = callbacks(events, "callback_exit", first, phy)
    start = callbacks(events, "callback_enter", then, phy)
    if not done or not start:
        fail(f"{phy}: missing {first} exits ({len(done)}) or {then} entries ({len(start)})")
    if done[0]["ts_ns"] > start[0]["ts_ns"]:
        fail(f"{phy}: {then} entered before {first} completed", [start[0], done[0]])
    ok(f"{phy}: {first} completed before the first {then}")


def check_nolink_reset(events, phy):
    phy = parse_key(phy)
    notifies = [e for e in callbacks(events, "callback_enter", "link_change_notify", phy)
                if e["state"]["name"] == "NOLINK"]
    if not notifies:
        fail(f"{phy}: link_change_notify never entered in NOLINK",
             callbacks(events, "callback_enter", "link_change_notify", phy))
    for notify in notifies:
        i = events.index(notify)
        same_thread = [e for e in events[i + 1:] if e["tid"] == notify["tid"]]
        inner = []
        for e in same_thread:
            if e["kind"] == "callback_exit" and e["callback"]["name"] == "link_change_notify":
                break
            inner.append(e)
        resets = [e for e in inner if e["kind"] == "callback_enter" and e["callback"]["name"] == "soft_reset"]
        if not resets or resets[0]["depth"] != notify["depth"] + 1:
            fail(f"{phy}: no nested soft_reset inside link_change_notify", inner)
        writes = [e for e in inner if e["kind"] == "mdio" and e["op"] == "write" and e["reg"] == 0]
        if not writes or writes[0]["value"] != 0 or writes[0].get("caller", {}).get("name") != "soft_reset":
            fail(f"{phy}: soft_reset did not write BMCR=0 first", writes)
    ok(f"{phy}: {len(notifies)} NOLINK link_change_notify, each with nested soft_reset writing BMCR=0")


def parse_counters(path):
    counts = {}
    with open(path) as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) == 6 and fields[0].startswith("0x"):
                counts[int(fields[0], 16)] = tuple(int(x) for x in fields[2:])
    return counts


def check_exactly_once(events, bus, addr, counters_path):
    addr = int(addr)
    k = f"{bus}:{addr:02x}"
    seen = defaultdict(lambda: [0, 0, 0, 0])
    for e in events:
        if e["kind"] == "mdio" and key(e) == k:
            slot = seen[e["reg"]]
            slot[0 if e["op"] == "read" else 1] += 1
            if "error" in e:
                slot[2 if e["op"] == "read" else 3] += 1
    expected = parse_counters(counters_path)
    total = 0
    for reg in sorted(set(expected) | set(seen)):
        want = expected.get(reg, (0, 0, 0, 0))
        got = tuple(seen.get(reg, (0, 0, 0, 0)))
        if want != got:
            fail(f"{k} reg {reg:#04x}: simulator counted reads/writes/rd_err/wr_err {want}, capture has {got}")
        total += sum(want[:2])
    if total == 0:
        fail(f"{k}: the simulator counted no accesses")
    ok(f"{k}: all {total} MDIO accesses counted by the simulator are in the capture exactly once")


def check_attribution(events):
    stacks = defaultdict(list)
    attributed = 0
    for e in events:
        kind = e["kind"]
        if kind == "callback_enter":
            stacks[e["tid"]].append(e["callback"]["name"])
        elif kind == "callback_exit":
            if stacks[e["tid"]] and stacks[e["tid"]][-1] == e["callback"]["name"]:
                stacks[e["tid"]].pop()
        elif kind == "mdio" and "caller" in e:
            attributed += 1
            stack = stacks[e["tid"]]
            if not stack or stack[-1] != e["caller"]["name"]:
                fail(f"access attributed to {e['caller']['name']} while thread {e['tid']} runs {stack}", [e])
    if attributed == 0:
        fail("no MDIO access is attributed to a callback")
    ok(f"{attributed} MDIO accesses attributed to the callback running on their thread")


def check_caller(events, phy, op, reg, callback):
    phy = parse_key(phy)
    found = [e for e in events if e["kind"] == "mdio" and key(e) == phy and e["op"] == op
             and e["reg"] == int(reg, 0) and e.get("caller", {}).get("name") == callback]
    if not found:
        fail(f"{phy}: no {op} of register {reg} inside {callback}")
    ok(f"{phy}: {len(found)} {op}s of register {reg} inside {callback}, e.g. value {found[0]['value']:#06x}")


def check_error(events, phy, reg, errno, callback):
    phy = parse_key(phy)
    errno = int(errno)
    bad = [e for e in events if e["kind"] == "mdio" and key(e) == phy and e["reg"] == int(reg, 0)
           and e.get("error") == errno]
    if not bad:
        fail(f"{phy}: no access to {reg} failing with {errno}")
    returned = [e for e in callbacks(events, "callback_exit", callback, phy) if e["ret"] == errno
                and e["ts_ns"] >= bad[0]["ts_ns"]]
    if not returned:
        fail(f"{phy}: {callback} did not return {errno} after the failed access", bad)
    ok(f"{phy}: access to {reg} failed with {errno}; {callback} returned {errno}")


def check_lpa_quirk(events, phy, speed, duplex):
    phy = parse_key(phy)
    open_lpa_zero = {}
    good = 0
    for e in events:
        if key(e) != phy:
            continue
        if e["kind"] == "callback_enter" and e["callback"]["name"] == "read_status":
            open_lpa_zero[e["tid"]] = False
        elif e["kind"] == "mdio" and e["op"] == "read" and e["reg"] == 5 and e["value"] == 0 \
                and e.get("caller", {}).get("name") == "read_status":
            open_lpa_zero[e["tid"]] = True
        elif e["kind"] == "callback_exit" and e["callback"]["name"] == "read_status":
            if open_lpa_zero.pop(e["tid"], False):
                link = e["link"]
                if link["up"] and link["speed"] == int(speed) and link["duplex"] == duplex:
                    good += 1
                elif link["up"]:
                    fail(f"{phy}: read_status read LPA=0 and reported {link}", [e])
    if good == 0:
        fail(f"{phy}: no read_status that read LPA=0 and reported link up")
    ok(f"{phy}: {good} read_status calls read LPA=0 and still reported {speed}/{duplex}")


def check_no_callbacks(events):
    cbs = [e for e in events if e["kind"].startswith("callback")]
    if cbs:
        fail("callback events recorded", cbs)
    ok("no callback events")


def check_no_loss(events):
    lost = [e for e in events if e["kind"] == "lost"]
    if lost:
        fail(f"{sum(e['count'] for e in lost)} events lost", lost)
    ok("no events lost")


def check_sessions(events, module, count):
    marks = [e for e in events if e["kind"] in ("attached", "detached") and e["module"] == module]
    want = ["attached", "detached"] * (int(count) - 1) + ["attached"]
    got = [e["kind"] for e in marks]
    if got[: len(want)] != want or len(got) > len(want) + 1:
        fail(f"{module}: expected {count} sessions alternating attached/detached, got {got}", marks)
    bounds = [e["ts_ns"] for e in marks] + [float("inf")]
    empty = []
    for i in range(0, len(marks), 2):
        start, end = bounds[i], bounds[i + 1]
        if not any(e["kind"] == "callback_exit" and start < e["ts_ns"] < end for e in events):
            empty.append(marks[i])
    if empty:
        fail(f"{module}: {len(empty)} of {count} sessions recorded no callback", empty)
    gaps = [(marks[i + 1]["ts_ns"] - marks[i]["ts_ns"]) / 1e6 for i in range(1, len(marks) - 1, 2)]
    detail = f", gaps {min(gaps):.0f}-{max(gaps):.0f} ms" if gaps else ""
    ok(f"{module}: {count} sessions, each with callbacks{detail}")


CHECKS = {
    "attached": check_attached,
    "detached": check_detached,
    "ids": check_ids,
    "order": check_order,
    "nolink-reset": check_nolink_reset,
    "exactly-once": check_exactly_once,
    "attribution": check_attribution,
    "caller": check_caller,
    "error": check_error,
    "lpa-quirk": check_lpa_quirk,
    "no-callbacks": check_no_callbacks,
    "no-loss": check_no_loss,
    "sessions": check_sessions,
}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        sys.exit(2)
    with open(argv[0]) as f:
        events = [json.loads(line) for line in f if line.strip()]
    kinds = Counter(e["kind"] for e in events)
    print(f"{len(events)} events: {dict(kinds)}")
    groups, current = [], []
    for arg in argv[1:]:
        if arg == "--":
            groups.append(current)
            current = []
        else:
            current.append(arg)
    groups.append(current)
    for name, *args in filter(None, groups):
        CHECKS[name](events, *args)


if __name__ == "__main__":
    main(sys.argv[1:])
