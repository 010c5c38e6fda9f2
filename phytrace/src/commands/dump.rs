//! `phytrace dump`: print a capture file decoded, one event a line.
//!
//! A capture with damaged records is read (each reported on stderr); one that cannot be opened,
//! whose header is unreadable, or of which not one event could be read is bad input.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Format;
use crate::capture::{Problem, Reader};
use crate::event::{Event, Kind, PhyFilter};
use crate::exit::{self, Status};
use crate::model::Model;
use crate::output;
use crate::render;
use crate::render::runs::{MIN_FOLDED, Run};

/// Most read issues printed; the rest are counted.
const MAX_WARNINGS: u64 = 20;

/// `dump --help`'s examples and notes.
const EXAMPLES: &str = "Examples:
  phytrace dump capture.ptrace
  phytrace dump capture.ptrace --phy phy_sim-0:10 --kind mdio,exit
  phytrace dump capture.ptrace --format json | jq 'select(.kind == \"mdio\")'
  phytrace dump capture.ptrace --summary

Damaged records (e.g. after a crash) are reported on stderr and skipped: the capture is read
(exit 0) unless it cannot be opened, its header is bad or nothing in it is readable (exit 2).";

/// Print a capture file decoded, one event a line.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = exit::after_help(EXAMPLES, &Status::READS))]
pub struct DumpArgs {
    /// Capture file to read (written by `phytrace record`).
    #[arg(value_name = "CAPTURE")]
    pub file: PathBuf,
    /// Output format: decoded text, or the events as JSON lines (one `Event` object a line,
    /// docs/capture-format.md) for scripts.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only events of PHYs whose key (`bus:addr`, e.g. `phy_sim-0:10`) or driver name
    /// contains FILTER, and those of no PHY (attach, detach, losses: they concern every PHY),
    /// as `record --phy` and the TUI keep them.
    #[arg(long, value_name = "FILTER")]
    pub phy: Option<PhyFilter>,
    /// Only events of these kinds (several may follow, or separate them with commas).
    #[arg(long, value_enum, value_name = "KIND", value_delimiter = ',', num_args = 1..)]
    pub kind: Vec<Kind>,
    /// Fold each run of at least 8 like MDIO accesses (same PHY, direction, MMD and callback,
    /// one register polled or a range swept upwards) into one line:
    /// `16,384 writes to pcs 3.0x8000…0xBFFF in probe`. Text only.
    #[arg(long, conflicts_with = "format")]
    pub summary: bool,
}

impl DumpArgs {
    fn selects(&self, event: &Event) -> bool {
        let phy_ok = self.phy.as_ref().is_none_or(|filter| filter.keeps(event));
        phy_ok && (self.kind.is_empty() || self.kind.contains(&event.kind.kind()))
    }
}

/// Runs `phytrace dump` on stdout and stderr.
pub fn run(args: &DumpArgs) -> anyhow::Result<ExitCode> {
    dump(args, &mut io::stdout().lock(), &mut io::stderr().lock())
}

