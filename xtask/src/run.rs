//! Running commands with clear errors, and reading their output.

use std::{
    ffi::OsStr,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context as _, Result, bail};

/// Runs `cmd` with inherited stdio; fails with the command line if it does not succeed.
pub fn status(cmd: &mut Command) -> Result<()> {
    let shown = show(cmd);
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs `cmd` and returns its trimmed stdout; fails with its stderr if it does not succeed.
pub fn output(cmd: &mut Command) -> Result<String> {
    let shown = show(cmd);
    let out = cmd
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !out.status.success() {
        bail!(
            "`{shown}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Returns stdout of `program args…`, or `None` if it cannot run or fails.
pub fn probe<I, S>(program: &str, args: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The command line of `cmd`, for messages.
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints a step header and returns a timer for [`done`].
pub fn step(what: &str) -> Instant {
    eprintln!("==> {what}");
    Instant::now()
}

/// Prints how long a step took.
pub fn done(what: &str, started: Instant) {
    eprintln!(
        "==> {what}: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
