use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn rule(text: &str) -> Rule {
    let spec = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(spec.rules.len(), 1);
    spec.rules.into_iter().next().unwrap()
}

fn error(text: &str) -> (usize, usize, String) {
    let e = parse(text).expect_err(text);
    (e.line, e.column, e.message)
}

#[test]
fn every_rule_kind_parses() {
    let r = rule(r#"rule "a": exit soft_reset before first enter read_status"#);
    assert_eq!(r.name, "a");
    assert_eq!(r.scope, Scope::default());
    let Body::BeforeFirst { first, then } = r.body else {
        panic!()
    };
    assert_eq!(first.text, "exit soft_reset");
    assert_eq!(then.atom, Atom::Enter(Name::Is("read_status".into())));

    let r = rule(
        r#"rule "b" for driver "AX88772A": after state NOLINK: enter link_change_notify then write BMCR has RESET|ANRESTART within 1s"#,
    );
    assert_eq!(r.scope.select, Some(Selector::Driver("AX88772A".into())));
    let Body::After {
        trigger,
        steps,
        within,
    } = r.body
    else {
        panic!()
    };
    assert_eq!(
        trigger.atom,
        Atom::State {
            from: None,
            to: "NOLINK".into()
        }
    );
    assert_eq!(steps.len(), 2);
    assert_eq!(
        steps[1].atom,
        Atom::Mdio {
            op: Some(MdioOp::Write),
            reg: Registers::C22(0),
            value: Some(ValueTest::Masked {
                mask: 0x8200,
                expect: 0x8200,
                negated: false
            }),
        }
    );
    assert_eq!(within, Some(Duration::from_secs(1)));

    let r =
        rule(r#"rule "c": never write BMCR inside read_status while state not NOLINK|phy_halted"#);
    let Body::Never(p) = r.body else { panic!() };
    assert_eq!(p.inside, [Name::Is("read_status".into())]);
    assert_eq!(
        p.states,
        Some(StateSet {
            negated: true,
            names: vec!["NOLINK".into(), "HALTED".into()]
        })
    );

    let r = rule(r#"rule "d" for phy_id 0x003b1861 per driver: count exit any error at most 0"#);
    assert_eq!(r.scope.select, Some(Selector::PhyId(0x003b_1861)));
    assert_eq!(r.scope.per, Per::Driver);
    let Body::Count { pattern, bound } = r.body else {
        panic!()
    };
    assert_eq!(
        pattern.atom,
        Atom::Exit {
            callback: Name::Any,
            ret: Some((Cmp::Lt, 0)),
            latency: None,
        }
    );
    assert_eq!(bound, Bound::AtMost(0));

    let r = rule(
        r#"rule "e" for phy "phy_sim-0:01": sequence state UP -> RUNNING then link down then error within 500ms"#,
    );
    let Body::Sequence { steps, within } = r.body else {
        panic!()
    };
    assert_eq!(
        steps[0].atom,
        Atom::State {
            from: Some("UP".into()),
            to: "RUNNING".into()
        }
    );
    assert_eq!(steps[1].atom, Atom::Link(false));
    assert_eq!(steps[2].atom, Atom::Error);
    assert_eq!(within, Some(Duration::from_millis(500)));
}

#[test]
fn values_masks_registers_and_return_values() {
    let atom = |t: &str| match rule(&format!("rule \"x\": never {t}")).body {
        Body::Never(p) => p.atom,
        _ => unreachable!(),
    };
    let mdio = |op, reg, value| Atom::Mdio { op, reg, value };
    let masked = |mask, expect, negated| {
        Some(ValueTest::Masked {
            mask,
            expect,
            negated,
        })
    };
    assert_eq!(
        atom("read 1 != 0x786d"),
        mdio(
            Some(MdioOp::Read),
            Registers::C22(1),
            masked(0xffff, 0x786d, true)
        )
    );
    assert_eq!(
        atom("mdio any & 0x8000 = 0x8000"),
        mdio(None, Registers::Any, masked(0x8000, 0x8000, false))
    );
    assert_eq!(
        atom("read bmsr lacks LSTATUS"),
        mdio(Some(MdioOp::Read), Registers::C22(1), masked(4, 0, false))
    );
    assert_eq!(
        atom("read BMSR error"),
        mdio(
            Some(MdioOp::Read),
            Registers::C22(1),
            Some(ValueTest::Failed)
        )
    );
    assert_eq!(
        atom("exit read_status_callback ret = -5"),
        Atom::Exit {
            callback: Name::Is("read_status".into()),
            ret: Some((Cmp::Eq, -5)),
            latency: None,
        }
    );
    assert_eq!(
        atom("exit read_status ret = 0 latency >= 5ms"),
        Atom::Exit {
            callback: Name::Is("read_status".into()),
            ret: Some((Cmp::Eq, 0)),
            latency: Some((Cmp::Ge, std::time::Duration::from_millis(5))),
        }
    );
    assert_eq!(atom("link up"), Atom::Link(true));
}

#[test]
fn comments_blank_lines_and_line_numbers() {
    let spec =
        parse("# header\n\n  rule \"a\": never error # trailing\nrule \"b\": never link up\n")
            .unwrap();
    assert_eq!(
        spec.rules.iter().map(|r| r.line).collect::<Vec<_>>(),
        [3, 4]
    );
}

#[test]
fn errors_have_line_and_column() {
    assert_eq!(error("\nrule a: never error").0, 2);
    let (line, col, msg) = error("rule \"a\": never write FOO");
    assert_eq!((line, col), (1, 23));
    assert!(msg.contains("unknown register `FOO`"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never write BMCR has NOPE");
    assert_eq!(col, 32);
    assert!(
        msg.contains("BMCR has no bit `NOPE`") && msg.contains("RESET"),
        "{msg}"
    );
    let (_, col, msg) = error("rule \"a\": exit x before enter y");
    assert_eq!(col, 25);
    assert_eq!(msg, "expected `first`, found `enter`");
    let (_, col, msg) = error("rule \"a\": never enter");
    assert_eq!(col, 22);
    assert!(msg.contains("found the end of the line"), "{msg}");
    let (_, col, msg) = error("rule \"a\": count error at least -1");
    assert_eq!(col, 32);
    assert!(msg.contains("out of range"), "{msg}");
    let (_, col, _) = error("rule \"a\": never error extra");
    assert_eq!(col, 23);
    let (_, col, msg) = error("rule \"a\": after error: link up within 3");
    assert_eq!(col, 39);
    assert!(msg.contains("duration"), "{msg}");
    let (line, col, msg) = error("rule \"a\": never error\nrule \"a\": never link up");
    assert_eq!((line, col), (2, 6));
    assert!(msg.contains("already defined on line 1"), "{msg}");
    let (_, col, msg) = error("rule \"\": never error");
    assert_eq!(col, 6);
    assert!(msg.contains("must not be empty"));
    let (_, col, msg) = error("rule \"a\": never read 32");
    assert_eq!(col, 22);
    assert!(msg.contains("Clause 22"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never frobnicate");
    assert_eq!(col, 17);
    assert!(msg.starts_with("expected an event"), "{msg}");
}

#[test]
fn shipped_specs_and_documented_examples_parse() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for file in [
        "specs/ax88796b.spec",
        "specs/plug-unplug.spec",
        "specs/qt2025.spec",
    ] {
        let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
        let spec = parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(spec.rules.len() >= 8, "{file}");
    }
    let doc = std::fs::read_to_string(format!("{root}/docs/check.md")).unwrap();
    let examples: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("rule \"") && !l.contains("NAME"))
        .collect();
    assert!(examples.len() >= 10);
    for line in examples {
        parse(line).unwrap_or_else(|e| panic!("docs/check.md: {line}: {e}"));
    }
}

/// Words and symbols of the language, to build inputs that get past the first token.
const VOCABULARY: &[&str] = &[
    "rule",
    "\"r\"",
    "for",
    "driver",
    "phy",
    "phy_id",
    "per",
    ":",
    "never",
    "count",
    "sequence",
    "after",
    "before",
    "first",
    "then",
    "within",
    "at",
    "least",
    "most",
    "exactly",
    "enter",
    "exit",
    "read",
    "write",
    "mdio",
    "state",
    "link",
    "up",
    "down",
    "error",
    "any",
    "ret",
    "inside",
    "while",
    "not",
    "has",
    "lacks",
    "BMCR",
    "RESET",
    "NOLINK",
    "=",
    "!=",
    "<",
    "&",
    "|",
    "->",
    "0x8000",
    "pcs",
    ".",
    "..",
    "3.0xE854",
    "-5",
    "3",
    "10ms",
    "#",
    "\"",
    "\\",
    "é",
    "99999999999999999999",
    "1e",
    "0x",
];

/// Checks that a parse error points into `text` (a real line, a column on it or just after its
/// end) and says something.
fn error_points_into(text: &str, e: &SpecError) -> Result<(), TestCaseError> {
    let line = text.lines().nth(e.line.wrapping_sub(1));
    prop_assert!(line.is_some(), "{e}: no line {} in {text:?}", e.line);
    let chars = line.unwrap_or_default().chars().count();
    prop_assert!(
        (1..=chars + 1).contains(&e.column),
        "{e}: column {} outside a line of {chars} characters",
        e.column
    );
    prop_assert!(!e.message.trim().is_empty(), "empty message at {e}");
    let position = format!("line {}, column {}: ", e.line, e.column);
    prop_assert!(e.to_string().starts_with(&position), "{e}");
    Ok(())
}

proptest! {
    #[test]
    fn parser_never_panics_on_arbitrary_text(
        lines in prop::collection::vec("\\PC{0,80}", 0..4),
        crlf in any::<bool>(),
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        if let Err(e) = parse(&text) {
            error_points_into(&text, &e)?;
        }
    }

    #[test]
    fn parser_never_panics_on_token_soup(
        words in prop::collection::vec(prop::sample::select(VOCABULARY), 0..24),
        newline in any::<bool>(),
    ) {
        let text = words.join(if newline { "\n" } else { " " });
        if let Err(e) = parse(&text) {
            error_points_into(&text, &e)?;
        }
    }
}

#[test]
fn mac_side_patterns_parse() {
    let r = rule(r#"rule "m": after link up: mac_link_up then carrier up within 1s"#);
    let Body::After {
        trigger,
        steps,
        within,
    } = r.body
    else {
        panic!()
    };
    assert_eq!(trigger.atom, Atom::Link(true));
    assert_eq!(steps[0].atom, Atom::Mac("mac_link_up"));
    assert_eq!(steps[1].atom, Atom::Mac("carrier_on"));
    assert_eq!(within, Some(Duration::from_secs(1)));
    let r = rule(r#"rule "d": after link down: mac_link_down then carrier down"#);
    let Body::After { steps, .. } = r.body else {
        panic!()
    };
    assert_eq!(steps[1].atom, Atom::Mac("carrier_off"));
    assert!(
        error(r#"rule "x": never carrier sideways"#)
            .2
            .contains("`up` or `down`")
    );
}

#[test]
fn clause_45_registers_by_mmd_name_number_range_or_whole_mmd() {
    let reg = |t: &str| match rule(&format!("rule \"x\": never {t}")).body {
        Body::Never(Pattern {
            atom: Atom::Mdio { reg, .. },
            ..
        }) => reg,
        other => panic!("{t}: {other:?}"),
    };
    let c45 = |devad, first, last| Registers::C45 { devad, first, last };
    assert_eq!(reg("write 3.0xE854"), c45(3, 0xe854, 0xe854));
    assert_eq!(reg("read pcs.STAT1"), c45(3, 1, 1));
    assert_eq!(reg("read PMAPMD.ctrl1"), c45(1, 0, 0));
    assert_eq!(reg("read 1.0xD001"), c45(1, 0xd001, 0xd001));
    assert_eq!(reg("write 3.0x8000..0xBFFF"), c45(3, 0x8000, 0xbfff));
    assert_eq!(reg("read an.any"), c45(7, 0, 0xffff));
    assert_eq!(reg("read phyxs"), c45(4, 0, 0xffff));
    assert_eq!(reg("read 31.5"), c45(31, 5, 5));
    assert_eq!(reg("read BMSR"), Registers::C22(1));
    assert!(c45(3, 1, 1).contains(Some(3), 1));
    assert!(!c45(3, 1, 1).contains(None, 1));
    assert!(!Registers::C22(1).contains(Some(3), 1));
    assert!(Registers::Any.contains(Some(3), 1));
    let Body::Never(p) = rule("rule \"x\": never read pcs.STAT1 lacks LSTATUS").body else {
        unreachable!()
    };
    assert_eq!(
        p.atom,
        Atom::Mdio {
            op: Some(MdioOp::Read),
            reg: c45(3, 1, 1),
            value: Some(ValueTest::Masked {
                mask: 4,
                expect: 0,
                negated: false
            }),
        }
    );
}

#[test]
fn clause_45_errors_point_at_the_mmd_or_register() {
    let (_, col, msg) = error("rule \"a\": never read foo.STAT1");
    assert_eq!(col, 22);
    assert!(
        msg.contains("unknown MMD `foo`") && msg.contains("pcs"),
        "{msg}"
    );
    let (_, col, msg) = error("rule \"a\": never read 32.1");
    assert_eq!(col, 22);
    assert!(msg.contains("MMD 32 is not a device address"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never read pcs.NOPE");
    assert_eq!(col, 26);
    assert!(
        msg.contains("MMD pcs has no register `NOPE`") && msg.contains("BASER_STAT1"),
        "{msg}"
    );
    let (_, col, msg) = error("rule \"a\": never write 3.0xBFFF..0x8000");
    assert_eq!(col, 33);
    assert!(msg.contains("before it starts"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never write 3.0x10000");
    assert_eq!(col, 25);
    assert!(msg.contains("out of range"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never read pcs.");
    assert_eq!(col, 26);
    assert!(msg.contains("a register of MMD pcs"), "{msg}");
    let (_, col, msg) = error("rule \"a\": never read pcs.STAT1 has BLKLK");
    assert_eq!(col, 36);
    assert!(msg.contains("STAT1 has no bit `BLKLK`"), "{msg}");
    let (_, _, msg) = error("rule \"a\": never read 40");
    assert!(msg.contains("`MMD.REG`"), "{msg}");
}
