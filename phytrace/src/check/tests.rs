//! Evaluation of every rule kind on small hand-made event streams and on synthetic ones.

use super::spec::{Body, Bound, Cmp, Pattern};
use super::*;
use crate::event::{Callback, Duplex, Event, EventKind, LinkState, MdioOp, PhyRef};
use crate::model::LostWhy;
use crate::synth::{self, Synth};

const BMCR: u16 = 0;
const BMSR: u16 = 1;

/// Builds the events of one thread of one PHY.
struct Stream {
    events: Vec<Event>,
    phy: PhyRef,
    ts: u64,
    state: u32,
    stack: Vec<(String, u64, u32)>,
    link: bool,
}

impl Stream {
    fn new(addr: u8, phy_id: u32, driver: &str) -> Self {
        Self {
            events: Vec::new(),
            phy: PhyRef {
                bus: "sim".into(),
                addr,
                phy_id,
                driver: driver.into(),
            },
            ts: 1_000_000,
            state: 1,
            stack: Vec::new(),
            link: false,
        }
    }

    fn a() -> Self {
        Self::new(1, 0x003b_1861, "Asix Electronics AX88772A")
    }

    fn push(&mut self, kind: EventKind) -> &mut Self {
        self.ts += 1_000_000;
        self.events.push(Event {
            ts_ns: self.ts,
            cpu: 0,
            tid: 7,
            phy: Some(self.phy.clone()),
            kind,
        });
        self
    }

    fn callback(name: &str) -> Callback {
        Callback {
            name: name.into(),
            driver_type: "ax88796b_rust::PhyAX88772A".into(),
        }
    }

    fn state(&mut self, state: u32) -> &mut Self {
        self.state = state;
        self
    }

    fn link(&mut self, up: bool) -> &mut Self {
        self.link = up;
        self
    }

    fn enter(&mut self, name: &str) -> &mut Self {
        self.stack
            .push((name.into(), self.ts + 1_000_000, self.state));
        let kind = EventKind::CallbackEnter {
            callback: Self::callback(name),
            depth: self.stack.len() as u8,
            state: synth::phy_state(self.state),
        };
        self.push(kind)
    }

    fn exit(&mut self, ret: i64) -> &mut Self {
        let depth = self.stack.len() as u8;
        let (name, enter, before) = self.stack.pop().expect("open callback");
        let kind = EventKind::CallbackExit {
            callback: Self::callback(&name),
            depth,
            latency_ns: self.ts + 1_000_000 - enter,
            ret,
            state_before: synth::phy_state(before),
            state_after: synth::phy_state(self.state),
            link: LinkState {
                up: self.link,
                speed: if self.link { 100 } else { -1 },
                duplex: Duplex::Full,
            },
        };
        self.push(kind)
    }

    fn mdio(&mut self, op: MdioOp, reg: u16, value: u16, error: Option<i32>) -> &mut Self {
        let caller = self.stack.last().map(|(n, _, _)| Self::callback(n));
        let state = Some(synth::phy_state(self.state));
        self.push(EventKind::Mdio {
            op,
            reg,
            value,
            error,
            latency_ns: 1_000,
            caller,
            state,
            devad: None,
            link: None,
        })
    }

    fn read(&mut self, reg: u16, value: u16) -> &mut Self {
        self.mdio(MdioOp::Read, reg, value, None)
    }

    fn write(&mut self, reg: u16, value: u16) -> &mut Self {
        self.mdio(MdioOp::Write, reg, value, None)
    }

    /// `soft_reset` as the Asix driver does it.
    fn soft_reset(&mut self) -> &mut Self {
        self.enter("soft_reset")
            .write(BMCR, 0)
            .read(BMCR, 0)
            .write(BMCR, 0x8200)
            .read(BMCR, 0x3100)
            .exit(0)
    }

    fn read_status(&mut self, bmsr: u16) -> &mut Self {
        self.enter("read_status")
            .read(BMCR, 0x3100)
            .read(BMSR, bmsr)
            .exit(0)
    }

