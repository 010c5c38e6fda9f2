//! The search for phylink's calls of a MAC driver's operations (`pl->mac_ops->mac_link_up/down`)
//! as call sites ([`super`], [`Layout::mac`]). phylink as a module: found when it is live, in
//! its code and with its BTF (`struct phylink` is private to it). phylink built in: in vmlinux's
//! functions named `phylink_*` (phylink.c's, static ones included) with vmlinux's BTF. A site is
//! only what the decoding proves.

use anyhow::{Context as _, Result, bail};

use super::{CallSite, Discovery, Isa, Layout, text_symbols::TextSymbols};
use crate::kernel::{btf::KernelBtf, modules, snapshot::Snapshot};

/// The module whose calls are traced.
pub const MODULE: &str = "phylink";

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
/// read on top), in `kernel`.
pub fn find(btf: &KernelBtf, home: Home, kernel: &Snapshot) -> Result<Found> {
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
    let mut text = kernel.text()?;
    let (probed, isa) = (kernel.probed(), Isa::native());
    let discovery = match home {
        Home::Module => {
            let symbols = TextSymbols::parse_module(kernel.kallsyms()?, MODULE);
            super::discover_module(&symbols, &mut text, &layout, isa, probed, MODULE)?
        }
        Home::BuiltIn => {
            let symbols = kernel.functions()?;
            super::discover_named(&symbols, &mut text, &layout, isa, probed, "phylink_")?
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
