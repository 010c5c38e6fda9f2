//! Where tracefs is mounted: the kprobe events, trace instances and tracepoints phytrace
//! defines and reads live there.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use thiserror::Error;

/// Where tracefs is mounted, in the order the kernel documents them.
const TRACEFS_MOUNTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Why tracefs cannot be used.
#[derive(Debug, Error)]
pub enum TracefsError {
    #[error(
        "tracefs is not mounted (looked in {}): mount it with `mount -t tracefs nodev /sys/kernel/tracing`",
        TRACEFS_MOUNTS.join(", ")
    )]
    NotMounted,
    #[error("reading tracefs at {path}: {source}")]
    Unreadable { path: PathBuf, source: io::Error },
}

impl TracefsError {
    /// The OS error code, if the kernel refused something.
    pub fn os_error(&self) -> Option<i32> {
        match self {
            Self::Unreadable { source, .. } => source.raw_os_error(),
            Self::NotMounted => None,
        }
    }
}

/// Where tracefs is mounted: the first of [`TRACEFS_MOUNTS`] that holds `trace`.
pub fn tracefs() -> Result<&'static Path, TracefsError> {
    for dir in TRACEFS_MOUNTS.iter().map(Path::new) {
        match fs::metadata(dir.join("trace")) {
            Ok(_) => return Ok(dir),
            // Mounted, but root-only: not the same as absent.
            Err(source) if source.kind() == io::ErrorKind::PermissionDenied => {
                return Err(TracefsError::Unreadable {
                    path: dir.to_owned(),
                    source,
                });
            }
            Err(_) => {}
        }
    }
    Err(TracefsError::NotMounted)
}
