//! The search for phylib's call sites of driver operations ([`super`]): this boot's kept in
//! the cache, or found in the kernel's code, on the session's behalf or on a thread of its own.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use super::{
    Discovery, Isa, Layout, cache, module_text::ModuleText, text::TextReader,
    text_symbols::TextSymbols,
};
use crate::kernel::{error::ProbeError, module_files, modules, snapshot::Snapshot};

/// The call sites found, with the text symbols that name what they call.
pub type Found = (Discovery, Arc<TextSymbols>);

/// Finds the running kernel's call sites of the ops at `layout` (in `kernel`'s functions and
/// code), or takes them from `cache` (a directory, see [`cache`]) where this boot's were kept;
/// keeps them there. Returns the reader of the kernel's code, `None` if they came from the
/// cache. The sites taken from the cache come without symbols: they are named when a
/// callback is first seen (the session reads kallsyms then).
pub fn find(
    layout: &Layout,
    cache: Option<&Path>,
    kernel: &Snapshot,
) -> Result<(Found, Option<TextReader>)> {
    let (place, lookup) = cache::lookup(cache, layout, |dir, key| cache::load(dir, key, layout));
    if let cache::Lookup::Hit(discovery) = lookup {
        return Ok(((discovery, Arc::default()), None));
    }
    let (mut found, reader) = discover(layout, kernel)?;
    found.0.cache_damage = lookup.damage_note();
    if let Some((dir, key)) = &place {
        // A cache that cannot be written costs the next session the search, nothing else.
        let _ = cache::store(dir, key, &found.0);
    }
    Ok((found, Some(reader)))
}

/// [`find`] in `kernel`, with the reader of the kernel's code: in vmlinux's text and, with
/// phylib a live module, in its code.
fn discover(layout: &Layout, kernel: &Snapshot) -> Result<(Found, TextReader)> {
    let symbols = kernel.functions()?;
    let mut text = kernel.text()?;
    let (isa, probed) = (Isa::native(), kernel.probed());
    let phylib_live = !symbols.module_functions(modules::PHYLIB).is_empty();
    let searched =
        super::discover(&symbols, &mut text, layout, isa, probed).and_then(|mut found| {
            if phylib_live {
                found.absorb(super::discover_module(
                    &symbols,
                    &mut text,
                    layout,
                    isa,
                    probed,
                    modules::PHYLIB,
                )?);
            }
            Ok(found)
        });
    let discovery = searched
        .map_err(|err| ProbeError::unavailable(format!("finding phylib's call sites: {err:#}")))?;
    if discovery.sites.is_empty() && !discovery.rewritten.is_empty() {
        return Err(ProbeError::unavailable(format!(
            "no call site of a phy_driver operation found: kprobes of a running tracer (another \
             phytrace session?) rewrote the code of {} of the {} functions decoded ({}), where \
             the sites are; try again when it stops",
            discovery.rewritten.len(),
            discovery.functions_decoded,
            discovery.rewritten.join(", ")
        ))
        .into());
    }
    if discovery.sites.is_empty() && !phylib_live {
        // phylib a module not loaded yet: its sites are in its file.
        return discover_in_file(layout, &module_files::default_tree())
            .map(|discovery| ((discovery, symbols), TextReader::ModuleFile))
            .map_err(|err| {
                ProbeError::unavailable(format!(
                    "no call site of a phy_driver operation found in {} bytes of kernel text \
                     ({} functions decoded), and phylib is not the live module {}: {err:#}",
                    discovery.text_bytes,
                    discovery.functions_decoded,
                    modules::PHYLIB,
                ))
                .into()
            });
    }
    if discovery.sites.is_empty() {
        return Err(ProbeError::unavailable(format!(
            "no call site of a phy_driver operation found in phylib's code ({} bytes of kernel \
             text and of the live {}, {} functions decoded)",
            discovery.text_bytes,
            modules::PHYLIB,
            discovery.functions_decoded
        ))
        .into());
    }
    Ok(((discovery, symbols), text.reader()))
}

/// The call sites of [`modules::PHYLIB`] not loaded yet, read from its file in the module tree
/// `tree`: the sites it will have once loaded, each a function and an offset in it.
pub fn discover_in_file(layout: &Layout, tree: &Path) -> Result<Discovery> {
    let path = module_files::file_in_tree(tree, modules::PHYLIB).with_context(|| {
        format!(
            "{} lists no module {} (is phylib built in? CONFIG_PHYLIB)",
            tree.join("modules.dep").display(),
            modules::PHYLIB
        )
    })?;
    let data = module_files::contents(&path)?;
    let (symbols, mut text) = ModuleText::parse(&data, modules::PHYLIB)
        .with_context(|| format!("reading {}", path.display()))?;
    let mut discovery = super::discover_module(
        &symbols,
        &mut text,
        layout,
        Isa::native(),
        &[],
        modules::PHYLIB,
    )?;
    if discovery.sites.is_empty() {
        bail!(
            "no call site of a phy_driver operation found in {} ({} functions decoded)",
            path.display(),
            discovery.functions_decoded
        );
    }
    discovery.pending = Some(modules::PHYLIB.to_owned());
    Ok(discovery)
}

/// Call sites being found on another thread (reading the kernel text takes about as long as
/// loading the programs in a slow guest).
pub struct Finding(std::thread::JoinHandle<Result<(Found, Sourcing)>>);

/// How a session had its call sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sourcing {
    /// Finding them (or reading them from the cache) took this long.
    pub took: Duration,
    /// They were this boot's, kept in the cache by an earlier session.
    pub cached: bool,
    /// Otherwise, the reader of the kernel's code they were found in.
    pub reader: Option<TextReader>,
}

impl Finding {
    /// The call sites, and how they were had.
    pub fn join(self) -> Result<(Found, Sourcing)> {
        self.0
            .join()
            .map_err(|_| anyhow::anyhow!("the call-site reader stopped"))?
    }
}

/// Starts [`find`] on another thread, for the ops at `layout`, with the cache in `cache` (an
/// error in it is returned by [`Finding::join`]).
pub fn find_meanwhile(
    layout: Result<Layout>,
    cache: Option<PathBuf>,
    kernel: Arc<Snapshot>,
) -> Result<Finding> {
    std::thread::Builder::new()
        .name("phytrace-sites".into())
        .spawn(move || {
            let started = Instant::now();
            let (found, reader) = find(&layout?, cache.as_deref(), &kernel)?;
            let took = started.elapsed();
            let cached = reader.is_none();
            Ok((
                found,
                Sourcing {
                    took,
                    cached,
                    reader,
                },
            ))
        })
        .map(Finding)
        .context("starting a thread")
}
