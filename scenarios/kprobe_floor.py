#!/usr/bin/env python3
"""The floor of a set of kprobes: an empty BPF program (`r0 = 0; exit`) on each place.

Usage: kprobe_floor.py PLACE...   PLACE: `function+0xOFF` (a kprobe there) or `function%return`
(a kretprobe). Prints `ready` once every probe the kernel accepts is attached (a refused place is
said on stderr), then holds them until SIGTERM or SIGINT. Written against the kernel's ABI alone
(bpf(2), perf_event_open(2), the kprobe PMU), so that the floor shares nothing with phytrace but
the places it probes.
"""

import ctypes
import os
import platform
import signal
import struct
import sys

SYSCALLS = {"x86_64": (321, 298), "aarch64": (280, 241)}  # (bpf, perf_event_open)
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_KPROBE = 2
# r0 = 0; exit
EMPTY = bytes.fromhex("b700000000000000" "9500000000000000")
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_SET_BPF = 0x40042408
PERF_FLAG_FD_CLOEXEC = 8
PMU = "/sys/bus/event_source/devices/kprobe"

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong]


def check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        sys.exit(f"kprobe_floor: {what}: {os.strerror(err)}")
    return result


def load_empty_program(bpf):
    insns = ctypes.create_string_buffer(EMPTY, len(EMPTY))
    license = ctypes.create_string_buffer(b"GPL")
    # union bpf_attr, BPF_PROG_LOAD: prog_type, insn_cnt, insns, license (then zeros).
    attr = ctypes.create_string_buffer(
        struct.pack("IIQQ", BPF_PROG_TYPE_KPROBE, len(EMPTY) // 8,
                    ctypes.addressof(insns), ctypes.addressof(license)), 128)
    return check(libc.syscall(bpf, BPF_PROG_LOAD, attr, 128), "loading the empty program")


def pmu_type():
    with open(f"{PMU}/type") as f:
        return int(f.read())


def attach(perf_event_open, kind, program, place):
    retprobe = place.endswith("%return")
    function, _, offset = place.removesuffix("%return").partition("+")
    name = ctypes.create_string_buffer(function.encode())
    # struct perf_event_attr (PERF_ATTR_SIZE_VER5): type, size, config (bit 0: retprobe),
    # sample_period, sample_type, read_format, flags, wakeup_events, bp_type,
    # kprobe_func (config1), probe_offset (config2).
    attr = ctypes.create_string_buffer(
        struct.pack("IIQQQQQIIQQ", kind, 112, int(retprobe), 1, 0, 0, 0, 1, 0,
                    ctypes.addressof(name), int(offset or "0", 0)), 112)
    fd = libc.syscall(perf_event_open, attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        # As phytrace does with a place the kernel refuses: the others are probed.
        err = ctypes.get_errno()
        print(f"kprobe_floor: {place} not probed: {os.strerror(err)}", file=sys.stderr)
        return None
    check(libc.ioctl(fd, PERF_EVENT_IOC_SET_BPF, program), f"the program on {place}")
    check(libc.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), f"enabling {place}")
    return fd


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    places = sys.argv[1:]
    if not places or any(p in ("-h", "--help") for p in places):
        sys.exit(__doc__.strip())
    bpf, perf_event_open = SYSCALLS[platform.machine()]
    program = load_empty_program(bpf)
    kind = pmu_type()
    held = [fd for place in places if (fd := attach(perf_event_open, kind, program, place))]
    if not held:
        sys.exit("kprobe_floor: no place could be probed")
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    for fd in held:
        os.close(fd)


if __name__ == "__main__":
    main()
