//! The command line: `run` (the emulator, in the foreground) and `ctl` (commands to it).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::control::{DEFAULT_SOCKET, USAGE};
use crate::emulator::parse_mac;
use crate::phy::Partner;

/// A userspace ASIX AX88772A USB Ethernet dongle (0b95:772a) on raw-gadget or FunctionFS +
/// dummy_hcd, for
/// the kernel's asix driver and the PHY drivers behind it.
#[derive(Debug, Parser)]
#[command(name = "ax88772a-emulator", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Cmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Run the emulated dongle in the foreground until killed. Prints one JSON line per USB
    /// event on stdout ({"event":"configured",…} once the host configured it).
    Run(RunArgs),
    /// Send a command to the running emulator; prints its JSON result.
    #[command(after_help = USAGE)]
    Ctl(CtlArgs),
}

/// `run` options.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Control socket path.
    #[arg(long, env = "AX88772A_EMULATOR_SOCKET", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Link partner abilities: 100full 100half 10full 10half pause asym all none (comma
    /// separated) or 0xBITS (ADVERTISE bits).
    #[arg(long, default_value = "all", value_parser = parse_partner)]
    pub partner: Partner,
    /// Autonegotiation / link training time in ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub an_delay_ms: u64,
    /// How long BMCR.RESET stays set, in ms.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=5_000))]
    pub reset_delay_ms: u64,
    /// Delay of every READ/WRITE_MII_REG answer, in µs.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub mdio_delay_us: u64,
    /// IPv4 address of the far end of the cable (answers ARP and ping).
    #[arg(long, default_value = "192.168.77.2")]
    pub ip: Ipv4Addr,
    /// The dongle's node id (MAC address READ_NODE_ID answers).
    #[arg(long, default_value = "00:0e:c6:87:72:01", value_parser = parse_mac)]
    pub node_id: [u8; 6],
    /// MAC address of the far end (default: the node id + 1).
    #[arg(long, value_parser = parse_mac)]
    pub peer_mac: Option<[u8; 6]>,
    /// Start with the Ethernet cable out.
    #[arg(long)]
    pub cable_out: bool,
    /// Start with the LPA-reads-0 quirk on.
    #[arg(long)]
    pub lpa_quirk: bool,
    /// Start unplugged (`ctl plug` attaches the dongle).
    #[arg(long)]
    pub unplugged: bool,
    /// How to be a USB device: raw-gadget (/dev/raw-gadget) or FunctionFS (a configfs gadget);
    /// auto takes raw-gadget if the kernel has it, else FunctionFS.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::backend::Kind,
    /// The raw-gadget device node.
    #[arg(long, default_value = crate::raw_gadget::DEVICE)]
    pub raw_gadget: PathBuf,
    /// configfs' USB gadget directory (for FunctionFS).
    #[arg(long, default_value = crate::functionfs::CONFIGFS)]
    pub configfs: PathBuf,
    /// UDC driver name.
    #[arg(long, default_value = "dummy_udc")]
    pub udc_driver: String,
    /// UDC device name.
    #[arg(long, default_value = "dummy_udc.0")]
    pub udc_device: String,
}

/// `ctl` options.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// Control socket path.
    #[arg(long, env = "AX88772A_EMULATOR_SOCKET", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// The command, e.g. `cable out` or `mdio-error read BMSR 1`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub words: Vec<String>,
}

fn parse_partner(s: &str) -> Result<Partner, String> {
    s.parse()
}
