//! What a session reads before its programs are loaded, on another thread: the followed
//! modules' callbacks, from kallsyms for the live ones and from their module files for the
//! others, and what the module tree says of the rest.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result};

use super::{TracerOptions, mac::MAC_PROBES};
use crate::kernel::{
    module_files::{self, ModuleTree},
    modules,
    symbols::{self, CallbackSymbol},
};
use crate::probe::phy_site_probes::CallbackChoice;

/// A followed module's file and the callbacks it defines, or why it could not be read.
pub type ModuleFileRead = Result<(PathBuf, Vec<CallbackSymbol>), String>;

/// What is read before the programs are loaded.
pub struct Prefetched {
    /// Callbacks of the live followed modules, from kallsyms, or with call-site probes from
    /// their files in the module tree where it has them ([`Self::live_from_kallsyms`]).
    pub live_callbacks: Vec<CallbackSymbol>,
    /// The live followed modules.
    pub live: BTreeSet<String>,
    /// Followed modules not loaded: their module file's callbacks, or why there are none.
    pub files: BTreeMap<String, ModuleFileRead>,
    /// Modules of the tree known not to be PHY drivers (no `mdio:` alias).
    pub not_phy_drivers: BTreeSet<String>,
    /// The modules of [`MAC_PROBES`] that are built into the kernel.
    pub built_in: BTreeSet<String>,
}

impl Prefetched {
    /// Reads `/proc/modules`, the module tree, the followed modules' files and kallsyms (if a
    /// followed module is live: with call-site probes, only if one is not in the tree).
    pub fn read(options: &TracerOptions) -> Result<Self> {
        let loaded = modules::read()?;
        let tree = ModuleTree::read(&options.module_tree());
        Self::select(options, &loaded, read_callbacks, &tree, |path: &Path| {
            module_files::read(path)
                .map(|file| (file.path, file.callbacks))
                .map_err(|err| err.to_string())
        })
    }

    /// What to prefetch given the modules `loaded` (name → state), kallsyms' callbacks (read
    /// only if a followed module is live), the module tree and a reader of module files.
    ///
    /// With call-site probes a live module's callbacks only say that it is a Rust driver and
    /// how many it has, and its file in the tree says that too: kallsyms, whose every line the
    /// kernel formats anew (a tenth of a second of a slow guest's start), is then read only for
    /// a live module the tree does not have.
    fn select(
        options: &TracerOptions,
        loaded: &BTreeMap<String, String>,
        kallsyms: impl FnOnce() -> Result<Vec<CallbackSymbol>>,
        tree: &ModuleTree,
        read_file: impl Fn(&Path) -> ModuleFileRead,
    ) -> Result<Self> {
        let loaded: BTreeSet<String> = loaded
            .iter()
            .filter(|(name, state)| *state == "Live" && modules::follows(&options.modules, name))
            .map(|(name, _)| name.clone())
            .collect();
        let mut live_callbacks = Vec::new();
        let mut from_kallsyms = BTreeSet::new();
        for name in &loaded {
            match tree
                .file(name)
                .filter(|_| options.callbacks != CallbackChoice::Symbol)
            {
                Some(path) => match read_file(path) {
                    Ok((_, callbacks)) => live_callbacks.extend(callbacks),
                    Err(_) => _ = from_kallsyms.insert(name),
                },
                None => _ = from_kallsyms.insert(name),
            }
        }
        if !from_kallsyms.is_empty() {
            live_callbacks.extend(
                kallsyms()?
                    .into_iter()
                    .filter(|s| from_kallsyms.contains(&s.module)),
            );
        }
        let mut files = BTreeMap::new();
        for path in &options.module_files {
            let name = module_files::module_name(path).unwrap_or_default();
            files.insert(name, read_file(path));
        }
        let wanted: Vec<String> = if options.modules.is_empty() {
            tree.phy_drivers().to_vec()
        } else {
            options.modules.clone()
        };
        for name in wanted {
            if loaded.contains(&name) || files.contains_key(&name) {
                continue;
            }
            let read = match tree.file(&name) {
                Some(path) => read_file(path),
                None => Err(
                    "not in the module tree (modules.dep); give it with --module-file".to_owned(),
                ),
            };
            // Following every Rust PHY driver: C drivers in the tree are not followed.
            if options.modules.is_empty() && read.as_ref().is_ok_and(|(_, c)| c.is_empty()) {
                continue;
            }
            files.insert(name, read);
        }
        let not_phy_drivers = tree
            .modules()
            .filter(|name| !tree.phy_drivers().contains(name))
            .cloned()
            .collect();
        let built_in = MAC_PROBES
            .iter()
            .map(|(module, ..)| *module)
            .filter(|module| tree.is_built_in(module))
            .map(str::to_owned)
            .collect();
        Ok(Self {
            live_callbacks,
            live: loaded,
            files,
            not_phy_drivers,
            built_in,
        })
    }
}

impl Prefetched {
    /// Reads the live followed modules' callbacks from kallsyms (the symbol probes arm what
    /// the running kernel has, not what a module file says).
    pub fn live_from_kallsyms(&mut self) -> Result<()> {
        if self.live.is_empty() {
            return Ok(());
        }
        self.live_callbacks = read_callbacks()?
            .into_iter()
            .filter(|s| self.live.contains(&s.module))
            .collect();
        Ok(())
    }
}

