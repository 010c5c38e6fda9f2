//! One module per subcommand.

pub mod check;
pub mod diff;
pub mod doctor;
pub mod dump;
pub mod export;
pub mod generate;
pub mod probes;
pub mod record;
pub mod stats;
pub mod tui;

use std::path::PathBuf;

use crate::kernel::btf::BtfSource;
use crate::probe::{
    mac_site_probes::MacChoice, mdio_probes::MdioChoice, phy_site_probes::CallbackChoice,
};
use crate::session::{TracerOptions, kmsg::KmsgScope};

/// Which driver modules a live session follows and where their callbacks are read before the
/// modules load (see docs/plug-in.md).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct FollowArgs {
    /// PHY driver module to follow (repeatable): the session says when it loads, takes its
    /// kernel messages and, with `--callback-probes symbol`, arms its Rust callbacks. Callbacks
    /// at phylib's call sites (the default) are traced for every driver, C or Rust, whatever
    /// this says. Default: every Rust PHY driver module of the module tree.
    #[arg(long = "module", value_name = "MODULE")]
    pub modules: Vec<String>,
    /// Module file to read a driver's callbacks from, so that they are armed before it loads
    /// (repeatable); default: the module tree's file of each followed module.
    #[arg(long = "module-file", value_name = "KO")]
    pub module_files: Vec<PathBuf>,
    /// Module tree to find module files in (its modules.dep and modules.alias); default:
    /// /lib/modules/RELEASE of the running kernel.
    #[arg(long, value_name = "DIR")]
    pub module_tree: Option<PathBuf>,
    /// How to probe the MDIO bus accessors: `fentry` (BPF trampolines, the cheapest),
    /// `kprobe`, or `auto` (fentry where the kernel allows it).
    #[arg(long, value_enum, default_value_t = MdioChoice::Auto, value_name = "HOW")]
    pub mdio_probes: MdioChoice,
    /// How to probe driver callbacks: `callsite` (at phylib's calls of each `phy_driver` op:
    /// every driver, C or Rust, on every kernel), `symbol` (on the Rust drivers'
    /// `Adapter<T>::*_callback`), or `auto` (callsite, else symbol where no call site can be
    /// armed).
    #[arg(long, value_enum, default_value_t = CallbackChoice::Auto, value_name = "HOW")]
    pub callback_probes: CallbackChoice,
    /// How to probe the MAC side's link changes: `callsite` (phylink's calls of
    /// `mac_ops->mac_link_up/down`, armed while phylink is live: any MAC driver; asix's
    /// `ax88772_mac_link_up/down` by name for the calls no site reported, each call once) or
    /// `name` (asix's by name only). docs/probes.md.
    #[arg(long, value_enum, default_value_t = MacChoice::Callsite, value_name = "HOW")]
    pub mac_probes: MacChoice,
    /// Calls in flight each callback's return probe has room for (kretprobe maxactive);
    /// calls beyond it return unseen and are counted as `missed_return`. Default: max(64,
    /// 8 × CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096), help_heading = "Tuning")]
    pub max_active: Option<u32>,
    /// Callbacks kept open per thread (1–4); deeper nested ones are counted as `too_deep`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4), help_heading = "Tuning")]
    pub callback_depth: Option<u32>,
    /// Which of the kernel's log lines to take, each in its place among the events:
    /// `related` (about the traced PHYs, their buses, MAC devices and driver modules), `all`,
    /// or `off`.
    #[arg(long, value_enum, default_value_t = KmsgScope::Related, value_name = "WHICH")]
    pub kmsg: KmsgScope,
    #[command(flatten)]
    pub btf: BtfArgs,
}

/// Where the kernel's types come from.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BtfArgs {
    /// BTF file of the running kernel, for a kernel built without BTF (no
    /// /sys/kernel/btf/vmlinux): made from its vmlinux with `pahole --btf_encode_detached=FILE
    /// vmlinux`. PHYs are then read with helper calls and MDIO accesses with kprobes, as
    /// trampolines and typed reads need the kernel's own BTF. docs/kernels.md.
    #[arg(long = "btf", value_name = "FILE", env = "PHYTRACE_BTF")]
    pub file: Option<PathBuf>,
}

impl BtfArgs {
    /// The source of the kernel's types these arguments name.
    pub fn source(&self) -> BtfSource {
        BtfSource::new(self.file.as_deref())
    }
}

impl FollowArgs {
    /// The tracer's options for these arguments and a ring of `ring_size` bytes.
    pub fn tracer_options(&self, ring_size: u32) -> TracerOptions {
        TracerOptions {
            ring_size,
            modules: self.modules.clone(),
            module_files: self.module_files.clone(),
            module_tree: self.module_tree.clone(),
            mdio: self.mdio_probes,
            callbacks: self.callback_probes,
            mac: self.mac_probes,
            max_active: self.max_active,
            callback_depth: self.callback_depth,
            kmsg: self.kmsg,
            btf: self.btf.source(),
        }
    }
}

/// How a command prints its results: `--format text` or `--format json`, the one spelling of
/// machine-readable output across commands (each command's `--help` says its JSON's shape).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people.
    #[default]
    Text,
    /// For scripts and CI.
    Json,
}

/// Smallest ring buffer: a page.
const MIN_RING_SIZE: u64 = 4096;

/// `--ring-size`'s value: bytes, or with a K, M or G suffix (KiB, MiB, GiB: powers of 1024), a
/// power of two from a page (4K) up to what the kernel's map size holds (2G).
pub fn ring_size(text: &str) -> Result<u32, String> {
    let bytes = parse_size::Config::new()
        .with_binary()
        .parse_size(text)
        .map_err(|err| format!("{err}: expected bytes, or a size such as 64K, 16M or 1G"))?;
    let size = u32::try_from(bytes)
        .ok()
        .filter(|size| size.is_power_of_two())
        .ok_or_else(|| format!("{bytes} bytes is not a power of two from 4K to 2G"))?;
    if u64::from(size) < MIN_RING_SIZE {
        return Err(format!("{bytes} bytes is less than a page (4K)"));
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::ring_size;

    #[test]
    fn ring_sizes_take_binary_suffixes() {
        for (text, bytes) in [
            ("16M", 16 << 20),
            ("16MiB", 16 << 20),
            ("16m", 16 << 20),
            ("64K", 64 << 10),
            ("64KiB", 64 << 10),
            ("1G", 1 << 30),
            ("2GiB", 1 << 31),
            ("4096", 4096),
            ("4194304", 4 << 20),
        ] {
            assert_eq!(ring_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn bad_ring_sizes_say_why() {
        for (text, says) in [
            ("16Q", "expected bytes, or a size such as 64K, 16M or 1G"),
            ("", "expected bytes"),
            ("-1M", "expected bytes"),
            ("1000", "1000 bytes is not a power of two"),
            ("3M", "3145728 bytes is not a power of two"),
            ("4G", "4294967296 bytes is not a power of two from 4K to 2G"),
            ("2K", "2048 bytes is less than a page (4K)"),
            ("0", "0 bytes is not a power of two"),
        ] {
            let err = ring_size(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
