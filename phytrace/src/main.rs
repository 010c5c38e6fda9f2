//! The `phytrace` binary: parse the command line, run one command.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use phytrace::{
    cli::{Cli, Command},
    commands,
    exit::{self, FailureKind},
    output,
};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_exit(&err),
    };
    let command = match cli.command {
        Some(command) => command,
        None if std::io::stdout().is_terminal() => Command::Tui(Default::default()),
        None => {
            return match Cli::command().print_help() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => output_failed(&e),
            };
        }
    };
    let result = match &command {
        Command::Tui(args) => commands::tui::run(args),
        Command::Record(args) => commands::record::run(args),
        Command::Dump(args) => commands::dump::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Stats(args) => commands::stats::run(args),
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

/// Prints clap's help, version or usage error (exit 2) as clap would, but help that cannot be
/// written (a full disk) is an output failure (exit 4), not a success.
fn clap_exit(err: &clap::Error) -> ExitCode {
    match err.print() {
        Err(e) if !err.use_stderr() => output_failed(&e),
        _ => ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(exit::EXIT_OTHER)),
    }
}

/// Reports that standard output could not be written.
fn output_failed(err: &std::io::Error) -> ExitCode {
    eprintln!("phytrace: error: {}", output::stdout_failure(err));
    ExitCode::from(FailureKind::Output.code())
}
