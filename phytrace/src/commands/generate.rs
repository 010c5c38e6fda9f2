//! `phytrace generate`: the man pages, shell completions and the capability set, from the clap
//! definitions and the privilege table, for packages.

use std::{fs, path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::CommandFactory as _;

use crate::{
    cli::Cli,
    exit::{Failure, FailureKind},
    kernel::privileges,
    output,
};

/// What to generate.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Artifact {
    /// The man page phytrace(1) (roff), which lists one page per subcommand; with --dir, all
    /// of them (phytrace.1, phytrace-record.1, …).
    Man,
    /// Bash completions.
    Bash,
    /// Zsh completions.
    Zsh,
    /// Fish completions.
    Fish,
    /// The capabilities a non-root session needs for everything the default records, as
    /// setcap(8) takes them.
    Capabilities,
}

/// Arguments of `phytrace generate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  phytrace generate man --dir /usr/local/share/man/man1
  phytrace generate bash > /etc/bash_completion.d/phytrace
  sudo setcap \"$(phytrace generate capabilities)\" \"$(command -v phytrace)\"")]
pub struct GenerateArgs {
    /// The artifact to write to standard output.
    #[arg(value_enum)]
    pub artifact: Artifact,
    /// Write every man page into DIR (created if missing), one file per page, instead of
    /// phytrace(1) to standard output. Only with `man`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `phytrace generate`. An artifact for standard output is rendered in memory first:
/// clap_complete panics when its output fails, and a full disk deserves an error (exit 4)
/// instead.
pub fn run(args: &GenerateArgs) -> Result<ExitCode> {
    if let Some(dir) = &args.dir {
        if args.artifact != Artifact::Man {
            return Err(Failure::new(
                FailureKind::BadInput,
                "--dir writes the man pages: `phytrace generate man --dir DIR`",
            )
            .into());
        }
        write_pages(dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = match args.artifact {
        Artifact::Man => man_pages()?.swap_remove(0).1,
        Artifact::Bash => completions(clap_complete::Shell::Bash),
        Artifact::Zsh => completions(clap_complete::Shell::Zsh),
        Artifact::Fish => completions(clap_complete::Shell::Fish),
        Artifact::Capabilities => format!("{}\n", privileges::setcap_text()).into_bytes(),
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "phytrace", &mut text);
    text
}

/// Every man page as (file name, roff): phytrace.1 first, then one per subcommand
/// (`phytrace-record.1`), each with all of its options, as `--help` shows them. clap's `help`
/// subcommand gets no page and is not listed.
pub fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let source = format!("phytrace {}", env!("CARGO_PKG_VERSION"));
    let mut pages = Vec::new();
    for page in std::iter::once(&command).chain(command.get_subcommands()) {
        let man = clap_mangen::Man::new(page.clone()).source(source.as_str());
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        pages.push((man.get_filename(), roff));
    }
    Ok(pages)
}

/// Writes [`man_pages`] into `dir`.
fn write_pages(dir: &std::path::Path) -> Result<()> {
    let failure = |what: &str, e: std::io::Error| {
        Failure::new(FailureKind::Output, format!("cannot write {what}: {e}"))
    };
    fs::create_dir_all(dir).map_err(|e| failure(&dir.display().to_string(), e))?;
    for (name, roff) in man_pages()? {
        let path = dir.join(name);
        output::to_file(&path, |out| std::io::Write::write_all(out, &roff))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's text with roff's escapes of `-` undone.
    fn text(roff: &[u8]) -> String {
        String::from_utf8_lossy(roff).replace("\\-", "-")
    }

    #[test]
    fn every_subcommand_has_a_page_with_all_its_options() {
        let pages = man_pages().unwrap();
        let command = Cli::command();
        assert_eq!(pages[0].0, "phytrace.1");
        let top = text(&pages[0].1);
        for sub in command.get_subcommands() {
            let name = format!("phytrace-{}", sub.get_name());
            assert!(
                top.contains(&format!("{name}(1)")),
                "phytrace(1) lacks {name}"
            );
            let (_, roff) = pages
                .iter()
                .find(|(file, _)| *file == format!("{name}.1"))
                .unwrap_or_else(|| panic!("no page {name}.1"));
            let page = text(roff);
            assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
            let shown = sub.get_arguments().filter(|arg| !arg.is_hide_set());
            for long in shown.filter_map(|arg| arg.get_long()) {
                assert!(
                    page.contains(&format!("--{long}")),
                    "{name}.1 lacks --{long}"
                );
            }
        }
        assert_eq!(pages.len(), command.get_subcommands().count() + 1);
        assert!(
            !top.contains("phytrace-help"),
            "a page for clap's help is listed"
        );
    }
}
