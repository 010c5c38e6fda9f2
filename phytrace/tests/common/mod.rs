//! Helpers shared by the tests that read damaged captures.

pub mod binary;
pub mod damage;
