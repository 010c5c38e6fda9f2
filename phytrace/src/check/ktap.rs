//! KTAP version 1, the kernel's test output (`Documentation/dev-tools/ktap.rst`), which
//! kselftest, KUnit and the kernel's CI systems read: a test per rule, with a subtest per PHY
//! (or driver, `per driver`) it checked. A PHY's violations are diagnostic lines before its
//! result; a rule whose scope matched no PHY is skipped. With several captures, each capture is
//! a test, its rules its subtests.

use std::fmt::{self, Write as _};

use super::eval::{Outcome, Violation};
use super::report::{self, Checked, MAX_SHOWN};
use super::spec::Spec;

/// One level of nesting.
const INDENT: &str = "  ";

/// Why a rule, or a capture where no rule applied, is skipped.
const NO_PHY: &str = "no PHY in scope";

/// A test's result line.
enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// The KTAP document of `spec` checked on every capture of `runs`.
pub fn document(spec_name: &str, spec: &Spec, runs: &[Checked<'_>]) -> String {
    let mut out = Writer::default();
    match runs {
        [run] => out.rules(spec_name, spec, run),
        runs => {
            out.plan(runs.len());
            for (index, run) in runs.iter().enumerate() {
                out.nested(|out| out.rules(spec_name, spec, run));
                let verdict = if run.failures() > 0 {
                    Verdict::Fail
                } else if run.skipped() == spec.rules.len() {
                    Verdict::Skip
                } else {
                    Verdict::Pass
                };
                out.result(index + 1, run.name, &verdict);
            }
        }
    }
    out.text
}

/// KTAP text being written, at a nesting depth.
#[derive(Default)]
struct Writer {
    text: String,
    depth: usize,
}

impl Writer {
    fn line(&mut self, line: impl fmt::Display) {
        for _ in 0..self.depth {
            self.text.push_str(INDENT);
        }
        let _ = writeln!(self.text, "{line}");
    }

    /// The version line and the plan of `tests` tests.
    fn plan(&mut self, tests: usize) {
        self.line("KTAP version 1");
        self.line(format_args!("1..{tests}"));
    }

    /// `text` on diagnostic lines, one per line of it.
    fn diagnostic(&mut self, text: &str) {
        for line in text.lines() {
            self.line(format_args!("# {line}"));
        }
    }

    /// The result line of test `number`, called `name`.
    fn result(&mut self, number: usize, name: &str, verdict: &Verdict) {
        let name = description(name);
        match verdict {
            Verdict::Pass => self.line(format_args!("ok {number} {name}")),
            Verdict::Fail => self.line(format_args!("not ok {number} {name}")),
            Verdict::Skip => self.line(format_args!("ok {number} {name} # SKIP {NO_PHY}")),
        }
    }

    /// Writes `subtests` one level deeper.
    fn nested(&mut self, subtests: impl FnOnce(&mut Self)) {
        self.depth += 1;
        subtests(self);
        self.depth -= 1;
    }

    /// A test per rule of `spec`, as checked on `run`.
    fn rules(&mut self, spec_name: &str, spec: &Spec, run: &Checked<'_>) {
        self.plan(spec.rules.len());
        for (index, (rule, outcome)) in spec.rules.iter().zip(&run.outcomes).enumerate() {
            let verdict = if outcome.not_applicable() {
                Verdict::Skip
            } else {
                self.nested(|out| out.groups(outcome, run));
                if outcome.passed() {
                    Verdict::Pass
                } else {
                    let n = outcome.violations.len();
                    self.diagnostic(&format!(
                        "{}: {n} violation{}",
                        report::location(spec_name, rule),
                        if n == 1 { "" } else { "s" }
                    ));
                    Verdict::Fail
                }
            };
            self.result(index + 1, &rule.name, &verdict);
        }
    }

    /// A subtest per group the rule was checked on, its violations before its result.
    fn groups(&mut self, outcome: &Outcome, run: &Checked<'_>) {
        self.plan(outcome.groups.len());
        for (index, group) in outcome.groups.iter().enumerate() {
            let violations: Vec<&Violation> = outcome
                .violations
                .iter()
                .filter(|v| v.group == *group)
                .collect();
            for v in violations.iter().take(MAX_SHOWN) {
                self.diagnostic(&v.reason.to_string());
                for line in report::event_lines(v, run) {
                    self.diagnostic(&line);
                }
            }
            if let Some(more) = violations.len().checked_sub(MAX_SHOWN).filter(|&n| n > 0) {
                self.diagnostic(&format!("… and {more} more violations"));
            }
            let verdict = if violations.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            self.result(index + 1, group, &verdict);
        }
    }
}

/// `name` as a KTAP test description: one line, without `#` (which starts a directive).
fn description(name: &str) -> String {
    name.replace('#', "_").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::description;

    #[test]
    fn descriptions_hold_no_directive_and_no_line_break() {
        assert_eq!(description("rule #1\nof 2"), "rule _1 of 2");
    }
}
