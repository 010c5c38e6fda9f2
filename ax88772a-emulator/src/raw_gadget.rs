//! Bindings for `/dev/raw-gadget` (`drivers/usb/gadget/legacy/raw_gadget.c`), matching
//! `include/uapi/linux/usb/raw_gadget.h` of Linux 6.12: ioctl numbers, struct layouts and
//! event types. Every call blocks until the UDC completes it; a signal interrupts it (`EINTR`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::backend::UsbBackend;
use crate::error::Error;

/// The character device of the raw_gadget module.
pub const DEVICE: &str = "/dev/raw-gadget";

/// `UDC_NAME_LENGTH_MAX`.
const UDC_NAME_LENGTH_MAX: usize = 128;
/// `USB_RAW_EPS_NUM_MAX`.
const EPS_NUM_MAX: usize = 30;
/// `USB_RAW_EP_NAME_MAX`.
const EP_NAME_MAX: usize = 16;
/// `sizeof(struct usb_raw_ep_io)` without its data.
const EP_IO_HEADER: usize = 8;
/// `USB_RAW_IO_FLAGS_ZERO`: end an IN transfer whose length is a multiple of the packet size
/// with a zero-length packet.
pub const IO_FLAGS_ZERO: u16 = 0x0001;
/// `USB_RAW_IO_LENGTH_MAX` (`PAGE_SIZE` on x86 and arm64 with 4 KiB pages).
pub const IO_LENGTH_MAX: usize = 4096;

/// `_IOC(dir, 'U', nr, size)` of `<asm-generic/ioctl.h>`.
const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((b'U' as u32) << 8) | nr
}
const IOC_NONE: u32 = 0;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// `USB_RAW_IOCTL_INIT`: `_IOW('U', 0, struct usb_raw_init)` (257 bytes).
pub const IOCTL_INIT: u32 = ioc(IOC_WRITE, 0, 2 * UDC_NAME_LENGTH_MAX + 1);
/// `USB_RAW_IOCTL_RUN`: `_IO('U', 1)`.
pub const IOCTL_RUN: u32 = ioc(IOC_NONE, 1, 0);
/// `USB_RAW_IOCTL_EVENT_FETCH`: `_IOR('U', 2, struct usb_raw_event)`.
pub const IOCTL_EVENT_FETCH: u32 = ioc(IOC_READ, 2, 8);
/// `USB_RAW_IOCTL_EP0_WRITE`: `_IOW('U', 3, struct usb_raw_ep_io)`.
pub const IOCTL_EP0_WRITE: u32 = ioc(IOC_WRITE, 3, EP_IO_HEADER);
/// `USB_RAW_IOCTL_EP0_READ`: `_IOWR('U', 4, struct usb_raw_ep_io)`.
pub const IOCTL_EP0_READ: u32 = ioc(IOC_READ | IOC_WRITE, 4, EP_IO_HEADER);
/// `USB_RAW_IOCTL_EP_ENABLE`: `_IOW('U', 5, struct usb_endpoint_descriptor)` (9 bytes, packed).
pub const IOCTL_EP_ENABLE: u32 = ioc(IOC_WRITE, 5, 9);
/// `USB_RAW_IOCTL_EP_DISABLE`: `_IOW('U', 6, __u32)`.
pub const IOCTL_EP_DISABLE: u32 = ioc(IOC_WRITE, 6, 4);
/// `USB_RAW_IOCTL_EP_WRITE`: `_IOW('U', 7, struct usb_raw_ep_io)`.
pub const IOCTL_EP_WRITE: u32 = ioc(IOC_WRITE, 7, EP_IO_HEADER);
/// `USB_RAW_IOCTL_EP_READ`: `_IOWR('U', 8, struct usb_raw_ep_io)`.
pub const IOCTL_EP_READ: u32 = ioc(IOC_READ | IOC_WRITE, 8, EP_IO_HEADER);
/// `USB_RAW_IOCTL_CONFIGURE`: `_IO('U', 9)`.
pub const IOCTL_CONFIGURE: u32 = ioc(IOC_NONE, 9, 0);
/// `USB_RAW_IOCTL_VBUS_DRAW`: `_IOW('U', 10, __u32)`.
pub const IOCTL_VBUS_DRAW: u32 = ioc(IOC_WRITE, 10, 4);
/// `USB_RAW_IOCTL_EPS_INFO`: `_IOR('U', 11, struct usb_raw_eps_info)` (30 × 32 bytes).
pub const IOCTL_EPS_INFO: u32 = ioc(IOC_READ, 11, EPS_NUM_MAX * EP_INFO_SIZE);
/// `USB_RAW_IOCTL_EP0_STALL`: `_IO('U', 12)`.
pub const IOCTL_EP0_STALL: u32 = ioc(IOC_NONE, 12, 0);

