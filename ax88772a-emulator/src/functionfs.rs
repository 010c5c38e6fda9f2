//! The dongle as a FunctionFS function of a configfs USB gadget (`libcomposite`, `usb_f_fs`:
//! `drivers/usb/gadget/function/f_fs.c`, `include/uapi/linux/usb/functionfs.h` of Linux 7.3).
//!
//! configfs describes the device (0b95:772a, class 0xff, one configuration) and the kernel's
//! composite layer enumerates it; FunctionFS carries the interface: its descriptors go to
//! `ep0`, whose reads then return events. With `FUNCTIONFS_ALL_CTRL_RECIP` every control
//! request composite does not answer itself reaches us as a SETUP event, device-recipient
//! vendor requests included, and the host waits for us: an IN request until we write its data,
//! an OUT request's data stage until we read it (the request is queued on ep0 only then), a
//! request without data until we acknowledge it (`USB_GADGET_DELAYED_STATUS`). A read in the
//! wrong direction stalls. The endpoints are the files `ep1`… in descriptor order; the kernel
//! enables them when the host sets the configuration (an ENABLE event). Writing the UDC's name
//! to the gadget's `UDC` file plugs the dongle in; closing `ep0` (or emptying `UDC`) unplugs it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::UsbBackend;
use crate::descriptors::{self, EndpointAddrs};
use crate::error::Error;
use crate::raw_gadget::Event;

/// configfs' gadget directory.
pub const CONFIGFS: &str = "/sys/kernel/config/usb_gadget";
/// Where the FunctionFS instances are mounted.
const MOUNT_ROOT: &str = "/run/ax88772a-emulator";
/// Prefix of our gadgets' configfs directories (and FunctionFS instance names): + the pid, `-`
/// and the plug-in's number.
const NAME_PREFIX: &str = "ax88772a-";

/// Plug-ins so far in this process, to name each gadget afresh.
static ATTACHED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// `FUNCTIONFS_DESCRIPTORS_MAGIC_V2`, `FUNCTIONFS_STRINGS_MAGIC`.
const DESCRIPTORS_MAGIC_V2: u32 = 3;
const STRINGS_MAGIC: u32 = 2;
/// `FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC | FUNCTIONFS_ALL_CTRL_RECIP`.
const FLAGS: u32 = 1 | 2 | 64;
/// `sizeof(struct usb_functionfs_event)`: an 8-byte setup packet, the type, 3 bytes padding.
const EVENT_SIZE: usize = 12;
/// Bulk wMaxPacketSize at full speed (the descriptors' high-speed value is 512).
const FS_BULK_MAXPACKET: u16 = 64;

/// Whether this kernel can make a configfs gadget. (The `functionfs` file system registers
/// itself with the first FunctionFS instance, when we create ours.)
pub fn available(configfs: &Path) -> bool {
    configfs.is_dir()
}

/// The interface descriptor followed by the three endpoint descriptors, for one speed.
fn interface(addrs: &EndpointAddrs, high_speed: bool) -> Vec<u8> {
    let mut d = vec![9, 4, 0, 0, 3, 0xff, 0xff, 0x00, 0];
    for mut e in addrs.descriptors() {
        if !high_speed && e[3] == 0x02 {
            e[4..6].copy_from_slice(&FS_BULK_MAXPACKET.to_le_bytes());
        }
        d.extend_from_slice(&e);
    }
    d
}

/// What is written to `ep0` first: the v2 descriptors blob, full and high speed.
fn descriptors_blob(addrs: &EndpointAddrs) -> Vec<u8> {
    let (fs, hs) = (interface(addrs, false), interface(addrs, true));
    let mut blob = Vec::new();
    for word in [DESCRIPTORS_MAGIC_V2, 0, FLAGS, 4, 4] {
        blob.extend_from_slice(&word.to_le_bytes());
    }
    blob.extend_from_slice(&fs);
    blob.extend_from_slice(&hs);
    let len = (blob.len() as u32).to_le_bytes();
    blob[4..8].copy_from_slice(&len);
    blob
}

