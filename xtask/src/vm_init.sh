#!/bin/busybox sh
# shellcheck shell=dash
# phytrace VM init: mount the host's root read-only, the output directory read-write, the
# kernel's pseudo file systems, then run $PHYTRACE_VM_RUN/run.sh on the serial console and
# record its exit status in $PHYTRACE_VM_RUN/status. The kernel passes PHYTRACE_VM_* from its
# command line as environment variables.
# PHYTRACE_VM_GUEST_BIN set: the host root's programs are for another architecture (an arm64
# guest on an x86_64 host). This busybox and its applets are then copied to that directory of
# the guest's /run and the command runs with its sh, that directory first on PATH.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t devtmpfs dev /dev
# A distribution kernel (Debian's stock one) has virtio-mmio and 9p as modules: the initramfs
# carries them, decompressed, in load order. The virtio-mmio devices then appear through ACPI.
if [ -f /modules/order ]; then
    $B mount -t sysfs sys /sys
    while read -r module; do
        $B insmod "/modules/$module.ko" || echo "phytrace-vm: insmod $module failed" >&2
    done </modules/order
    # The 9p transport binds once the ACPI-described devices have probed.
    i=0
    while ! $B grep -q hostroot /sys/bus/virtio/devices/*/mount_tag 2>/dev/null && [ $i -lt 100 ]; do
        $B sleep 0.05
        i=$((i + 1))
    done
    $B umount /sys
fi
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host || {
    echo "phytrace-vm: cannot mount the host root over 9p" >&2
    $B reboot -f
}
$B mount -t proc proc /host/proc
$B mount -t sysfs sys /host/sys
$B mount -t devtmpfs dev /host/dev
$B mkdir -p /host/dev/pts /host/dev/shm
$B ln -sf /proc/self/fd /host/dev/fd
$B mount -t devpts -o newinstance,ptmxmode=0666 devpts /host/dev/pts
$B mount -t tmpfs tmpfs /host/dev/shm
$B mount -t tracefs tracefs /host/sys/kernel/tracing
$B mount -t debugfs debugfs /host/sys/kernel/debug
$B mount -t bpf bpf /host/sys/fs/bpf
# The workspace and target directories may live under a directory replaced by a tmpfs below
# (a clone in /tmp): hold them aside and put them back at the same paths afterwards.
i=0
for keep in $(echo "$PHYTRACE_VM_KEEP" | $B tr , " "); do
    $B mkdir -p "/keep/$i"
    $B mount -o bind "/host$keep" "/keep/$i"
    i=$((i + 1))
done
for dir in tmp run var/tmp var/log; do
    $B mount -t tmpfs tmpfs /host/$dir
done
i=0
for keep in $(echo "$PHYTRACE_VM_KEEP" | $B tr , " "); do
    $B mkdir -p "/host$keep" 2>/dev/null
    $B mount -o bind "/keep/$i" "/host$keep"
    i=$((i + 1))
done
$B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "/host$PHYTRACE_VM_OUT"
# The guest kernel's module tree (built by `cargo xtask modules`) as /lib/modules. The kernel
# runs its helpers (request_module's modprobe, the uevent helper) in this initramfs: hand them
# to the host root's modprobe, so that drivers load by name and alias as on a real system. By
# default neither Asix PHY driver loads by alias (tests choose one in /run/modprobe.d).
if [ -d "/host$PHYTRACE_VM_MODULES" ]; then
    $B mount -o bind "/host$PHYTRACE_VM_MODULES" /host/lib/modules
fi
SHELL_BIN=/bin/sh
MODPROBE=/sbin/modprobe
SETSID="/usr/bin/setsid -c -w"
if [ -n "$PHYTRACE_VM_GUEST_BIN" ]; then
    G="/host$PHYTRACE_VM_GUEST_BIN"
    $B mkdir -p "$G"
    $B cp $B "$G/busybox"
    # From inside the chroot, so that the applet links name the copy by its path there.
    $B chroot /host "$PHYTRACE_VM_GUEST_BIN/busybox" --install -s "$PHYTRACE_VM_GUEST_BIN"
    SHELL_BIN="$PHYTRACE_VM_GUEST_BIN/sh"
    MODPROBE="$PHYTRACE_VM_GUEST_BIN/modprobe"
    SETSID="$PHYTRACE_VM_GUEST_BIN/setsid -c"
fi
# The helpers expand their own variables when they run.
# shellcheck disable=SC2016
printf '#!/bin/busybox sh\nexec /bin/busybox chroot /host %s "$@"\n' "$MODPROBE" >/bin/modprobe
# shellcheck disable=SC2016
printf '#!/bin/busybox sh\n[ "$ACTION" = add ] && [ -n "$MODALIAS" ] && exec /bin/busybox chroot /host %s -q "$MODALIAS"\nexit 0\n' "$MODPROBE" >/bin/hotplug
$B chmod 755 /bin/modprobe /bin/hotplug
echo /bin/modprobe >/proc/sys/kernel/modprobe
# Without CONFIG_UEVENT_HELPER (Debian's build) the kernel runs no helper on a uevent: busybox's
# uevent applet hears them on netlink and runs the same helper, as udev would load modules.
if [ -e /proc/sys/kernel/hotplug ]; then
    echo /bin/hotplug >/proc/sys/kernel/hotplug
else
    $B uevent /bin/hotplug </dev/null >/dev/null 2>&1 &
fi
$B mkdir -p /host/run/modprobe.d
printf 'blacklist ax88796b\nblacklist ax88796b_rust\n' >/host/run/modprobe.d/phytrace-asix.conf
# busybox's modprobe reads /etc/modprobe.d only (and the host's files there are not the guest's).
if [ -n "$PHYTRACE_VM_GUEST_BIN" ] && [ -d /host/etc/modprobe.d ]; then
    $B mount -t tmpfs tmpfs /host/etc/modprobe.d
    $B cp /host/run/modprobe.d/phytrace-asix.conf /host/etc/modprobe.d/
fi
$B hostname phytrace-vm
# The console: ttyS0 (x86_64) or ttyAMA0 (arm64's PL011).
TTY=/dev/ttyS0
[ -e /dev/ttyAMA0 ] && TTY=/dev/ttyAMA0
# shellcheck disable=SC2086,SC2094  # $SETSID is a command with its options; the console is read and written
$B chroot /host $SETSID "$SHELL_BIN" "$PHYTRACE_VM_RUN/run.sh" <$TTY >$TTY 2>&1
echo $? > "/host$PHYTRACE_VM_RUN/status"
$B sync
$B reboot -f
