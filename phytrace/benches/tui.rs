//! TUI costs: drawing a frame of a model fed 100 000 events, and taking events in.
//!
//! `AYA_BUILD_SKIP=1 cargo bench -p phytrace --bench tui`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use phytrace::event::Event;
use phytrace::synth::{Synth, header};
use phytrace::tui::app::{App, Pane, View};
use phytrace::tui::filter::Filter;
use phytrace::tui::ui::{self, theme::Theme};
use ratatui::{Terminal, backend::TestBackend};

const EVENTS: usize = 100_000;

fn events() -> Vec<Event> {
    Synth::with_phys(1, 3).take(EVENTS).collect()
}

fn fed_app(events: &[Event]) -> App {
    let mut app = App::new(header(), 0, EVENTS, Theme::colored());
    app.ingest(events.iter().cloned(), Duration::ZERO);
    app
}

fn frames(c: &mut Criterion) {
    let events = events();
    let mut app = fed_app(&events);
    let mut group = c.benchmark_group("frame");
    for (w, h) in [(80, 24), (200, 60)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        group.bench_function(format!("{w}x{h}"), |b| {
            b.iter(|| {
                terminal.draw(|f| ui::draw(f, black_box(&app))).unwrap();
            });
        });
    }
    // The stats view: percentiles, histogram, link/state strip and MDIO rate of 100 000 events.
    app.view = View::Stats;
    app.focus = Pane::Latency;
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    group.bench_function("200x60 stats view", |b| {
        b.iter(|| {
            terminal.draw(|f| ui::draw(f, black_box(&app))).unwrap();
        });
    });
    app.view = View::Trace;
    // The worst case: a filter that hides most of the 100 000 held events, timeline scrolled.
    app.filter = Filter::parse("err").unwrap();
    app.focus = Pane::Timeline;
    app.panes
        .timeline
        .select(app.calls.get(app.calls.len() / 2).map(|c| c.seq));
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    group.bench_function("200x60 sparse filter, timeline cursor", |b| {
        b.iter(|| {
            terminal.draw(|f| ui::draw(f, black_box(&app))).unwrap();
        });
    });
    group.finish();
}

fn ingest(c: &mut Criterion) {
    let events = events();
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.bench_function("100k events", |b| {
        b.iter_batched(
            || {
                (
                    App::new(header(), 0, EVENTS, Theme::colored()),
                    events.clone(),
                )
            },
            |(mut app, events)| app.ingest(events, Duration::ZERO),
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

criterion_group!(benches, frames, ingest);
criterion_main!(benches);
