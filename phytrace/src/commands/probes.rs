//! `phytrace probes`: what phytrace would probe on this kernel, and why something is missing.

use std::fmt::Write as _;
use std::{collections::BTreeMap, fs, path::Path, process::ExitCode};

use anyhow::Result;

use crate::{
    exit::{Failure, FailureKind},
    output,
    probe::{
        btf, call_site_probes,
        callsites::{Layout, MAC_OPS, OPS, cache},
        mac_sites, mdio_probes, symbols,
    },
};

/// Lists phylib's call sites of each driver op (`--callback-probes callsite`), or why they
/// cannot be found.
fn call_sites_section(out: &mut String, kallsyms: &str) -> Result<()> {
    let cache = cache::default_dir();
    let found = btf::KernelBtf::running().and_then(|btf| {
        call_site_probes::find_with(&Layout::from_btf(&btf)?, cache.as_deref(), Some(kallsyms))
    });
    let source = match &found {
        Ok((_, true)) => "this boot's cache, kept by a session that decoded the kernel text",
        _ => "decoded from the kernel text in /proc/kcore",
    };
    writeln!(out, "Call sites of phy_driver operations ({source}):")?;
    let ((discovery, _), _) = match found {
        Ok(found) => found,
        Err(err) => {
            writeln!(out, "  unavailable: {err:#}")?;
            return Ok(());
        }
    };
    writeln!(out, "  {:<44} {:<20} RETURN SEEN AT", "CALL", "OP")?;
    for site in &discovery.sites {
        let ret = site
            .return_place()
            .unwrap_or_else(|| format!("{} returning (a tail call)", site.function));
        writeln!(out, "  {:<44} {:<20} {ret}", site.place(), site.op())?;
    }
    writeln!(
        out,
        "  {} call sites of {} ops, in {} functions that touch a PHY's driver ({} KiB of text searched)",
        discovery.sites.len(),
        OPS.len() - discovery.ops_without_sites(&OPS).len(),
        discovery.functions_decoded,
        discovery.text_bytes / 1024
    )?;
    if !discovery.rewritten.is_empty() {
        writeln!(
            out,
            "  kprobes of another tracer rewrote {}: a call site there may be missing",
            discovery.rewritten.join(", ")
        )?;
    }
    let missing = discovery.ops_without_sites(&OPS);
    if !missing.is_empty() {
        writeln!(
            out,
            "  no call site through phydev->drv for: {} (not traced at call sites on this \
             kernel; `--callback-probes symbol` traces a Rust driver's where the kernel allows)",
            missing.join(", ")
        )?;
    }
    Ok(())
}

/// Lists phylink's call sites of MAC ops (traced unless `--callback-probes symbol`), or why
/// they cannot be found.
fn mac_sites_section(out: &mut String) -> Result<()> {
    writeln!(
        out,
        "Call sites of phylink_mac_ops operations (phylink's code in /proc/kcore):"
    )?;
    let found = btf::KernelBtf::running().and_then(|btf| mac_sites::find(&btf));
    let found = match found {
        Ok(found) => found,
        Err(err) => {
            writeln!(
                out,
                "  unavailable: {err:#} (asix's MAC ops are probed by name)"
            )?;
            return Ok(());
        }
    };
    let discovery = &found.discovery;
    writeln!(out, "  {:<44} {:<20} CHECK", "CALL", "OP")?;
    for site in &discovery.sites {
        let check = match site.found.owner {
            Some(owner) => format!(
                "target == pl->mac_ops->{} (mac_ops at {:+#x} from pt_regs+{})",
                site.op(),
                owner.displacement,
                owner.register
            ),
            None => format!(
                "not traced: {}",
                mac_sites::unarmable(site).unwrap_or_default()
            ),
        };
        writeln!(out, "  {:<44} {:<20} {check}", site.place(), site.op())?;
    }
    writeln!(
        out,
        "  {} call sites of {} ops, in {} functions of phylink ({} KiB of text searched)",
        discovery.sites.len(),
        MAC_OPS.len() - discovery.ops_without_sites(&MAC_OPS).len(),
        discovery.functions_decoded,
        discovery.text_bytes / 1024
    )?;
    Ok(())
}

/// Arguments of `phytrace probes`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  sudo phytrace probes\n  sudo phytrace probes --module ax88796b_rust"
)]
pub struct ProbesArgs {
    /// Only this driver module.
    #[arg(long, value_name = "MODULE")]
    pub module: Option<String>,
}

const MDIO_BUS_DEVICES: &str = "/sys/bus/mdio_bus/devices";

/// A PHY device bound (or not) to a driver, from sysfs.
struct BoundPhy {
    name: String,
    phy_id: String,
    driver: String,
    module: String,
}

fn link_name(path: &Path) -> Option<String> {
    Some(
        fs::read_link(path)
            .ok()?
            .file_name()?
            .to_string_lossy()
            .into_owned(),
    )
}

