//! The command line itself: help texts with examples, generated man page and completions.

mod common;

use common::phytrace;

const SUBCOMMANDS: &[&str] = &[
    "tui", "record", "dump", "check", "diff", "export", "probes", "doctor", "generate",
];

#[test]
fn every_subcommand_help_has_an_example() {
    for sub in SUBCOMMANDS {
        let out = phytrace(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help failed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "`phytrace {sub} --help` has no example:\n{text}"
        );
        assert!(
            text.contains(&format!("phytrace {sub}")),
            "{sub}: the example does not use it"
        );
    }
}

#[test]
fn man_page_and_completions_cover_every_subcommand() {
    let man = String::from_utf8(phytrace(&["generate", "man"]).stdout).unwrap();
    assert!(man.contains(".TH phytrace 1"));
    let bash = String::from_utf8(phytrace(&["generate", "bash"]).stdout).unwrap();
    for sub in SUBCOMMANDS {
        assert!(man.contains(sub), "man page lacks {sub}");
        assert!(bash.contains(sub), "bash completions lack {sub}");
    }
}

#[test]
fn usage_errors_exit_2_without_a_backtrace() {
    let out = phytrace(&["record"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--output"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn no_subcommand_without_a_terminal_prints_help() {
    let out = phytrace(&[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage:") && text.contains("tui"), "{text}");
}

#[test]
fn tui_without_a_terminal_says_so() {
    let out = phytrace(&["tui", "--replay", "tests/data/rust-plug-unplug.ptrace"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("terminal"), "{err}");
}
