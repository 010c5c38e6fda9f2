//! What this machine lets phytrace do: the checks `doctor` runs ([`checks`]) and the survey of
//! what `probes` would probe ([`survey`]). Above [`crate::probe`], below the commands, which
//! only print what these find.

pub mod checks;
pub mod drivers;
pub mod survey;