/// The driver callbacks in kallsyms.
pub fn read_callbacks() -> Result<Vec<CallbackSymbol>> {
    symbols::read_kallsyms(Path::new(symbols::KALLSYMS))
        .with_context(|| format!("reading {}", symbols::KALLSYMS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::testing;

    fn symbol(module: &str, callback: &str) -> CallbackSymbol {
        testing::symbol(module, callback, "a")
    }

    /// A module tree: `ax88796b_rust` (a Rust PHY driver), `ax88796b` (a C one), `asix` (no
    /// PHY driver) and phylink built in.
    fn tree() -> (tempfile::TempDir, ModuleTree) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("modules.dep"),
            "extra/ax88796b_rust.ko:\nkernel/ax88796b.ko:\nkernel/asix.ko:\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("modules.alias"),
            "alias mdio:0000000000111011000110000100???? ax88796b_rust\n\
             alias mdio:0000000000111011000110000100???? ax88796b\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("modules.builtin"), "kernel/phylink.ko\n").unwrap();
        let tree = ModuleTree::read(dir.path());
        (dir, tree)
    }

    /// Reads a module file: the Rust driver's defines `read_status`, the C one's nothing.
    fn read_file(path: &Path) -> ModuleFileRead {
        let name = module_files::module_name(path).unwrap();
        let callbacks = if name.ends_with("_rust") {
            vec![symbol(&name, "read_status")]
        } else {
            Vec::new()
        };
        Ok((path.to_owned(), callbacks))
    }

    fn live(names: &[&str]) -> BTreeMap<String, String> {
        names
            .iter()
            .map(|name| ((*name).to_owned(), "Live".to_owned()))
            .collect()
    }

    /// What `options` prefetch from `tree`, `loaded` live and kallsyms read by `kallsyms`.
    fn prefetch(
        options: &TracerOptions,
        tree: &ModuleTree,
        loaded: &[&str],
        kallsyms: impl FnOnce() -> Result<Vec<CallbackSymbol>>,
    ) -> Prefetched {
        Prefetched::select(options, &live(loaded), kallsyms, tree, read_file).unwrap()
    }

    /// What following every driver prefetches, `loaded` live and kallsyms holding `kallsyms`.
    fn following_every_driver(
        tree: &ModuleTree,
        loaded: &[&str],
        kallsyms: Vec<CallbackSymbol>,
    ) -> Prefetched {
        prefetch(&TracerOptions::default(), tree, loaded, || Ok(kallsyms))
    }

    #[test]
    fn following_every_driver_reads_the_rust_ones_files_and_live_ones_symbols() {
        let (_dir, tree) = tree();
        let kallsyms = vec![symbol("asix", "x"), symbol("phy_sim", "suspend")];
        let prefetched = following_every_driver(&tree, &["phy_sim"], kallsyms);
        assert_eq!(prefetched.live_callbacks, [symbol("phy_sim", "suspend")]);
        // The C driver defines no Rust callbacks: not followed.
        assert_eq!(
            prefetched.files.keys().collect::<Vec<_>>(),
            ["ax88796b_rust"]
        );
        assert_eq!(
            prefetched.not_phy_drivers,
            BTreeSet::from(["asix".to_owned()])
        );
        assert_eq!(prefetched.built_in, BTreeSet::from(["phylink".to_owned()]));
    }

    #[test]
    fn named_modules_are_read_from_the_tree_or_given_files_or_said_missing() {
        let (_dir, tree) = tree();
        let options = TracerOptions {
            modules: vec!["ax88796b".into(), "ax88796b_rust".into(), "gone".into()],
            module_files: vec![PathBuf::from("/elsewhere/ax88796b_rust.ko")],
            ..TracerOptions::default()
        };
        // No followed module is live: kallsyms is not read.
        let kallsyms = || -> Result<Vec<CallbackSymbol>> { panic!("kallsyms read") };
        let prefetched = prefetch(&options, &tree, &["asix"], kallsyms);
        assert!(prefetched.live_callbacks.is_empty());
        let files = &prefetched.files;
        assert_eq!(
            files["ax88796b_rust"].as_ref().unwrap().0,
            Path::new("/elsewhere/ax88796b_rust.ko")
        );
        // Named, a C driver is followed too (after it loads).
        assert!(files["ax88796b"].as_ref().unwrap().1.is_empty());
        assert!(
            files["gone"]
                .as_ref()
                .unwrap_err()
                .contains("--module-file")
        );
    }

    #[test]
    fn a_live_followed_module_is_not_read_from_its_file_for_the_symbol_probes() {
        let (_dir, tree) = tree();
        let options = TracerOptions {
            callbacks: CallbackChoice::Symbol,
            ..TracerOptions::default()
        };
        // kallsyms has two callbacks, the file one: kallsyms is the running module.
        let kallsyms = || {
            Ok(vec![
                symbol("ax88796b_rust", "read_status"),
                symbol("ax88796b_rust", "suspend"),
            ])
        };
        let prefetched = prefetch(&options, &tree, &["ax88796b_rust"], kallsyms);
        assert_eq!(prefetched.live_callbacks.len(), 2);
        assert!(prefetched.files.is_empty());
    }

    #[test]
    fn with_call_sites_a_live_module_in_the_tree_is_read_from_its_file() {
        let (_dir, tree) = tree();
        let kallsyms = || -> Result<Vec<CallbackSymbol>> { panic!("kallsyms read") };
        let options = TracerOptions::default();
        let prefetched = prefetch(&options, &tree, &["ax88796b_rust"], kallsyms);
        assert_eq!(
            prefetched.live_callbacks,
            [symbol("ax88796b_rust", "read_status")]
        );
        assert!(prefetched.files.is_empty());
        // One not in the tree is read from kallsyms, and only it.
        let kallsyms = vec![symbol("phy_sim", "suspend"), symbol("ax88796b_rust", "x")];
        let prefetched = following_every_driver(&tree, &["ax88796b_rust", "phy_sim"], kallsyms);
        assert_eq!(
            prefetched.live_callbacks,
            [
                symbol("ax88796b_rust", "read_status"),
                symbol("phy_sim", "suspend")
            ]
        );
    }
}
