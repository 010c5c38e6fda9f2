//! The programs' table of call sites (an array map of [`SiteRecord`], indexed by the cookie of
//! each site's kprobes): written when the sites are armed, read back for the sites a failed
//! check disabled and for their calls. Shared by the PHY-op and the MAC-op call sites, with
//! which of them the kernel let be probed.

use std::os::fd::AsFd as _;

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    maps::{Array, Map, MapData},
};
use phytrace_common::{CallSite as SiteRecord, SITE_DISABLED};

use crate::kernel::code::CallSite;

/// A site map, through a handle of its own.
pub type Records = Array<MapData, SiteRecord>;

/// A handle of its own on `ebpf`'s site map `map` (the object keeps its own): the table is
/// filled and read without the object, which may meanwhile be loading its programs.
pub fn records(ebpf: &Ebpf, map: &str) -> Result<Records> {
    let Some(Map::Array(data)) = ebpf.map(map) else {
        anyhow::bail!("the eBPF object has no array map `{map}`");
    };
    let fd = data
        .fd()
        .as_fd()
        .try_clone_to_owned()
        .with_context(|| format!("{map} map"))?;
    let data = MapData::from_fd(fd).with_context(|| format!("{map} map"))?;
    Ok(Array::try_from(Map::Array(data))?)
}

/// The sites of one table, which of them the kernel refused to probe, and which were said
/// to be disabled.
pub struct SiteTable {
    records: Records,
    sites: Vec<CallSite>,
    refused: Vec<bool>,
    disabled: Vec<bool>,
}

impl SiteTable {
    /// Writes `record` of each of `sites` into `records`, at most `max` of them (the others
    /// are said in `notes`, as `what` call sites).
    pub fn fill(
        mut records: Records,
        mut sites: Vec<CallSite>,
        max: u32,
        what: &str,
        notes: &mut Vec<String>,
        record: impl Fn(&CallSite) -> SiteRecord,
    ) -> Result<Self> {
        if sites.len() > max as usize {
            notes.push(format!(
                "{} {what} call sites found, {max} traced: the others are not",
                sites.len()
            ));
            sites.truncate(max as usize);
        }
        for (index, site) in sites.iter().enumerate() {
            records.set(index as u32, record(site), 0)?;
        }
        Ok(Self {
            records,
            refused: vec![false; sites.len()],
            disabled: vec![false; sites.len()],
            sites,
        })
    }

    /// Probes each site with `arm`, given the cookie of its probes (its index), but for those
    /// the kernel cannot probe ([`CallSite::unprobeable`]). A site not armed
    /// ([`Self::armed`]) is returned, with why.
    pub fn arm(
        &mut self,
        mut arm: impl FnMut(u64, &CallSite) -> Result<()>,
    ) -> Vec<(&CallSite, anyhow::Error)> {
        let mut refused = Vec::new();
        for (index, site) in self.sites.iter().enumerate() {
            let armed = match site.unprobeable() {
                Some(why) => Err(anyhow::anyhow!(why)),
                None => arm(index as u64, site),
            };
            if let Err(err) = armed {
                self.refused[index] = true;
                refused.push((site, err));
            }
        }
        refused
    }

    /// How many sites the kernel refused to probe.
    pub fn refused(&self) -> usize {
        self.refused.iter().filter(|refused| **refused).count()
    }

    /// The sites armed, in table order.
    pub fn armed(&self) -> impl Iterator<Item = &CallSite> {
        self.sites
            .iter()
            .zip(&self.refused)
            .filter_map(|(site, refused)| (!refused).then_some(site))
    }

    /// Each armed site with its checked hits, in table order.
    pub fn hits(&self) -> Result<Vec<(&CallSite, u64)>> {
        self.sites
            .iter()
            .enumerate()
            .filter(|(index, _)| !self.refused[*index])
            .map(|(index, site)| Ok((site, self.records.get(&(index as u32), 0)?.hits)))
            .collect()
    }

    /// Says, once per site, which `what`s the programs disabled since the last call because a
    /// hit failed the check (the called address was not `expected(op)`): their calls are not
    /// traced from then on.
    pub fn newly_disabled(
        &mut self,
        what: &str,
        expected: impl Fn(&str) -> String,
    ) -> Result<Vec<String>> {
        let mut disabled = Vec::new();
        for (index, site) in self.sites.iter().enumerate() {
            if self.disabled[index] {
                continue;
            }
            let record = self.records.get(&(index as u32), 0)?;
            if record.flags & SITE_DISABLED != 0 {
                self.disabled[index] = true;
                disabled.push(format!(
                    "the {what} {} is no longer traced: a call there was not to {} ({} failed checks)",
                    site.label(),
                    expected(site.op()),
                    record.mismatches
                ));
            }
        }
        Ok(disabled)
    }
}