    /// Probe, link up, unplug with the AX88772A's re-init, replug.
    fn plug_unplug() -> Self {
        let mut s = Self::a();
        s.soft_reset().state(4).link(true).read_status(0x786d);
        s.state(5).enter("link_change_notify").exit(0);
        s.state(5).link(false).read_status(0x7849);
        s.state(6).enter("link_change_notify").soft_reset().exit(0);
        s.link(true).read_status(0x786d);
        s.state(5).enter("link_change_notify").exit(0);
        s
    }
}

/// Outcomes of `spec` (one rule per line) on `events`.
fn run(spec: &str, events: &[Event]) -> Vec<Outcome> {
    let spec = parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    evaluate(&spec, events, 0)
}

/// The one outcome of a one-rule spec.
fn one(rule: &str, events: &[Event]) -> Outcome {
    run(&format!("rule \"r\": {rule}"), events).remove(0)
}

/// The pattern `text` as a rule holds it.
fn pattern(text: &str) -> Pattern {
    let mut spec = parse(&format!("rule \"r\": never {text}")).expect("a pattern");
    match spec.rules.remove(0).body {
        Body::Never(p) => p,
        other => panic!("{text}: {other:?}"),
    }
}

/// Milliseconds, in nanoseconds.
const MS: u64 = 1_000_000;

fn holds(rule: &str, events: &[Event]) -> bool {
    let o = one(rule, events);
    assert!(!o.not_applicable(), "{rule}: no PHY in scope");
    o.passed()
}

#[test]
fn before_first() {
    let good = Stream::plug_unplug();
    assert!(holds(
        "exit soft_reset before first enter read_status",
        &good.events
    ));
    let mut bad = Stream::a();
    bad.read_status(0x7849).soft_reset();
    let o = one(
        "exit soft_reset before first enter read_status",
        &bad.events,
    );
    assert_eq!(o.violations.len(), 1);
    let v = &o.violations[0];
    assert_eq!(v.offending, [0]);
    assert_eq!(
        v.reason,
        Reason::NotPreceded {
            first: pattern("exit soft_reset"),
            then: pattern("enter read_status"),
            at_ns: 2 * MS,
        }
    );
    assert_eq!(v.group, "sim:01 (Asix Electronics AX88772A)");
    // Nothing to precede: holds.
    let mut none = Stream::a();
    none.soft_reset();
    assert!(holds(
        "exit soft_reset before first enter read_status",
        &none.events
    ));
}

#[test]
fn after_then_within() {
    let good = Stream::plug_unplug();
    let rule = "after state NOLINK: enter link_change_notify then enter soft_reset inside link_change_notify then write BMCR = 0 then write BMCR has RESET|ANRESTART";
    assert!(holds(rule, &good.events));
    assert!(holds(&format!("{rule} within 10ms"), &good.events));
    // Too slow: each event is 1 ms after the previous one.
    let o = one(&format!("{rule} within 3ms"), &good.events);
    assert_eq!(o.violations.len(), 1);
    assert!(
        matches!(
            o.violations[0].reason,
            Reason::StepLate {
                within_ns: 3_000_000,
                came_ns,
                ..
            } if came_ns > 3 * MS
        ),
        "{:?}",
        o.violations
    );
    // The re-init is missing.
    let mut bad = Stream::a();
    bad.soft_reset()
        .state(6)
        .enter("link_change_notify")
        .exit(0);
    let o = one(rule, &bad.events);
    let v = &o.violations[0];
    let Reason::StepMissing {
        trigger,
        missing,
        after,
        within_ns,
        ..
    } = &v.reason
    else {
        panic!("{:?}", v.reason);
    };
    assert_eq!(*trigger, pattern("state NOLINK"));
    assert_eq!(
        *missing,
        pattern("enter soft_reset inside link_change_notify")
    );
    assert_eq!(
        after.as_ref().map(|(step, _)| step),
        Some(&pattern("enter link_change_notify"))
    );
    assert_eq!(*within_ns, None);
    assert_eq!(v.offending.len(), 2, "the trigger and the steps matched");
}

