#!/usr/bin/env python3
"""MII register access through the netdev ioctls (SIOCGMIIPHY/SIOCGMIIREG/SIOCSMIIREG).

  mii.py DEV read REG            print the register (hex)
  mii.py DEV write REG VALUE     write the register
  mii.py DEV loop REG COUNT      COUNT reads; prints "reads=N errors=E seconds=S"

REG and VALUE accept 0x... hex. The PHY address is the netdev's own (SIOCGMIIPHY).
"""
import fcntl
import socket
import struct
import sys
import time

SIOCGMIIPHY, SIOCGMIIREG, SIOCSMIIREG = 0x8947, 0x8948, 0x8949


def ioctl(sock, dev, cmd, phy=0, reg=0, val=0):
    req = struct.pack("16sHHHH", dev.encode(), phy, reg, val, 0).ljust(40, b"\0")
    res = fcntl.ioctl(sock.fileno(), cmd, req)
    return struct.unpack("16sHHHH", res[:24])


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    dev, op, reg = argv[1], argv[2], int(argv[3], 0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    phy = ioctl(sock, dev, SIOCGMIIPHY)[1]
    if op == "read":
        print("0x%04x" % ioctl(sock, dev, SIOCGMIIREG, phy, reg)[4])
    elif op == "write":
        ioctl(sock, dev, SIOCSMIIREG, phy, reg, int(argv[4], 0))
    elif op == "loop":
        count, errors, t0 = int(argv[4]), 0, time.monotonic()
        for _ in range(count):
            try:
                ioctl(sock, dev, SIOCGMIIREG, phy, reg)
            except OSError:
                errors += 1
        print("reads=%d errors=%d seconds=%.3f" % (count, errors, time.monotonic() - t0))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
