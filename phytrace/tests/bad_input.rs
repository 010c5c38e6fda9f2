//! Bad input on the command line, run through the binary: missing, unreadable, empty, garbage
//! and truncated captures, bad specs, wrong flags, and a full disk. Each ends with its documented
//! exit code (2 bad input, 4 output; 0 or 1 for a truncated capture, which is still read) and
//! one clear line on stderr naming the file; none panics.

mod common;

use std::fs::{self, File};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{PHYTRACE, command, data, phytrace, spec};

/// The shipped spec the checks read.
const SPEC: &str = "plug-unplug.spec";
const BAD_INPUT: i32 = 2;
const OUTPUT: i32 = 4;
/// The unprivileged user root runs phytrace as, for files root could read anyway.
const NOBODY: u32 = 65534;

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run phytrace")
}

/// `phytrace ARGS > /dev/full`.
fn phytrace_to_full_disk(args: &[&str]) -> Output {
    let full = File::create("/dev/full").expect("open /dev/full");
    run(command(args).stdout(full))
}

/// Bad files, in a temporary directory.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    /// Writes `bytes` to `name` and returns its path.
    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A real capture cut in the middle of a line, two thirds in.
    fn truncated(&self) -> String {
        let bytes = fs::read(data("rust-plug-unplug.ptrace")).unwrap();
        let line_end =
            bytes.len() * 2 / 3 + memchr::memchr(b'\n', &bytes[bytes.len() * 2 / 3..]).unwrap();
        let cut = line_end - 10;
        assert!(!bytes[cut - 10..cut].contains(&b'\n'), "not mid-line");
        self.file("truncated.ptrace", &bytes[..cut])
    }
}

/// Asserts that `out` exited with `code` and that stderr is one `phytrace: error:` line
/// holding each of `words`, without a panic or a backtrace.
#[track_caller]
fn assert_error(out: &Output, code: i32, words: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    let lines: Vec<_> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("phytrace: error: "), "{err}");
    for word in words {
        assert!(lines[0].contains(word), "`{word}` missing from: {err}");
    }
}

/// The commands that read a capture, with CAPTURE standing for it.
const READERS: &[&[&str]] = &[
    &["dump", "CAPTURE"],
    &["check", "--spec", "SPEC", "CAPTURE"],
    &["diff", "CAPTURE", "GOOD"],
    &["diff", "GOOD", "CAPTURE"],
    &["export", "CAPTURE", "-o", "OUT"],
];

/// The good capture the readers compare with.
const GOOD: &str = "c-plug-unplug.ptrace";

/// phytrace and the files the readers need besides the capture, copied to a directory every
/// user can reach, to run as another user there: a clone may sit where only its owner can go
/// (under `/root`, mode 700), and so may the binary it builds.
struct Reachable {
    dir: tempfile::TempDir,
}

impl Reachable {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        for ancestor in dir.path().ancestors().skip(1) {
            let mode = fs::metadata(ancestor).unwrap().mode();
            assert!(
                mode & 0o001 != 0,
                "{} (mode {mode:o}) cannot be entered by other users: set TMPDIR to a \
                 directory they can reach",
                ancestor.display()
            );
        }
        let reachable = Self { dir };
        let copy = |from: &Path, to: PathBuf, mode: u32| {
            fs::copy(from, &to).unwrap_or_else(|e| panic!("copying {}: {e}", from.display()));
            fs::set_permissions(&to, fs::Permissions::from_mode(mode)).unwrap();
        };
        copy(Path::new(PHYTRACE), reachable.phytrace(), 0o755);
        copy(Path::new(&spec(SPEC)), reachable.spec(), 0o644);
        copy(Path::new(&data(GOOD)), reachable.good(), 0o644);
        reachable
    }

    fn phytrace(&self) -> PathBuf {
        self.dir.path().join("phytrace")
    }

    fn spec(&self) -> PathBuf {
        self.dir.path().join("plug-unplug.spec")
    }

    fn good(&self) -> PathBuf {
        self.dir.path().join(GOOD)
    }

    /// The copy of phytrace with `args`, run as `uid` from the directory of the copies.
    fn command_as(&self, uid: u32, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.phytrace());
        cmd.args(args)
            .stdin(Stdio::null())
            .current_dir(self.dir.path())
            .uid(uid)
            .gid(uid);
        cmd
    }
}

