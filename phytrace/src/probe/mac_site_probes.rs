//! The probes at phylink's calls of a MAC driver's operations
//! ([`crate::kernel::code::mac_sites`]): every MAC's link handling is traced, not only the ones
//! probed by name. The sites are armed as kprobes of the kprobe PMU, which go with phylink when
//! it unloads as a module.

use std::os::fd::AsFd as _;

use anyhow::{Result, bail};
use aya::Ebpf;
use phytrace_common::{
    CallSite as SiteRecord, MAX_MAC_SITES, SITE_CHECK_HOLDER, SITE_TAIL_CALL, SITE_TARGET_IN_MEMORY,
};

use super::{
    attach::loaded_kprobe,
    site_table::{self, SiteTable},
    trace_events::{self, EventLink},
};
use crate::kernel::code::{
    self, CallSite, Return, Target,
    mac_sites::{Found, unarmable},
};

/// How the MAC side's link changes are probed (`--mac-probes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MacChoice {
    /// asix's MAC ops, by name.
    Name,
    /// phylink's calls of `mac_ops->OP` while phylink is live: any MAC driver; asix's by name
    /// for the calls no site reported (before the sites are armed, or where none can be).
    #[default]
    Callsite,
}

/// The calls a MAC call site reported while it was armed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MacSiteCalls {
    /// `function+0xOFFSET`.
    pub site: String,
    pub op: &'static str,
    pub calls: u64,
}

/// The programs, by op of [`code::MAC_OPS`].
pub const PROGRAMS: [&str; 2] = ["mac_site_link_up", "mac_site_link_down"];

/// The MAC call sites armed.
pub struct MacSites {
    table: SiteTable,
    /// The kprobes (the kprobe PMU's: dropped, they are gone).
    links: Vec<EventLink>,
}

impl MacSites {
    /// Fills the programs' site table and arms the checkable sites of `found`; what is not
    /// armed is said in `notes`. An error if none could be.
    pub fn arm(ebpf: &mut Ebpf, found: Found, notes: &mut Vec<String>) -> Result<Self> {
        let mut sites = Vec::new();
        for site in found.discovery.sites {
            match unarmable(&site) {
                Some(why) => notes.push(not_traced(&site, why)),
                None => sites.push(site),
            }
        }
        let mut table = SiteTable::fill(
            site_table::records(ebpf, "MAC_SITES")?,
            sites,
            MAX_MAC_SITES,
            "MAC op",
            notes,
            |site| record(site, found.config_from_ops),
        )?;
        let mut links = Vec::new();
        let refused: Vec<(&CallSite, String)> = table
            .arm(|cookie, site| {
                let program = loaded_kprobe(ebpf, PROGRAMS[usize::from(site.found.op)])?;
                let fd = program.fd()?.try_clone()?;
                let offset = u64::from(site.found.offset);
                let link = trace_events::attach_kprobe(fd.as_fd(), &site.function, offset, cookie)?;
                links.push(link);
                Ok(())
            })
            .into_iter()
            .map(|(site, err)| (site, format!("{err:#}")))
            .collect();
        if links.is_empty() {
            bail!(
                "none of its {} MAC call sites could be armed: {}",
                refused.len(),
                by_reason(&refused)
            );
        }
        notes.extend(refused.iter().map(|(site, why)| not_traced(site, why)));
        Ok(Self { table, links })
    }

    /// The sites armed.
    pub fn sites(&self) -> impl Iterator<Item = &CallSite> {
        self.table.armed()
    }

    /// Detaches every site's probe and says how many calls each reported.
    pub fn disarm(&mut self) -> Result<Vec<MacSiteCalls>> {
        self.links.clear();
        Ok(self
            .table
            .hits()?
            .into_iter()
            .map(|(site, calls)| MacSiteCalls {
                site: site.place(),
                op: site.op(),
                calls,
            })
            .collect())
    }

    /// Says, once per site, which sites the programs disabled since the last call because a
    /// hit failed the check.
    pub fn newly_disabled(&mut self) -> Result<Vec<String>> {
        self.table
            .newly_disabled("MAC call site", |op| format!("its phylink's mac_ops->{op}"))
    }
}

/// The note on a MAC call site not armed, and why.
fn not_traced(site: &CallSite, why: &str) -> String {
    format!("the MAC call site {} is not traced: {why}", site.label())
}

/// `refused` sites said once per reason: `PLACE (OP), …: REASON; …`.
fn by_reason(refused: &[(&CallSite, String)]) -> String {
    let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
    for (site, why) in refused {
        let place = site.label();
        match reasons.iter_mut().find(|(reason, _)| reason == why) {
            Some((_, places)) => places.push(place),
            None => reasons.push((why, vec![place])),
        }
    }
    reasons
        .iter()
        .map(|(why, places)| format!("{}: {why}", places.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The programs' record of `site` (which has an owner); `config_from_ops` as in [`Found`].
fn record(site: &CallSite, config_from_ops: i32) -> SiteRecord {
    let owner = site.found.owner.unwrap_or(code::Owner {
        register: 0,
        displacement: 0,
    });
    let (mut flags, target_reg) = match site.found.target {
        Target::Register(reg) => (SITE_CHECK_HOLDER, reg),
        Target::Memory(base) => (SITE_CHECK_HOLDER | SITE_TARGET_IN_MEMORY, base),
    };
    if site.found.ret == Return::Tail {
        flags |= SITE_TAIL_CALL;
    }
    SiteRecord {
        op: site.found.op,
        flags,
        op_offset: site.op_offset,
        target_reg,
        base_reg: owner.register,
        mismatches: 0,
        holder_displacement: owner.displacement,
        arg0_displacement: owner.displacement.saturating_add(config_from_ops),
        _pad: 0,
        hits: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_checked_through_its_phylink() {
        let site = CallSite {
            function: "phylink_resolve".to_owned(),
            found: code::Found {
                offset: 0x644,
                op: 0,
                target: Target::Memory(56),
                ret: Return::After(0x648),
                owner: Some(code::Owner {
                    register: 8,
                    displacement: -0x128,
                }),
            },
            op_offset: 0x30,
            op_name: "mac_link_up",
        };
        assert_eq!(unarmable(&site), None);
        let record = record(&site, 8);
        assert_eq!(
            (
                record.flags,
                record.target_reg,
                record.base_reg,
                record.holder_displacement,
                record.arg0_displacement
            ),
            (
                SITE_CHECK_HOLDER | SITE_TARGET_IN_MEMORY,
                56,
                8,
                -0x128,
                -0x120
            )
        );
        let unproven = CallSite {
            found: code::Found {
                owner: None,
                ..site.found
            },
            ..site
        };
        assert!(unarmable(&unproven).is_some());
    }
}