/// `sizeof(struct usb_raw_ep_info)`: name[16], addr (u32), caps (u32 bit field), limits (8).
const EP_INFO_SIZE: usize = 32;

/// `USB_SPEED_HIGH` of `enum usb_device_speed`.
pub const SPEED_HIGH: u8 = 3;

/// An event of `USB_RAW_IOCTL_EVENT_FETCH` (`enum usb_raw_event_type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The gadget driver bound to the UDC.
    Connect,
    /// A control request arrived on ep0 (the 8-byte setup packet).
    Control([u8; 8]),
    /// The bus was suspended.
    Suspend,
    /// The bus resumed.
    Resume,
    /// The host reset the bus.
    Reset,
    /// The host went away (or the UDC disconnected).
    Disconnect,
    /// The host set the configuration and the kernel enabled the endpoints (FunctionFS, where
    /// the kernel answers SET_CONFIGURATION itself).
    Enable,
    /// The configuration was reset and the endpoints disabled (FunctionFS).
    Disable,
    /// A type this program does not know.
    Other(u32),
}

impl Event {
    /// Decodes `struct usb_raw_event`: type, length, data.
    pub fn decode(kind: u32, data: &[u8]) -> Event {
        match kind {
            1 => Event::Connect,
            2 => {
                let mut setup = [0u8; 8];
                let n = data.len().min(8);
                setup[..n].copy_from_slice(&data[..n]);
                Event::Control(setup)
            }
            3 => Event::Suspend,
            4 => Event::Resume,
            5 => Event::Reset,
            6 => Event::Disconnect,
            other => Event::Other(other),
        }
    }
}

/// One endpoint of `USB_RAW_IOCTL_EPS_INFO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpInfo {
    /// The UDC's name for it, e.g. `ep1in-bulk`.
    pub name: String,
    /// Its fixed endpoint number, or `None` (`USB_RAW_EP_ADDR_ANY`) if any number goes.
    pub addr: Option<u8>,
    /// Supports bulk transfers.
    pub bulk: bool,
    /// Supports interrupt transfers.
    pub int: bool,
    /// Supports the IN direction.
    pub dir_in: bool,
    /// Supports the OUT direction.
    pub dir_out: bool,
    /// `maxpacket_limit`.
    pub maxpacket_limit: u16,
}

impl EpInfo {
    /// Decodes one 32-byte `struct usb_raw_ep_info`.
    fn decode(raw: &[u8]) -> EpInfo {
        let name_end = raw[..EP_NAME_MAX]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(EP_NAME_MAX);
        let addr = u32::from_ne_bytes([raw[16], raw[17], raw[18], raw[19]]);
        let caps = u32::from_ne_bytes([raw[20], raw[21], raw[22], raw[23]]);
        EpInfo {
            name: String::from_utf8_lossy(&raw[..name_end]).into_owned(),
            addr: if addr == 0xff { None } else { Some(addr as u8) },
            bulk: caps & (1 << 2) != 0,
            int: caps & (1 << 3) != 0,
            dir_in: caps & (1 << 4) != 0,
            dir_out: caps & (1 << 5) != 0,
            maxpacket_limit: u16::from_ne_bytes([raw[24], raw[25]]),
        }
    }
}

