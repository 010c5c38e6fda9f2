//! Driver callbacks read from module files (`.ko`) before the module is loaded.
//!
//! The kernel's module tree says where each module's file is (`modules.dep`) and which modules
//! drive PHYs (`mdio:` aliases in `modules.alias`); a module file's symbol table holds the
//! mangled names of its callbacks, which change with every build and so cannot be known any
//! other way before the module is loaded.

use std::{
    collections::BTreeMap,
    fs, io,
    path::{Path, PathBuf},
};

use object::{Object as _, ObjectSymbol as _};
use thiserror::Error;

use super::symbols::{self, CallbackSymbol};

/// The running kernel's module tree.
pub fn default_tree() -> PathBuf {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Path::new("/lib/modules").join(release.trim())
}

/// Why a module file could not be read.
#[derive(Debug, Error)]
pub enum ModuleFileError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{path} cannot be decompressed: {reason}")]
    Compressed { path: PathBuf, reason: String },
    #[error("{path} is not a kernel module: {reason}")]
    NotElf { path: PathBuf, reason: String },
}

/// A module file and the driver callbacks it defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFile {
    /// The module's name (file name without `.ko`, `-` read as `_`, as the kernel does).
    pub name: String,
    pub path: PathBuf,
    /// Its callbacks, addresses 0 (a file has none).
    pub callbacks: Vec<CallbackSymbol>,
}

/// The name the kernel gives the module in `path`.
pub fn module_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let stem = file.split(".ko").next().filter(|_| file.contains(".ko"))?;
    Some(stem.replace('-', "_"))
}

/// The file of module `module` in the module tree `tree`, as its `modules.dep` lists it.
pub fn file_in_tree(tree: &Path, module: &str) -> Option<PathBuf> {
    let deps = fs::read_to_string(tree.join("modules.dep")).ok()?;
    parse_modules_dep(&deps, tree).remove(module)
}

/// Module name → file, from `modules.dep` text (paths relative to `tree`).
pub fn parse_modules_dep(text: &str, tree: &Path) -> BTreeMap<String, PathBuf> {
    text.lines()
        .filter_map(|line| {
            let (file, _) = line.split_once(':')?;
            let path = tree.join(file.trim());
            Some((module_name(&path)?, path))
        })
        .collect()
}

/// Names of the modules `modules.alias` text lists with an `mdio:` alias (PHY drivers).
fn phy_driver_modules(alias_text: &str) -> Vec<String> {
    let mut names: Vec<String> = alias_text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next()? == "alias" && fields.next()?.starts_with("mdio:"))
                .then(|| fields.next().map(str::to_owned))?
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Reads the callbacks from the module file at `path`.
pub fn read(path: &Path) -> Result<ModuleFile, ModuleFileError> {
    let name = module_name(path).ok_or_else(|| ModuleFileError::NotElf {
        path: path.to_owned(),
        reason: "its name does not end in .ko".to_owned(),
    })?;
    let data = contents(path)?;
    let callbacks = callbacks_in(&data, &name).map_err(|reason| ModuleFileError::NotElf {
        path: path.to_owned(),
        reason,
    })?;
    Ok(ModuleFile {
        name,
        path: path.to_owned(),
        callbacks,
    })
}

/// The ELF object in the module file at `path`, decompressed if its name ends in `.xz` or
/// `.zst`, as distributions ship modules.
pub fn contents(path: &Path) -> Result<Vec<u8>, ModuleFileError> {
    let read_error = |source| ModuleFileError::Read {
        path: path.to_owned(),
        source,
    };
    let data = fs::read(path).map_err(read_error)?;
    let decompressed = match path.extension().and_then(|ext| ext.to_str()) {
        Some("xz") => {
            let mut out = Vec::new();
            lzma_rs::xz_decompress(&mut data.as_slice(), &mut out)
                .map(|()| out)
                .map_err(|err| err.to_string())
        }
        Some("zst") => {
            let mut out = Vec::new();
            ruzstd::decoding::StreamingDecoder::new(data.as_slice())
                .map_err(|err| err.to_string())
                .and_then(|mut decoder| {
                    io::Read::read_to_end(&mut decoder, &mut out).map_err(|err| err.to_string())
                })
                .map(|_| out)
        }
        _ => return Ok(data),
    };
    decompressed.map_err(|reason| ModuleFileError::Compressed {
        path: path.to_owned(),
        reason,
    })
}

