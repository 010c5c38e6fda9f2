//! `phytrace stats` on the real captures: text, JSON, exit codes.

use std::process::{Command, Output};

use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn phytrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phytrace"))
        .args(args)
        .output()
        .expect("run phytrace")
}

fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

#[test]
fn text_of_the_plug_unplug_capture() {
    let out = phytrace(&["stats", &data("rust-plug-unplug.ptrace")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("3 significant digits"), "{text}");
    assert!(text.contains("phy_sim-0:01  Asix Electronics AX88772A  PHY ID 003b1861"));
    assert!(text.contains("1 EIO"), "{text}");
    assert!(
        text.contains("link up at 7.836 s, 176.3ms after link down"),
        "{text}"
    );
}

#[test]
fn json_of_every_capture() {
    let files: Vec<String> = ["rust-plug-unplug", "rust-module-reload", "c-plug-unplug"]
        .iter()
        .map(|n| data(&format!("{n}.ptrace")))
        .collect();
    let mut args = vec!["stats", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let out = phytrace(&args);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["schema"], "phytrace-stats/1");
    let captures = doc["captures"].as_array().unwrap();
    assert_eq!(captures.len(), 3);
    for c in captures {
        for phy in c["stats"]["phys"].as_array().unwrap() {
            for cb in phy["callbacks"].as_array().unwrap() {
                let l = &cb["latency"];
                let p = |k: &str| l[k].as_u64().unwrap();
                assert!(
                    p("min_ns") <= p("p50_ns") && p("p99_ns") <= p("max_ns"),
                    "{cb}"
                );
                assert_eq!(cb["calls"], l["count"]);
            }
        }
    }
}

#[test]
fn a_missing_capture_is_bad_input() {
    let out = phytrace(&["stats", "/nonexistent.ptrace"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn perfetto_export_carries_the_stats_and_an_mdio_rate_track() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.json");
    let run = phytrace(&[
        "export",
        &data("rust-plug-unplug.ptrace"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0));
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(trace["otherData"]["stats"]["schema"], "phytrace-stats/1");
    let rates: Vec<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "mdio/s" && e["pid"] == 2)
        .map(|e| e["args"]["accesses"].as_u64().unwrap())
        .collect();
    let total: u64 = rates.iter().sum();
    assert_eq!(
        total,
        trace["otherData"]["stats"]["phys"][0]["mdio"]["accesses"]
    );
}

#[test]
fn json_of_the_dongle_has_its_carrier_and_usb_mdio_latency() {
    let out = phytrace(&["stats", "--format", "json", &data("dongle-rust.ptrace")]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let phy = &doc["captures"][0]["stats"]["phys"][0];
    assert_eq!(phy["key"], "usb-001:002:10");
    let carrier = &phy["carrier"];
    assert_eq!(carrier["netdev"], "eth0");
    for up in carrier["ups"].as_array().unwrap() {
        assert!(
            up["since_link_up_ns"].as_u64().unwrap() < up["since_aneg_start_ns"].as_u64().unwrap()
        );
    }
    let read = &phy["mdio"]["latency"]["read"];
    assert!(read["p50_ns"].as_u64().unwrap() > 1_000_000, "{read}");
    assert!(read["p99_ns"].as_u64().unwrap() <= read["max_ns"].as_u64().unwrap());
}