/// An open `/dev/raw-gadget`: one emulated device on one UDC. Closing it unregisters the
/// gadget, which the host sees as the device being unplugged.
#[derive(Debug)]
pub struct RawGadget {
    file: File,
}

impl RawGadget {
    /// Opens the device node.
    pub fn open(path: &Path) -> Result<RawGadget, Error> {
        match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => Ok(RawGadget { file }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(Error::NoRawGadget(path.display().to_string()))
            }
            Err(e) => Err(Error::Io(format!("open {}", path.display()), e)),
        }
    }

    /// `ioctl(fd, request, arg)`; the kernel's return value or the errno.
    fn ioctl(&self, request: u32, arg: libc::c_ulong) -> io::Result<i32> {
        // SAFETY: the fd is open for the lifetime of self; every caller passes either a plain
        // integer or a pointer to a buffer at least as large as the kernel reads or writes for
        // that request (the size encoded in the request number, plus the stated data length).
        // The request's C type is the libc's (glibc: unsigned long, musl: int); the kernel
        // takes its low 32 bits.
        let ret = unsafe { libc::ioctl(self.file.as_raw_fd(), request as libc::Ioctl, arg) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    }

    /// `USB_RAW_IOCTL_INIT`: binds to the UDC `device` of driver `driver` at `speed`.
    pub fn init(&self, driver: &str, device: &str, speed: u8) -> io::Result<()> {
        let mut buf = [0u8; 2 * UDC_NAME_LENGTH_MAX + 1];
        for (i, name) in [driver, device].iter().enumerate() {
            let bytes = name.as_bytes();
            if bytes.len() >= UDC_NAME_LENGTH_MAX {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "UDC name too long",
                ));
            }
            buf[i * UDC_NAME_LENGTH_MAX..i * UDC_NAME_LENGTH_MAX + bytes.len()]
                .copy_from_slice(bytes);
        }
        buf[2 * UDC_NAME_LENGTH_MAX] = speed;
        self.ioctl(IOCTL_INIT, buf.as_ptr() as libc::c_ulong)
            .map(drop)
    }

    /// `USB_RAW_IOCTL_RUN`: registers the gadget; the host sees a device attach.
    pub fn run(&self) -> io::Result<()> {
        self.ioctl(IOCTL_RUN, 0).map(drop)
    }

    /// `USB_RAW_IOCTL_EVENT_FETCH`: waits for the next event.
    pub fn event_fetch(&self) -> io::Result<Event> {
        // struct usb_raw_event { u32 type; u32 length; u8 data[]; } with room for a setup packet.
        let mut buf = [0u32; 2 + 16];
        buf[1] = 64;
        self.ioctl(IOCTL_EVENT_FETCH, buf.as_mut_ptr() as libc::c_ulong)?;
        let len = (buf[1] as usize).min(64);
        let bytes: Vec<u8> = buf[2..].iter().flat_map(|w| w.to_ne_bytes()).collect();
        Ok(Event::decode(buf[0], &bytes[..len]))
    }

    /// Builds a `struct usb_raw_ep_io` with `len` bytes of data space.
    fn io_buf(ep: u16, flags: u16, data: &[u8], len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; EP_IO_HEADER + len];
        buf[0..2].copy_from_slice(&ep.to_ne_bytes());
        buf[2..4].copy_from_slice(&flags.to_ne_bytes());
        buf[4..8].copy_from_slice(&(len as u32).to_ne_bytes());
        buf[EP_IO_HEADER..EP_IO_HEADER + data.len()].copy_from_slice(data);
        buf
    }

    /// `USB_RAW_IOCTL_EP0_WRITE`: the data stage of an IN control request.
    pub fn ep0_write(&self, data: &[u8]) -> io::Result<usize> {
        let buf = Self::io_buf(0, 0, data, data.len());
        self.ioctl(IOCTL_EP0_WRITE, buf.as_ptr() as libc::c_ulong)
            .map(|n| n as usize)
    }

    /// `USB_RAW_IOCTL_EP0_READ`: the data stage of an OUT control request (or, with `len` 0,
    /// the acknowledgement of one without data).
    pub fn ep0_read(&self, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = Self::io_buf(0, 0, &[], len);
        let n = self.ioctl(IOCTL_EP0_READ, buf.as_mut_ptr() as libc::c_ulong)? as usize;
        Ok(buf[EP_IO_HEADER..EP_IO_HEADER + n.min(len)].to_vec())
    }

    /// `USB_RAW_IOCTL_EP0_STALL`: refuses the pending control request.
    pub fn ep0_stall(&self) -> io::Result<()> {
        self.ioctl(IOCTL_EP0_STALL, 0).map(drop)
    }

    /// `USB_RAW_IOCTL_EP_ENABLE`: enables the endpoint of this 7-byte descriptor; returns the
    /// handle for [`RawGadget::ep_write`] and [`RawGadget::ep_read`].
    pub fn ep_enable(&self, desc: &[u8; 7]) -> io::Result<u16> {
        // struct usb_endpoint_descriptor is 9 bytes (bRefresh, bSynchAddress for audio).
        let mut buf = [0u8; 9];
        buf[..7].copy_from_slice(desc);
        self.ioctl(IOCTL_EP_ENABLE, buf.as_ptr() as libc::c_ulong)
            .map(|h| h as u16)
    }

    /// `USB_RAW_IOCTL_EP_DISABLE`.
    pub fn ep_disable(&self, handle: u16) -> io::Result<()> {
        self.ioctl(IOCTL_EP_DISABLE, handle as libc::c_ulong)
            .map(drop)
    }

    /// `USB_RAW_IOCTL_EP_WRITE`: one IN transfer to the host; `flags` [`IO_FLAGS_ZERO`] or 0.
    pub fn ep_write(&self, handle: u16, flags: u16, data: &[u8]) -> io::Result<usize> {
        let buf = Self::io_buf(handle, flags, data, data.len());
        self.ioctl(IOCTL_EP_WRITE, buf.as_ptr() as libc::c_ulong)
            .map(|n| n as usize)
    }

    /// `USB_RAW_IOCTL_EP_READ`: one OUT transfer from the host, at most `len` bytes.
    pub fn ep_read(&self, handle: u16, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = Self::io_buf(handle, 0, &[], len);
        let n = self.ioctl(IOCTL_EP_READ, buf.as_mut_ptr() as libc::c_ulong)? as usize;
        Ok(buf[EP_IO_HEADER..EP_IO_HEADER + n.min(len)].to_vec())
    }

    /// `USB_RAW_IOCTL_CONFIGURE`: tells the UDC the device is configured.
    pub fn configure(&self) -> io::Result<()> {
        self.ioctl(IOCTL_CONFIGURE, 0).map(drop)
    }

    /// `USB_RAW_IOCTL_VBUS_DRAW`: the current drawn, in 2 mA units as in `bMaxPower`.
    pub fn vbus_draw(&self, units_2ma: u32) -> io::Result<()> {
        self.ioctl(IOCTL_VBUS_DRAW, units_2ma as libc::c_ulong)
            .map(drop)
    }

    /// `USB_RAW_IOCTL_EPS_INFO`: the UDC's non-control endpoints.
    pub fn eps_info(&self) -> io::Result<Vec<EpInfo>> {
        let mut buf = vec![0u8; EPS_NUM_MAX * EP_INFO_SIZE];
        let n = self.ioctl(IOCTL_EPS_INFO, buf.as_mut_ptr() as libc::c_ulong)? as usize;
        Ok(buf
            .chunks_exact(EP_INFO_SIZE)
            .take(n.min(EPS_NUM_MAX))
            .map(EpInfo::decode)
            .collect())
    }
}

