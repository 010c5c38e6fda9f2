//! `phytrace stats` on the real captures: text, JSON, exit codes.

mod common;

use common::{data, phytrace};
use serde_json::Value;

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
    let out = phytrace(&["stats", "--format", "json", &data("rust-dongle.ptrace")]);
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

/// The values the jq path `path` (`.a[0].b[]`: keys, indexes and `[]`) selects in `doc`.
fn select<'a>(doc: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut current = vec![doc];
    let mut rest = path.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[]") {
            current = current
                .into_iter()
                .flat_map(|v| v.as_array().into_iter().flatten())
                .collect();
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (index, after) = after.split_once(']').expect("closing ]");
            let i: usize = index.parse().expect("an index");
            current = current.into_iter().filter_map(|v| v.get(i)).collect();
            rest = after;
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            current = current
                .into_iter()
                .filter_map(|v| v.get(&after[..end]))
                .collect();
            rest = &after[end..];
        } else {
            panic!("not a path: {rest}");
        }
    }
    current
}

#[test]
fn the_help_example_selects_what_it_says() {
    let help = String::from_utf8_lossy(&phytrace(&["stats", "--help"]).stdout).into_owned();
    let filter = help
        .lines()
        .find_map(|l| l.split_once("jq '").map(|(_, f)| f.trim_end_matches('\'')))
        .expect("a jq example");
    let (path, object) = filter.split_once(" | ").expect("path | object");
    assert_eq!(object, "{name, p99: .latency.p99_ns}");
    let out = phytrace(&[
        "stats",
        "--format",
        "json",
        &data("rust-plug-unplug.ptrace"),
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let callbacks = select(&doc, path);
    assert!(!callbacks.is_empty(), "{path} selects nothing");
    for cb in callbacks {
        assert!(cb["name"].is_string(), "{cb}");
        assert!(select(cb, ".latency.p99_ns")[0].is_u64(), "{cb}");
    }
}

#[test]
fn the_mdio_rate_track_has_a_sample_per_stats_window_to_the_trailer() {
    // The capture ends 3.5 s after its last event: the windows count to its end.
    let capture =
        phytrace::capture::Capture::read(data("rust-plug-unplug.ptrace")).expect("capture");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idle-end.ptrace");
    let mut w = phytrace::capture::Writer::create(&path, &capture.header).unwrap();
    for e in &capture.events {
        w.write(e).unwrap();
    }
    let last = capture.events.last().unwrap().ts_ns;
    w.finish(last + 3_500_000_000, 0).unwrap();
    let out = dir.path().join("trace.json");
    let run = phytrace(&[
        "export",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0));
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let stats = &trace["otherData"]["stats"];
    let to_last = (last - capture.origin_ns()).div_ceil(1_000_000_000);
    for (i, phy) in stats["phys"].as_array().unwrap().iter().enumerate() {
        let pid = 2 + i as u64;
        let samples: Vec<u64> = events
            .iter()
            .filter(|e| e["name"] == "mdio/s" && e["pid"] == pid)
            .map(|e| e["args"]["accesses"].as_u64().unwrap())
            .collect();
        let windows = phy["mdio"]["windows"].as_u64().unwrap();
        assert!(
            windows > to_last,
            "{windows} windows, {to_last} to the last event"
        );
        assert_eq!(samples.len() as u64, windows, "{}", phy["key"]);
        assert_eq!(samples.iter().sum::<u64>(), phy["mdio"]["accesses"]);
    }
}