fn bound_phys() -> Vec<BoundPhy> {
    let Ok(entries) = fs::read_dir(MDIO_BUS_DEVICES) else {
        return Vec::new();
    };
    let mut phys: Vec<BoundPhy> = entries
        .flatten()
        .map(|entry| {
            let dir = entry.path();
            let driver = link_name(&dir.join("driver")).unwrap_or_else(|| "(none)".to_owned());
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

pub fn run(args: &ProbesArgs) -> Result<ExitCode> {
    let kallsyms = fs::read_to_string(symbols::KALLSYMS).map_err(|err| {
        Failure::new(
            FailureKind::TracingUnavailable,
            format!("reading {}: {err}", symbols::KALLSYMS),
        )
    })?;
    let found = symbols::parse_kallsyms(&kallsyms);
    let callbacks: Vec<_> = found
        .iter()
        .filter(|s| args.module.as_ref().is_none_or(|m| &s.module == m))
        .collect();

    let mut out = String::new();
    writeln!(
        out,
        "Driver callbacks (kernel::net::phy::Adapter<T>::*_callback in {}):",
        symbols::KALLSYMS
    )?;
    if callbacks.is_empty() {
        let which = args.module.as_deref().unwrap_or("Rust PHY driver");
        writeln!(
            out,
            "  none: no {which} module is loaded. `modprobe ax88796b_rust` (or insmod your .ko);"
        )?;
        writeln!(
            out,
            "  `phytrace record` and `phytrace tui` wait for it and attach when it loads."
        )?;
    } else {
        writeln!(
            out,
            "  {:<15} {:<30} {:<20} {:<18} SYMBOL",
            "MODULE", "DRIVER TYPE", "CALLBACK", "ADDRESS"
        )?;
        for s in &callbacks {
            writeln!(
                out,
                "  {:<15} {:<30} {:<20} {:<18x} {}",
                s.module, s.driver_type, s.callback, s.address, s.demangled
            )?;
        }
        if callbacks.iter().all(|s| s.address == 0) {
            writeln!(
                out,
                "  (addresses are hidden from this user by kptr_restrict: run as root, or with CAP_SYSLOG, to see them)"
            )?;
        }
        let mut per_type: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &callbacks {
            *per_type.entry(&s.driver_type).or_default() += 1;
        }
        for (driver_type, count) in per_type {
            writeln!(out, "  {driver_type}: {count} callbacks")?;
        }
        writeln!(
            out,
            "  (on kprobes: Rust functions have no ftrace site and Rust modules no BTF)"
        )?;
    }

    writeln!(out)?;
    call_sites_section(&mut out, &kallsyms)?;
    writeln!(out)?;
    mac_sites_section(&mut out)?;

    writeln!(out)?;
    writeln!(out, "MDIO bus accessors:")?;
    let in_kallsyms = |name: &str| {
        kallsyms
            .lines()
            .any(|line| line.split_whitespace().nth(2) == Some(name))
    };
    for accessor in mdio_probes::ACCESSORS.iter().map(|(name, ..)| *name) {
        writeln!(
            out,
            "  {accessor:<22} {}",
            if in_kallsyms(accessor) {
                "present"
            } else {
                "not in this kernel"
            }
        )?;
    }
    writeln!(
        out,
        "  on fentry/fexit (BPF trampolines) where the kernel allows it, else kprobes: \
         `phytrace doctor` says which this kernel takes, `--mdio-probes` chooses"
    )?;

    writeln!(out)?;
    writeln!(out, "PHY devices ({MDIO_BUS_DEVICES}):")?;
    let phys = bound_phys();
    if phys.is_empty() {
        writeln!(
            out,
            "  none: no MDIO bus has a PHY (plug the device, or load the simulator: insmod phy_sim.ko)"
        )?;
    } else {
        writeln!(
            out,
            "  {:<22} {:<11} {:<32} MODULE",
            "PHY", "PHY ID", "DRIVER"
        )?;
        for phy in &phys {
            writeln!(
                out,
                "  {:<22} {:<11} {:<32} {}",
                phy.name, phy.phy_id, phy.driver, phy.module
            )?;
        }
        writeln!(
            out,
            "  (Rust driver types sharing code are told apart by the PHY in each event, not by symbol)"
        )?;
    }

    writeln!(out)?;
    for function in ["__mdiobus_read", "__mdiobus_write"] {
        let present = kallsyms
            .lines()
            .any(|line| line.split_whitespace().nth(2) == Some(function));
        writeln!(
            out,
            "MDIO probe {function}: {}",
            if present {
                "present"
            } else {
                "MISSING (kernel without CONFIG_PHYLIB?)"
            }
        )?;
    }

    writeln!(out)?;
    match btf::KernelBtf::open(Path::new(btf::VMLINUX_BTF))
        .and_then(|b| Ok((b.offsets()?, b.phy_states()?)))
    {
        Ok((offsets, states)) => {
            writeln!(out, "Struct offsets from {}:", btf::VMLINUX_BTF)?;
            writeln!(
                out,
                "  phy_device: mdio.bus +{} mdio.addr +{} phy_id +{} drv +{} state +{} speed +{} duplex +{} link +{}.{}",
                offsets.phy_bus,
                offsets.phy_addr,
                offsets.phy_id,
                offsets.phy_drv,
                offsets.phy_state,
                offsets.phy_speed,
                offsets.phy_duplex,
                offsets.phy_link_byte,
                offsets.phy_link_bit
            )?;
            writeln!(
                out,
                "  phy_driver: name +{}  mii_bus: id +{} mdio_map +{}  mdio_device: flags +{}",
                offsets.drv_name, offsets.bus_id, offsets.bus_mdio_map, offsets.mdio_flags
            )?;
            let names: Vec<String> = states
                .names
                .iter()
                .map(|(v, n)| format!("{v}={n}"))
                .collect();
            writeln!(out, "  enum phy_state: {}", names.join(" "))?;
        }
        Err(err) => writeln!(out, "Struct offsets: unavailable: {err:#}")?,
    }
    output::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
