//! The kernel interfaces through which the dongle is a USB device, behind one trait, chosen at
//! run time by what the kernel has:
//!
//! - raw-gadget (`/dev/raw-gadget`, `CONFIG_USB_RAW_GADGET`): every ep0 request reaches us,
//!   enumeration included; our test kernel has it.
//! - FunctionFS on a configfs gadget (`usb_f_fs`, `libcomposite`): the kernel's composite
//!   layer enumerates the device from the descriptors we give it and hands us every other ep0
//!   request (`FUNCTIONFS_ALL_CTRL_RECIP`: device-recipient vendor requests too); Debian's
//!   stock kernels have it, and no raw-gadget. See docs/dongle.md, "Backends".

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::descriptors::EndpointAddrs;
use crate::error::Error;
use crate::functionfs::{self, FunctionFs};
use crate::raw_gadget::{Event, RawGadget, SPEED_HIGH};

/// What the USB device side of the emulator needs from the kernel. Every call blocks until the
/// UDC completes it; a signal interrupts it (`EINTR`).
pub trait UsbBackend: Send + Sync {
    /// The next event: a control request on ep0, a bus event, or (FunctionFS) the host having
    /// enabled or disabled the configuration.
    fn event_fetch(&self) -> io::Result<Event>;
    /// The data stage of the pending IN control request.
    fn ep0_write(&self, data: &[u8]) -> io::Result<usize>;
    /// The data stage of the pending OUT control request (`len` 0: its status stage).
    fn ep0_read(&self, len: usize) -> io::Result<Vec<u8>>;
    /// Refuses the pending control request.
    fn ep0_stall(&self) -> io::Result<()>;
    /// Enables the endpoint of this descriptor; returns its handle.
    fn ep_enable(&self, desc: &[u8; 7]) -> io::Result<u16>;
    /// Disables an endpoint.
    fn ep_disable(&self, handle: u16) -> io::Result<()>;
    /// One IN transfer; `zero` ends it with a zero-length packet.
    fn ep_write(&self, handle: u16, zero: bool, data: &[u8]) -> io::Result<usize>;
    /// One OUT transfer of at most `len` bytes.
    fn ep_read(&self, handle: u16, len: usize) -> io::Result<Vec<u8>>;
    /// Tells the UDC the device is configured, drawing `units_2ma` × 2 mA.
    fn configure(&self, units_2ma: u32) -> io::Result<()>;
}

/// Which interface to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// raw-gadget if the kernel has it, else FunctionFS.
    Auto,
    /// `/dev/raw-gadget`.
    RawGadget,
    /// FunctionFS in a configfs gadget.
    Functionfs,
}

/// Where the interfaces are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The raw-gadget device node.
    pub raw_gadget: PathBuf,
    /// configfs' USB gadget directory.
    pub configfs: PathBuf,
}

/// Resolves `kind` against what this kernel offers (checked before anything starts).
pub fn choose(kind: Kind, paths: &Paths) -> Result<Kind, Error> {
    let raw = paths.raw_gadget.exists();
    let ffs = functionfs::available(&paths.configfs);
    match kind {
        Kind::Auto if raw => Ok(Kind::RawGadget),
        Kind::Auto if ffs => Ok(Kind::Functionfs),
        Kind::Auto => Err(Error::NoGadgetInterface(
            paths.raw_gadget.display().to_string(),
            paths.configfs.display().to_string(),
        )),
        Kind::RawGadget if !raw => Err(Error::NoRawGadget(paths.raw_gadget.display().to_string())),
        Kind::Functionfs if !ffs => Err(Error::NoFunctionFs(paths.configfs.display().to_string())),
        chosen => Ok(chosen),
    }
}

/// Attaches the device on `udc_driver`/`udc_device` through `kind` (resolved by [`choose`]):
/// the host sees it plugged in. Dropping the backend unplugs it.
pub fn attach(
    kind: Kind,
    paths: &Paths,
    udc_driver: &str,
    udc_device: &str,
) -> Result<(Arc<dyn UsbBackend>, EndpointAddrs), Error> {
    match kind {
        Kind::Functionfs => {
            let (ffs, addrs) = FunctionFs::attach(&paths.configfs, udc_device)?;
            Ok((Arc::new(ffs), addrs))
        }
        _ => {
            let (g, addrs) = attach_raw_gadget(&paths.raw_gadget, udc_driver, udc_device)?;
            Ok((Arc::new(g), addrs))
        }
    }
}

/// Opens raw-gadget, binds it to the UDC and picks the endpoints.
fn attach_raw_gadget(
    node: &Path,
    udc_driver: &str,
    udc_device: &str,
) -> Result<(RawGadget, EndpointAddrs), Error> {
    let g = RawGadget::open(node)?;
    let hint = " (is dummy_hcd loaded and its UDC dummy_udc.0 free?)";
    g.init(udc_driver, udc_device, SPEED_HIGH)
        .map_err(|source| Error::Gadget {
            what: "INIT",
            source,
            hint,
        })?;
    g.run().map_err(|source| Error::Gadget {
        what: "RUN",
        source,
        hint,
    })?;
    let eps = g.eps_info().map_err(|source| Error::Gadget {
        what: "EPS_INFO",
        source,
        hint: "",
    })?;
    let addrs = EndpointAddrs::pick(&eps).ok_or_else(|| {
        Error::NoEndpoints(
            eps.iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    })?;
    Ok((g, addrs))
}
