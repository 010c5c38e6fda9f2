//! SIGTERM and SIGINT end the emulator cleanly: the dongle is unplugged first, so that the
//! backend tears down what it set up in the kernel (a FunctionFS gadget's configfs directories
//! and mount, which would otherwise keep `usb_f_fs` and `libcomposite` loaded), then the
//! process exits with status 0. (raw-gadget needs no tear-down: the kernel closes its fd.)

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;

use serde_json::json;

use crate::control::Command;
use crate::emulator::{Emulator, emit};

/// The signals handled here.
const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset adds valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts afterwards, so
/// that only [`spawn`]'s thread receives them. Call before starting any thread.
pub fn block() -> io::Result<()> {
    let set = signal_set();
    // SAFETY: `set` is an initialised signal set; the old mask is not asked for.
    let ret = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
}

/// Starts the thread that waits for SIGTERM or SIGINT, then unplugs the dongle, removes the
/// control socket and exits.
pub fn spawn(emu: Arc<Emulator>, socket: PathBuf) -> io::Result<()> {
    thread::Builder::new()
        .name("shutdown".into())
        .spawn(move || {
            let set = signal_set();
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` is initialised and blocked in every thread; `signal` is written by the
            // call.
            while unsafe { libc::sigwait(&set, &mut signal) } != 0 {}
            // Returns once the USB side has followed (or after its time-out).
            let unplugged = emu.apply(&Command::Unplug).is_ok();
            let _ = std::fs::remove_file(&socket);
            emit(json!({"event": "stopped", "signal": signal, "unplugged": unplugged}));
            std::process::exit(0);
        })?;
    Ok(())
}
