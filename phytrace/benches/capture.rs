//! Capture throughput: events written per second (to memory and to a file) and read back.
//!
//! Goal: ≥ 1 M events/s written and ≥ 2 M events/s read on one core.

use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phytrace::capture::{Reader, Writer};
use phytrace::event::Event;
use phytrace::model::Model;
use phytrace::synth::{self, Synth};

const EVENTS: usize = 100_000;

fn encode(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 300);
    {
        let mut w = Writer::new(&mut out, "bench", &synth::header()).unwrap();
        for e in events {
            w.write(e).unwrap();
        }
        w.finish(0, 0).unwrap();
    }
    out
}

fn capture(c: &mut Criterion) {
    let events: Vec<_> = Synth::with_phys(1, 3).take(EVENTS).collect();
    let bytes = encode(&events);
    let mut group = c.benchmark_group("capture");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(20);

    group.bench_function("write_memory", |b| b.iter(|| black_box(encode(&events))));

    let path = std::env::temp_dir().join(format!("phytrace-bench-{}.jsonl", std::process::id()));
    group.bench_function("write_file", |b| {
        b.iter(|| {
            let mut w = Writer::create(&path, &synth::header()).unwrap();
            for e in &events {
                w.write(e).unwrap();
            }
            w.finish(0, 0).unwrap()
        })
    });

    group.bench_function("read_memory", |b| {
        b.iter(|| {
            let reader = Reader::new(Cursor::new(&bytes), "bench").unwrap();
            reader.filter(Result::is_ok).count()
        })
    });

    std::fs::write(&path, &bytes).unwrap();
    group.bench_function("read_file", |b| {
        b.iter(|| Reader::open(&path).unwrap().filter(Result::is_ok).count())
    });

    group.bench_function("read_and_model", |b| {
        b.iter(|| {
            let mut model = Model::with_history_cap(1024);
            for e in Reader::new(Cursor::new(&bytes), "bench").unwrap().flatten() {
                black_box(model.apply(&e));
            }
            model.totals().events
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
    println!("average record size: {} bytes", bytes.len() / EVENTS);
}

criterion_group!(benches, capture);
criterion_main!(benches);
