use std::path::Path;

use super::*;

fn capture(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.ptrace"));
    Capture::read(&path).expect("capture")
}

fn phy<'r>(r: &'r Report, key: &str) -> &'r PhyReport {
    r.phys.iter().find(|p| p.key == key).expect("PHY")
}

#[test]
fn plug_unplug_errors_link_and_states() {
    let r = of_capture(&capture("rust-plug-unplug"));
    let p = phy(&r, "phy_sim-0:01");
    let read_status = p
        .callbacks
        .iter()
        .find(|c| c.name == "read_status")
        .unwrap();
    assert_eq!(
        read_status.errors,
        [ErrorCount {
            ret: -5,
            errno: Some("EIO"),
            count: 1
        }]
    );
    let l = &read_status.latency;
    assert!(l.min_ns <= l.p50_ns && l.p50_ns <= l.p90_ns && l.p90_ns <= l.p99_ns);
    assert!(l.p99_ns <= l.max_ns);
    // Up at 7.512, down at 7.659, up again at 7.836, down after the error.
    let ups: Vec<u64> = p.link.ups.iter().map(|u| u.at_ns / 1_000_000).collect();
    assert_eq!(ups.len(), 2, "{ups:?}");
    let second = &p.link.ups[1];
    let since_down = second.since_down_ns.unwrap();
    assert!(
        (176_000_000..178_000_000).contains(&since_down),
        "{since_down}"
    );
    assert!(p.link.intervals.last().unwrap().open);
    let total: u64 = p.link.intervals.iter().map(|i| i.duration_ns).sum();
    assert_eq!(total, p.link.up_ns + p.link.down_ns);
    let share: f64 = p.states.iter().map(|s| s.share).sum();
    assert!((share - 1.0).abs() < 1e-9);
    assert!(p.states.iter().any(|s| s.state == "ERROR"));
    assert!(p.mdio.peak_per_s as f64 >= p.mdio.mean_per_s);
    let bmsr = p.mdio.registers.iter().find(|r| r.name == "BMSR").unwrap();
    assert_eq!(bmsr.count.errors, 1);
}

#[test]
fn calls_running_at_an_unload_or_the_end_are_lost_returns() {
    let mut c = capture("rust-plug-unplug");
    // Cut the capture just after an entry: that call is still running at the end.
    let cut = c
        .events
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::CallbackEnter { .. }))
        .unwrap();
    c.events.truncate(cut + 1);
    c.trailer = None;
    let r = of_capture(&c);
    let lost: Vec<&CallbackReport> = r
        .phys
        .iter()
        .flat_map(|p| &p.callbacks)
        .filter(|cb| cb.lost_returns.total > 0)
        .collect();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].lost_returns.capture_ended, 1);
    assert_eq!(lost[0].lost_returns.calls[0].why, LostWhy::CaptureEnded);
    let text = text::report("cut", &r);
    assert!(text.contains("1 (1 capture ended)"), "{text}");
    assert!(text.contains("no return (CaptureEnded"), "{text}");
}

#[test]
fn text_and_json_name_the_method() {
    let r = of_capture(&capture("rust-module-reload"));
    let text = text::report("rust-module-reload.ptrace", &r);
    assert!(text.contains("HDR histogram, 3 significant digits"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["schema"], SCHEMA);
    assert_eq!(json["method"]["significant_digits"], 3);
    assert!(json["phys"][0]["callbacks"][0]["latency"]["p99_ns"].is_u64());
}

#[test]
fn dongle_carrier_follows_the_phy_link_and_usb_mdio_is_slow() {
    let r = of_capture(&capture("rust-dongle"));
    let p = phy(&r, "usb-001:002:10");
    let c = p.carrier.as_ref().expect("the dongle has a MAC side");
    assert_eq!(c.netdev.as_deref(), Some("eth0"));
    let total: u64 = c.intervals.iter().map(|i| i.duration_ns).sum();
    assert_eq!(total, c.up_ns + c.down_ns);
    assert_eq!(c.ups.len(), p.link.ups.len());
    for (carrier, link) in c.ups.iter().zip(&p.link.ups) {
        let since_link_up = carrier.since_link_up_ns.expect("after a PHY link-up");
        assert_eq!(carrier.at_ns - since_link_up, link.at_ns);
        assert!(since_link_up < 50_000_000, "{since_link_up}");
        assert!(carrier.since_aneg_start_ns.unwrap() > since_link_up);
    }
    // Each access is four USB control transfers: tens of ms under emulation.
    let m = &p.mdio.latency;
    assert_eq!(m.read.count + m.write.count, p.mdio.accesses);
    assert!(m.read.p50_ns > 1_000_000 && m.read.p50_ns <= m.read.p99_ns);
    let text = text::report("rust-dongle", &r);
    assert!(
        text.contains("carrier up at 3.967 s, 935.4ms after carrier down, 8.4ms after link up, 188.6ms after autonegotiation start"),
        "{text}"
    );
    assert!(text.contains("    read         34     33.3ms"), "{text}");
}

#[test]
fn carrier_without_traced_phy_callbacks_and_phys_without_a_mac_side() {
    // The C PHY driver: no callbacks, so no PHY link-up; autonegotiation starts are MDIO writes.
    let r = of_capture(&capture("c-dongle"));
    let c = phy(&r, "usb-001:002:10").carrier.clone().unwrap();
    assert_eq!(c.ups.len(), 2);
    assert!(c.ups.iter().all(|u| u.since_link_up_ns.is_none()));
    assert!(c.ups.iter().all(|u| u.since_aneg_start_ns.is_some()));
    let r = of_capture(&capture("rust-plug-unplug"));
    assert!(r.phys.iter().all(|p| p.carrier.is_none()));
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["phys"][0]["carrier"].is_null());
    assert!(json["phys"][0]["mdio"]["latency"]["read"]["p99_ns"].is_u64());
}

#[test]
fn clause_45_accesses_count_per_mmd_and_register_and_a_firmware_window_reads_as_one_line() {
    use crate::test_events::qt2025;
    let events = qt2025::probe(
        qt2025::phy(2),
        0,
        qt2025::REVISION_OK,
        &qt2025::firmware(24 * 1024),
    );
    let mut model = Model::new();
    let mut collector = Collector::new(0);
    for event in &events {
        let applied = model.apply(event);
        collector.observe(event, &applied, &model);
    }
    let end = events.last().unwrap().ts_ns;
    let r = collector.report(&model, end);
    let p = phy(&r, "phy_sim-1:02");
    assert_eq!(p.mdio.accesses, 1 + 11 + 24 * 1024 + 1);
    assert_eq!(p.mdio.registers.len(), 1 + 10 + 24 * 1024);
    let start = p
        .mdio
        .registers
        .iter()
        .find(|r| r.name == "pcs.0xe854")
        .unwrap();
    assert_eq!(
        (start.mmd, start.reg, start.count.writes),
        (Some(3), 0xe854, 2)
    );
    let json = serde_json::to_value(start).unwrap();
    assert_eq!(json["mmd"], 3);
    let text = text::report("qt2025", &r);
    let mdio: Vec<&str> = text.lines().filter(|l| l.contains(" read ")).collect();
    insta::assert_snapshot!(mdio.join("\n"));
}
