//! The command-line conventions phytrace shares with perf, bpftrace and trace-cmd, run through
//! the binary: `-` for standard output wherever a file is written, `--format json`, sizes with
//! suffixes, the exit codes in `--help` and the man page, a capture as an argument.

mod common;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read as _;
use std::process::Output;

use common::{command, data, phytrace, spec};
use serde_json::Value;

const BAD_INPUT: i32 = 2;
const OUTPUT: i32 = 4;

fn capture() -> String {
    data("rust-plug-unplug.ptrace")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs phytrace with `args` and the bytes it writes to the file at `-o`/`--junit` PATH, then
/// again with `-` there: returns both runs' file contents and the second run.
fn to_file_and_to_stdout(args: &[&str]) -> (Vec<u8>, Output) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    fn with<'a>(args: &[&'a str], target: &'a str) -> Vec<&'a str> {
        args.iter()
            .map(|&a| if a == "TARGET" { target } else { a })
            .collect()
    }
    let to_file = phytrace(&with(args, path.to_str().unwrap()));
    assert!(to_file.stdout.is_empty() || args.contains(&"--junit"));
    let written = fs::read(&path).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&to_file)));
    let to_stdout = phytrace(&with(args, "-"));
    assert_eq!(to_stdout.status.code(), to_file.status.code(), "{args:?}");
    (written, to_stdout)
}

