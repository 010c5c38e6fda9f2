#!/bin/bash
# phytrace as a Debian user gets it, on Debian's stock kernel: the amd64 package of `cargo xtask
# dist`, installed with apt into a Debian trixie root on the host (xtask/src/debian_root.rs,
# which checked its files and its grant of capabilities there), run from that root in the
# guest (/proc, /sys, /dev, /tmp and the kernel's modules bound into it, chroot): its help, its
# man pages through man, doctor, the grant of capabilities to the phytrace group's members, and
# a record of the emulated dongle's plug-in through link up, which the packaged binary dumps:
# the dongle's PHY with its callbacks at phylib's call sites, its MDIO accesses and its link at
# 100/full.
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"
. "$(dirname "$0")/../vm/record_lib.sh"
. "$(dirname "$0")/../vm/dongle_lib.sh"
stock_only
lower=$PHYTRACE_TARGET/debian-root
[[ -x $lower/usr/bin/phytrace ]] || fail "no phytrace in $lower: \`cargo xtask test\` installs its package there"
dongle_test_begin
# The root is the host's, read-only over 9p, which keeps no file capabilities: the guest writes
# into an overlay of it in memory, where dpkg-reconfigure grants them again.
layers=/run/phytrace-package
root=$layers/root
mounted=()
unmount_root() {
    local dir
    for dir in "${mounted[@]}"; do umount -R -l "$dir"; done
    rm -rf "$layers"
}
cleanup_first unmount_root
mkdir -p "$layers"/{upper,work,root}
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$layers/upper,workdir=$layers/work" "$root"
mounted+=("$root")
for dir in proc sys dev tmp lib/modules; do
    mount --rbind "/$dir" "$root/$dir"
    mount --make-rslave "$root/$dir"
done
# The packaged binary, run in the root wherever the helpers run $PHYTRACE_BIN (its captures in
# /tmp, the same inside and out).
PHYTRACE_BIN=/tmp/phytrace-in-root
printf '#!/bin/sh\nexec chroot %s /usr/bin/phytrace "$@"\n' "$root" >"$PHYTRACE_BIN"
chmod 755 "$PHYTRACE_BIN"

help=$("$PHYTRACE_BIN" doctor --help) || fail "phytrace doctor --help failed"
grep -q '^Usage: phytrace doctor' <<<"$help" || fail "phytrace doctor --help: $help"
ok "phytrace doctor --help"
page=$(chroot "$root" man -P cat phytrace-record 2>/dev/null) || fail "man phytrace-record failed"
for option in --output --duration --callback-probes; do
    grep -q -- "$option" <<<"$page" || fail "man phytrace-record lacks $option"
done
ok "man phytrace-record lists record's options"
out=$("$PHYTRACE_BIN" doctor 2>&1) || { echo "$out"; fail "the packaged phytrace doctor finds the stock kernel untraceable"; }
ok "phytrace doctor: $(tail -n 1 <<<"$out")"

# The package's grant (answered yes when it was installed), applied again by
# dpkg-reconfigure: a member of the phytrace group runs the binary with every capability doctor
# asks for; another user cannot run it.
DEBIAN_FRONTEND=noninteractive chroot "$root" dpkg-reconfigure phytrace || fail "dpkg-reconfigure phytrace failed"
# A capability set's names and flags, one order: `setcap`'s `A,B+ep` and `getcap`'s `B,A=ep`.
words() { tr ',+=' '\n' | sort | paste -sd ' '; }
expect_eq "the grant" "$("$PHYTRACE_BIN" generate capabilities | words)" \
    "$(chroot "$root" getcap /usr/bin/phytrace | cut -d' ' -f2 | words)"
gid=$(awk -F: '$1 == "phytrace" { print $3 }' "$root/etc/group")
[[ -n $gid ]] || fail "no phytrace group in $root/etc/group"
cache=$(mktemp -d /tmp/package-cache.XXXXXX)
chmod 1777 "$cache"
json=$(XDG_CACHE_HOME=$cache chroot --userspec=65534:65534 --groups="$gid" "$root" /usr/bin/phytrace doctor --format json || true)
jq -e '.checks[] | select(.name == "privileges") | .status == "ok"' <<<"$json" >/dev/null ||
    { echo "$json"; fail "doctor as a member of the phytrace group lacks capabilities"; }
ok "a member of the phytrace group holds every capability doctor asks for"
if chroot --userspec=65534:65534 --groups=65534 "$root" /usr/bin/phytrace --version 2>/dev/null; then
    fail "a user outside the phytrace group ran the granted binary"
fi
ok "a user outside the phytrace group cannot run it"

dongle_modules_load rust
cap=/tmp/package.ptrace
start_record "$cap"
dongle_plug_link_up --an-delay-ms 100 --partner all
bus=$DONGLE_BUS dev=$DONGLE_DEV
stop_record "$cap"
events_json "$cap"
expect_eq "the dongle's first callback" soft_reset \
    "$(usb_json "$cap" | jq -r 'select(.kind == "callback_enter") | .callback.name' | head -n 1)"
mdio=$(jq -c --arg bus "$bus" 'select(.kind == "mdio" and .phy.bus == $bus)' "$cap.json" | wc -l)
((mdio > 0)) || fail "no MDIO access of $bus:10 in the capture"
ok "$mdio MDIO accesses of $bus:10"
expect_eq "read_status's last link" "100/full" "$(usb_json "$cap" |
    jq -r 'select(.kind == "callback_exit" and .callback.name == "read_status" and .link.up) |
        "\(.link.speed)/\(.link.duplex)"' | tail -n 1)"
# Down before the clean-up unplugs the dongle: phylib's polling has stopped when this returns, so
# no poll meets the vanished device (the kernel warns when one does).
ip link set dev "$dev" down
