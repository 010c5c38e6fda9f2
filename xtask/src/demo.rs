//! `cargo xtask demo`: the VM with the simulated PHYs and the Rust driver, traced live.
//!
//! Builds what is missing, boots the test kernel and runs `scenarios/demo.sh` in the guest:
//! `phytrace tui` on this terminal while the AX88772A's cable is plugged and unplugged, or,
//! with `--headless`, a recording of the same story and its decoded summary.

use std::process::ExitCode;

use anyhow::Result;

use crate::{paths, vm};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Record the scenario to target/vm-out/demo.ptrace and print a summary instead of the TUI.
    #[arg(long)]
    pub headless: bool,
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
    let command = vec![
        "/bin/bash".to_owned(),
        script.display().to_string(),
        format!("MODE={}", if args.headless { "headless" } else { "tui" }),
        format!("CYCLES={}", args.cycles),
        format!("PERIOD={}", args.period),
    ];
    eprintln!("==> demo: booting the VM (the driver loads 2 s after phytrace starts)");
    Ok(ExitCode::from(vm::boot(&kernel, &options, &command)?))
}