/// What is written to `ep0` second: no strings (the descriptors name none; the device's come
/// from configfs).
fn strings_blob() -> Vec<u8> {
    [STRINGS_MAGIC, 16, 0, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// Decodes one `struct usb_functionfs_event`.
fn decode_event(raw: &[u8; EVENT_SIZE]) -> Event {
    match raw[8] {
        0 => Event::Connect,    // BIND
        1 => Event::Disconnect, // UNBIND
        2 => Event::Enable,
        3 => Event::Disable,
        4 => {
            let mut setup = [0u8; 8];
            setup.copy_from_slice(&raw[..8]);
            Event::Control(setup)
        }
        5 => Event::Suspend,
        6 => Event::Resume,
        other => Event::Other(u32::from(other)),
    }
}

/// A plugged-in dongle on FunctionFS. Dropping it unplugs the dongle and removes the gadget.
#[derive(Debug)]
pub struct FunctionFs {
    gadget: PathBuf,
    mount: PathBuf,
    /// `None` once closed (on the way to removing the gadget).
    ep0: Option<File>,
    /// ep1 (interrupt IN), ep2 (bulk IN), ep3 (bulk OUT), as in the descriptors.
    eps: Vec<File>,
    /// Their descriptors, to map [`UsbBackend::ep_enable`] to a file.
    descs: [[u8; 7]; 3],
    /// Direction of the pending control request (IN), for stalling it.
    setup_in: AtomicBool,
}

fn io_err(what: String) -> impl FnOnce(io::Error) -> Error {
    move |e| Error::Io(what, e)
}

fn write_attr(dir: &Path, name: &str, value: &str) -> Result<(), Error> {
    let path = dir.join(name);
    fs::write(&path, value).map_err(io_err(format!("write {}", path.display())))
}

fn mkdir(path: &Path) -> Result<(), Error> {
    fs::create_dir_all(path).map_err(io_err(format!("mkdir {}", path.display())))
}

/// mount(2) of a FunctionFS instance.
fn mount_functionfs(source: &str, target: &Path) -> io::Result<()> {
    let source = std::ffi::CString::new(source)?;
    let target = std::ffi::CString::new(target.as_os_str().as_bytes())?;
    let fstype = c"functionfs";
    // SAFETY: the three pointers are NUL-terminated strings that outlive the call; data is
    // null, which mount(2) accepts for FunctionFS.
    let ret = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// umount(2), detached: a file still open elsewhere does not keep it.
fn umount(target: &Path) {
    if let Ok(target) = std::ffi::CString::new(target.as_os_str().as_bytes()) {
        // SAFETY: a NUL-terminated path that outlives the call.
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// Removes the configfs gadget at `dir` (unbinding it first), leaves out what is missing.
fn remove_gadget(dir: &Path, function: &str) {
    let _ = fs::write(dir.join("UDC"), "\n");
    let _ = fs::remove_file(dir.join("configs/c.1").join(function));
    for sub in [
        "configs/c.1/strings/0x409",
        "configs/c.1",
        &format!("functions/{function}"),
        "strings/0x409",
        "",
    ] {
        let _ = fs::remove_dir(dir.join(sub));
    }
}

/// Removes the gadgets of emulators that are gone (killed: their FunctionFS closed, which
/// unbound them, but configfs keeps the directories).
fn remove_stale(configfs: &Path) {
    let Ok(entries) = fs::read_dir(configfs) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        remove_gadget(&entry.path(), &format!("ffs.{name}"));
        let mount = Path::new(MOUNT_ROOT).join(&name);
        umount(&mount);
        let _ = fs::remove_dir(&mount);
    }
}

impl FunctionFs {
    /// Builds the gadget, hands FunctionFS our descriptors and binds the gadget to the UDC
    /// `udc`: the host sees the dongle plugged in.
    pub fn attach(configfs: &Path, udc: &str) -> Result<(FunctionFs, EndpointAddrs), Error> {
        remove_stale(configfs);
        let plug_in = ATTACHED.fetch_add(1, Ordering::SeqCst);
        let name = format!("{NAME_PREFIX}{}-{plug_in}", std::process::id());
        let function = format!("ffs.{name}");
        let gadget = configfs.join(&name);
        let mount = Path::new(MOUNT_ROOT).join(&name);
        // Numbers for the descriptors; the kernel assigns the UDC's endpoints and tells the
        // host those.
        let addrs = EndpointAddrs {
            int_in: 0x83,
            bulk_in: 0x81,
            bulk_out: 0x02,
        };
        let built = (|| -> Result<FunctionFs, Error> {
            mkdir(&gadget)?;
            for (attr, value) in [
                ("idVendor", format!("{:#06x}", descriptors::VENDOR_ID)),
                ("idProduct", format!("{:#06x}", descriptors::PRODUCT_ID)),
                ("bcdDevice", "0x0001".to_owned()),
                ("bcdUSB", "0x0200".to_owned()),
                ("bDeviceClass", "0xff".to_owned()),
                ("bDeviceSubClass", "0xff".to_owned()),
                ("bDeviceProtocol", "0x00".to_owned()),
                ("bMaxPacketSize0", "64".to_owned()),
            ] {
                write_attr(&gadget, attr, &value)?;
            }
            let strings = gadget.join("strings/0x409");
            mkdir(&strings)?;
            for (attr, value) in ["manufacturer", "product", "serialnumber"]
                .iter()
                .zip(descriptors::STRINGS)
            {
                write_attr(&strings, attr, value)?;
            }
            let config = gadget.join("configs/c.1");
            mkdir(&config)?;
            write_attr(&config, "bmAttributes", "0xa0")?;
            write_attr(
                &config,
                "MaxPower",
                &(2 * u32::from(descriptors::MAX_POWER)).to_string(),
            )?;
            let instance = gadget.join("functions").join(&function);
            mkdir(&instance)?;
            std::os::unix::fs::symlink(&instance, config.join(&function))
                .map_err(io_err(format!("link {} into c.1", instance.display())))?;
            mkdir(&mount)?;
            mount_functionfs(&name, &mount).map_err(io_err(format!(
                "mount -t functionfs {name} {}",
                mount.display()
            )))?;
            let open = |file: &str| {
                let path = mount.join(file);
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(io_err(format!("open {}", path.display())))
            };
            let mut ep0 = open("ep0")?;
            ep0.write_all(&descriptors_blob(&addrs))
                .map_err(io_err("FunctionFS descriptors".into()))?;
            ep0.write_all(&strings_blob())
                .map_err(io_err("FunctionFS strings".into()))?;
            let eps = ["ep1", "ep2", "ep3"]
                .iter()
                .map(|f| open(f))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(FunctionFs {
                gadget: gadget.clone(),
                mount: mount.clone(),
                ep0: Some(ep0),
                eps,
                descs: addrs.descriptors(),
                setup_in: AtomicBool::new(false),
            })
        })();
        let ffs = match built {
            Ok(ffs) => ffs,
            Err(e) => {
                umount(&mount);
                let _ = fs::remove_dir(&mount);
                remove_gadget(&gadget, &function);
                return Err(e);
            }
        };
        // The UDC's driver binds the gadget: the host sees the device attach.
        fs::write(gadget.join("UDC"), udc).map_err(|source| Error::Gadget {
            what: "bind to UDC",
            source,
            hint: " (is dummy_hcd loaded and its UDC dummy_udc.0 free?)",
        })?;
        Ok((ffs, addrs))
    }

    fn ep0(&self) -> io::Result<&File> {
        self.ep0
            .as_ref()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "ep0 is closed"))
    }

    fn ep(&self, handle: u16) -> io::Result<&File> {
        self.eps
            .get(usize::from(handle))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such endpoint"))
    }
}

/// A stall answers `EL2HLT` (gadgetfs) or `EBADMSG`: the request was refused, as asked.
fn stalled(result: io::Result<usize>) -> io::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EL2HLT | libc::EBADMSG)) => Ok(()),
        Err(e) => Err(e),
    }
}

