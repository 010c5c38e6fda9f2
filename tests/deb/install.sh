#!/bin/bash
# Runs as root inside a copy of the Debian root (xtask/src/debian_root.rs): installs phytrace's
# package PACKAGE.deb with apt as a user would, checks what it installed, then its opt-in grant
# of capabilities (the debconf question phytrace/grant-capabilities, packaging/deb/postinst):
# off by default; on, off again and on through dpkg-reconfigure; left alone under a
# dpkg-statoverride; gone with the group and the answer on purge. Leaves the package installed
# with the grant on.
set -euo pipefail
deb=${1:?usage: install.sh PACKAGE.deb}
export DEBIAN_FRONTEND=noninteractive
PROGRAM=/usr/bin/phytrace

fail() {
    echo "install.sh: FAIL: $*" >&2
    exit 1
}
ok() { echo "    ok: $*"; }

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
    if [[ $2 == "$3" ]]; then ok "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}

# The file capabilities of the binary as `CAP,CAP…=FLAGS`, sorted; empty without any.
file_caps() {
    local caps
    caps=$(getcap "$PROGRAM" | cut -d' ' -f2-)
    [[ -n $caps ]] || return 0
    echo "$(tr ',' '\n' <<<"${caps%=*}" | sort | paste -sd,)=${caps#*=}"
}

# The answer to the question, then dpkg-reconfigure as the administrator would run it.
answer() {
    echo "phytrace phytrace/grant-capabilities boolean $1" | debconf-set-selections
}
reconfigure() {
    answer "$1"
    dpkg-reconfigure phytrace
}

# granted: root:phytrace 0754 with exactly the set `phytrace generate capabilities` prints.
granted() {
    expect_eq "owner and mode with the grant" "root:phytrace 754" "$(stat -c '%U:%G %a' "$PROGRAM")"
    expect_eq "file capabilities with the grant" "$want" "$(file_caps)"
}
# revoked: root:root 0755, no capabilities.
revoked() {
    expect_eq "owner and mode without the grant" "root:root 755" "$(stat -c '%U:%G %a' "$PROGRAM")"
    expect_eq "file capabilities without the grant" "" "$(file_caps)"
}

# apt's terminal log needs /dev/pts (the mounts end with the caller's mount namespace).
mount -t devpts -o newinstance devpts /dev/pts
apt-get install -y -q "$deb" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt install $deb"; }
expect_eq "dpkg's status of phytrace" "install ok installed" "$(dpkg-query -W -f='${Status}' phytrace)"
set_text=$(phytrace generate capabilities)
want="$(tr ',' '\n' <<<"${set_text%+*}" | sort | paste -sd,)=${set_text#*+}"

# What it installed: every man page the binary writes, where man finds it; the completions;
# the docs and specs.
phytrace generate man --dir /tmp/pages
for page in /tmp/pages/*.1; do
    name=$(basename "$page" .1)
    expect_eq "man -w $name" "/usr/share/man/man1/$name.1.gz" "$(man -w "$name")"
done
for file in /usr/share/bash-completion/completions/phytrace /usr/share/zsh/vendor-completions/_phytrace \
    /usr/share/fish/vendor_completions.d/phytrace.fish /usr/share/doc/phytrace/README.md \
    /usr/share/doc/phytrace/docs/check.md /usr/share/doc/phytrace/specs/ax88796b.spec \
    /usr/share/doc/phytrace/copyright; do
    [[ -s $file ]] || fail "$file is missing or empty"
done
ok "completions, README, docs, specs and copyright installed"

# The question's default: no grant, no group.
revoked
getent group phytrace >/dev/null && fail "the phytrace group exists without the grant"
reconfigure true
granted
getent group phytrace >/dev/null || fail "no phytrace group with the grant"
reconfigure false
revoked
reconfigure true
granted

# An administrator's override of the binary stands: the postinst changes nothing.
dpkg-statoverride --add root root 0750 "$PROGRAM"
chown root:root "$PROGRAM"
chmod 0750 "$PROGRAM"
reconfigure true
expect_eq "owner and mode under dpkg-statoverride" "root:root 750" "$(stat -c '%U:%G %a' "$PROGRAM")"
dpkg-statoverride --remove "$PROGRAM"
reconfigure true
granted

# Purge: the binary, the group and the answer go.
apt-get purge -y -q phytrace >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt purge phytrace"; }
[[ ! -e $PROGRAM ]] || fail "$PROGRAM outlived the purge"
getent group phytrace >/dev/null && fail "the phytrace group outlived the purge"
[[ -z $(debconf-show phytrace) ]] || fail "debconf still holds phytrace's answer: $(debconf-show phytrace)"
ok "purge removed the binary, the group and the answer"

# Installed again, answered beforehand (a preseed), as the stock-kernel stage runs it.
answer true
apt-get install -y -q "$deb" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt install $deb again"; }
granted
