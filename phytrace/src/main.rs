//! The `phytrace` binary: parse the command line, run one command.

use std::process::ExitCode;

use clap::Parser as _;
use phytrace::{
    cli::{Cli, Command},
    commands, exit,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Record(args) => commands::record::run(args),
        Command::Dump(args) => commands::dump::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Diff(args) => commands::diff::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Probes(args) => commands::probes::run(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Generate(args) => commands::generate::run(args),
    };
    result.unwrap_or_else(|err| {
        eprintln!("phytrace: error: {err:#}");
        exit::code_for(&err)
    })
}
