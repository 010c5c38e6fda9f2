use super::*;
use crate::event::{Callback, Duplex, Event, EventKind, LinkState, MdioOp, PhyState};
use crate::synth::{Synth, phy_state};
use crate::test_events::{self, Mdio, event};

fn cb(name: &str) -> Callback {
    test_events::callback(name, "ax88796b_rust::PhyAX88772A")
}

/// `kind` of the PHY at phy_sim-0:10, from thread `tid`.
fn ev(ts_ns: u64, tid: u32, kind: impl Into<EventKind>) -> Event {
    Event {
        tid,
        phy: Some(test_events::phy("phy_sim-0", 0x10, 0x003b_1861, "AX")),
        ..event(ts_ns, kind)
    }
}

fn enter(ts: u64, tid: u32, name: &str, depth: u8, state: u32) -> Event {
    ev(
        ts,
        tid,
        EventKind::CallbackEnter {
            callback: cb(name),
            depth,
            state: phy_state(state),
        },
    )
}

fn exit(ts: u64, tid: u32, name: &str, depth: u8, ret: i64, states: (u32, u32), up: bool) -> Event {
    let link = LinkState {
        up,
        speed: if up { 100 } else { -1 },
        duplex: if up { Duplex::Full } else { Duplex::Unknown },
    };
    ev(
        ts,
        tid,
        EventKind::CallbackExit {
            callback: cb(name),
            depth,
            latency_ns: 10,
            ret,
            state_before: phy_state(states.0),
            state_after: phy_state(states.1),
            link,
        },
    )
}

/// A read of `value` from `reg` taking 5 ns, in the callback `caller` if any.
fn read_access(reg: u16, value: u16, caller: Option<&str>) -> Mdio {
    Mdio {
        latency_ns: 5,
        caller: caller.map(cb),
        ..Mdio::read(reg, value)
    }
}

fn read(ts: u64, tid: u32, reg: u16, value: u16, caller: Option<&str>) -> Event {
    ev(ts, tid, read_access(reg, value, caller))
}

#[test]
fn registers_callbacks_and_link_are_tracked() {
    let mut m = Model::new();
    m.apply(&enter(100, 7, "read_status", 1, 6));
    let a = m.apply(&read(110, 7, 0x01, 0x7849, Some("read_status")));
    assert_eq!(a.previous, None);
    let a = m.apply(&read(120, 7, 0x01, 0x786d, Some("read_status")));
    assert_eq!(a.previous, Some(0x7849));
    assert_eq!(m.phy("phy_sim-0:10").unwrap().open.of(7).len(), 1);
    let a = m.apply(&exit(130, 7, "read_status", 1, 0, (6, 5), true));
    let closed = a.closed.unwrap();
    assert_eq!(closed.enter_ns, Some(100));
    assert_eq!(closed.accesses.len(), 2);
    assert_eq!(closed.accesses[1].value, 0x786d);
    let t = a.transition.unwrap();
    assert_eq!(
        (t.from.map(|s| s.value), t.to.value, t.during.as_deref()),
        (Some(6), 5, Some("read_status"))
    );
    assert!(a.link_change.unwrap().to.up);

    let p = m.phy("phy_sim-0:10").unwrap();
    assert_eq!(p.registers[&0x01].value, 0x786d);
    assert_eq!(p.state.as_ref().unwrap().name.as_ref(), "RUNNING");
    assert_eq!(
        p.state_history.len(),
        2,
        "first observation, then NOLINK → RUNNING"
    );
    assert!(p.open.of(7).is_empty());
    assert_eq!(p.last_calls["read_status"].accesses.len(), 2);
}

#[test]
fn nested_callbacks_attach_accesses_to_the_innermost() {
    let mut m = Model::new();
    m.apply(&enter(1, 7, "link_change_notify", 1, 6));
    m.apply(&read(2, 7, 0x00, 0x3100, Some("link_change_notify")));
    m.apply(&enter(3, 7, "soft_reset", 2, 6));
    m.apply(&read(4, 7, 0x00, 0x8000, Some("soft_reset")));
    assert_eq!(m.phy("phy_sim-0:10").unwrap().open.of(7).len(), 2);
    let inner = m
        .apply(&exit(5, 7, "soft_reset", 2, 0, (6, 6), false))
        .closed
        .unwrap();
    assert_eq!(inner.accesses.len(), 1);
    let outer = m
        .apply(&exit(6, 7, "link_change_notify", 1, 0, (6, 6), false))
        .closed
        .unwrap();
    assert_eq!(outer.accesses.len(), 1);
    assert_eq!(outer.accesses[0].value, 0x3100);
}

