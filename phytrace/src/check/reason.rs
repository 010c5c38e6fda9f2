//! Why a rule failed on a group: one variant per way each kind of rule body fails, with what the
//! evaluation found, and its wording for reports (the only place it is written).

use std::fmt;

use super::spec::{Bound, Cmp, Pattern};
use crate::model::LostWhy;
use crate::render;
use crate::stats::SIGNIFICANT_DIGITS;

/// What a violation says went wrong. Times (`at_ns`) are nanoseconds since the capture started;
/// durations are nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `never A`: A happened.
    Happened { pattern: Pattern, at_ns: u64 },
    /// `count A …`: A happened `count` times, outside `bound`.
    Count {
        pattern: Pattern,
        count: u64,
        bound: Bound,
    },
    /// `pN exit C latency OP T`: the percentile `value_ns` of `count` latencies does not compare
    /// to `limit_ns` as `cmp` asks.
    Percentile {
        percentile: u8,
        pattern: Pattern,
        count: u64,
        value_ns: u64,
        cmp: Cmp,
        limit_ns: u64,
    },
    /// `A before first B`: `then` (B) happened at `at_ns` with no `first` (A) before it.
    NotPreceded {
        first: Pattern,
        then: Pattern,
        at_ns: u64,
    },
    /// `after A: B then C …`: the trigger at `at_ns` was not followed by step `missing` before
    /// the end of the capture (within `within_ns`, when the rule has a bound). `after` is the
    /// step matched before it and when, if `missing` is not the first.
    StepMissing {
        trigger: Pattern,
        at_ns: u64,
        missing: Pattern,
        after: Option<(Pattern, u64)>,
        within_ns: Option<u64>,
    },
    /// `after A: … within T`: step `missing` came, but `came_ns` after the trigger at `at_ns`,
    /// later than `within_ns`.
    StepLate {
        trigger: Pattern,
        at_ns: u64,
        missing: Pattern,
        after: Option<(Pattern, u64)>,
        within_ns: u64,
        came_ns: u64,
    },
    /// `sequence A then …`: A never happened.
    SequenceNotStarted { first: Pattern },
    /// `sequence …`: the sequence got as far as `last` (at `at_ns`); `missing` never followed.
    SequenceStopped {
        last: Pattern,
        at_ns: u64,
        missing: Pattern,
    },
    /// `sequence … within T`: the whole sequence happened, but never within `within_ns`; the
    /// fastest took `fastest_ns`.
    SequenceTooSlow { within_ns: u64, fastest_ns: u64 },
    /// A rule on latencies met a call of `callback`, entered at `at_ns`, that never returned
    /// (`why`): its latency, at least `ran_ns`, is unknown, so the rule cannot hold.
    NeverReturned {
        callback: String,
        at_ns: u64,
        why: LostWhy,
        ran_ns: u64,
    },
}

/// Seconds since the capture started, as `dump` shows them: `12.986129`.
fn at(ns: u64) -> String {
    render::relative_time(ns, 0).trim_start().to_owned()
}

/// `` after `B` at 1.234567``: the step matched before the missing one, if any.
fn after_step(after: &Option<(Pattern, u64)>) -> String {
    after
        .as_ref()
        .map(|(step, ns)| format!(" after `{step}` at {}", at(*ns)))
        .unwrap_or_default()
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |ns: &u64| render::duration(*ns);
        match self {
            Self::Happened { pattern, at_ns } => {
                write!(f, "`{pattern}` happened at {}", at(*at_ns))
            }
            Self::Count {
                pattern,
                count,
                bound,
            } => write!(
                f,
                "`{pattern}` happened {count} time{}, expected {bound}",
                if *count == 1 { "" } else { "s" }
            ),
            Self::Percentile {
                percentile,
                pattern,
                count,
                value_ns,
                cmp,
                limit_ns,
            } => write!(
                f,
                "p{percentile} of the {count} `{pattern}` latenc{} is {} (nearest rank, HDR histogram, {SIGNIFICANT_DIGITS} significant digits), expected {} {}",
                if *count == 1 { "y" } else { "ies" },
                d(value_ns),
                cmp.symbol(),
                d(limit_ns)
            ),
            Self::NotPreceded { first, then, at_ns } => {
                write!(
                    f,
                    "`{then}` happened at {} before any `{first}`",
                    at(*at_ns)
                )
            }
            Self::StepMissing {
                trigger,
                at_ns,
                missing,
                after,
                within_ns,
            } => {
                write!(
                    f,
                    "`{trigger}` at {} was not followed by `{missing}`{}",
                    at(*at_ns),
                    after_step(after)
                )?;
                if let Some(limit) = within_ns {
                    write!(f, " within {}", d(limit))?;
                }
                f.write_str(" (not before the end of the capture)")
            }
            Self::StepLate {
                trigger,
                at_ns,
                missing,
                after,
                within_ns,
                came_ns,
            } => write!(
                f,
                "`{trigger}` at {} was not followed by `{missing}`{} within {} (it came {} after the trigger)",
                at(*at_ns),
                after_step(after),
                d(within_ns),
                d(came_ns)
            ),
            Self::SequenceNotStarted { first } => {
                write!(f, "`{first}` never happened, so the sequence did not start")
            }
            Self::SequenceStopped {
                last,
                at_ns,
                missing,
            } => write!(
                f,
                "the sequence stopped after `{last}` at {}: `{missing}` never followed",
                at(*at_ns)
            ),
            Self::SequenceTooSlow {
                within_ns,
                fastest_ns,
            } => write!(
                f,
                "the sequence happened, but never within {} (fastest: {})",
                d(within_ns),
                d(fastest_ns)
            ),
            Self::NeverReturned {
                callback,
                at_ns,
                why,
                ran_ns,
            } => {
                let why = match why {
                    LostWhy::Superseded => "its return was lost (events lost)",
                    LostWhy::Unloaded => "its module was unloaded while it ran",
                    LostWhy::CaptureEnded => "the capture ended while it ran",
                };
                write!(
                    f,
                    "`{callback}` entered at {} never returned: {why}; its latency is unknown (at least {}), so the rule cannot hold",
                    at(*at_ns),
                    d(ran_ns)
                )
            }
        }
    }
}
