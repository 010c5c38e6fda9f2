#!/bin/bash
# Bad control input: every control refuses it with EINVAL and a pr_warn line naming the file;
# a bad module parameter makes insmod fail cleanly. Nothing crashes, state is unchanged.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap_cleanup

CUR_DRIVER=${PHYTRACE_DRIVERS%% *}
mark_dmesg bad
setup "$CUR_DRIVER"
a=$(simdev ax88772a)
link_up "$a"
wait_mode "$a" 100 full

# refuse FILE INPUT: the write must fail with EINVAL; the warnings are checked at the end.
refused=()
refuse() {
    local file=$1 input=$2 err
    if err=$( (printf '%s' "$input" >"$SIM_DBG/$a/$file") 2>&1); then
        fail "$file accepted '$input'"
    fi
    grep -q "Invalid argument" <<<"$err" || fail "$file: '$input' failed with '$err', not EINVAL"
    refused+=("$file")
    ok "$file refuses '$input' (EINVAL)"
}

refuse cable maybe
refuse partner 1000full
refuse partner 0x10000
refuse aneg_delay_ms -1
refuse aneg_delay_ms 99999999
refuse aneg_delay_ms abc
refuse reset_delay_ms 5001
refuse lpa_zero 2
refuse reset_needs_toggle yesno
refuse reset_needs_toggle 10
refuse kick 7
refuse inject "BMSR"
refuse inject "BMSR 5"
refuse inject "NOSUCHREG 5 1"
refuse inject "32 5 1"
refuse inject "BMSR 0 1"
refuse inject "BMSR 5 1 x"
refuse inject "BMSR 99999 1"
refuse inject "BMSR 5 1 r extra"
refuse counters 1
refuse load 0
refuse load "-5"
refuse load "rate"
refuse load "rate 0 1"
refuse load "rate 100 0"
refuse load "10 BOGUS"
refuse load "$(head -c 300 /dev/zero | tr '\0' 1)"

log=$(dmesg_since_mark)
for file in "${refused[@]}"; do
    grep -q "phy_sim: $a/$file: invalid input" <<<"$log" || fail "$file: no warning in the kernel log"
done
expect_eq "warnings logged for the refused inputs" "${#refused[@]}" \
    "$(grep -c "phy_sim: $a/[a-z_]*: invalid input" <<<"$log")"

if (printf 'x' >"$SIM_DBG/counters") 2>/dev/null; then fail "global counters accepted 'x'"; fi
ok "global counters refuses 'x'"
if (echo 1 >"$SIM_DBG/$a/info") 2>/dev/null; then fail "info is writable"; fi
ok "info is read-only"

expect_eq "cable unchanged" 1 "$(sim_get "$a" cable)"
expect_eq "inject unchanged" none "$(sim_get "$a" inject)"
expect_eq "link still up" 1 "$(carrier "$a")"
assert_clean_dmesg "bad control input"

log "bad module parameters"
rmmod phy_sim
for phys in "ax88772a" "ax88772a@32" "ax1234@1" "ax88772a@1,ax88772c@1" ""; do
    if insmod "$PHYTRACE_MODULES/phy_sim.ko" phys="$phys" 2>/dev/null; then
        fail "phy_sim accepted phys='$phys'"
    fi
    module_loaded phy_sim && fail "phy_sim loaded with phys='$phys'"
    ok "insmod phy_sim phys='$phys' refused"
done
dmesg_since_mark | grep -q 'phy_sim: invalid phys=' || fail "no error message for bad phys="
load_sim phys="ax88796b@7,ax88772c@0x1f"
expect_eq "custom phys: devices" "2" "$(sim_devs | wc -l)"
expect_eq "custom phys: AX88796B at 7" 7 "$(sim_info "$(simdev ax88796b)" addr)"
expect_eq "custom phys: AX88772C at 31" 31 "$(sim_info "$(simdev ax88772c)" addr)"
[[ -L $SIM_DBG/addr7 ]] || fail "no addr7 symlink"
ok "addrN symlinks"
assert_clean_dmesg "bad module parameters"
