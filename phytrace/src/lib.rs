//! phytrace: live eBPF tracing of Linux network-PHY drivers, C or Rust.
//!
//! Data flows one way: [`kernel`] reads what the running kernel is (BTF, symbols, the call
//! sites in its code) without loading anything; [`probe`] loads the eBPF programs and attaches
//! them where [`kernel`] found; a [`session`] runs them and turns kernel records into
//! [`event::Event`]s, which the [`model`] and the sinks (TUI, [`capture`] files, metrics,
//! checker) consume. The records' layout and decoding ([`records`]) sit below both
//! [`session`] and [`capture`], which store and read the same records without importing each
//! other. The model is the one place events get their meaning (nesting, state and link
//! changes); the [`commands`] sit on top, and nothing below them imports from them.

pub mod capture;
pub mod check;
pub mod cli;
pub mod commands;
pub mod diagnose;
pub mod diff;
pub mod event;
pub mod exit;
pub mod export;
pub mod kernel;
pub mod metrics;
pub mod model;
pub mod output;
pub mod probe;
pub mod recording;
pub mod records;
pub mod registers;
pub mod render;
pub mod session;
pub mod stats;
// Fake PHY traffic, not shipped: only phytrace's own tests and benchmarks turn `testkit` on.
#[cfg(any(test, feature = "testkit"))]
pub mod synth;
// Events made by hand for the tests, not shipped either.
#[cfg(any(test, feature = "testkit"))]
pub mod test_events;
pub mod tui;
