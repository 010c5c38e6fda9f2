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

use crate::probe::tracer::TracerOptions;

/// Which driver modules a live session follows and where their callbacks are read before the
/// modules load (see docs/plug-in.md).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct FollowArgs {
    /// Driver module to follow (repeatable); default: every Rust PHY driver module.
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
}

impl FollowArgs {
    /// The tracer's options for these arguments and a ring of `ring_size` bytes.
    pub fn tracer_options(&self, ring_size: u32) -> TracerOptions {
        TracerOptions {
            ring_size,
            modules: self.modules.clone(),
            module_files: self.module_files.clone(),
            module_tree: self.module_tree.clone(),
        }
    }
}
