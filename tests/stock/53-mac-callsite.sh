#!/bin/bash
# The MAC side at phylink's call sites on Debian's stock kernel (retpolines: calls through a
# register, which kprobes take), checked as on ours against the kernel's own kprobes on asix's
# MAC ops: the VM suite's test, run here. phylink is loaded before record starts, so that its
# sites, found as record starts, are armed before the dongle's calls: each call is reported at
# a site and asix's by-name probes, attached beside them, must skip it (calls made before a
# phylink's sites are armed are reported by name: docs/probes.md, "MAC call sites").
modprobe phylink || { echo "FAIL: modprobe phylink"; exit 1; }
exec bash "$(dirname "$0")/../vm/19-mac-callsite.sh"
