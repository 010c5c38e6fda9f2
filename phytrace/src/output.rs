//! Writing results, to standard output or to a file, so that a failure (a full disk, a missing
//! directory) ends with an [`FailureKind::Output`] error saying where, and no half-written file
//! is left behind.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::exit::{Failure, FailureKind};

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
