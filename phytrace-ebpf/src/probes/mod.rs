//! The probe programs and their maps, one module per family of programs, over the shared
//! modules they report through.
//!
//! Helpers are `#[inline(always)]` where LLVM would keep them out of line: a call to a static
//! subprogram saves no verification (the verifier walks it again at each call) and costs the
//! load a JIT pass and a copy into executable memory. The two slow paths that are calls,
//! [`mdio_device_lookup`](mdio::devices::mdio_device_lookup) and
//! [`send_phy_identity`](identity::send_phy_identity), are global functions: the verifier
//! checks a global function once per program on its own, not once per path of the caller
//! reaching it.

mod callbacks;
mod floor;
mod identity;
mod kernel_read;
mod mac;
mod mdio;
mod modules;
mod selftest;

mod context;
mod kernel;
mod phy;
mod ring;
mod task_storage;
mod thread;