#[test]
fn never_with_inside_and_while_state() {
    let good = Stream::plug_unplug();
    assert!(holds("never write BMCR inside read_status", &good.events));
    assert!(holds(
        "never enter soft_reset inside link_change_notify while state not NOLINK",
        &good.events
    ));
    assert!(!holds(
        "never enter soft_reset inside link_change_notify while state NOLINK",
        &good.events
    ));
    assert!(!holds("never write BMCR inside any", &good.events));
    let mut bad = Stream::a();
    bad.soft_reset()
        .enter("read_status")
        .write(BMCR, 0x3300)
        .exit(0);
    let o = one("never write BMCR inside read_status", &bad.events);
    assert_eq!(o.violations.len(), 1);
    assert_eq!(
        o.violations[0].reason,
        Reason::Happened {
            pattern: pattern("write BMCR inside read_status"),
            at_ns: 9 * MS,
        }
    );
    assert_eq!(o.violations[0].offending, [7]);
    assert!(
        o.violations[0].context.contains(&4),
        "context before the event"
    );
}

#[test]
fn errors_from_callbacks_and_mdio() {
    let good = Stream::plug_unplug();
    assert!(holds("never exit any error", &good.events));
    assert!(holds("never error", &good.events));
    let mut bad = Stream::a();
    bad.soft_reset()
        .enter("read_status")
        .mdio(MdioOp::Read, BMSR, 0, Some(-5))
        .exit(-5);
    let o = one("never exit any error", &bad.events);
    assert_eq!(o.violations.len(), 1);
    assert_eq!(one("never error", &bad.events).violations.len(), 2);
    assert!(!holds("never read BMSR error", &bad.events));
    assert!(!holds("never exit read_status ret = -5", &bad.events));
    assert!(holds("never exit read_status ret < -5", &bad.events));
    assert!(holds(
        "after read BMSR error: exit read_status error within 2ms",
        &bad.events
    ));
}

#[test]
fn state_sequences() {
    let good = Stream::plug_unplug();
    assert!(holds(
        "sequence state UP then state RUNNING then state RUNNING -> NOLINK then state NOLINK -> RUNNING",
        &good.events
    ));
    assert!(holds(
        "sequence link up then link down then link up",
        &good.events
    ));
    let o = one("sequence state NOLINK then state UP", &good.events);
    assert!(
        matches!(
            &o.violations[0].reason,
            Reason::SequenceStopped { last, missing, .. }
                if *last == pattern("state NOLINK") && *missing == pattern("state UP")
        ),
        "{:?}",
        o.violations
    );
    let o = one("sequence state HALTED then state UP", &good.events);
    assert_eq!(
        o.violations[0].reason,
        Reason::SequenceNotStarted {
            first: pattern("state HALTED")
        }
    );
    assert!(o.violations[0].offending.is_empty());
    let o = one(
        "sequence state UP then state NOLINK within 2ms",
        &good.events,
    );
    assert!(
        matches!(
            o.violations[0].reason,
            Reason::SequenceTooSlow {
                within_ns: 2_000_000,
                fastest_ns,
            } if fastest_ns > 2 * MS
        ),
        "{:?}",
        o.violations
    );
    // `from -> to` needs that very transition.
    assert!(!holds("sequence state UP -> NOLINK", &good.events));
}