#[test]
fn unmatched_and_stale_callbacks_are_counted() {
    let mut m = Model::new();
    let closed = m
        .apply(&exit(5, 7, "read_status", 1, 0, (6, 6), false))
        .closed
        .unwrap();
    assert_eq!(closed.enter_ns, None);
    m.apply(&enter(6, 7, "read_status", 1, 6));
    // The first exit was lost: the second entry at the same depth shows it.
    m.apply(&enter(7, 7, "read_status", 1, 6));
    let lost = m.lost_returns().to_vec();
    assert_eq!(lost.len(), 1);
    assert_eq!(
        (lost[0].open.enter_ns, lost[0].known_at_ns, lost[0].why),
        (6, 7, LostWhy::Superseded)
    );
    assert_eq!(lost[0].key, "phy_sim-0:10");
    let c = &m.phy("phy_sim-0:10").unwrap().counters;
    assert_eq!((c.unmatched_exits, c.unclosed), (1, 1));
}

#[test]
fn errors_lost_and_modules() {
    let mut m = Model::new();
    let failed = ev(
        1,
        7,
        Mdio {
            error: Some(-110),
            ..read_access(0x01, 0, None)
        },
    );
    m.apply(&read(0, 7, 0x01, 0x786d, None));
    assert_eq!(m.apply(&failed).previous, Some(0x786d));
    assert_eq!(
        m.phy("phy_sim-0:10").unwrap().registers[&0x01].value,
        0x786d,
        "failed read keeps the value"
    );
    m.apply(&event(
        2,
        EventKind::Lost {
            count: 3,
            cause: None,
        },
    ));
    m.apply(&event(
        3,
        EventKind::Attached {
            module: "ax88796b_rust".into(),
            callbacks: 5,
            reattached: false,
            guarantee: None,
        },
    ));
    m.apply(&event(
        4,
        EventKind::Detached {
            module: "ax88796b_rust".into(),
        },
    ));
    let t = m.totals();
    assert_eq!((t.lost, t.events), (3, 5));
    assert!(!m.modules["ax88796b_rust"].attached);
    assert_eq!(m.span_ns, Some((0, 4)));
}

#[test]
fn mmd_accesses_are_named() {
    let mut m = Model::new();
    let write = |ts, reg, value| {
        ev(
            ts,
            7,
            Mdio {
                op: MdioOp::Write,
                latency_ns: 1,
                ..Mdio::read(reg, value)
            },
        )
    };
    m.apply(&write(1, 0x0d, 0x0007));
    m.apply(&write(2, 0x0e, 0x003c));
    m.apply(&write(3, 0x0d, 0x4007));
    let a = m.apply(&read(4, 7, 0x0e, 0x0006, None));
    assert_eq!(a.mmd.unwrap().to_string(), "MMD AN.0x003c read 0x0006");
    assert_eq!(m.phy("phy_sim-0:10").unwrap().mmd_registers[&(7, 0x3c)], 6);
}

#[test]
fn history_cap_bounds_memory() {
    let mut m = Model::with_history_cap(4);
    for e in Synth::new(3).take(20_000) {
        m.apply(&e);
    }
    let p = m.phy("phy_sim-0:10").unwrap();
    assert_eq!(p.state_history.len(), 4);
    assert!(p.state_history.dropped() > 0);
    assert!(p.link_history.len() <= 4);
}

#[test]
fn synthetic_stream_balances() {
    let mut m = Model::new();
    let mut failed_read_status = 0;
    for e in Synth::with_phys(5, 3).take(50_000) {
        let closed = m.apply(&e).closed;
        failed_read_status +=
            u32::from(closed.is_some_and(|c| c.ret < 0 && &*c.callback.name == "read_status"));
    }
    let t = m.totals();
    assert_eq!(t.unmatched_exits, 0);
    assert_eq!(t.unclosed, 0);
    assert!(failed_read_status > 0);
    assert_eq!(m.phys.len(), 3);
    assert!(m.phys.values().all(|p| p.open.iter().count() <= 1));
    let states: Vec<_> = m.phys["phy_sim-0:10"]
        .state_history
        .iter()
        .map(|t| t.to.name.as_ref())
        .collect();
    assert!(states.windows(2).any(|w| w == ["NOLINK", "RUNNING"]));
    assert!(states.windows(2).any(|w| w == ["RUNNING", "NOLINK"]));
    let _: &PhyState = m.phys["phy_sim-0:10"].state.as_ref().unwrap();
}

#[test]
fn phy_id_from_registers() {
    let mut m = Model::new();
    m.apply(&read(1, 7, 0x02, 0x003b, None));
    assert_eq!(m.phy("phy_sim-0:10").unwrap().id_from_registers(), None);
    m.apply(&read(2, 7, 0x03, 0x1881, None));
    let id = m.phy("phy_sim-0:10").unwrap().id_from_registers().unwrap();
    assert_eq!(id.known_name(), Some("AX88772C"));
}

#[test]
fn an_unload_gives_up_the_calls_running_in_the_module() {
    let mut m = Model::new();
    m.apply(&enter(1, 7, "link_change_notify", 1, 6));
    m.apply(&enter(2, 7, "soft_reset", 2, 6));
    let other = event(
        3,
        EventKind::Detached {
            module: "other".into(),
        },
    );
    m.apply(&other);
    assert!(m.lost_returns().is_empty());
    let unload = event(
        4,
        EventKind::Detached {
            module: "ax88796b_rust".into(),
        },
    );
    m.apply(&unload);
    let lost = m.lost_returns().to_vec();
    let names: Vec<&str> = lost.iter().map(|l| &*l.open.callback.name).collect();
    assert_eq!(names, ["link_change_notify", "soft_reset"]);
    assert!(
        lost.iter()
            .all(|l| l.why == LostWhy::Unloaded && l.known_at_ns == 4)
    );
    let phy = m.phy("phy_sim-0:10").unwrap();
    assert_eq!(phy.open.iter().count(), 0);
    assert_eq!(m.totals().unclosed, 2);
}