#[test]
fn a_dash_is_standard_output_for_export() {
    let (written, out) = to_file_and_to_stdout(&["export", &capture(), "-o", "TARGET"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!written.is_empty());
    assert!(
        out.stdout == written,
        "export -o - differs from export -o FILE"
    );
    serde_json::from_slice::<Value>(&out.stdout).expect("a JSON trace");
}

#[test]
fn a_dash_is_standard_output_for_junit_and_the_report_moves_to_stderr() {
    let args = [
        "check",
        "--spec",
        &spec("ax88796b.spec"),
        "--junit",
        "TARGET",
        &capture(),
    ];
    let (written, out) = to_file_and_to_stdout(&args);
    // The capture violates one rule of the shipped spec.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout == written, "--junit - differs from --junit FILE");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("<?xml"));
    assert!(stderr(&out).contains("phytrace check:"), "{}", stderr(&out));
}

#[test]
fn standard_output_full_or_closed_is_an_output_error() {
    let capture = capture();
    let full = |args: &[&str]| {
        command(args)
            .stdout(File::create("/dev/full").unwrap())
            .output()
            .unwrap()
    };
    for args in [
        vec!["export", &capture, "-o", "-"],
        vec![
            "check",
            "--spec",
            &spec("ax88796b.spec"),
            "--junit",
            "-",
            &capture,
        ],
    ] {
        let out = full(&args);
        assert_eq!(
            out.status.code(),
            Some(OUTPUT),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("cannot write to standard output: No space left on device"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A reader gone before the end: the trace it got is incomplete.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = command(&["export", &capture, "-o", "-"])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(OUTPUT), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write to standard output: Broken pipe"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn one_standard_output_per_command() {
    for (args, says) in [
        (
            vec!["record", "-o", "-", "--status", "-"],
            "the capture (`-o -`) and the status (`--status -`) cannot both go to standard output",
        ),
        (
            vec![
                "check",
                "--spec",
                &spec("ax88796b.spec"),
                "-o",
                "-",
                "--junit",
                "-",
                "--",
                "true",
            ],
            "the capture (`-o -`) and the JUnit report (`--junit -`) cannot both go to standard output",
        ),
    ] {
        let out = phytrace(&args);
        assert_eq!(
            out.status.code(),
            Some(BAD_INPUT),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(stderr(&out), format!("phytrace: error: {says}\n"));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_sizes_are_usage_errors() {
    for (args, says) in [
        (vec!["record", "-o", "x", "--ring-size", "16Q"], "16M"),
        (
            vec!["record", "-o", "x", "--ring-size", "3M"],
            "3145728 bytes is not a power of two",
        ),
        (
            vec!["record", "-o", "x", "--ring-size", "8G"],
            "not a power of two from 4K to 2G",
        ),
        (
            vec!["tui", "--ring-size", "1K"],
            "1024 bytes is less than a page (4K)",
        ),
    ] {
        let out = phytrace(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(BAD_INPUT), "{args:?}: {err}");
        assert!(
            err.starts_with("error: invalid value ") && err.contains("--ring-size <SIZE>"),
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The `Exit status:` table at the end of `phytrace ARGS --help`: code to meaning.
fn exit_table(args: &[&str]) -> BTreeMap<u8, String> {
    let out = phytrace(&[args, &["--help"]].concat());
    assert!(out.status.success(), "{args:?}");
    let help = String::from_utf8(out.stdout).unwrap();
    let (_, table) = help
        .split_once("\nExit status:\n")
        .unwrap_or_else(|| panic!("{args:?}: no exit status in --help:\n{help}"));
    table
        .lines()
        .map(|line| {
            let (code, meaning) = line.trim_start().split_once("  ").unwrap();
            (code.parse().unwrap(), meaning.trim().to_owned())
        })
        .collect()
}

#[test]
fn exit_codes_are_in_every_help_and_the_man_page() {
    let all = exit_table(&[]);
    assert_eq!(
        all.keys().copied().collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5, 6]
    );
    for (command, codes) in [
        ("tui", &[0, 2, 3, 5][..]),
        ("record", &[0, 2, 3, 4, 5, 6]),
        ("dump", &[0, 2, 4, 5]),
        ("check", &[0, 1, 2, 3, 4, 5, 6]),
        ("stats", &[0, 2, 4, 5]),
        ("diff", &[0, 1, 2, 4, 5]),
        ("export", &[0, 2, 4, 5]),
        ("probes", &[0, 3, 4, 5]),
    ] {
        let table = exit_table(&[command]);
        assert_eq!(
            table.keys().copied().collect::<Vec<_>>(),
            codes,
            "{command}"
        );
        for (code, meaning) in &table {
            assert_eq!(meaning, &all[code], "{command}: code {code} said otherwise");
        }
    }
    assert!(all[&6].starts_with("COMMAND failed"), "{all:?}");
    let man = String::from_utf8(phytrace(&["generate", "man"]).stdout).unwrap();
    assert!(
        man.contains("Exit status:"),
        "the man page lists no exit status"
    );
    assert!(man.contains("COMMAND failed"), "the man page lacks code 6");
}

#[test]
fn the_tui_takes_a_capture_as_an_argument_or_by_the_old_flag() {
    let capture = capture();
    for args in [vec!["tui", &capture], vec!["tui", "--replay", &capture]] {
        let out = phytrace(&args);
        assert_eq!(out.status.code(), Some(BAD_INPUT), "{args:?}");
        assert!(
            stderr(&out).contains("needs a terminal"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = phytrace(&["tui", &capture, "--replay", &capture]);
    assert_eq!(out.status.code(), Some(BAD_INPUT));
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    let help = String::from_utf8(phytrace(&["tui", "--help"]).stdout).unwrap();
    assert!(
        help.contains("[CAPTURE]") && !help.contains("--replay"),
        "{help}"
    );
}

/// `phytrace probes` on this host, as `format`.
fn probes(format: &str) -> Output {
    // probes reads /proc/kallsyms first, and exits 3 without it: a host without procfs cannot
    // run this test.
    if let Err(e) = File::open("/proc/kallsyms").and_then(|mut f| f.read(&mut [0; 1])) {
        panic!("this test needs a readable /proc/kallsyms: {e}");
    }
    let out = phytrace(&["probes", "--format", format]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// Asserts that `value` is a string.
#[track_caller]
fn string(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

/// Asserts that `value` is an array, and returns it.
#[track_caller]
fn array(value: &Value) -> &Vec<Value> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
}

/// Asserts the shape of a search for call sites (`call_sites`, `mac_sites`); returns how many
/// sites it found, or `None` if it is unavailable.
#[track_caller]
fn search(part: &Value) -> Option<usize> {
    if let Some(why) = part.get("unavailable") {
        assert!(!string(why).is_empty());
        return None;
    }
    let sites = array(&part["sites"]);
    for site in sites {
        let (function, offset) = (string(&site["function"]), site["offset"].as_u64().unwrap());
        assert_eq!(string(&site["call"]), format!("{function}+{offset:#x}"));
        assert!(!string(&site["op"]).is_empty());
        if let Some(ret) = site.get("ret") {
            assert!(string(ret).starts_with(&format!("{function}+0x")), "{site}");
        }
    }
    array(&part["ops_without_sites"])
        .iter()
        .for_each(|op| _ = string(op));
    array(&part["rewritten"]).iter().for_each(|f| _ = string(f));
    assert!(part["functions_decoded"].is_u64() && part["text_bytes"].is_u64());
    Some(sites.len())
}

#[test]
fn probes_as_json_has_every_part_the_text_shows() {
    let out = probes("json");
    let document: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(document["schema"], "phytrace-probes/1");
    for callback in array(&document["callbacks"]) {
        for key in ["module", "driver_type", "callback", "symbol", "demangled"] {
            string(&callback[key]);
        }
        assert!(callback["address"].is_null() || string(&callback["address"]).starts_with("0x"));
    }
    let call_sites = search(&document["call_sites"]);
    if call_sites.is_some() {
        let source = string(&document["call_sites"]["source"]);
        assert!(["cache", "kernel_text"].contains(&source), "{source}");
    }
    let mac_sites = search(&document["mac_sites"]);
    let accessors = array(&document["mdio_accessors"]);
    for accessor in accessors {
        string(&accessor["name"]);
        assert!(accessor["required"].is_boolean() && accessor["present"].is_boolean());
    }
    let required: Vec<&str> = accessors
        .iter()
        .filter(|a| a["required"] == true)
        .map(|a| string(&a["name"]))
        .collect();
    assert!(required.contains(&"__mdiobus_read") && required.contains(&"__mdiobus_write"));
    for phy in array(&document["phys"]) {
        for key in ["name", "phy_id", "driver", "module"] {
            string(&phy[key]);
        }
    }
    let offsets = &document["offsets"];
    if offsets.get("unavailable").is_none() {
        string(&offsets["btf"]);
        for (part, fields) in [
            (
                "phy_device",
                &[
                    "mdio_bus",
                    "mdio_addr",
                    "phy_id",
                    "drv",
                    "state",
                    "speed",
                    "duplex",
                    "link_byte",
                    "link_bit",
                ][..],
            ),
            ("phy_driver", &["name"]),
            ("mii_bus", &["id", "mdio_map"]),
            ("mdio_device", &["flags"]),
        ] {
            for field in fields {
                assert!(offsets[part][field].is_u64(), "offsets.{part}.{field}");
            }
        }
        assert!(
            array(&offsets["phy_states"])
                .iter()
                .any(|s| s["name"] == "RUNNING")
        );
    }

    // The text says the same.
    let text = String::from_utf8(probes("text").stdout).unwrap();
    for accessor in accessors {
        assert!(text.contains(string(&accessor["name"])), "{accessor}");
    }
    let totals = |heading: &str| -> Option<usize> {
        let section = text.split_once(heading)?.1.split("\n\n").next()?;
        let line = section.lines().find(|l| l.contains(" call sites of "))?;
        line.trim_start().split(' ').next()?.parse().ok()
    };
    assert_eq!(totals("Call sites of phy_driver operations"), call_sites);
    assert_eq!(
        totals("Call sites of phylink_mac_ops operations"),
        mac_sites
    );
}
