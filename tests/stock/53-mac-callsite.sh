#!/bin/bash
# The MAC side at phylink's call sites on Debian's stock kernel (retpolines: calls through a
# register, which kprobes take), checked as on ours against the kernel's own kprobes on asix's
# MAC ops: the VM suite's test, run here.
exec bash "$(dirname "$0")/../vm/19-mac-callsite.sh"
