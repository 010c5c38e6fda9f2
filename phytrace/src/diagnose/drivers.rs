//! Which ops a PHY driver sets and where phylib's call sites trace them: `doctor`'s view of
//! the drivers of the PHYs present and of the module it is asked about, C or Rust.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::kernel::{
    code::Discovery,
    driver_tables::{self, DriverLayout, DriverTable},
    module_files::{self, ModuleTree},
};

/// One op a driver sets, and the call sites that trace it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TracedOp {
    pub op: &'static str,
    /// The function the op points to.
    pub function: String,
    /// phylib's call sites of the op (`function+0xOFF`), none where it is not traced.
    pub sites: Vec<String>,
}

/// A `struct phy_driver` and how its ops are traced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DriverOps {
    /// Its name, as sysfs shows it.
    pub name: String,
    pub phy_id: u32,
    pub phy_id_mask: u32,
    pub ops: Vec<TracedOp>,
}

impl DriverOps {
    /// `table`'s ops with the sites of `discovery` (none known: no call sites).
    pub fn new(table: DriverTable, discovery: Option<&Discovery>) -> Self {
        let ops = table
            .ops
            .into_iter()
            .map(|(op, function)| TracedOp {
                op,
                function,
                sites: discovery
                    .map(|found| {
                        found
                            .sites
                            .iter()
                            .filter(|site| site.op() == op)
                            .map(|site| site.place())
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        Self {
            name: table.name,
            phy_id: table.phy_id,
            phy_id_mask: table.phy_id_mask,
            ops,
        }
    }

    /// The ops it sets that no call site traces.
    pub fn untraced(&self) -> Vec<&'static str> {
        self.ops
            .iter()
            .filter(|op| op.sites.is_empty())
            .map(|op| op.op)
            .collect()
    }

    /// One line per op: `  read_status  asix_ax88772a_read_status  at phy_check_link_status+0x34`.
    pub fn lines(&self) -> Vec<String> {
        self.ops
            .iter()
            .map(|op| {
                let where_ = if op.sites.is_empty() {
                    "not traced: no call site on this kernel".to_owned()
                } else {
                    format!("at {}", op.sites.join(", "))
                };
                format!("  {:<20} {}  {where_}", op.op, op.function)
            })
            .collect()
    }
}

/// The file of module `module`, from `tree` (its `modules.dep`).
pub fn module_file<'a>(module: &str, tree: &'a ModuleTree, tree_dir: &Path) -> Result<&'a Path> {
    if tree.is_built_in(module) {
        bail!(
            "{module} is built into the kernel: its driver tables are read from module files \
             only (its calls are traced all the same)"
        );
    }
    tree.file(module).with_context(|| {
        format!(
            "{module} is not in the module tree {} (modules.dep): is the name right? \
             (`modinfo -n {module}` shows its file; --module-tree names another tree)",
            tree_dir.display()
        )
    })
}

/// The `struct phy_driver` tables of the module file at `path`.
pub fn tables(path: &Path, layout: &DriverLayout) -> Result<Vec<DriverTable>> {
    let data = module_files::contents(path)?;
    driver_tables::read(&data, layout)
        .map_err(|reason| anyhow::anyhow!("{} is not a kernel module: {reason}", path.display()))
}
