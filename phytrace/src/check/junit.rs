//! JUnit XML for CI systems: one `testsuite` per capture, one `testcase` per rule.

use std::fmt::Write as _;

use super::report::{self, Checked};
use super::spec::Spec;

/// Escapes `text` for XML content and attribute values; drops characters XML 1.0 forbids.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || matches!(c, '\u{fffe}' | '\u{ffff}') => {}
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document of `spec` checked on every capture of `runs`.
pub fn document(spec_name: &str, spec: &Spec, runs: &[Checked<'_>]) -> String {
    let tests = spec.rules.len() * runs.len();
    let failures: usize = runs.iter().map(Checked::failures).sum();
    let skipped: usize = runs.iter().map(Checked::skipped).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"phytrace check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let class = escape(spec_name);
    for run in runs {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            escape(run.name),
            spec.rules.len(),
            run.failures(),
            run.skipped()
        );
        for (rule, outcome) in spec.rules.iter().zip(&run.outcomes) {
            let name = escape(&rule.name);
            let _ = write!(out, "    <testcase classname=\"{class}\" name=\"{name}\"");
            if outcome.not_applicable() {
                out += ">\n      <skipped message=\"no PHY in scope\"/>\n    </testcase>\n";
            } else if outcome.passed() {
                out += "/>\n";
            } else {
                let mut message = match outcome.violations.as_slice() {
                    [only] => only.reason.to_string(),
                    all => format!("{} violations", all.len()),
                };
                // Latency rules name their slowest offending calls (violations come slowest
                // first).
                let slowest: Vec<&str> = outcome
                    .violations
                    .iter()
                    .filter_map(|v| v.slowest.as_ref().map(|s| s.1.as_str()))
                    .take(3)
                    .collect();
                if !slowest.is_empty() {
                    message += &format!("; slowest: {}", slowest.join(", "));
                }
                let body = report::failure(spec_name, rule, outcome, run);
                let _ = write!(
                    out,
                    ">\n      <failure type=\"violation\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    escape(&message),
                    escape(&body)
                );
            }
        }
        out += "  </testsuite>\n";
    }
    out += "</testsuites>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(
            escape("a<b>&\"c\"'\u{1}\u{7}\tok\n"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;\tok\n"
        );
    }
}
