#!/bin/bash
# The MAC side at phylink's call sites on Debian's stock kernel (retpolines: calls through a
# register, which kprobes take), checked as on ours against the kernel's own kprobes on asix's
# MAC ops: the VM suite's test, run here. phylink is loaded before record starts: sites armed
# when it loads during a session may come after the dongle's first link change in this guest
# (docs/probes.md, "MAC call sites"), so this checks the sites armed at start.
modprobe phylink || { echo "FAIL: modprobe phylink"; exit 1; }
exec bash "$(dirname "$0")/../vm/19-mac-callsite.sh"
