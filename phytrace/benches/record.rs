//! The consumer side of `phytrace record`: ring-buffer records handed to the capture's sink
//! (decoded and written as JSON Lines, or written as they are to a binary capture, with the
//! metrics served or not), per event.
//! Under software emulation in the VM this path bounds the drop-free rate (P3 in
//! docs/benchmarks.md).

use std::{borrow::Cow, hint::black_box};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phytrace::capture::{Encoding, Writer};
use phytrace::event::Callback;
use phytrace::metrics::{self, LiveHealth, MetricsSink, Tee};
use phytrace::recording::CaptureSink;
use phytrace::records::{decode::Decoder, raw, raw::Record, states::PhyStates};
use phytrace::session::{Received, Sink};
use phytrace::synth;
use phytrace::test_events;
use phytrace_common::{RawEvent, RawKind};

const EVENTS: usize = 100_000;
const READ_STATUS: u64 = 0xffff_ffff_c000_1000;
const PHYDEV: u64 = 0xffff_8880_0000_1000;
const BUS: u64 = 0xffff_8880_0001_0000;

/// The identity record the kernel side sends before the PHY's first event.
fn identity() -> Vec<u8> {
    let phy = test_events::phy("phy_sim-0", 1, 0x003b_1861, "Asix Electronics AX88772A");
    test_events::identity_record(PHYDEV, BUS, &phy)
}

/// A busy PHY: mostly BMSR reads from `read_status`, between its entries and exits.
fn raw_events() -> Vec<Record<'static>> {
    (0..EVENTS)
        .map(|i| {
            let mut raw = RawEvent::ZERO;
            raw.ts_ns = 1_000_000 + i as u64 * 1000;
            raw.tid = 42;
            raw.phydev = PHYDEV;
            raw.bus = BUS;
            raw.addr = 1;
            raw.state_before = 5;
            raw.state_after = 5;
            raw.kind = match i % 10 {
                0 => RawKind::CallbackEnter,
                9 => RawKind::CallbackExit,
                _ => RawKind::MdioRead,
            } as u8;
            raw.key = READ_STATUS;
            raw.regnum = 1;
            raw.value = 0x786d;
            raw.latency_ns = 1200;
            raw.depth = 1;
            raw.link = 1;
            raw.speed = 100;
            raw.duplex = 1;
            Record::Event(Cow::Owned(raw))
        })
        .collect()
}

fn decoder() -> Decoder {
    let states = PhyStates {
        names: [
            "DOWN",
            "READY",
            "HALTED",
            "ERROR",
            "UP",
            "RUNNING",
            "NOLINK",
            "CABLETEST",
        ]
        .iter()
        .enumerate()
        .map(|(v, n)| (v as u32, (*n).into()))
        .collect(),
    };
    let mut decoder = Decoder::new(states);
    decoder.add_callback(
        READ_STATUS,
        Callback {
            name: "read_status".into(),
            driver_type: "ax88796b_rust::PhyAX88772A".into(),
        },
    );
    decoder
}

fn record(c: &mut Criterion) {
    let raw = raw_events();
    let mut decoder = decoder();
    decoder.decode(&raw::parse(&identity()).unwrap());
    let events: Vec<_> = raw.iter().filter_map(|r| decoder.decode(r)).collect();
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(20);
    group.bench_function("decode", |b| {
        b.iter(|| {
            for r in &raw {
                black_box(decoder.decode(r));
            }
        })
    });
    let mut sink = Vec::with_capacity(EVENTS * 200);
    group.bench_function("write", |b| {
        b.iter(|| {
            sink.clear();
            let mut w = Writer::new(&mut sink, "bench", &synth::header()).unwrap();
            for e in &events {
                w.write(e).unwrap();
            }
        })
    });
    // What `record` does per ring-buffer record: parse it, hand it to the capture's sink.
    let ring: Vec<Vec<u8>> = raw.iter().map(Record::to_bytes).collect();
    for encoding in [Encoding::Jsonl, Encoding::Binary] {
        let mut header = synth::header();
        header.encoding = encoding;
        let name = format!("record_{encoding:?}").to_lowercase();
        group.bench_function(name, |b| {
            b.iter(|| {
                sink.clear();
                let mut w = Writer::new(&mut sink, "bench", &header).unwrap();
                let mut capture = CaptureSink::new(&mut w, None);
                for bytes in &ring {
                    let parsed = raw::parse(bytes).unwrap();
                    capture.receive(&Received::new(&mut decoder, bytes, &parsed));
                }
                capture.check().unwrap();
            })
        });
    }
    // The same into a binary capture while the metrics are served (`record --metrics`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let listener = metrics::serve::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut header = synth::header();
    header.encoding = Encoding::Binary;
    let health = LiveHealth {
        ring_size: 1 << 22,
        call_sites_refused: 0,
    };
    let mut metrics = MetricsSink::serve(listener, &header, health, None).unwrap();
    group.bench_function("record_binary_metrics", |b| {
        b.iter(|| {
            sink.clear();
            let mut w = Writer::new(&mut sink, "bench", &header).unwrap();
            let mut capture = CaptureSink::new(&mut w, None);
            let mut tee = Tee(&mut capture, Some(&mut metrics));
            for bytes in &ring {
                let parsed = raw::parse(bytes).unwrap();
                tee.receive(&Received::new(&mut decoder, bytes, &parsed));
            }
            tee.flush();
            capture.check().unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
