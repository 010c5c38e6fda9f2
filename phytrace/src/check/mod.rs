//! Ordering assertions for CI: a small rule language ([`spec`]), its evaluation over the
//! events of a capture ([`eval`]), and reports as text ([`report`]) or JUnit XML ([`junit`]).
//! The language is described in `docs/check.md`.

pub mod eval;
pub mod facts;
pub mod junit;
mod lexer;
pub mod report;
pub mod spec;

pub use eval::{Outcome, Violation, evaluate};
pub use spec::{Spec, SpecError, parse};

#[cfg(test)]
mod tests;