#[test]
fn counts() {
    let good = Stream::plug_unplug();
    assert!(holds("count exit soft_reset exactly 2", &good.events));
    assert!(holds(
        "count enter soft_reset inside link_change_notify at most 1",
        &good.events
    ));
    assert!(holds("count link up at least 2", &good.events));
    let o = one("count exit soft_reset at most 1", &good.events);
    assert_eq!(
        o.violations[0].reason,
        Reason::Count {
            pattern: pattern("exit soft_reset"),
            count: 2,
            bound: Bound::AtMost(1),
        }
    );
    assert_eq!(o.violations[0].offending.len(), 1, "the extra one");
    let o = one("count read LPA at least 1", &good.events);
    assert_eq!(
        o.violations[0].reason,
        Reason::Count {
            pattern: pattern("read LPA"),
            count: 0,
            bound: Bound::AtLeast(1),
        }
    );
    assert!(o.violations[0].context.is_empty());
}

#[test]
fn scopes_select_and_group_phys() {
    let mut a = Stream::a();
    a.soft_reset().read_status(0x786d);
    let mut c = Stream::new(2, 0x003b_1881, "Asix Electronics AX88772C");
    c.read_status(0x786d).soft_reset();
    let mut events = a.events.clone();
    events.extend(c.events.clone());
    events.sort_by_key(|e| e.ts_ns);
    let rule = "exit soft_reset before first enter read_status";
    let o = one(rule, &events);
    assert_eq!(o.groups.len(), 2);
    assert_eq!(o.violations.len(), 1);
    assert!(o.violations[0].group.starts_with("sim:02"));
    let o = run(
        &format!("rule \"r\" for driver \"AX88772A\": {rule}"),
        &events,
    )
    .remove(0);
    assert_eq!((o.groups.len(), o.passed()), (1, true));
    let o = run(
        &format!("rule \"r\" for phy_id 0x003b1881: {rule}"),
        &events,
    )
    .remove(0);
    assert_eq!((o.groups.len(), o.passed()), (1, false));
    let o = run(&format!("rule \"r\" for phy \"sim:02\": {rule}"), &events).remove(0);
    assert_eq!(o.groups, ["sim:02 (Asix Electronics AX88772C)"]);
    let o = run(
        &format!("rule \"r\" for driver \"RTL8211\": {rule}"),
        &events,
    )
    .remove(0);
    assert!(o.not_applicable() && o.passed());
    // Per driver: the two PHYs of one driver are checked as one stream.
    let mut c2 = Stream::new(3, 0x003b_1881, "Asix Electronics AX88772C");
    c2.soft_reset();
    let mut c1 = Stream::new(2, 0x003b_1881, "Asix Electronics AX88772C");
    c1.ts = 100_000_000;
    c1.read_status(0x786d);
    let mut events = c2.events.clone();
    events.extend(c1.events.clone());
    assert!(!one(rule, &events).passed());
    let o = run(&format!("rule \"r\" per driver: {rule}"), &events).remove(0);
    assert_eq!(o.groups, ["Asix Electronics AX88772C (sim:02, sim:03)"]);
    assert!(o.passed());
}

#[test]
fn synthetic_streams() {
    let events: Vec<Event> = Synth::with_phys(3, 3).take(4_000).collect();
    let spec = "\
rule \"reset first\": exit soft_reset before first enter read_status
rule \"no BMCR writes while polling\": never write BMCR inside read_status
rule \"re-init at NOLINK\" for driver \"AX88772A\": after enter link_change_notify while state NOLINK: enter soft_reset inside link_change_notify then write BMCR has RESET
rule \"errors\": never exit any error
";
    let outcomes = run(spec, &events);
    assert!(outcomes[0].passed(), "{:?}", outcomes[0].violations);
    assert!(outcomes[1].passed());
    assert!(outcomes[2].passed(), "{:?}", outcomes[2].violations);
    assert!(!outcomes[3].passed(), "Synth injects -ETIMEDOUT");
    assert!(outcomes[3].violations.iter().all(|v| matches!(
        &v.reason,
        Reason::Happened { pattern: p, .. } if *p == pattern("exit any error")
    )));
}