/// The facts of `events` as `kind [inside…] @state` lines, in order.
fn facts_of(events: &[Event]) -> Vec<String> {
    let mut m = Model::with_facts();
    let mut out = Vec::new();
    for e in events {
        m.apply(e);
        for f in m.drain_facts() {
            let kind = match &f.kind {
                FactKind::Enter(name) => format!("enter {name}"),
                FactKind::Exit { callback, ret, .. } => format!("exit {callback} {ret}"),
                FactKind::Mdio { reg, .. } => format!("mdio {reg}"),
                FactKind::State { from, to } => {
                    format!("state {}->{to}", from.as_deref().unwrap_or("?"))
                }
                FactKind::Link(up) => format!("link {up}"),
                FactKind::Mac(name) => name.to_string(),
                FactKind::Kmsg { text, .. } => format!("kmsg {text}"),
            };
            let state = f.state.as_deref().unwrap_or("?");
            out.push(format!("{kind} [{}] @{state}", f.inside.join(" ")));
        }
    }
    out
}

#[test]
fn facts_follow_nesting_state_and_link_in_order() {
    let events = [
        enter(1, 7, "link_change_notify", 1, 6),
        enter(2, 7, "soft_reset", 2, 6),
        read(3, 7, 0x00, 0x3100, Some("soft_reset")),
        exit(4, 7, "soft_reset", 2, 0, (6, 6), false),
        exit(5, 7, "link_change_notify", 1, 0, (6, 5), true),
        // Tracing started inside `read_status`: the probe's caller says where it ran.
        read(6, 8, 0x01, 0x786d, Some("read_status")),
    ];
    assert_eq!(
        facts_of(&events),
        [
            "state ?->NOLINK [] @NOLINK",
            "enter link_change_notify [] @NOLINK",
            "enter soft_reset [link_change_notify] @NOLINK",
            "mdio 0 [link_change_notify soft_reset] @NOLINK",
            "exit soft_reset 0 [link_change_notify] @NOLINK",
            "exit link_change_notify 0 [] @NOLINK",
            "state NOLINK->RUNNING [] @RUNNING",
            "link true [] @RUNNING",
            "mdio 1 [read_status] @RUNNING",
        ]
    );
    let mut plain = Model::new();
    plain.apply(&events[0]);
    assert_eq!(plain.drain_facts().count(), 0, "only when asked for");
}

#[test]
fn facts_nest_as_the_model_does() {
    let mut other_type = exit(2, 7, "read_status", 1, 0, (1, 1), false);
    if let EventKind::CallbackExit { callback, .. } = &mut other_type.kind {
        callback.driver_type = "ax88796b_rust::PhyAX88772C".into();
    }
    let unload = event(
        4,
        EventKind::Detached {
            module: "ax88796b_rust".into(),
        },
    );
    let events = [
        enter(1, 7, "read_status", 1, 1),
        // The same callback of another driver type does not return this one.
        other_type,
        read(3, 7, 0x00, 0x3100, None),
        // Its module goes away: nothing runs in it any more.
        unload,
        read(5, 7, 0x00, 0x3100, None),
    ];
    let facts = facts_of(&events);
    assert_eq!(facts[3], "mdio 0 [read_status] @READY");
    assert_eq!(facts[4], "mdio 0 [] @READY");
}

/// A PHY whose status phylib reads without a driver callback (genphy) still shows its link:
/// every MDIO access carries it. Link changes stay those seen at callback returns.
#[test]
fn the_link_of_any_event_is_the_current_one() {
    let mut m = Model::new();
    let access = Mdio {
        link: Some(LinkState {
            up: true,
            speed: 100,
            duplex: Duplex::Full,
        }),
        ..read_access(0x01, 0x786d, None)
    };
    m.apply(&ev(100, 7, access));
    let phy = m.phy("phy_sim-0:10").unwrap();
    assert_eq!(
        phy.seen_link.as_ref().map(|l| (l.up, l.speed)),
        Some((true, 100))
    );
    assert!(phy.link.is_none(), "no callback returned: no link change");
}

/// A Clause-45 access is no access to the Clause-22 register of the same number.
#[test]
fn clause_45_accesses_keep_their_own_registers() {
    let mut m = Model::new();
    let access = Mdio {
        devad: Some(3),
        ..read_access(0x01, 0x1234, None)
    };
    m.apply(&ev(100, 7, access));
    let phy = m.phy("phy_sim-0:10").unwrap();
    assert!(!phy.registers.contains_key(&0x01));
    assert_eq!(phy.mmd_registers.get(&(3, 0x01)), Some(&0x1234));
}
