//! Text reports of check outcomes: one status line per rule, then each violation with the
//! offending events decoded as `phytrace dump` prints them, with some context.

use std::fmt::Write as _;

use super::eval::{Outcome, Violation, evaluate_observed};
use super::observed::Observed;
use super::spec::{Per, Rule, Spec};
use crate::capture::Capture;
use crate::model::Applied;
use crate::render;

/// Most violations shown per rule (per PHY in KTAP); the rest are counted.
pub const MAX_SHOWN: usize = 5;

/// A checked capture, ready to report.
#[derive(Debug)]
pub struct Checked<'a> {
    /// The capture's name (its path).
    pub name: &'a str,
    /// The capture.
    pub capture: &'a Capture,
    /// One outcome per rule of the spec.
    pub outcomes: Vec<Outcome>,
    /// What the model said each event changed, by index: the lines show it as `dump` does.
    applied: Vec<Applied>,
}

impl<'a> Checked<'a> {
    /// Checks `spec` on `capture` (named `name`), applying its events to the model once.
    pub fn new(name: &'a str, capture: &'a Capture, spec: &Spec) -> Self {
        let observed = Observed::of(&capture.events);
        let outcomes = evaluate_observed(spec, &observed, capture.header.clock.mono_ns);
        Self {
            name,
            capture,
            outcomes,
            applied: observed.applied,
        }
    }

    /// Number of rules violated.
    pub fn failures(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.passed()).count()
    }

    /// Number of rules whose scope matched no PHY.
    pub fn skipped(&self) -> usize {
        self.outcomes.iter().filter(|o| o.not_applicable()).count()
    }

    /// Event `index` decoded as `phytrace dump` prints it.
    fn line(&self, index: usize) -> Option<String> {
        let event = self.capture.events.get(index)?;
        let applied = self.applied.get(index)?;
        Some(render::event_line(
            event,
            applied,
            self.capture.header.clock.mono_ns,
        ))
    }
}

/// Where a rule is defined: `spec.spec:12`.
pub fn location(spec_name: &str, rule: &Rule) -> String {
    format!("{spec_name}:{}", rule.line)
}

/// The report of one violated rule of `checked`: what failed where, with the events.
pub fn failure(spec_name: &str, rule: &Rule, outcome: &Outcome, checked: &Checked<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "FAIL \"{}\" ({})",
        rule.name,
        location(spec_name, rule)
    );
    for v in outcome.violations.iter().take(MAX_SHOWN) {
        let _ = writeln!(out, "  on {}: {}", v.group, v.reason);
        for line in event_lines(v, checked) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(more) = outcome
        .violations
        .len()
        .checked_sub(MAX_SHOWN)
        .filter(|&n| n > 0)
    {
        let _ = writeln!(out, "  … and {more} more violations");
    }
    out
}

/// The events around violation `v` as `phytrace dump` prints them, the offending ones marked
/// `>`.
pub fn event_lines(v: &Violation, checked: &Checked<'_>) -> Vec<String> {
    v.context
        .iter()
        .filter_map(|index| {
            let mark = if v.offending.contains(index) {
                '>'
            } else {
                ' '
            };
            checked.line(*index).map(|line| format!("{mark} {line}"))
        })
        .collect()
}

/// One line per rule: `ok`, `FAIL` or `n/a`, with what was checked.
fn status_line(rule: &Rule, outcome: &Outcome, width: usize) -> String {
    let groups = match rule.scope.per {
        Per::Phy => "PHY",
        Per::Driver => "driver",
    };
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let (status, detail) = if outcome.not_applicable() {
        ("n/a ", "no PHY in scope".to_owned())
    } else if outcome.passed() {
        (
            "ok  ",
            format!("on {}", plural(outcome.groups.len(), groups)),
        )
    } else {
        ("FAIL", plural(outcome.violations.len(), "violation"))
    };
    format!("  {status}  {:<width$}  {detail}\n", rule.name)
}

/// The whole text report of a spec on one capture.
pub fn text(spec_name: &str, spec: &Spec, checked: &Checked<'_>) -> String {
    let mut out = format!(
        "phytrace check: {} ({} events) against {spec_name}\n",
        checked.name,
        checked.capture.events.len()
    );
    let width = spec
        .rules
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    for (rule, outcome) in spec.rules.iter().zip(&checked.outcomes) {
        out += &status_line(rule, outcome, width);
    }
    for (rule, outcome) in spec.rules.iter().zip(&checked.outcomes) {
        if !outcome.passed() {
            out.push('\n');
            out += &failure(spec_name, rule, outcome, checked);
        }
    }
    let _ = writeln!(
        out,
        "\n{}: {} rules, {} failed, {} not applicable",
        checked.name,
        spec.rules.len(),
        checked.failures(),
        checked.skipped()
    );
    out
}
