//! Threads blocked in raw-gadget ioctls and how to stop them: raw-gadget waits
//! interruptibly, so a signal (SIGUSR1 with an empty handler, no `SA_RESTART`) makes the ioctl
//! return `EINTR`, and the thread then sees its stop flag.

use std::io;
use std::os::unix::thread::JoinHandleExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The signal that interrupts blocked ioctls.
const WAKE_SIGNAL: libc::c_int = libc::SIGUSR1;

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs the handler of the wake-up signal (once, before any worker starts).
pub fn install_wake_handler() -> io::Result<()> {
    // SAFETY: sigaction is called with a zeroed, then filled, struct sigaction whose handler
    // is an async-signal-safe empty function; no SA_RESTART, so blocked ioctls return EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_wake as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        if libc::sigaction(WAKE_SIGNAL, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether an I/O error is the interruption by the wake-up signal.
pub fn interrupted(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Interrupted
}

/// A group of threads sharing a stop flag.
#[derive(Debug)]
pub struct Workers<T> {
    /// Set to ask the threads to end.
    pub stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<T>>,
}

impl<T: Send + 'static> Workers<T> {
    /// An empty group.
    pub fn new() -> Workers<T> {
        Workers {
            stop: Arc::new(AtomicBool::new(false)),
            handles: Vec::new(),
        }
    }

    /// Starts a named thread in the group.
    pub fn spawn(
        &mut self,
        name: &str,
        f: impl FnOnce(Arc<AtomicBool>) -> T + Send + 'static,
    ) -> io::Result<()> {
        let stop = Arc::clone(&self.stop);
        let h = thread::Builder::new()
            .name(name.into())
            .spawn(move || f(stop))?;
        self.handles.push(h);
        Ok(())
    }

    /// Whether any thread has ended.
    pub fn any_finished(&self) -> bool {
        self.handles.iter().any(|h| h.is_finished())
    }

    /// Sets the stop flag and signals the threads until all have ended; their results.
    pub fn stop(self) -> Vec<T> {
        self.stop.store(true, Ordering::SeqCst);
        while self.handles.iter().any(|h| !h.is_finished()) {
            for h in self.handles.iter().filter(|h| !h.is_finished()) {
                // SAFETY: the pthread_t belongs to a thread not yet joined (its JoinHandle is
                // held here), so it is valid; the signal's handler is installed and harmless.
                unsafe {
                    // std's raw pthread is an integer; musl's pthread_t is a pointer.
                    libc::pthread_kill(h.as_pthread_t() as libc::pthread_t, WAKE_SIGNAL);
                }
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.handles
            .into_iter()
            .filter_map(|h| h.join().ok())
            .collect()
    }
}
