//! `phytrace generate`: shell completions and the man page, from the clap definitions.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory as _;

use crate::{cli::Cli, output};

/// What to generate.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Artifact {
    /// The man page (roff), e.g. for /usr/share/man/man1/phytrace.1.
    Man,
    /// Bash completions.
    Bash,
    /// Zsh completions.
    Zsh,
    /// Fish completions.
    Fish,
}

/// Arguments of `phytrace generate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  phytrace generate man > /usr/local/share/man/man1/phytrace.1
  phytrace generate bash > /etc/bash_completion.d/phytrace")]
pub struct GenerateArgs {
    /// The artifact to write to standard output.
    #[arg(value_enum)]
    pub artifact: Artifact,
}

/// Runs `phytrace generate`. The artifact is rendered in memory first: clap_complete panics
/// when its output fails, and a full disk deserves an error (exit 4) instead.
pub fn run(args: &GenerateArgs) -> Result<ExitCode> {
    let mut command = Cli::command();
    let mut text = Vec::new();
    let shell = match args.artifact {
        Artifact::Man => None,
        Artifact::Bash => Some(clap_complete::Shell::Bash),
        Artifact::Zsh => Some(clap_complete::Shell::Zsh),
        Artifact::Fish => Some(clap_complete::Shell::Fish),
    };
    match shell {
        None => clap_mangen::Man::new(command).render(&mut text)?,
        Some(shell) => clap_complete::generate(shell, &mut command, "phytrace", &mut text),
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
