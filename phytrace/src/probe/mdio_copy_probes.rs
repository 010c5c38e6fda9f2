//! The probes at the bus-op calls of the MDIO accessors' inlined copies
//! ([`crate::kernel::code::mdio_inlining`]): the accessors' kprobe programs, the entry one on
//! the call (the op's arguments are the accessor's, in the same registers) and the return one
//! on the instruction the call returns to (the op's return value is the accessor's).

use std::os::fd::AsFd as _;

use anyhow::{Context as _, Result};
use aya::Ebpf;

use super::{
    attach::loaded_kprobe,
    trace_events::{self, EventLink},
};
use crate::kernel::{
    code::mdio_inlining::{OpSite, Survey, describe, functions, unchecked},
    mdio::ACCESSORS,
};

/// The inlined accessors' bus-op calls armed, and their kprobes (dropped, they are gone).
#[derive(Default)]
pub struct ArmedCopies {
    pub sites: Vec<OpSite>,
    _links: Vec<EventLink>,
}

impl ArmedCopies {
    /// Arms the bus-op calls the survey found (`surveyed`) of inlined accessors; what the
    /// user should know goes to `notes`, including that the kernel's text could not be read
    /// (the copies, if any, are then missed). Nothing is armed where the text holds no such
    /// call.
    pub fn arm(
        ebpf: &mut Ebpf,
        surveyed: Result<(Survey, Option<String>)>,
        notes: &mut Vec<String>,
    ) -> Self {
        let (inlined, sites) = match surveyed {
            Ok((survey, cache_damage)) => {
                notes.extend(cache_damage);
                survey
            }
            Err(err) => {
                notes.push(unchecked(&err));
                return Self::default();
            }
        };
        if sites.is_empty() {
            notes.extend(describe(&inlined));
            return Self::default();
        }
        match arm_sites(ebpf, &sites) {
            Ok(links) => {
                notes.push(format!(
                    "this kernel's compiler inlined MDIO accessors into {}: their {} bus-op \
                     calls are probed there with kprobes",
                    functions(&sites),
                    sites.len()
                ));
                Self {
                    sites,
                    _links: links,
                }
            }
            Err(err) => {
                notes.extend(describe(&inlined));
                notes.push(format!(
                    "the inlined accessors' bus-op calls could not be probed: {err:#}"
                ));
                Self::default()
            }
        }
    }
}

/// Arms the accessors' kprobe programs at `sites` (each return before its entry: a return
/// without its entry finds no access begun and reports nothing); the links live as long as
/// the returned vector.
fn arm_sites(ebpf: &mut Ebpf, sites: &[OpSite]) -> Result<Vec<EventLink>> {
    let mut links = Vec::new();
    for site in sites {
        let (_, stem, _) = ACCESSORS[site.accessor];
        for (end, offset) in [("exit", site.ret), ("enter", site.call)] {
            let program = format!("{stem}_{end}_kprobe");
            let fd = loaded_kprobe(ebpf, &program)?.fd()?.try_clone()?;
            let link =
                trace_events::attach_kprobe(fd.as_fd(), &site.function, u64::from(offset), 0)
                    .with_context(|| {
                        format!("attaching `{program}` at {}+{offset:#x}", site.function)
                    })?;
            links.push(link);
        }
    }
    Ok(links)
}