/// Runs each reader on `capture` (as the user `uid` if given, from a [`Reachable`] copy) and
/// checks it fails with `words` in its message, writing nothing.
#[track_caller]
fn each_reader_refuses(files: &Files, capture: &str, uid: Option<u32>, words: &[&str]) {
    let as_user = uid.map(|uid| (Reachable::new(), uid));
    let (spec, good) = match &as_user {
        Some((copies, _)) => (copies.spec(), copies.good()),
        None => (PathBuf::from(spec(SPEC)), PathBuf::from(data(GOOD))),
    };
    let out_path = files.path("out.json");
    for argv in READERS {
        let args: Vec<&str> = argv
            .iter()
            .map(|&a| match a {
                "CAPTURE" => capture,
                "SPEC" => spec.to_str().unwrap(),
                "GOOD" => good.to_str().unwrap(),
                "OUT" => out_path.to_str().unwrap(),
                a => a,
            })
            .collect();
        let mut cmd = match &as_user {
            Some((copies, uid)) => copies.command_as(*uid, &args),
            None => command(&args),
        };
        let out = run(&mut cmd);
        let mut expected = vec![capture];
        expected.extend(words);
        assert_error(&out, BAD_INPUT, &expected);
        assert!(out.stdout.is_empty(), "{argv:?} wrote to stdout");
        assert!(!out_path.exists(), "{argv:?} wrote {}", out_path.display());
    }
}

#[test]
fn missing_capture() {
    let files = Files::new();
    let missing = files.path("missing.ptrace");
    let missing = missing.to_str().unwrap();
    each_reader_refuses(&files, missing, None, &["cannot read", "No such file"]);
}

#[test]
fn directory_as_capture() {
    let files = Files::new();
    let dir = files.dir.path().to_str().unwrap();
    each_reader_refuses(&files, dir, None, &["cannot read", "Is a directory"]);
}

#[test]
fn empty_capture() {
    let files = Files::new();
    let empty = files.file("empty.ptrace", b"");
    each_reader_refuses(
        &files,
        &empty,
        None,
        &["empty file, not a phytrace capture"],
    );
}

#[test]
fn garbage_capture() {
    let files = Files::new();
    let garbage = files.file("garbage.ptrace", b"\x7fELF\x00\xff garbage\n\n{\n");
    each_reader_refuses(
        &files,
        &garbage,
        None,
        &["line 1 (byte 0): not a phytrace capture header"],
    );
    each_reader_refuses(
        &files,
        "/dev/zero",
        None,
        &["not a phytrace capture header: longer than"],
    );
}

#[test]
fn unreadable_capture() {
    let files = Files::new();
    let path = files.file(
        "unreadable.ptrace",
        &fs::read(data("c-plug-unplug.ptrace")).unwrap(),
    );
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads any file: run phytrace as nobody then (a copy of it, where nobody can go).
    let root = fs::metadata("/proc/self").unwrap().uid() == 0;
    let uid = root.then_some(NOBODY);
    each_reader_refuses(&files, &path, uid, &["cannot read", "Permission denied"]);
    // A file that opens but cannot be read.
    each_reader_refuses(&files, "/proc/self/mem", None, &["Input/output error"]);
}

#[test]
fn truncated_capture_is_read_with_a_warning() {
    let files = Files::new();
    let cut = files.truncated();
    let out_path = files.path("out.json");
    let out_json = out_path.to_str().unwrap();
    let full = data("rust-plug-unplug.ptrace");
    for (args, code) in [
        (vec!["dump", &cut], 0),
        (vec!["check", "--spec", &spec(SPEC), &cut], 1),
        (vec!["diff", &cut, &full], 1),
        (vec!["export", &cut, "-o", out_json], 0),
    ] {
        let out = phytrace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        let warnings: Vec<_> = err.lines().collect();
        assert_eq!(warnings.len(), 2, "{args:?}: {err}");
        assert!(
            warnings[0].starts_with(&format!("phytrace: warning: {cut}: line "))
                && warnings[0].ends_with("truncated record (file ends inside it)"),
            "{args:?}: {err}"
        );
        assert!(
            warnings[1].ends_with("capture not closed cleanly (no trailer)"),
            "{args:?}: {err}"
        );
    }
    let dump = phytrace(&["dump", &cut]);
    let events = String::from_utf8(dump.stdout).unwrap().lines().count();
    assert!(events > 50, "the events before the cut are shown: {events}");
    let trace: serde_json::Value = serde_json::from_slice(&fs::read(&out_path).unwrap()).unwrap();
    assert!(trace.is_object() || trace.is_array());
}

#[test]
fn bad_specs() {
    let files = Files::new();
    let capture = data("c-plug-unplug.ptrace");
    let check = |spec: &str| phytrace(&["check", "--spec", spec, &capture]);

    let syntax = files.file("syntax.spec", b"# fine\nrule \"x\": nevr error\n");
    assert_error(
        &check(&syntax),
        BAD_INPUT,
        &[&format!("{syntax}:2:11: expected an event"), "found `nevr`"],
    );
    let unterminated = files.file("open.spec", b"rule \"x: never error\n");
    assert_error(
        &check(&unterminated),
        BAD_INPUT,
        &[&format!("{unterminated}:1:6: unterminated string")],
    );
    let empty = files.file("empty.spec", b"# nothing but a comment\n");
    assert_error(&check(&empty), BAD_INPUT, &[&empty, "no rules"]);
    let binary = files.file("binary.spec", b"rule \"\xff\": never error\n");
    assert_error(
        &check(&binary),
        BAD_INPUT,
        &[&format!("cannot read spec {binary}"), "UTF-8"],
    );
    let missing = files.path("missing.spec");
    let missing = missing.to_str().unwrap();
    assert_error(
        &check(missing),
        BAD_INPUT,
        &[&format!("cannot read spec {missing}"), "No such file"],
    );
    let dir = files.dir.path().to_str().unwrap();
    assert_error(
        &check(dir),
        BAD_INPUT,
        &[&format!("cannot read spec {dir}"), "Is a directory"],
    );
}