impl UsbBackend for FunctionFs {
    fn event_fetch(&self) -> io::Result<Event> {
        let mut raw = [0u8; EVENT_SIZE];
        let n = loop {
            match self.ep0()?.read(&mut raw) {
                // f_fs.c: a SETUP still queued when another event came was cancelled (the
                // kernel dropped it); the read says so once with EIDRM. Not a failure of the
                // gadget: said, and the next event is read.
                Err(e) if e.raw_os_error() == Some(libc::EIDRM) => {
                    eprintln!(
                        "ax88772a-emulator: FunctionFS cancelled a control request before it was read"
                    );
                }
                other => break other?,
            }
        };
        if n != EVENT_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("FunctionFS event of {n} bytes"),
            ));
        }
        let event = decode_event(&raw);
        if let Event::Control(setup) = &event {
            self.setup_in.store(setup[0] & 0x80 != 0, Ordering::SeqCst);
        }
        Ok(event)
    }

    fn ep0_write(&self, data: &[u8]) -> io::Result<usize> {
        self.ep0()?.write(data)
    }

    fn ep0_read(&self, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let n = self.ep0()?.read(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    fn ep0_stall(&self) -> io::Result<()> {
        // I/O in the direction opposite to the request's stalls it.
        if self.setup_in.load(Ordering::SeqCst) {
            stalled(self.ep0()?.read(&mut [0u8; 1]))
        } else {
            stalled(self.ep0()?.write(&[0u8; 1]))
        }
    }

    fn ep_enable(&self, desc: &[u8; 7]) -> io::Result<u16> {
        // The kernel enabled them already (the ENABLE event); find the file.
        self.descs
            .iter()
            .position(|d| d[2] == desc[2])
            .map(|i| i as u16)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "unknown endpoint"))
    }

    fn ep_disable(&self, _handle: u16) -> io::Result<()> {
        Ok(())
    }

    fn ep_write(&self, handle: u16, zero: bool, data: &[u8]) -> io::Result<usize> {
        let mut ep = self.ep(handle)?;
        let n = ep.write(data)?;
        if zero {
            // A write of nothing is a zero-length packet (FunctionFS queues a 0-byte request).
            let _zlp: usize = ep.write(&[])?;
        }
        Ok(n)
    }

    fn ep_read(&self, handle: u16, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let n = self.ep(handle)?.read(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    fn configure(&self, _units_2ma: u32) -> io::Result<()> {
        // composite answered SET_CONFIGURATION and drew the configuration's power.
        Ok(())
    }
}

impl Drop for FunctionFs {
    fn drop(&mut self) {
        // Unbind first: the host sees the unplug while our files are still open.
        let _ = fs::write(self.gadget.join("UDC"), "\n");
        let name = self
            .gadget
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Every file closed before the instance is removed: FunctionFS lets go of it then.
        self.eps.clear();
        self.ep0 = None;
        umount(&self.mount);
        let _ = fs::remove_dir(&self.mount);
        remove_gadget(&self.gadget, &format!("ffs.{name}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs() -> EndpointAddrs {
        EndpointAddrs {
            int_in: 0x83,
            bulk_in: 0x81,
            bulk_out: 0x02,
        }
    }

    #[test]
    fn descriptors_blob_is_v2_with_both_speeds() {
        let blob = descriptors_blob(&addrs());
        let word = |i: usize| u32::from_le_bytes(blob[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(word(0), DESCRIPTORS_MAGIC_V2);
        assert_eq!(word(1) as usize, blob.len());
        assert_eq!(word(2), FLAGS);
        assert_eq!(
            (word(3), word(4)),
            (4, 4),
            "interface + 3 endpoints per speed"
        );
        assert_eq!(blob.len(), 20 + 2 * (9 + 3 * 7));
        let fs = &blob[20..50];
        let hs = &blob[50..80];
        assert_eq!(&fs[..9], &[9, 4, 0, 0, 3, 0xff, 0xff, 0, 0]);
        // Bulk IN: 64 bytes at full speed, 512 at high speed; the interrupt endpoint 8 at both.
        assert_eq!(&fs[16..23], &[7, 5, 0x81, 2, 64, 0, 0]);
        assert_eq!(&hs[16..23], &[7, 5, 0x81, 2, 0, 2, 0]);
        assert_eq!(&fs[9..16], &hs[9..16]);
    }

    #[test]
    fn strings_blob_names_none() {
        assert_eq!(
            strings_blob(),
            [2, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn events_decode() {
        let mut raw = [0u8; EVENT_SIZE];
        raw[..8].copy_from_slice(&[0xc0, 0x07, 0x10, 0, 0x01, 0, 2, 0]);
        raw[8] = 4;
        assert_eq!(
            decode_event(&raw),
            Event::Control([0xc0, 0x07, 0x10, 0, 0x01, 0, 2, 0])
        );
        raw[8] = 2;
        assert_eq!(decode_event(&raw), Event::Enable);
        raw[8] = 1;
        assert_eq!(decode_event(&raw), Event::Disconnect);
        raw[8] = 9;
        assert_eq!(decode_event(&raw), Event::Other(9));
    }
}
