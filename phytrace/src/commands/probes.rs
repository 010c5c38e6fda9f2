//! `phytrace probes`: what phytrace would probe on this kernel, and why something is missing.
//! Prints the [`Survey`] section by section, or as one JSON document ([`json`]).

use std::fmt::Write as _;
use std::{collections::BTreeMap, process::ExitCode};

use anyhow::Result;

use super::{BtfArgs, Format};
use crate::{
    diagnose::survey::{MDIO_BUS_DEVICES, Survey},
    exit::{self, Failure, FailureKind, Status},
    kernel::{
        code::{Discovery, MAC_OPS, OPS, mac_sites},
        snapshot::Snapshot,
        symbols,
    },
    output,
    probe::bpf_memory::BpfMemory,
};

mod json;

/// Lists phylib's call sites of each driver op (`--callback-probes callsite`), or why they
/// cannot be found.
fn call_sites_section(out: &mut String, found: &Result<(Discovery, bool)>) -> Result<()> {
    let source = match found {
        Ok((_, true)) => "this boot's cache, kept by a session that decoded them".to_owned(),
        Ok((
            Discovery {
                pending: Some(module),
                ..
            },
            false,
        )) => format!(
            "decoded from the file of {module}, not loaded yet: a session arms them as it loads"
        ),
        _ => "decoded from the kernel's code (/proc/kcore, or through BPF without CAP_SYS_RAWIO)"
            .to_owned(),
    };
    writeln!(out, "Call sites of phy_driver operations ({source}):")?;
    let discovery = match found {
        Ok((found, _)) => found,
        Err(err) => {
            writeln!(out, "  unavailable: {err:#}")?;
            return Ok(());
        }
    };
    writeln!(out, "  {:<44} {:<20} RETURN SEEN AT", "CALL", "OP")?;
    for site in &discovery.sites {
        let ret = match (site.unprobeable(), site.return_place()) {
            (Some(why), _) => format!("not traced: {why}"),
            (None, Some(ret)) => ret,
            (None, None) => format!("{} returning (a tail call)", site.function),
        };
        writeln!(out, "  {:<44} {:<20} {ret}", site.place(), site.op())?;
    }
    write_totals(out, discovery, &OPS, "that touch a PHY's driver")?;
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

/// Lists phylink's call sites of MAC ops (traced unless `--mac-probes name`), or why they
/// cannot be found.
fn mac_sites_section(out: &mut String, found: &Result<mac_sites::Found>) -> Result<()> {
    writeln!(
        out,
        "Call sites of phylink_mac_ops operations (decoded from phylink's code):"
    )?;
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
        let check = match (site.unprobeable(), site.found.owner) {
            (Some(why), _) => format!("not traced: {why}"),
            (None, Some(owner)) => format!(
                "target == pl->mac_ops->{} (mac_ops at {:+#x} from pt_regs+{})",
                site.op(),
                owner.displacement,
                owner.register
            ),
            (None, None) => format!(
                "not traced: {}",
                mac_sites::unarmable(site).unwrap_or_default()
            ),
        };
        writeln!(out, "  {:<44} {:<20} {check}", site.place(), site.op())?;
    }
    write_totals(out, discovery, &MAC_OPS, "of phylink")?;
    Ok(())
}

/// The line under a list of call sites: how many, of how many of `ops`, in how many functions
/// (`functions` says which), in how much text.
fn write_totals(
    out: &mut String,
    discovery: &Discovery,
    ops: &[&'static str],
    functions: &str,
) -> std::fmt::Result {
    writeln!(
        out,
        "  {} call sites of {} ops, in {} functions {functions} ({} KiB of text searched)",
        discovery.sites.len(),
        ops.len() - discovery.ops_without_sites(ops).len(),
        discovery.functions_decoded,
        discovery.text_bytes / 1024
    )
}

/// `probes --help`'s examples.
const EXAMPLES: &str = "Examples:
  sudo phytrace probes
  sudo phytrace probes --module ax88796b_rust
  sudo phytrace probes --format json | jq '.call_sites.sites[] | {op, call}'";

/// Arguments of `phytrace probes`.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::after_help(EXAMPLES, &[
    Status::Success,
    Status::TracingUnavailable,
    Status::Output,
    Status::Other,
]))]
pub struct ProbesArgs {
    /// Only this driver module.
    #[arg(long, value_name = "MODULE")]
    pub module: Option<String>,
    /// Output format: sections for people, or one JSON document (schema `phytrace-probes/1`:
    /// `callbacks`, `call_sites`, `mac_sites`, `mdio_accessors`, `phys`, `offsets`; a part
    /// that cannot be read is `{"unavailable": "why"}`).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub btf: BtfArgs,
}