/// The driver callbacks defined (not merely referenced) in the ELF object `data` of module
/// `module`.
fn callbacks_in(data: &[u8], module: &str) -> Result<Vec<CallbackSymbol>, String> {
    let file = object::File::parse(data).map_err(|err| err.to_string())?;
    let mut found: Vec<CallbackSymbol> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition())
        .filter_map(|s| symbols::callback_symbol(s.name().ok()?, module, 0))
        .collect();
    found.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    found.dedup_by(|a, b| a.symbol == b.symbol);
    Ok(found)
}

/// The module files of a module tree.
pub struct ModuleTree {
    files: BTreeMap<String, PathBuf>,
    phy_drivers: Vec<String>,
    built_in: Vec<String>,
}

impl ModuleTree {
    /// Reads `modules.dep` and `modules.alias` of `tree`; an empty tree if they are missing.
    pub fn read(tree: &Path) -> Self {
        let files = fs::read_to_string(tree.join("modules.dep"))
            .map(|text| parse_modules_dep(&text, tree))
            .unwrap_or_default();
        let phy_drivers = fs::read_to_string(tree.join("modules.alias"))
            .map(|text| phy_driver_modules(&text))
            .unwrap_or_default();
        let built_in = fs::read_to_string(tree.join("modules.builtin"))
            .map(|text| {
                text.lines()
                    .filter_map(|line| module_name(Path::new(line)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            files,
            phy_drivers,
            built_in,
        }
    }

    /// Whether module `name` is built into the kernel (its symbols are vmlinux's).
    pub fn is_built_in(&self, name: &str) -> bool {
        self.built_in.iter().any(|m| m == name)
    }

    /// The file of module `name`.
    pub fn file(&self, name: &str) -> Option<&Path> {
        self.files.get(name).map(PathBuf::as_path)
    }

    /// Every module of the tree.
    pub fn modules(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    /// The modules with an `mdio:` alias: the PHY drivers, Rust or not.
    pub fn phy_drivers(&self) -> &[String] {
        &self.phy_drivers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_the_kernel() {
        assert_eq!(
            module_name(Path::new("/x/extra/ax88796b_rust.ko")).as_deref(),
            Some("ax88796b_rust")
        );
        assert_eq!(
            module_name(Path::new("kernel/drivers/net/usb/usb-net.ko.zst")).as_deref(),
            Some("usb_net")
        );
        assert_eq!(module_name(Path::new("README")), None);
    }

    #[test]
    fn modules_dep_maps_names_to_files() {
        let text = "kernel/drivers/net/phy/ax88796b.ko:\n\
                    extra/ax88796b_rust.ko:\n\
                    kernel/drivers/net/usb/asix.ko: kernel/drivers/net/usb/usbnet.ko kernel/drivers/net/phy/phylink.ko\n";
        let files = parse_modules_dep(text, Path::new("/lib/modules/6.12"));
        assert_eq!(
            files["ax88796b_rust"],
            Path::new("/lib/modules/6.12/extra/ax88796b_rust.ko")
        );
        assert_eq!(files.len(), 3);
    }

    #[test]
    fn phy_drivers_are_the_modules_with_mdio_aliases() {
        let text = "# Aliases extracted from modules themselves.\n\
                    alias mdio:0000000000111011000110000100???? ax88796b_rust\n\
                    alias mdio:0000000000111011000110000110???? ax88796b_rust\n\
                    alias mdio:0000000000111011000110000100???? ax88796b\n\
                    alias usb:v0B95p772Ad*dc*dsc*dp*ic*isc*ip*in* asix\n";
        assert_eq!(phy_driver_modules(text), ["ax88796b", "ax88796b_rust"]);
    }

    #[test]
    fn compressed_files_are_read_as_distributions_ship_them() {
        let dir = tempfile::tempdir().unwrap();
        let elf = b"\x7fELF and the rest of a module".repeat(100);
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut elf.as_slice(), &mut xz).unwrap();
        let zst = ruzstd::encoding::compress_to_vec(
            elf.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        for (name, bytes) in [("m.ko", &elf), ("m.ko.xz", &xz), ("m.ko.zst", &zst)] {
            let path = dir.path().join(name);
            fs::write(&path, bytes).unwrap();
            assert_eq!(&contents(&path).unwrap(), &elf, "{name}");
            fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            if name != "m.ko" {
                let err = contents(&path).unwrap_err();
                assert!(
                    matches!(err, ModuleFileError::Compressed { .. }),
                    "{name}: {err}"
                );
            }
        }
    }

    #[test]
    fn a_file_that_is_not_elf_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.ko");
        fs::write(&path, b"not an ELF file").unwrap();
        let err = read(&path).unwrap_err();
        assert!(matches!(err, ModuleFileError::NotElf { .. }), "{err}");
    }
}
