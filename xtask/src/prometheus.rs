//! The alert rules' check: `promtool check rules` on `contrib/prometheus/phytrace.rules.yml`
//! (syntax, PromQL, templates), then `promtool test rules` on its unit tests, where each alert
//! fires on one board's series and not on another's.

use std::process::Command;

use anyhow::{Result, ensure};

use crate::{paths, run};

/// The rules and their tests, from the workspace.
const RULES: &str = "contrib/prometheus/phytrace.rules.yml";
const TESTS: &str = "contrib/prometheus/phytrace.rules.test.yml";

pub fn run() -> Result<()> {
    let started = run::step("alert rules: promtool check rules, promtool test rules");
    let checks: [(&str, &[&str]); 2] = [
        ("check rules", &["check", "rules", RULES]),
        ("test rules", &["test", "rules", TESTS]),
    ];
    let mut failed = 0;
    for (name, args) in checks {
        match run::status(
            Command::new("promtool")
                .args(args)
                .current_dir(paths::workspace()),
        ) {
            Ok(()) => eprintln!("    promtool {name}: ok"),
            Err(err) => {
                failed += 1;
                eprintln!("    promtool {name}: FAILED: {err:#}");
            }
        }
    }
    eprintln!(
        "alert rules: {} passed, {failed} failed",
        checks.len() - failed
    );
    ensure!(failed == 0, "{failed} promtool checks of {RULES} failed");
    run::done("alert rules", started);
    Ok(())
}