/// Runs `phytrace probes`.
pub fn run(args: &ProbesArgs) -> Result<ExitCode> {
    let kernel = Snapshot::new(BpfMemory::reader);
    kernel
        .kallsyms()
        .map_err(|err| Failure::new(FailureKind::TracingUnavailable, format!("{err:#}")))?;
    let survey = Survey::take(&kernel, &args.btf.source(), args.module.as_deref());
    let out = match args.format {
        Format::Text => text(&survey, args.module.as_deref())?,
        Format::Json => {
            let mut document = serde_json::to_string_pretty(&json::Probes::of(&survey))?;
            document.push('\n');
            document
        }
    };
    output::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The survey as text, section by section.
fn text(survey: &Survey, module: Option<&str>) -> Result<String> {
    let mut out = String::new();
    callbacks_section(&mut out, survey, module)?;
    writeln!(out)?;
    call_sites_section(&mut out, &survey.call_sites)?;
    writeln!(out)?;
    mac_sites_section(&mut out, &survey.mac_sites)?;
    writeln!(out)?;
    mdio_section(&mut out, survey)?;
    writeln!(out)?;
    phys_section(&mut out, survey)?;
    writeln!(out)?;
    for accessor in survey.accessors.iter().filter(|a| a.required) {
        writeln!(
            out,
            "MDIO probe {}: {}",
            accessor.name,
            if accessor.present {
                "present"
            } else {
                "MISSING (kernel without CONFIG_PHYLIB?)"
            }
        )?;
    }
    writeln!(out)?;
    offsets_section(&mut out, survey)?;
    Ok(out)
}

/// Lists the Rust drivers' callbacks (of `module` only, if given), or what to do if there are
/// none.
fn callbacks_section(out: &mut String, survey: &Survey, module: Option<&str>) -> Result<()> {
    let callbacks = &survey.callbacks;
    writeln!(
        out,
        "Rust drivers' callbacks, the symbol probes' fallback \
         (kernel::net::phy::Adapter<T>::*_callback in {}):",
        symbols::KALLSYMS
    )?;
    if callbacks.is_empty() {
        let which = module.unwrap_or("Rust PHY driver");
        writeln!(
            out,
            "  none: no {which} module is loaded. The call sites below trace every driver, C or \
             Rust, from its first callback whenever it loads."
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "  {:<15} {:<30} {:<20} {:<18} SYMBOL",
        "MODULE", "DRIVER TYPE", "CALLBACK", "ADDRESS"
    )?;
    for s in callbacks {
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
    for s in callbacks {
        *per_type.entry(&s.driver_type).or_default() += 1;
    }
    for (driver_type, count) in per_type {
        writeln!(out, "  {driver_type}: {count} callbacks")?;
    }
    writeln!(
        out,
        "  (on kprobes: Rust functions have no ftrace site and Rust modules no BTF)"
    )?;
    Ok(())
}

/// Lists the MDIO accessors and whether this kernel has them.
fn mdio_section(out: &mut String, survey: &Survey) -> Result<()> {
    writeln!(out, "MDIO bus accessors:")?;
    for accessor in &survey.accessors {
        writeln!(
            out,
            "  {:<22} {}",
            accessor.name,
            if accessor.present {
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
    Ok(())
}

/// Lists the PHY devices on MDIO buses and their drivers.
fn phys_section(out: &mut String, survey: &Survey) -> Result<()> {
    writeln!(out, "PHY devices ({MDIO_BUS_DEVICES}):")?;
    if survey.phys.is_empty() {
        writeln!(
            out,
            "  none: no MDIO bus has a PHY (plug the device, or load the simulator: insmod phy_sim.ko)"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "  {:<22} {:<11} {:<32} MODULE",
        "PHY", "PHY ID", "DRIVER"
    )?;
    for phy in &survey.phys {
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
    Ok(())
}

/// Lists the struct offsets and `enum phy_state` read from the kernel's BTF.
fn offsets_section(out: &mut String, survey: &Survey) -> Result<()> {
    let (offsets, states) = match &survey.offsets {
        Ok(read) => read,
        Err(err) => {
            writeln!(out, "Struct offsets: unavailable: {err:#}")?;
            return Ok(());
        }
    };
    writeln!(out, "Struct offsets from {}:", survey.btf)?;
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
    Ok(())
}
