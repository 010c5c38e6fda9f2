#!/bin/bash
# The dongle demo (`cargo xtask demo`) as a newcomer sees it, in tmux at 160×48 and 120×40, on
# a terminal told 80×24 (the demo asks the terminal its size): the story runs until the dongle
# is unplugged (cycle 4) and asix's complaint is on the screen, then the view is held and read.
# The kernel's console prints emergencies only while the TUI owns the terminal (its level is
# put back after). The TUI must fill the terminal, show the kernel's lines of the unplug in its
# kernel messages pane, no kernel text where phytrace did not draw it (every row naming one is
# inside a pane), and the same words as a replay of the same events (saved from the TUI with
# `w`). Then the kernel's lines are written onto the terminal as a console sharing it would:
# Ctrl-L must bring the same screen back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dongle_lib.sh"
sock=$PHYTRACE_OUT/demo-screen.tmux
replay_sock=$PHYTRACE_OUT/demo-screen-replay.tmux
cleanup_screen() {
    tmux -S "$sock" kill-server 2>/dev/null || true
    tmux -S "$replay_sock" kill-server 2>/dev/null || true
    dongle_stop
    dongle_modules_unload
}
trap cleanup_screen EXIT
[[ -x $DONGLE_BIN ]] || fail "$DONGLE_BIN missing: cargo build -p ax88772a-emulator"
MII='Failed to enable software MII access'

screen() { tmux -S "$sock" capture-pane -p -t "$1"; }
# panes SCREEN: the screen without its status line (the last row: LIVE or REPLAY, rates).
panes() { sed '$d' <<<"$1"; }
# words SCREEN: the panes' words, one per line, in order.
words() { panes "$1" | tr -s ' │┃┌┐└┘┏┓┗┛─━▶' '\n' | sed '/^$/d'; }
unplugged() { grep -q "cycle 4: unplugging" "$PHYTRACE_OUT/demo-story.log" 2>/dev/null; }
shows() { screen "$1" | grep -qF -- "$2"; }

read -r console_level _ </proc/sys/kernel/printk
# console_loglevel: the kernel's console prints the lines below it.
console_prints() { read -r level _ </proc/sys/kernel/printk && echo "$level"; }
for size in 160x48 120x40; do
    log "the demo at $size"
    width=${size%x*} height=${size#*x}
    mark_dmesg "demo-screen-$size"
    rm -f "$PHYTRACE_OUT/demo-story.log" "$PHYTRACE_OUT/demo-screen-exit"
    # The terminal starts with a wrong size, as a serial console told 80×24 at boot would.
    tmux -S "$sock" new-session -d -s live -x "$width" -y "$height" \
        "stty rows 24 cols 80; bash $PHYTRACE_ROOT/scenarios/demo.sh MODE=tui HARDWARE=dongle CYCLES=4 PERIOD=2 2>$PHYTRACE_OUT/demo-screen.stderr; echo \$? >$PHYTRACE_OUT/demo-screen-exit"
    wait_for 180 unplugged || { screen live; cat "$PHYTRACE_OUT/demo-story.log"; fail "the demo story did not unplug the dongle"; }
    wait_for 20 shows live "$MII" || { screen live; dmesg_since_mark; fail "the screen does not show the unplug's '$MII'"; }
    expect_eq "the console's level while the TUI owns the terminal (emergencies only)" 1 "$(console_prints)"
    # Hold the view after the unplug, then save its events.
    tmux -S "$sock" send-keys -t live Space w
    tmux -S "$sock" send-keys -t live -N 64 BSpace
    tmux -S "$sock" send-keys -t live -l "$PHYTRACE_OUT/demo-screen-$size.ptrace"
    tmux -S "$sock" send-keys -t live Enter
    wait_for 10 shows live "saved " || { screen live; fail "the TUI did not save its events"; }
    tmux -S "$sock" send-keys -t live Escape
    wait_for 10 eval '! shows live "saved "' || { screen live; fail "Escape did not clear the TUI's message"; }
    live=$(screen live)
    echo "$live"
    grep -qE "Kernel messages [0-9]+" <<<"$live" || fail "no kernel messages pane at $size"
    expect_eq "the TUI's width (asked of the terminal)" "$width" "$(head -n 1 <<<"$live" | wc -m | awk '{ print $1 - 1 }')"
    expect_eq "the TUI's status line is the terminal's last row" LIVE "$(tail -n 1 <<<"$live" | cut -c1-4)"

    # Every row naming a line the kernel logged during the story is inside a pane.
    while IFS= read -r text; do
        [[ -n $text ]] || continue
        stray=$(panes "$live" | grep -F -- "${text:0:30}" | grep -v '^[│┃]' || true)
        [[ -z $stray ]] || fail "kernel text outside the panes at $size: $stray"
    done < <(dmesg_since_mark | sed -E 's/^\[[ 0-9.]+\] //' | grep -v '^phytrace-test:' | sort -u)
    ok "$size: the kernel's lines are only inside the panes"

    # The same words as a replay of the same events (on a tmux server of its own).
    tmux -S "$replay_sock" new-session -d -s replay -x "$width" -y "$height" \
        "$PHYTRACE_BIN tui $PHYTRACE_OUT/demo-screen-$size.ptrace --speed 4096"
    replay_screen() { tmux -S "$replay_sock" capture-pane -p -t replay; }
    wait_for 30 eval 'replay_screen | tail -n 1 | grep -q " end"' || { replay_screen; fail "the replay did not end"; }
    replay=$(replay_screen)
    tmux -S "$replay_sock" kill-server
    if ! diff <(words "$live") <(words "$replay") >"$PHYTRACE_OUT/demo-screen-$size.diff"; then
        echo "$replay"
        cat "$PHYTRACE_OUT/demo-screen-$size.diff"
        fail "$size: the live screen and the replay of its events differ"
    fi
    ok "$size: the live screen has the words of the replay of its events"

    # A console writing on the same terminal, then Ctrl-L.
    tmux -S "$sock" has-session -t live 2>/dev/null || {
        cat "$PHYTRACE_OUT/demo-screen-exit" "$PHYTRACE_OUT/demo-screen.stderr" "$PHYTRACE_OUT/demo-story.log"
        fail "$size: the demo ended while its view was held"
    }
    tty=$(tmux -S "$sock" display-message -p -t live '#{pane_tty}')
    dmesg_since_mark | grep -F "$MII" | sed 's/$/\r/' >"$tty"
    wait_for 5 eval '[[ $(screen live) != "$live" ]]' || fail "the write did not reach the terminal"
    tmux -S "$sock" send-keys -t live C-l
    wait_for 10 eval '[[ $(panes "$(screen live)") == "$(panes "$live")" ]]' || {
        screen live
        fail "$size: Ctrl-L did not draw the screen anew"
    }
    ok "$size: Ctrl-L draws the screen anew after a foreign write"

    tmux -S "$sock" send-keys -t live q
    wait_for 30 test -s "$PHYTRACE_OUT/demo-screen-exit" || fail "the demo did not end on q"
    expect_eq "demo exit status at $size" 0 "$(<"$PHYTRACE_OUT/demo-screen-exit")"
    expect_eq "the console's level after the demo" "$console_level" "$(console_prints)"
    tmux -S "$sock" kill-server 2>/dev/null || true
    assert_clean_dmesg "demo-screen-$size"
done
