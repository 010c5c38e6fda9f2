//! `phytrace generate`: shell completions and the man page, from the clap definitions.

use std::{io, process::ExitCode};

use anyhow::Result;
use clap::CommandFactory as _;

use crate::cli::Cli;

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

pub fn run(args: &GenerateArgs) -> Result<ExitCode> {
    let mut command = Cli::command();
    let mut out = io::stdout().lock();
    let shell = match args.artifact {
        Artifact::Man => {
            clap_mangen::Man::new(command).render(&mut out)?;
            return Ok(ExitCode::SUCCESS);
        }
        Artifact::Bash => clap_complete::Shell::Bash,
        Artifact::Zsh => clap_complete::Shell::Zsh,
        Artifact::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, "phytrace", &mut out);
    Ok(ExitCode::SUCCESS)
}
