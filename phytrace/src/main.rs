//! The `phytrace` binary: parse the command line, run one command.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use phytrace::{
    cli::{Cli, Command},
    commands, exit,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = match cli.command {
        Some(command) => command,
        None if std::io::stdout().is_terminal() => Command::Tui(Default::default()),
        None => {
            return match Cli::command().print_help() {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(exit::EXIT_OTHER),
            };
        }
    };
    let result = match &command {
        Command::Tui(args) => commands::tui::run(args),
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
