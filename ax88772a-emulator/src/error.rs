//! Errors and the exit codes they map to.

use std::io;

use thiserror::Error;

/// Exit code: a runtime failure (I/O, the gadget failed).
pub const EXIT_RUNTIME: u8 = 1;
/// Exit code: bad command line or control command (also clap's).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the environment lacks something (raw_gadget, dummy_hcd, endpoints).
pub const EXIT_ENVIRONMENT: u8 = 3;
/// Exit code: the control socket (cannot bind, or no emulator answers).
pub const EXIT_SOCKET: u8 = 4;
/// Exit code: the running emulator refused the command.
pub const EXIT_REJECTED: u8 = 5;

/// Everything that can go wrong.
#[derive(Debug, Error)]
pub enum Error {
    /// `/dev/raw-gadget` does not exist.
    #[error("{0} missing: modprobe raw_gadget dummy_hcd (or insmod them from the kernel tree)")]
    NoRawGadget(String),
    /// `--backend auto`: the kernel has neither raw-gadget nor a FunctionFS gadget.
    #[error(
        "no USB gadget interface: {0} missing (modprobe raw_gadget dummy_hcd) and no FunctionFS \
         gadget in {1} (modprobe libcomposite usb_f_fs dummy_hcd; mount -t configfs none /sys/kernel/config)"
    )]
    NoGadgetInterface(String, String),
    /// `--backend functionfs`: configfs' gadget directory or FunctionFS is missing.
    #[error(
        "{0} missing or no functionfs file system: modprobe libcomposite usb_f_fs dummy_hcd; \
         mount -t configfs none /sys/kernel/config"
    )]
    NoFunctionFs(String),
    /// A raw-gadget ioctl failed while setting the device up.
    #[error("raw-gadget {what}: {source}{hint}")]
    Gadget {
        /// The ioctl.
        what: &'static str,
        /// The errno.
        source: io::Error,
        /// What to check.
        hint: &'static str,
    },
    /// The UDC has no suitable endpoints.
    #[error("the UDC offers no bulk IN, bulk OUT and interrupt IN endpoints (it has: {0})")]
    NoEndpoints(String),
    /// The ep0 thread stopped on an error while the dongle was plugged in.
    #[error("the gadget failed: {0}")]
    GadgetFailed(String),
    /// Other I/O.
    #[error("{0}: {1}")]
    Io(String, #[source] io::Error),
    /// The control socket cannot be set up.
    #[error("control socket {0}: {1}")]
    Socket(String, #[source] io::Error),
    /// Another emulator answers on the socket.
    #[error("control socket {0} is in use: another ax88772a-emulator is running")]
    SocketInUse(String),
    /// `ctl`: nothing answers on the socket.
    #[error("cannot reach the emulator at {0}: {1} (is `ax88772a-emulator run` running?)")]
    NotRunning(String, #[source] io::Error),
    /// A control command that does not parse.
    #[error("bad command: {0}")]
    BadCommand(String),
    /// The emulator refused a command.
    #[error("the emulator refused the command: {0}")]
    Rejected(String),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::GadgetFailed(_) | Error::Io(..) => EXIT_RUNTIME,
            Error::BadCommand(_) => EXIT_USAGE,
            Error::NoRawGadget(_)
            | Error::NoGadgetInterface(..)
            | Error::NoFunctionFs(_)
            | Error::Gadget { .. }
            | Error::NoEndpoints(_) => EXIT_ENVIRONMENT,
            Error::Socket(..) | Error::SocketInUse(_) | Error::NotRunning(..) => EXIT_SOCKET,
            Error::Rejected(_) => EXIT_REJECTED,
        }
    }
}
