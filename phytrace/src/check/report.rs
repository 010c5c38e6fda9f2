//! Text reports of check outcomes: one status line per rule, then each violation with the
//! offending events decoded as `phytrace dump` prints them, with some context.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::eval::Outcome;
use super::spec::{Per, Rule, Spec};
use crate::capture::Capture;
use crate::model::Model;
use crate::render;

/// Most violations shown per rule; the rest are counted.
pub const MAX_SHOWN: usize = 5;

/// A checked capture, ready to report.
#[derive(Debug)]
pub struct Checked<'a> {
    /// The capture's name (its path).
    pub name: &'a str,
    /// The capture.
    pub capture: &'a Capture,
    /// One outcome per rule of the spec.
    pub outcomes: &'a [Outcome],
}

impl Checked<'_> {
    /// Number of rules violated.
    pub fn failures(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.passed()).count()
    }

    /// Number of rules whose scope matched no PHY.
    pub fn skipped(&self) -> usize {
        self.outcomes.iter().filter(|o| o.not_applicable()).count()
    }
}

/// The decoded lines of the events the report shows, by event index.
#[derive(Debug, Default)]
pub struct Lines(BTreeMap<usize, String>);

impl Lines {
    /// Renders the events the shown violations of `checked` need, replaying the capture
    /// through the model so that register changes are shown as `dump` shows them.
    pub fn for_report(checked: &Checked<'_>) -> Self {
        let needed: BTreeSet<usize> = checked
            .outcomes
            .iter()
            .flat_map(|o| o.violations.iter().take(MAX_SHOWN))
            .flat_map(|v| v.context.iter().copied())
            .collect();
        let Some(&last) = needed.last() else {
            return Self::default();
        };
        let start_ns = checked.capture.header.clock.boot_ns;
        let mut model = Model::new();
        let mut lines = BTreeMap::new();
        for (index, event) in checked.capture.events.iter().enumerate().take(last + 1) {
            let applied = model.apply(event);
            if needed.contains(&index) {
                lines.insert(index, render::event_line(event, &applied, start_ns));
            }
        }
        Self(lines)
    }
}

/// Where a rule is defined: `spec.spec:12`.
fn location(spec_name: &str, rule: &Rule) -> String {
    format!("{spec_name}:{}", rule.line)
}

/// The report of one violated rule: what failed where, with the events.
pub fn failure(spec_name: &str, rule: &Rule, outcome: &Outcome, lines: &Lines) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "FAIL \"{}\" ({})",
        rule.name,
        location(spec_name, rule)
    );
    for v in outcome.violations.iter().take(MAX_SHOWN) {
        let _ = writeln!(out, "  on {}: {}", v.group, v.message);
        for index in &v.context {
            let mark = if v.offending.contains(index) {
                '>'
            } else {
                ' '
            };
            if let Some(line) = lines.0.get(index) {
                let _ = writeln!(out, "  {mark} {line}");
            }
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
    for (rule, outcome) in spec.rules.iter().zip(checked.outcomes) {
        out += &status_line(rule, outcome, width);
    }
    let lines = Lines::for_report(checked);
    for (rule, outcome) in spec.rules.iter().zip(checked.outcomes) {
        if !outcome.passed() {
            out.push('\n');
            out += &failure(spec_name, rule, outcome, &lines);
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
