//! Ordering assertions for CI: a small rule language ([`spec`]), its evaluation over the facts
//! the model establishes from the events of a capture ([`observed`], [`eval`]) into typed
//! reasons ([`reason`]), and reports as text ([`report`]), JUnit XML ([`junit`]) or KTAP
//! ([`ktap`]).
//! The language is described in `docs/check.md`.

pub mod eval;
pub mod junit;
pub mod ktap;
mod lexer;
pub mod observed;
pub mod reason;
pub mod report;
pub mod spec;

pub use eval::{Outcome, Violation, evaluate};
pub use reason::Reason;
pub use spec::{Spec, SpecError, parse};

#[cfg(test)]
mod tests;