#[test]
fn wrong_flags_and_subcommands() {
    let capture = data("c-plug-unplug.ptrace");
    for (args, says) in [
        (vec!["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (
            vec!["dump", "--bogus", &capture],
            "unexpected argument '--bogus'",
        ),
        (vec!["dump"], "required arguments were not provided"),
        (
            vec!["dump", "--format", "xml", &capture],
            "invalid value 'xml'",
        ),
        (vec!["check", &capture], "--spec <SPEC>"),
        (vec!["diff", &capture], "<B>"),
        (vec!["export", &capture], "--output <OUT>"),
        (
            vec!["export", "--format", "pcap", &capture, "-o", "x"],
            "invalid value 'pcap'",
        ),
        (
            vec!["diff", "--ignore-value", "NOPE", &capture, &capture],
            "NOPE",
        ),
        (
            vec!["tui", "--replay", &capture, "--keep", "99999999999"],
            "expected a whole number from 1 to 10000000",
        ),
        (
            vec!["tui", "--replay", &capture, "--keep", "0"],
            "expected a whole number from 1 to 10000000",
        ),
    ] {
        let out = phytrace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(BAD_INPUT), "{args:?}: {err}");
        // clap's format: `error: WHAT`, then the usage.
        assert!(
            err.starts_with("error: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn full_disk_on_standard_output() {
    let capture = data("rust-plug-unplug.ptrace");
    for args in [
        vec!["dump", &capture],
        vec!["dump", "--format", "json", &capture],
        vec!["check", "--spec", &spec(SPEC), &capture],
        vec!["diff", &capture, &capture],
        vec!["generate", "man"],
        vec!["generate", "bash"],
        vec!["dump", "--help"],
    ] {
        let out = phytrace_to_full_disk(&args);
        assert_error(
            &out,
            OUTPUT,
            &["cannot write to standard output: No space left on device"],
        );
    }
}

#[test]
fn full_disk_for_probes() {
    // probes reads /proc/kallsyms first, and exits 3 without it: a host without procfs cannot
    // run this test.
    if let Err(e) = fs::File::open("/proc/kallsyms") {
        panic!("this test needs a readable /proc/kallsyms: {e}");
    }
    assert_error(
        &phytrace_to_full_disk(&["probes"]),
        OUTPUT,
        &["cannot write to standard output: No space left on device"],
    );
}

#[test]
fn full_disk_on_an_output_file() {
    let capture = data("rust-plug-unplug.ptrace");
    let out = phytrace(&["export", &capture, "-o", "/dev/full"]);
    assert_error(
        &out,
        OUTPUT,
        &["cannot write /dev/full: No space left on device"],
    );
    let out = phytrace(&[
        "check",
        "--spec",
        &spec(SPEC),
        "--junit",
        "/dev/full",
        &capture,
    ]);
    assert_error(
        &out,
        OUTPUT,
        &["cannot write /dev/full: No space left on device"],
    );
    let out = phytrace(&["export", &capture, "-o", "/nonexistent/trace.json"]);
    assert_error(
        &out,
        OUTPUT,
        &["cannot write /nonexistent/trace.json: No such file"],
    );
}

/// Runs phytrace with files limited to 1 KiB (`ulimit -f`), a disk that fills up midway.
fn phytrace_with_small_disk(args: &[&str]) -> Output {
    let script = r#"trap '' XFSZ; ulimit -f 1 && exec "$0" "$@""#;
    run(Command::new("sh").args(["-c", script, PHYTRACE]).args(args))
}

#[test]
fn a_file_cut_by_a_full_disk_is_removed() {
    let files = Files::new();
    let capture = data("rust-plug-unplug.ptrace");
    let path = files.path("trace.json");
    let out_path = path.to_str().unwrap();
    let out = phytrace_with_small_disk(&["export", &capture, "-o", out_path]);
    assert_error(
        &out,
        OUTPUT,
        &[&format!("cannot write {out_path}: File too large")],
    );
    assert!(!path.exists(), "a half-written export was left");

    let junit = files.path("junit.xml");
    let junit_path = junit.to_str().unwrap();
    let out = phytrace_with_small_disk(&[
        "check",
        "--spec",
        &spec(SPEC),
        "--junit",
        junit_path,
        &capture,
    ]);
    assert_error(
        &out,
        OUTPUT,
        &[&format!("cannot write {junit_path}: File too large")],
    );
    assert!(!junit.exists(), "a half-written JUnit file was left");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("phytrace check:"),
        "the report still went to stdout"
    );
}
