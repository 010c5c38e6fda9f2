//! `phytrace generate` as packaging runs it: every man page into a directory, the capability set
//! for setcap, and its errors.

mod common;

use common::phytrace;

#[test]
fn man_dir_holds_a_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = phytrace(&["generate", "man", "--dir", pages.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let rendered = phytrace::commands::generate::man_pages().unwrap();
    for (name, roff) in &rendered {
        let written = std::fs::read(pages.join(name)).unwrap_or_default();
        assert!(written == *roff, "{name} is not the page phytrace renders");
    }
    assert_eq!(std::fs::read_dir(&pages).unwrap().count(), rendered.len());
    let top = std::fs::read(pages.join("phytrace.1")).unwrap();
    assert_eq!(
        top,
        phytrace(&["generate", "man"]).stdout,
        "phytrace.1 differs"
    );
}

#[test]
fn capabilities_are_one_setcap_argument() {
    let out = phytrace(&["generate", "capabilities"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let (names, flags) = text.trim_end().split_once('+').expect("CAPS+FLAGS");
    assert_eq!(flags, "ep");
    assert!(
        names.split(',').all(|name| name.starts_with("cap_")
            && name[4..]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')),
        "{text}"
    );
    assert!(
        names.contains("cap_bpf") && names.contains("cap_perfmon"),
        "{text}"
    );
}

#[test]
fn dir_is_for_man_pages_and_must_be_writable() {
    let out = phytrace(&["generate", "bash", "--dir", "/tmp"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dir writes the man pages"));
    let out = phytrace(&["generate", "man", "--dir", "/proc/phytrace-pages"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}
