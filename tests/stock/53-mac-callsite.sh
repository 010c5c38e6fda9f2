#!/bin/bash
# The MAC side at phylink's call sites on Debian's kernel, built with retpolines: phylink's calls
# of `pl->mac_ops->OP` go through a register there, which kprobes take. The VM suite's test,
# run here (it needs no module of ours).
exec bash "$(dirname "$0")/../vm/19-mac-callsite.sh"
