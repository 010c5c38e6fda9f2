#!/bin/bash
# The pipeline proof: `phytrace doctor` loads the eBPF object, attaches a kprobe and a
# kretprobe to a kernel function, receives their events through the ring buffer and an
# aya-log line, attaches a kprobe to a Rust symbol, and reads struct offsets from BTF.
set -euo pipefail
out=$("$PHYTRACE_BIN" doctor 2>&1) || { echo "$out"; echo "doctor failed"; exit 1; }
echo "$out"
grep -q '^\[ok  \] pipeline self-test .*kprobe+kretprobe on .* → ring buffer → userspace' <<<"$out"
grep -q 'aya-log: "self-test kprobe fired in tgid [0-9]*"' <<<"$out"
grep -q '^\[ok  \] kprobe on a Rust symbol .*attached to ' <<<"$out"
grep -q '^\[ok  \] BTF (struct layouts)' <<<"$out"
# The offset doctor reports must be the one pahole reads from the same BTF.
state=$(pahole -C phy_device /sys/kernel/btf/vmlinux 2>/dev/null | awk '/enum phy_state +state;/ { print $(NF-2) }')
grep -q "phy_device.state at +$state," <<<"$out"
echo "pipeline proof passed (phy_device.state at +$state)"
