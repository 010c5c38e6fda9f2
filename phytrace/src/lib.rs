//! phytrace: live eBPF tracing of Rust network-PHY drivers.
//!
//! Data flows one way: `probe` loads the eBPF programs and turns kernel records into
//! [`event::Event`]s, which the [`model`] and the sinks (TUI, [`capture`] files, checker) consume.

pub mod capture;
pub mod commands;
pub mod event;
pub mod model;
pub mod registers;
pub mod render;
pub mod synth;
