//! `cargo xtask demo`: the emulated AX88772A USB dongle (or, with `--sim`, the simulated PHYs)
//! and the Rust driver, traced live.
//!
//! Builds what is missing, boots the test kernel and runs `scenarios/demo.sh` in the guest:
//! `phytrace tui` on this terminal while the dongle is plugged in and its cable pulled, or,
//! with `--headless`, a recording of the same story and its decoded summary. With
//! `--usb-host` a real dongle of the host is passed into the guest instead of the emulator
//! (`HARDWARE=usb-host`: the cable is pulled by hand; not tested here, see docs/dongle.md).

use std::process::ExitCode;

use anyhow::Result;

use crate::{paths, vm};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Record the scenario to target/vm-out/demo.ptrace and print a summary instead of the TUI.
    #[arg(long)]
    pub headless: bool,
    /// The simulated MDIO PHYs (phy_sim) instead of the emulated USB dongle.
    #[arg(long, conflicts_with = "usb_host")]
    pub sim: bool,
    /// Unplug/replug cycles.
    #[arg(long, default_value_t = 6)]
    pub cycles: u32,
    /// Seconds between cable events.
    #[arg(long, default_value_t = 3)]
    pub period: u32,
    #[command(flatten)]
    pub vm: vm::VmOptions,
}

pub fn run(args: &DemoArgs) -> Result<ExitCode> {
    let (kernel, options) = vm::prepare_release(&args.vm)?;
    let script = paths::workspace().join("scenarios/demo.sh");
    let mut command = vec![
        "/bin/bash".to_owned(),
        script.display().to_string(),
        format!("MODE={}", if args.headless { "headless" } else { "tui" }),
        format!("CYCLES={}", args.cycles),
        format!("PERIOD={}", args.period),
        format!(
            "HARDWARE={}",
            match (args.sim, &args.vm.usb_host) {
                (true, _) => "sim",
                (false, Some(_)) => "usb-host",
                (false, None) => "dongle",
            }
        ),
    ];
    if !args.sim && args.vm.usb_host.is_none() {
        command.push(format!("DONGLE_BIN={}", vm::release_emulator()?.display()));
    }
    eprintln!("==> demo: booting the VM (the hardware appears 2 s after phytrace starts)");
    Ok(ExitCode::from(vm::boot(&kernel, &options, &command)?))
}
