//! The kernel's ring-buffer records and what reading them takes, below both the live tracer
//! ([`crate::probe`]) and capture files ([`crate::capture`], whose binary encoding stores the
//! records and decodes them when read): their layout ([`raw`]), the decoder that makes
//! [`Event`](crate::event::Event)s of them ([`decode`]), the kernel's `phy_state` names
//! ([`states`]), the clock they are stamped with ([`clock`]) and the session that produced
//! them ([`session`]). No eBPF loading here: it all runs on any host.

pub mod clock;
pub mod decode;
pub mod raw;
pub mod session;
pub mod states;
