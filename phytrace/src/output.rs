//! Writing results, to standard output or to a file, so that a failure (a full disk, a missing
//! directory) ends with an [`FailureKind::Output`] error saying where, and no half-written file
//! is left behind.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};

use crate::exit::{Failure, FailureKind};

/// Where a command writes what would be a file: a path, or standard output, spelt `-` on the
/// command line as perf, bpftrace and trace-cmd spell it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Standard output (`-`).
    Stdout,
    /// This file, created or truncated.
    File(PathBuf),
}

impl Target {
    /// Whether this is standard output.
    pub fn is_stdout(&self) -> bool {
        *self == Self::Stdout
    }

    /// The file at this path, created or truncated, or a handle on standard output.
    pub fn create(&self) -> io::Result<File> {
        match self {
            Self::Stdout => Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?)),
            Self::File(path) => File::create(path),
        }
    }
}

impl From<OsString> for Target {
    /// `-` is standard output, anything else a path.
    fn from(text: OsString) -> Self {
        if text == "-" {
            Self::Stdout
        } else {
            Self::File(text.into())
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdout => f.write_str("standard output"),
            Self::File(path) => path.display().fmt(f),
        }
    }
}

impl serde::Serialize for Target {
    /// As given on the command line: `-` or the path.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Stdout => serializer.serialize_str("-"),
            Self::File(path) => path.serialize(serializer),
        }
    }
}

/// Fills `target` with `write`: a file as [`to_file`] does, or standard output, where any
/// failure, a reader that went away included, is an output failure (what was asked for is
/// incomplete).
pub fn to_target(
    target: &Target,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Failure> {
    match target {
        Target::File(path) => to_file(path, |out| write(out)),
        Target::Stdout => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&mut out)
                .and_then(|()| out.flush())
                .map_err(|e| stdout_failure(&e))
        }
    }
}

/// A failed write to standard output.
pub fn stdout_failure(err: &io::Error) -> Failure {
    Failure::new(
        FailureKind::Output,
        format!("cannot write to standard output: {err}"),
    )
}

/// Writes `bytes` to `out`, standard output: `Ok(false)` when its reader went away (as in
/// `phytrace dump … | head`), which ends the output quietly.
pub fn to_stdout(out: &mut impl Write, bytes: &[u8]) -> Result<bool, Failure> {
    match out.write_all(bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(stdout_failure(&e)),
    }
}

/// Flushes `out`, standard output; a reader that went away is not an error.
pub fn flush_stdout(out: &mut impl Write) -> Result<(), Failure> {
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(stdout_failure(&e)),
        _ => Ok(()),
    }
}

/// Writes `bytes`, a whole result, to `out`, standard output, and flushes it; a reader that
/// went away ends it quietly.
pub fn print_to(out: &mut impl Write, bytes: &[u8]) -> Result<(), Failure> {
    to_stdout(out, bytes)?;
    flush_stdout(out)
}

/// [`print_to`] this process's standard output.
pub fn print(bytes: &[u8]) -> Result<(), Failure> {
    print_to(&mut io::stdout().lock(), bytes)
}

/// Creates `path` and fills it with `write`. If that fails after the file was created, a
/// regular file is removed rather than left half-written (a device such as `/dev/full` is not).
pub fn to_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), Failure> {
    let failure = |e: io::Error| {
        Failure::new(
            FailureKind::Output,
            format!("cannot write {}: {e}", path.display()),
        )
    };
    let mut out = BufWriter::new(File::create(path).map_err(failure)?);
    let written = write(&mut out).and_then(|()| out.flush());
    if let Err(e) = written {
        // Dropping the writer retries the flush; the partial file goes anyway.
        drop(out);
        if fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
            let _ = fs::remove_file(path);
        }
        return Err(failure(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_file_is_removed_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        let err = to_file(&path, |out| {
            out.write_all(&[b'x'; 100_000])?;
            Err(io::Error::other("disk on fire"))
        })
        .unwrap_err();
        assert_eq!(err.kind, FailureKind::Output);
        assert_eq!(
            err.message,
            format!("cannot write {}: disk on fire", path.display())
        );
        assert!(!path.exists(), "the partial file was left");
    }

    #[test]
    fn a_written_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        to_file(&path, |out| out.write_all(b"{}")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}");
    }

    #[test]
    fn a_dash_is_standard_output() {
        assert_eq!(Target::from(OsString::from("-")), Target::Stdout);
        let file = Target::from(OsString::from("./-"));
        assert_eq!(file, Target::File("./-".into()));
        assert_eq!(Target::Stdout.to_string(), "standard output");
        assert_eq!(serde_json::to_string(&Target::Stdout).unwrap(), r#""-""#);
        assert_eq!(serde_json::to_string(&file).unwrap(), r#""./-""#);
    }

    #[test]
    fn a_reader_gone_is_not_an_error() {
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
        }
        assert!(!to_stdout(&mut Gone, b"x").unwrap());
        flush_stdout(&mut Gone).unwrap();
    }
}
