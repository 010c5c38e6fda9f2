#!/usr/bin/env python3
"""Compares the callbacks phytrace recorded at phylib's call sites with the kernel's own kprobe
and kretprobe events on the driver's callback symbols (the `truth` group of the ftrace buffer).

Usage: callsite_truth.py NAMES TRACE CAPTURE_JSON DRIVER_PREFIXES [op|function]
NAMES maps truth events to what they probe ("cb3 read_status" per line; a return event is the
entry's name with an `r` suffix): the op (a Rust driver's callback, the default) or the C
function, which phytrace names a C driver's callback by (its `driver_type`). Only callbacks whose
`driver_type` starts with one of DRIVER_PREFIXES (comma-separated) are compared. Prints one line per comparison and exits
1 on any difference:
per callback, the count of calls; per thread, the order of entries and of returns with their
return values.
"""
import collections
import json
import re
import sys

names_file, trace_file, capture_file, prefixes = sys.argv[1:5]
prefixes = tuple(prefixes.split(","))
by_function = sys.argv[5:6] == ["function"]
names = dict(line.split() for line in open(names_file) if line.strip())
line_re = re.compile(r"-(\d+)\s+\[\d+\].*?\s(cb\d+)(r?): \(.*\)(?: ret=(-?\d+))?\s*$")

truth_calls = collections.defaultdict(list)  # tid -> [name]
truth_returns = collections.defaultdict(list)  # tid -> [(name, ret)]
for line in open(trace_file):
    if line.startswith("#"):
        continue
    match = line_re.search(line)
    if not match:
        continue
    tid, event, is_return, ret = match.groups()
    name = names[event]
    if is_return:
        truth_returns[int(tid)].append((name, int(ret)))
    else:
        truth_calls[int(tid)].append(name)

def void(name):
    """Whether the op returns nothing (its return register is stale)."""
    return name.endswith("link_change_notify")


seen_calls = collections.defaultdict(list)
seen_returns = collections.defaultdict(list)
for line in open(capture_file):
    event = json.loads(line)
    callback = event.get("callback") or {}
    if not callback.get("driver_type", "").startswith(prefixes):
        continue
    name = callback["driver_type"] if by_function else callback["name"]
    if event["kind"] == "callback_enter":
        seen_calls[event["tid"]].append(name)
    elif event["kind"] == "callback_exit":
        ret = None if void(name) else event.get("ret")
        seen_returns[event["tid"]].append((name, ret))

failed = False


def report(ok, what):
    global failed
    failed |= not ok
    print(("ok: " if ok else "FAIL: ") + what)


def counts(per_thread):
    return collections.Counter(name for calls in per_thread.values() for name in calls)


want, got = counts(truth_calls), counts(seen_calls)
for name in sorted(set(want) | set(got)):
    report(want[name] == got[name], f"{name}: {got[name]} calls at call sites, {want[name]} by the kernel's kprobes")
report(sum(want.values()) > 0, f"the kernel ran {sum(want.values())} callbacks")
for tid in sorted(set(truth_calls) | set(seen_calls)):
    report(truth_calls[tid] == seen_calls[tid], f"thread {tid}: {len(seen_calls[tid])} entries in the kernel's order")
for tid in sorted(set(truth_returns) | set(seen_returns)):
    want_returns = [(n, None if void(n) else r) for n, r in truth_returns[tid]]
    same = want_returns == seen_returns[tid]
    detail = "" if same else f": kernel {want_returns[:8]} phytrace {seen_returns[tid][:8]}"
    report(same, f"thread {tid}: {len(seen_returns[tid])} returns, same order and values{detail}")
sys.exit(1 if failed else 0)
