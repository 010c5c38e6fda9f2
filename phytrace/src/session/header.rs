//! A live tracing session described as a capture's header tells it: the clocks read at its
//! start, the probes attached and the kernel's `phy_state` names.

use super::Tracer;
use crate::records::{
    clock::ClockRef,
    session::{CallSiteEntry, MdioSiteEntry, ProbeEntry, Session},
};

impl Tracer {
    /// This session, begun at `clock`: the probes attached, the kernel's states.
    pub fn session(&self, clock: ClockRef) -> Session {
        Session {
            clock,
            probes: self
                .probe_table()
                .into_iter()
                .map(|s| ProbeEntry {
                    module: s.module,
                    driver_type: s.driver_type,
                    callback: s.callback,
                    address: s.address,
                    symbol: s.demangled,
                })
                .collect(),
            phy_states: self.phy_states().to_list(),
            arming: self.arming(),
            mdio_probes: self.mdio_probes(),
            callback_probes: self
                .callback_probes()
                .map(|probes| probes.name().to_owned()),
            call_sites: self.call_sites().map_or_else(Vec::new, |sites| {
                sites
                    .sites()
                    .map(|site| CallSiteEntry {
                        call: site.place(),
                        op: site.op().to_owned(),
                        ret: site.return_place(),
                    })
                    .collect()
            }),
            mdio_sites: self
                .mdio_copies()
                .iter()
                .map(|site| MdioSiteEntry {
                    call: format!("{}+{:#x}", site.function, site.call),
                    ret: format!("{}+{:#x}", site.function, site.ret),
                    accessor: site.accessor_name().to_owned(),
                })
                .collect(),
            kmsg: self.kmsg_header(),
        }
    }
}
