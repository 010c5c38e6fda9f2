//! `phytrace probes`' survey: what phytrace would probe on this kernel (the Rust drivers'
//! callbacks, phylib's and phylink's call sites, the MDIO accessors, the PHYs on MDIO buses,
//! the struct layouts), each part with why it is missing where it is.

use std::{fs, path::Path};

use anyhow::{Context as _, Result};
use phytrace_common::KernelOffsets;

use crate::kernel::{
    btf,
    code::{Discovery, Layout, cache, mac_sites, phy_sites},
    mdio::ACCESSORS,
    module_files::{self, ModuleTree},
    snapshot::Snapshot,
    symbols,
    symbols::CallbackSymbol,
};
use crate::records::states::PhyStates;

/// Where sysfs lists the devices on MDIO buses.
pub const MDIO_BUS_DEVICES: &str = "/sys/bus/mdio_bus/devices";

/// What phytrace would probe on this kernel.
pub struct Survey {
    /// The Rust drivers' callbacks in kallsyms.
    pub callbacks: Vec<CallbackSymbol>,
    /// phylib's call sites of the driver ops and whether they came from this boot's cache
    /// (kept by a session that decoded the kernel text), or why they cannot be found.
    pub call_sites: Result<(Discovery, bool)>,
    /// phylink's call sites of the MAC ops, or why they cannot be found.
    pub mac_sites: Result<mac_sites::Found>,
    /// The MDIO accessors, in [`ACCESSORS`]' order.
    pub accessors: Vec<Accessor>,
    /// The PHY devices on MDIO buses, by name.
    pub phys: Vec<BoundPhy>,
    /// The struct offsets and `enum phy_state` in the kernel's BTF, or why they cannot be read.
    pub offsets: Result<(KernelOffsets, PhyStates)>,
    /// Where the kernel's types were read from.
    pub btf: String,
}

/// An MDIO accessor and whether this kernel has it.
pub struct Accessor {
    pub name: &'static str,
    /// Whether tracing cannot do without it.
    pub required: bool,
    pub present: bool,
}

/// A PHY device bound (or not) to a driver, from sysfs.
pub struct BoundPhy {
    pub name: String,
    pub phy_id: String,
    pub driver: String,
    pub module: String,
}

impl Survey {
    /// Surveys this kernel (`kernel`, whose kallsyms were read), given where its types come
    /// from; `module`: only that driver module's callbacks.
    pub fn take(kernel: &Snapshot, source: &btf::BtfSource, module: Option<&str>) -> Self {
        let kallsyms = kernel.kallsyms().unwrap_or_default();
        let callbacks = symbols::parse_kallsyms(kallsyms)
            .into_iter()
            .filter(|s| module.is_none_or(|m| s.module == m))
            .collect();
        let cache = cache::default_dir().ok();
        let btf = source.load();
        let btf = || btf.as_ref().map_err(|err| anyhow::anyhow!("{err:#}"));
        let call_sites = btf()
            .and_then(|btf| {
                let layout = Layout::from_btf(btf)?;
                phy_sites::find(&layout, cache.as_deref(), kernel)
            })
            .map(|((discovery, _), reader)| (discovery, reader.is_none()));
        let built_in =
            ModuleTree::read(&module_files::default_tree()).is_built_in(mac_sites::MODULE);
        let mac_sites = btf().and_then(|btf| {
            let home = mac_sites::home(built_in)?
                .context("phylink is not loaded: its MAC call sites are found when it loads")?;
            mac_sites::find(btf, home, kernel)
        });
        let accessors = ACCESSORS
            .iter()
            .map(|&(name, _, required)| Accessor {
                name,
                required,
                present: in_kallsyms(kallsyms, name),
            })
            .collect();
        let offsets = btf().and_then(|b| Ok((b.offsets()?, b.phy_states()?)));
        Self {
            callbacks,
            call_sites,
            mac_sites,
            accessors,
            phys: bound_phys(),
            offsets,
            btf: source.describe(),
        }
    }
}

/// Whether kallsyms text `kallsyms` names the function `name`.
fn in_kallsyms(kallsyms: &str, name: &str) -> bool {
    crate::kernel::kallsyms::lines(kallsyms).any(|line| line.name == name)
}

/// The name of the file a symbolic link at `path` points to.
fn link_name(path: &Path) -> Option<String> {
    Some(
        fs::read_link(path)
            .ok()?
            .file_name()?
            .to_string_lossy()
            .into_owned(),
    )
}

/// What [`BoundPhy::driver`] says of a PHY no driver is bound to.
pub const UNBOUND: &str = "(none)";

/// The PHY devices in [`MDIO_BUS_DEVICES`], by name.
pub fn bound_phys() -> Vec<BoundPhy> {
    let Ok(entries) = fs::read_dir(MDIO_BUS_DEVICES) else {
        return Vec::new();
    };
    let mut phys: Vec<BoundPhy> = entries
        .flatten()
        .map(|entry| {
            let dir = entry.path();
            let driver = link_name(&dir.join("driver")).unwrap_or_else(|| UNBOUND.to_owned());
            BoundPhy {
                name: entry.file_name().to_string_lossy().into_owned(),
                phy_id: fs::read_to_string(dir.join("phy_id"))
                    .map_or_else(|_| "-".to_owned(), |s| s.trim().to_owned()),
                module: link_name(&dir.join("driver/module"))
                    .unwrap_or_else(|| "built-in".to_owned()),
                driver,
            }
        })
        .collect();
    phys.sort_by(|a, b| a.name.cmp(&b.name));
    phys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_names_a_function_in_its_third_field_only() {
        let text = "ffffffff81123c10 T __mdiobus_read\n\
                    ffffffff81123d10 t helper\t[__mdiobus_write]\n";
        assert!(in_kallsyms(text, "__mdiobus_read"));
        assert!(!in_kallsyms(text, "__mdiobus_write"));
        assert!(!in_kallsyms(text, "__mdiobus"));
    }
}
