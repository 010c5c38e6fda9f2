//! phylink's calls of a MAC driver's operations (`pl->mac_ops->mac_link_up/down`) as call
//! sites ([`super::callsites`], [`Layout::mac`]): every MAC's link handling is traced, not
//! only the ones probed by name. phylink as a module: its sites are found when it is live, from
//! its code (`open_kernel_text`) and its BTF (`struct phylink` is private to it), and armed as
//! kprobes of the kprobe PMU, which go with it when it unloads. phylink built in: at the start,
//! in vmlinux's functions named `phylink_*` (phylink.c's, static ones included) with vmlinux's
//! BTF; a site is still only what the decoding proves.

use std::{fs, os::fd::AsFd as _};

use anyhow::{Context as _, Result, bail};
use aya::Ebpf;
use phytrace_common::{
    CallSite as SiteRecord, MAX_MAC_SITES, SITE_CHECK_HOLDER, SITE_TAIL_CALL, SITE_TARGET_IN_MEMORY,
};

use super::{
    attach::loaded_kprobe,
    btf::KernelBtf,
    call_site_probes,
    callsites::{self, CallSite, Discovery, Isa, Layout, Return, Target, kallsyms::TextSymbols},
    modules,
    site_table::{self, SiteTable},
    symbols::KALLSYMS,
    trace_events::{self, EventLink},
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

/// The module whose calls are traced.
pub const MODULE: &str = "phylink";

/// The programs, by op of [`callsites::MAC_OPS`].
pub const PROGRAMS: [&str; 2] = ["mac_site_link_up", "mac_site_link_down"];

/// The MAC call sites of the live phylink, and how the programs check them.
pub struct Found {
    pub discovery: Discovery,
    /// From the register holding a `struct phylink`'s `mac_ops` to its `config`, which phylink
    /// passes every MAC op first.
    pub config_from_ops: i32,
}

/// Where phylink's code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// The module [`MODULE`], live.
    Module,
    /// vmlinux.
    BuiltIn,
}

/// Where the running kernel's phylink is: built in (`built_in`, as the module tree says), a live
/// module, or not loaded (`None`).
pub fn home(built_in: bool) -> Result<Option<Home>> {
    if built_in {
        return Ok(Some(Home::BuiltIn));
    }
    Ok(modules::read()?
        .contains_key(MODULE)
        .then_some(Home::Module))
}

/// Finds phylink's MAC call sites: `btf` is vmlinux's (with phylink as a module, its own is
/// read on top).
pub fn find(btf: &KernelBtf, home: Home) -> Result<Found> {
    let module_btf;
    let btf = match home {
        Home::Module => {
            module_btf = btf.with_module(MODULE)?;
            &module_btf
        }
        Home::BuiltIn => btf,
    };
    let layout = Layout::mac(btf).context("phylink's BTF")?;
    let config_from_ops = layout
        .first_argument
        .context("phylink's MAC ops are checked through their first argument")?;
    let kallsyms = fs::read_to_string(KALLSYMS).with_context(|| format!("reading {KALLSYMS}"))?;
    let mut kcore = call_site_probes::open_kernel_text()?;
    let probed = call_site_probes::probed_addresses();
    let isa = Isa::native();
    let discovery = match home {
        Home::Module => {
            let symbols = TextSymbols::parse_module(&kallsyms, MODULE);
            callsites::discover_module(&symbols, &mut kcore, &layout, isa, &probed, MODULE)?
        }
        Home::BuiltIn => {
            let symbols = TextSymbols::parse(&kallsyms);
            callsites::discover_named(&symbols, &mut kcore, &layout, isa, &probed, "phylink_")?
        }
    };
    if discovery.sites.is_empty() && !discovery.rewritten.is_empty() {
        bail!(
            "no call through pl->mac_ops->mac_link_up/down found: kprobes of a running tracer \
             (another phytrace session?) rewrote {}, where the calls are",
            discovery.rewritten.join(", ")
        );
    }
    if discovery.sites.is_empty() {
        bail!(
            "no call through pl->mac_ops->mac_link_up/down found in {} bytes of phylink's code",
            discovery.text_bytes
        );
    }
    Ok(Found {
        discovery,
        config_from_ops: i32::try_from(config_from_ops).context("struct phylink's layout")?,
    })
}

/// Why `site` cannot be armed, if it cannot.
pub fn unarmable(site: &CallSite) -> Option<&'static str> {
    site.found.owner.is_none().then_some(
        "the register holding its struct phylink is not proven to hold it at the call, \
         so the call cannot be checked",
    )
}

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
            .map(|(site, err)| (site, site_table::refusal(site, &err)))
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
    let owner = site.found.owner.unwrap_or(callsites::Owner {
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
            found: callsites::Found {
                offset: 0x644,
                op: 0,
                target: Target::Memory(56),
                ret: Return::After(0x648),
                owner: Some(callsites::Owner {
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
            found: callsites::Found {
                owner: None,
                ..site.found
            },
            ..site
        };
        assert!(unarmable(&unproven).is_some());
    }
}
