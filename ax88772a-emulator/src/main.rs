//! `ax88772a-emulator`: an ASIX AX88772A USB Ethernet dongle emulated in userspace through
//! raw-gadget or FunctionFS on dummy_hcd, so that the kernel's own asix driver binds to it and drives its
//! internal PHY over (emulated) MDIO. See docs/dongle.md.

mod backend;
mod cli;
mod control;
mod descriptors;
mod emulator;
mod error;
mod frames;
mod functionfs;
mod gadget;
mod phy;
mod raw_gadget;
mod shutdown;
mod vendor;
mod workers;

use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use clap::Parser;
use serde_json::json;

use crate::cli::{Cli, Cmd, CtlArgs, RunArgs};
use crate::emulator::{Emulator, emit};
use crate::error::Error;
use crate::frames::Peer;
use crate::gadget::UdcConfig;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run(args) => run(args),
        Cmd::Ctl(args) => ctl(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ax88772a-emulator: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `run`: the dongle until killed (or a fatal error).
fn run(a: RunArgs) -> Result<(), Error> {
    // Checked before anything starts, also when starting unplugged.
    let paths = backend::Paths {
        raw_gadget: a.raw_gadget.clone(),
        configfs: a.configfs.clone(),
    };
    let kind = backend::choose(a.backend, &paths)?;
    let node_id = a.node_id;
    let peer_mac = a.peer_mac.unwrap_or_else(|| {
        let mut m = node_id;
        m[5] = m[5].wrapping_add(1);
        m
    });
    let peer = Peer {
        mac: peer_mac,
        ip: a.ip,
    };
    let emu = Arc::new(Emulator::new(
        node_id,
        peer,
        Duration::from_micros(a.mdio_delay_us),
        !a.unplugged,
        |p| {
            p.aneg_delay = Duration::from_millis(a.an_delay_ms);
            p.reset_delay = Duration::from_millis(a.reset_delay_ms);
            p.lpa_zero = a.lpa_quirk;
            p.set_partner(a.partner, Duration::ZERO);
            p.set_cable(!a.cable_out, Duration::ZERO);
        },
    ));
    shutdown::block().map_err(|e| Error::Io("block SIGTERM and SIGINT".into(), e))?;
    workers::install_wake_handler().map_err(|e| Error::Io("install SIGUSR1 handler".into(), e))?;
    let listener = control::bind(&a.socket)?;
    shutdown::spawn(Arc::clone(&emu), a.socket.clone())
        .map_err(|e| Error::Io("spawn shutdown thread".into(), e))?;
    let served = Arc::clone(&emu);
    thread::Builder::new()
        .name("control".into())
        .spawn(move || control::serve(listener, served))
        .map_err(|e| Error::Io("spawn control thread".into(), e))?;
    let backend_name = match kind {
        backend::Kind::Functionfs => "functionfs",
        _ => "raw-gadget",
    };
    emit(
        json!({"event": "started", "socket": a.socket.display().to_string(), "pid": std::process::id(),
               "backend": backend_name}),
    );
    let udc = UdcConfig {
        backend: kind,
        paths,
        driver: a.udc_driver,
        device: a.udc_device,
    };
    let result = gadget::serve(emu, &udc);
    // Only a fatal error ends serve: nobody will answer on the socket any more.
    let _ = std::fs::remove_file(&a.socket);
    result
}

/// `ctl`: one command, its result on stdout.
fn ctl(a: &CtlArgs) -> Result<(), Error> {
    let result = control::request(&a.socket, &a.words.join(" "))?;
    println!("{result}");
    Ok(())
}
