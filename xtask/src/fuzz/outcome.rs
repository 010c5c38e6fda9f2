//! What libFuzzer's output says about a run: inputs executed, time, the error and its input.

use std::path::PathBuf;

/// The facts `cargo xtask fuzz` reports, read from a run's log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// `Done N runs in S second(s)`: (N, S); only printed when the run finished.
    pub done: Option<(u64, u64)>,
    /// Inputs run at the last progress line (`#N …`).
    pub progress: u64,
    /// The panic or error libFuzzer reported.
    pub error: Option<String>,
    /// The input it saved for it.
    pub input: Option<PathBuf>,
}

impl Outcome {
    /// Reads libFuzzer's output (and cargo-fuzz's around it).
    pub fn parse(text: &str) -> Self {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let done = lines.iter().rev().find_map(|line| {
            let rest = line.strip_prefix("Done ")?;
            let (runs, rest) = rest.split_once(" runs in ")?;
            let seconds = rest.strip_suffix(" second(s)")?;
            Some((runs.parse().ok()?, seconds.parse().ok()?))
        });
        let progress = lines
            .iter()
            .rev()
            .find_map(|line| {
                let number = line.strip_prefix('#')?.split_whitespace().next()?;
                number.parse().ok()
            })
            .unwrap_or(0);
        let error = lines.iter().enumerate().find_map(|(i, line)| {
            if let Some(at) = line.find("panicked at ") {
                // The panic message follows on the next line.
                let message = lines.get(i + 1).copied().unwrap_or_default();
                return Some(format!("{} {message}", &line[at..]));
            }
            line.strip_prefix("SUMMARY: libFuzzer: ")
                .or_else(|| line.strip_prefix("SUMMARY: AddressSanitizer: "))
                .map(str::to_owned)
        });
        let input = lines.iter().find_map(|line| {
            let (_, path) = line.split_once("Test unit written to ")?;
            Some(PathBuf::from(path))
        });
        Self {
            done,
            progress,
            error: error.or_else(|| input.as_ref().map(|_| "crash".to_owned())),
            input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn a_clean_run() {
        let log = "#1000000\tDONE   cov: 2312 ft: 9876 corp: 812/95Kb exec/s: 9345 rss: 412Mb\n\
                   Done 1000000 runs in 107 second(s)\n";
        assert_eq!(
            Outcome::parse(log),
            Outcome {
                done: Some((1_000_000, 107)),
                progress: 1_000_000,
                error: None,
                input: None,
            }
        );
    }

    #[test]
    fn a_panic() {
        let log = "#4096\tpulse  cov: 1\n\
                   #4123\tNEW    cov: 2 MS: 1 ManualDict- DE: \"ERROR\"-\n\
                   thread '<unnamed>' panicked at phytrace/src/check/lexer.rs:9:5:\n\
                   attempt to negate with overflow\n\
                   ==12== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='/w/fuzz/artifacts/spec_parser/'; Test unit written to /w/fuzz/artifacts/spec_parser/crash-ab12\n\
                   SUMMARY: libFuzzer: deadly signal\n";
        assert_eq!(
            Outcome::parse(log),
            Outcome {
                done: None,
                progress: 4123,
                error: Some(
                    "panicked at phytrace/src/check/lexer.rs:9:5: attempt to negate with overflow"
                        .to_owned()
                ),
                input: Some("/w/fuzz/artifacts/spec_parser/crash-ab12".into()),
            }
        );
    }

    #[test]
    fn a_hang() {
        let log = "==7== ERROR: libFuzzer: timeout after 30 seconds\n\
                   artifact_prefix='a/'; Test unit written to a/timeout-99\n\
                   SUMMARY: libFuzzer: timeout\n";
        let outcome = Outcome::parse(log);
        assert_eq!(outcome.error.as_deref(), Some("timeout"));
        assert_eq!(outcome.input, Some("a/timeout-99".into()));
    }
}