/// Runs `phytrace dump`, printing events to `out` and diagnostics to `err`.
pub fn dump(
    args: &DumpArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let file = args.file.display();
    let mut reader = match Reader::open(&args.file) {
        Ok(reader) => reader,
        Err(e) => {
            writeln!(err, "phytrace: error: {e}")?;
            return Ok(Status::BadInput.exit_code());
        }
    };
    let mut out = io::BufWriter::new(out);
    let start_ns = reader.header().clock.mono_ns;
    let mut model = Model::new();
    let mut damaged = 0u64;
    let mut shown = 0u64;
    let mut line = Vec::with_capacity(256);
    let mut folder = args.summary.then(Folder::default);
    for item in reader.by_ref() {
        let event = match item {
            Ok(event) => event,
            Err(issue) => {
                damaged += u64::from(issue.problem != Problem::NotClosed);
                shown += 1;
                if shown <= MAX_WARNINGS {
                    writeln!(err, "phytrace: warning: {file}: {issue}")?;
                }
                continue;
            }
        };
        let applied = model.apply(&event);
        if !args.selects(&event) {
            continue;
        }
        line.clear();
        match args.format {
            Format::Text => {
                line.extend_from_slice(render::event_line(&event, &applied, start_ns).as_bytes())
            }
            Format::Json => {
                serde_json::to_writer(&mut line, &event).context("encoding an event")?
            }
        }
        line.push(b'\n');
        let lines = match &mut folder {
            Some(folder) => folder.push(&event, applied.key.as_deref(), &line, start_ns),
            None => vec![std::mem::take(&mut line)],
        };
        for text in lines {
            if !output::to_stdout(&mut out, &text)? {
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    if let Some(text) = folder.and_then(|mut f| f.finish(start_ns))
        && !output::to_stdout(&mut out, &text)?
    {
        return Ok(ExitCode::SUCCESS);
    }
    if shown > MAX_WARNINGS {
        writeln!(
            err,
            "phytrace: warning: {file}: {} more issues not shown",
            shown - MAX_WARNINGS
        )?;
    }
    if args.format == Format::Text
        && let Some(t) = reader.trailer()
    {
        let end = render::relative_time(t.end_ns, start_ns);
        let causes: Vec<String> = t
            .lost_by_cause
            .nonzero()
            .iter()
            .map(|(cause, count)| format!("{cause} {count}"))
            .collect();
        let causes = if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        };
        let summary = format!(
            "# end {}  {} events, {} lost by the kernel{causes}, {} unreadable records discarded\n",
            end.trim_start(),
            t.events,
            t.lost,
            t.discarded
        );
        if !output::to_stdout(&mut out, summary.as_bytes())? {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if args.format == Format::Text
        && let Some(note) = reader.header().kmsg.as_ref().and_then(|k| k.note())
        && !output::to_stdout(&mut out, format!("# {note}\n").as_bytes())?
    {
        return Ok(ExitCode::SUCCESS);
    }
    output::flush_stdout(&mut out)?;
    if damaged > 0 && reader.events_read() == 0 {
        writeln!(
            err,
            "phytrace: error: {file}: no event could be read ({damaged} damaged records)"
        )?;
        return Ok(Status::BadInput.exit_code());
    }
    Ok(ExitCode::SUCCESS)
}

/// `dump --summary`: holds the lines of the current run of like accesses until it ends, then
/// gives them back, or one line for the whole run when it folds.
#[derive(Default)]
struct Folder {
    run: Option<Run>,
    /// The run's lines, as long as it is too short to fold.
    held: Vec<Vec<u8>>,
}

impl Folder {
    /// Takes the event's line; returns the lines to print now.
    fn push(
        &mut self,
        event: &Event,
        key: Option<&str>,
        line: &[u8],
        start_ns: u64,
    ) -> Vec<Vec<u8>> {
        if let Some(run) = &mut self.run
            && run.continued_by(event, key)
        {
            run.extend(event);
            if self.held.len() < MIN_FOLDED as usize {
                self.held.push(line.to_vec());
            }
            return Vec::new();
        }
        let mut out = self.flush(start_ns);
        self.run = Run::start(event, key);
        match self.run {
            Some(_) => self.held.push(line.to_vec()),
            None => out.push(line.to_vec()),
        }
        out
    }

    /// The lines of the run held, folded if it folds.
    fn flush(&mut self, start_ns: u64) -> Vec<Vec<u8>> {
        let held = std::mem::take(&mut self.held);
        match self.run.take() {
            Some(run) if run.folds() => vec![format!("{}\n", run.line(start_ns)).into_bytes()],
            _ => held,
        }
    }

    /// What is left at the end of the capture.
    fn finish(&mut self, start_ns: u64) -> Option<Vec<u8>> {
        let lines = self.flush(start_ns);
        (!lines.is_empty()).then(|| lines.concat())
    }
}
