#!/usr/bin/env python3
"""Compares the MDIO accesses phytrace recorded with the kernel's mdio:mdio_access tracepoint.

Usage: mdio_truth.py TRACE CAPTURE_JSON BUS ADDR
TRACE is the ftrace buffer with mdio:mdio_access enabled; CAPTURE_JSON the capture as JSON lines
(`phytrace dump --format json`). For the PHY at BUS:ADDR, per thread, the sequence of (read or
write, register, value) must be the same: the tracepoint's register is the Clause 45 register
without its MMD, as the kernel gives it, and failed accesses are not traced. Prints one line per thread and exits 1 on a difference.
"""
import collections
import json
import re
import sys

trace_file, capture_file, bus, addr = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 0)
line_re = re.compile(
    r"-(\d+)\s+\[\d+\].*mdio_access: (\S+) (read|write)\s+phy:0x([0-9a-f]+) reg:0x([0-9a-f]+) val:0x([0-9a-f]+)"
)

truth = collections.defaultdict(list)
for line in open(trace_file):
    match = line_re.search(line)
    if not match:
        continue
    tid, busid, op, phy, reg, val = match.groups()
    if busid == bus and int(phy, 16) == addr:
        truth[int(tid)].append((op, int(reg, 16), int(val, 16)))

seen = collections.defaultdict(list)
for line in open(capture_file):
    event = json.loads(line)
    phy = event.get("phy") or {}
    if event.get("kind") != "mdio" or phy.get("bus") != bus or phy.get("addr") != addr:
        continue
    # The tracepoint leaves out failed accesses (its condition: err >= 0).
    if event.get("error") is None:
        seen[event["tid"]].append((event["op"], event["reg"], event["value"]))

failed = sum(map(len, truth.values())) == 0
if failed:
    print(f"FAIL: the kernel traced no MDIO access of {bus}:{addr}")
for tid in sorted(set(truth) | set(seen)):
    same = truth[tid] == seen[tid]
    failed |= not same
    where = next((i for i, (a, b) in enumerate(zip(truth[tid], seen[tid])) if a != b), min(len(truth[tid]), len(seen[tid])))
    detail = "" if same else f": first difference at {where}: kernel {truth[tid][where:where + 3]} phytrace {seen[tid][where:where + 3]}"
    print(("ok: " if same else "FAIL: ") + f"thread {tid}: {len(seen[tid])} accesses, the kernel traced {len(truth[tid])}{detail}")
sys.exit(1 if failed else 0)