#[test]
fn kernel_messages() {
    let mii = "asix 1-1:1.0 eth0: Failed to enable software MII access";
    let mut s = Stream::a();
    s.soft_reset()
        .push(EventKind::Kmsg {
            level: Some(3),
            text: mii.into(),
        })
        .push(EventKind::Kmsg {
            level: Some(6),
            text: "asix 1-1:1.0 eth0: link down".into(),
        });
    let o = one("never kmsg \"Failed to\"", &s.events);
    assert_eq!(o.violations.len(), 1);
    assert_eq!(o.violations[0].offending, [s.events.len() - 2]);
    assert!(holds("never kmsg \"timed out\"", &s.events));
    assert!(holds("count kmsg any exactly 2", &s.events));
    assert!(holds("count kmsg any level err exactly 1", &s.events));
    assert!(holds("count kmsg any level warning exactly 1", &s.events));
    assert!(holds(
        "count kmsg \"link\" level info at least 1",
        &s.events
    ));
    assert!(holds(
        "exit soft_reset before first kmsg \"Failed\"",
        &s.events
    ));
    // Scoped by PHY: a message of no PHY, or of another, is not this PHY's.
    let mut other = Stream::new(2, 0x003b_1841, "Asix Electronics AX88796B");
    other.push(EventKind::Kmsg {
        level: Some(3),
        text: mii.into(),
    });
    let mut orphan = other.events[0].clone();
    orphan.phy = None;
    let events = [s.events.clone(), other.events.clone(), vec![orphan]].concat();
    let outcomes = run(
        "rule \"r\" for phy \"sim:01\": count kmsg \"Failed to\" exactly 1",
        &events,
    );
    assert!(outcomes[0].passed(), "{:?}", outcomes[0].violations);
    // Spelled wrong: the spec says what it expected.
    let err = parse("rule \"r\": never kmsg Failed")
        .unwrap_err()
        .to_string();
    assert!(err.contains("the text of a kernel message"), "{err}");
    let err = parse("rule \"r\": never kmsg any level loud")
        .unwrap_err()
        .to_string();
    assert!(err.contains("a level"), "{err}");
}

/// The wording of every reason, in one place: reports show it, tests assert on the reasons.
#[test]
fn wording_of_each_reason() {
    let p = pattern;
    let reasons = [
        Reason::Happened {
            pattern: p("exit any error"),
            at_ns: 12_986_129_000,
        },
        Reason::Count {
            pattern: p("exit soft_reset"),
            count: 2,
            bound: Bound::AtMost(1),
        },
        Reason::Count {
            pattern: p("link down"),
            count: 1,
            bound: Bound::Exactly(2),
        },
        Reason::Percentile {
            percentile: 99,
            pattern: p("exit read_status"),
            count: 7,
            value_ns: 2_600_000,
            cmp: Cmp::Lt,
            limit_ns: MS,
        },
        Reason::Percentile {
            percentile: 50,
            pattern: p("exit soft_reset"),
            count: 1,
            value_ns: 22_000_000,
            cmp: Cmp::Le,
            limit_ns: 20 * MS,
        },
        Reason::NotPreceded {
            first: p("exit soft_reset"),
            then: p("enter read_status"),
            at_ns: 2 * MS,
        },
        Reason::StepMissing {
            trigger: p("state NOLINK"),
            at_ns: 5 * MS,
            missing: p("enter link_change_notify"),
            after: None,
            within_ns: None,
        },
        Reason::StepMissing {
            trigger: p("state NOLINK"),
            at_ns: 5 * MS,
            missing: p("enter soft_reset inside link_change_notify"),
            after: Some((p("enter link_change_notify"), 6 * MS)),
            within_ns: Some(1_000 * MS),
        },
        Reason::StepLate {
            trigger: p("enter soft_reset"),
            at_ns: 2 * MS,
            missing: p("write BMCR has RESET"),
            after: Some((p("write BMCR = 0"), 3 * MS)),
            within_ns: 3 * MS,
            came_ns: 4 * MS,
        },
        Reason::SequenceNotStarted {
            first: p("state HALTED"),
        },
        Reason::SequenceStopped {
            last: p("state NOLINK"),
            at_ns: 9 * MS,
            missing: p("state UP"),
        },
        Reason::SequenceTooSlow {
            within_ns: 2 * MS,
            fastest_ns: 3 * MS,
        },
        Reason::NeverReturned {
            callback: "read_status".into(),
            at_ns: 7_779_639_000,
            why: LostWhy::CaptureEnded,
            ran_ns: 1_500,
        },
        Reason::NeverReturned {
            callback: "soft_reset".into(),
            at_ns: MS,
            why: LostWhy::Unloaded,
            ran_ns: 30 * MS,
        },
        Reason::NeverReturned {
            callback: "suspend".into(),
            at_ns: MS,
            why: LostWhy::Superseded,
            ran_ns: 2_000 * MS,
        },
    ];
    let text: String = reasons.iter().map(|r| format!("{r}\n")).collect();
    insta::assert_snapshot!(text);
}