impl UsbBackend for RawGadget {
    fn event_fetch(&self) -> io::Result<Event> {
        RawGadget::event_fetch(self)
    }

    fn ep0_write(&self, data: &[u8]) -> io::Result<usize> {
        RawGadget::ep0_write(self, data)
    }

    fn ep0_read(&self, len: usize) -> io::Result<Vec<u8>> {
        RawGadget::ep0_read(self, len)
    }

    fn ep0_stall(&self) -> io::Result<()> {
        RawGadget::ep0_stall(self)
    }

    fn ep_enable(&self, desc: &[u8; 7]) -> io::Result<u16> {
        RawGadget::ep_enable(self, desc)
    }

    fn ep_disable(&self, handle: u16) -> io::Result<()> {
        RawGadget::ep_disable(self, handle)
    }

    fn ep_write(&self, handle: u16, zero: bool, data: &[u8]) -> io::Result<usize> {
        RawGadget::ep_write(self, handle, if zero { IO_FLAGS_ZERO } else { 0 }, data)
    }

    fn ep_read(&self, handle: u16, len: usize) -> io::Result<Vec<u8>> {
        RawGadget::ep_read(self, handle, len)
    }

    fn configure(&self, units_2ma: u32) -> io::Result<()> {
        self.vbus_draw(units_2ma)?;
        RawGadget::configure(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers `<linux/usb/raw_gadget.h>` of 6.12 gives (printed by a C program).
    #[test]
    fn ioctl_numbers_match_the_uapi_header() {
        assert_eq!(IOCTL_INIT, 0x4101_5500);
        assert_eq!(IOCTL_RUN, 0x5501);
        assert_eq!(IOCTL_EVENT_FETCH, 0x8008_5502);
        assert_eq!(IOCTL_EP0_WRITE, 0x4008_5503);
        assert_eq!(IOCTL_EP0_READ, 0xc008_5504);
        assert_eq!(IOCTL_EP_ENABLE, 0x4009_5505);
        assert_eq!(IOCTL_EP_DISABLE, 0x4004_5506);
        assert_eq!(IOCTL_EP_WRITE, 0x4008_5507);
        assert_eq!(IOCTL_EP_READ, 0xc008_5508);
        assert_eq!(IOCTL_CONFIGURE, 0x5509);
        assert_eq!(IOCTL_VBUS_DRAW, 0x4004_550a);
        assert_eq!(IOCTL_EPS_INFO, 0x83c0_550b);
        assert_eq!(IOCTL_EP0_STALL, 0x550c);
    }

    #[test]
    fn ep_info_decodes_name_addr_and_caps() {
        let mut raw = [0u8; EP_INFO_SIZE];
        raw[..10].copy_from_slice(b"ep1in-bulk");
        raw[16..20].copy_from_slice(&1u32.to_ne_bytes());
        raw[20..24].copy_from_slice(&((1u32 << 2) | (1 << 4)).to_ne_bytes());
        raw[24..26].copy_from_slice(&1024u16.to_ne_bytes());
        let ep = EpInfo::decode(&raw);
        assert_eq!(ep.name, "ep1in-bulk");
        assert_eq!(ep.addr, Some(1));
        assert!(ep.bulk && ep.dir_in && !ep.dir_out && !ep.int);
        assert_eq!(ep.maxpacket_limit, 1024);
    }

    #[test]
    fn events_decode() {
        let setup = [0xc0, 0x07, 0x10, 0, 0x01, 0, 2, 0];
        assert_eq!(Event::decode(2, &setup), Event::Control(setup));
        assert_eq!(Event::decode(5, &[]), Event::Reset);
        assert_eq!(Event::decode(42, &[]), Event::Other(42));
    }
}