/// `specs/qt2025.spec` on the QT2025's probe as the driver makes it, and on probes that break it.
mod qt2025 {
    use super::*;
    use crate::test_events::qt2025::{self, Probe, REVISION_OK};

    fn spec() -> Spec {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../specs/qt2025.spec");
        parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The names of the rules that failed.
    fn failed(events: &[Event]) -> Vec<String> {
        let spec = spec();
        let outcomes = evaluate(&spec, events, 0);
        assert!(outcomes.iter().all(|o| !o.not_applicable()));
        spec.rules
            .iter()
            .zip(outcomes)
            .filter(|(_, o)| !o.passed())
            .map(|(r, _)| r.name.clone())
            .collect()
    }

    #[test]
    fn the_drivers_probe_passes_every_rule() {
        let firmware = qt2025::firmware(24 * 1024);
        let events = qt2025::probe(qt2025::phy(2), 0, REVISION_OK, &firmware);
        assert_eq!(events.len(), 2 + 1 + 11 + 24 * 1024 + 1);
        assert_eq!(failed(&events), Vec::<String>::new());
        let refused = qt2025::probe(qt2025::phy(3), 0, 0xb200, &firmware);
        assert_eq!(failed(&refused), Vec::<String>::new());
    }

    #[test]
    fn a_read_of_the_sram_during_the_load_fails() {
        let mut probe = Probe::start(qt2025::phy(2), 0);
        probe
            .access(MdioOp::Read, 1, 0xd001, REVISION_OK)
            .setup()
            .load(&qt2025::firmware(17 * 1024))
            .access(MdioOp::Read, 3, 0x8010, 0);
        let events = probe.exit(0);
        assert_eq!(failed(&events), ["no PCS SRAM read before the SRAM start"]);
    }

    #[test]
    fn a_write_before_the_revision_check_and_a_wrong_revision_accepted_fail() {
        let mut probe = Probe::start(qt2025::phy(2), 0);
        probe
            .access(MdioOp::Write, 1, 0xc300, 0)
            .access(MdioOp::Read, 1, 0xd001, 0x1200);
        let events = probe.exit(0);
        assert_eq!(
            failed(&events),
            ["revision read first", "a wrong revision is refused"]
        );
    }

    #[test]
    fn the_set_up_out_of_order_fails() {
        let mut probe = Probe::start(qt2025::phy(2), 0);
        probe
            .access(MdioOp::Read, 1, 0xd001, REVISION_OK)
            .access(MdioOp::Write, 3, 0xe854, 0x00c0)
            .setup()
            .access(MdioOp::Write, 4, 0x8000, 0)
            .load(&qt2025::firmware(16 * 1024));
        probe.access(MdioOp::Write, 3, 0xe854, 0x0040);
        let events = probe.exit(0);
        assert_eq!(
            failed(&events),
            ["PCS window filled before the PHY XS one"],
            "the set-up itself is complete after the early ROM start"
        );
    }
}
