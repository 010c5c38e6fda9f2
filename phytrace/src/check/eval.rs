//! Evaluation of a [`Spec`]'s rules over the facts of a capture.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::facts::{self, Fact, FactKind, PhyFacts};
use super::spec::{Atom, Body, Bound, Pattern, Per, Rule, Selector, Spec, ValueTest};
use crate::event::Event;
use crate::render;

/// Events shown before and after each offending event.
pub const CONTEXT: usize = 3;

/// The result of one rule on one capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The groups checked (PHYs, or drivers with `per driver`); empty when the scope matched
    /// nothing, and the rule did not apply.
    pub groups: Vec<String>,
    /// What went wrong, in capture order per group.
    pub violations: Vec<Violation>,
}

impl Outcome {
    /// The rule held on every group.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The rule's scope matched no PHY.
    pub fn not_applicable(&self) -> bool {
        self.groups.is_empty()
    }
}

/// One way a rule failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The PHY (or driver) it failed on.
    pub group: String,
    /// What happened, or did not.
    pub message: String,
    /// Indices of the events at fault, in the capture.
    pub offending: Vec<usize>,
    /// Indices of the events to show: the offending ones with a few of the group's around them.
    pub context: Vec<usize>,
}

/// One group's facts in order, with its name.
struct Group<'f, 'a> {
    name: String,
    facts: Vec<&'f Fact<'a>>,
    /// Distinct event indices of the facts, ascending.
    events: Vec<usize>,
    /// Time origin of the messages.
    start_ns: u64,
}

/// Checks every rule of `spec` on `events`; one outcome per rule, in spec order. Times in
/// messages are seconds since `start_ns`, as `dump` shows them.
pub fn evaluate(spec: &Spec, events: &[Event], start_ns: u64) -> Vec<Outcome> {
    let phys = facts::per_phy(events);
    spec.rules
        .iter()
        .map(|rule| check_rule(rule, &phys, start_ns))
        .collect()
}

fn check_rule(rule: &Rule, phys: &BTreeMap<String, PhyFacts<'_>>, start_ns: u64) -> Outcome {
    let selected: Vec<(&String, &PhyFacts<'_>)> = phys
        .iter()
        .filter(|(key, phy)| match &rule.scope.select {
            None => true,
            Some(Selector::Driver(d)) => phy.driver.contains(d.as_str()),
            Some(Selector::Phy(k)) => key.contains(k.as_str()),
            Some(Selector::PhyId(id)) => phy.phy_id == *id,
        })
        .collect();
    let groups: Vec<Group<'_, '_>> = match rule.scope.per {
        Per::Phy => selected
            .iter()
            .map(|(key, phy)| {
                let name = if phy.driver.is_empty() {
                    (*key).clone()
                } else {
                    format!("{key} ({})", phy.driver)
                };
                group(name, phy.facts.iter().collect(), start_ns)
            })
            .collect(),
        Per::Driver => {
            let drivers: BTreeSet<&str> = selected.iter().map(|(_, p)| p.driver).collect();
            drivers
                .into_iter()
                .map(|driver| {
                    let members: Vec<_> = selected
                        .iter()
                        .filter(|(_, p)| p.driver == driver)
                        .collect();
                    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
                    let mut facts: Vec<&Fact<'_>> =
                        members.iter().flat_map(|(_, p)| p.facts.iter()).collect();
                    // Stable: the facts of one event keep their order.
                    facts.sort_by_key(|f| f.event);
                    let driver = if driver.is_empty() {
                        "no driver"
                    } else {
                        driver
                    };
                    group(format!("{driver} ({})", keys.join(", ")), facts, start_ns)
                })
                .collect()
        }
    };
    let violations = groups
        .iter()
        .flat_map(|g| check_group(&rule.body, g))
        .collect();
    Outcome {
        groups: groups.into_iter().map(|g| g.name).collect(),
        violations,
    }
}

fn group<'f, 'a>(name: String, facts: Vec<&'f Fact<'a>>, start_ns: u64) -> Group<'f, 'a> {
    let mut events: Vec<usize> = facts.iter().map(|f| f.event).collect();
    events.dedup();
    Group {
        name,
        facts,
        events,
        start_ns,
    }
}

impl Group<'_, '_> {
    /// Positions of the facts matching `p`.
    fn positions(&self, p: &Pattern) -> Vec<usize> {
        (0..self.facts.len())
            .filter(|&i| matches(p, self.facts[i]))
            .collect()
    }

    fn violation(&self, message: String, offending: Vec<usize>) -> Violation {
        let mut context = BTreeSet::new();
        for &event in &offending {
            let at = self.events.partition_point(|&e| e < event);
            let from = at.saturating_sub(CONTEXT);
            let to = (at + CONTEXT + 1).min(self.events.len());
            context.extend(&self.events[from..to]);
        }
        Violation {
            group: self.name.clone(),
            message,
            offending,
            context: context.into_iter().collect(),
        }
    }

    /// ` at 1.234567`: the time of the fact at `pos`, as `dump` shows it.
    fn at(&self, pos: usize) -> String {
        let time = render::relative_time(self.facts[pos].ts_ns, self.start_ns);
        format!(" at {}", time.trim_start())
    }
}

/// The first position in `positions` after `after`.
fn next_after(positions: &[usize], after: usize) -> Option<usize> {
    positions
        .get(positions.partition_point(|&p| p <= after))
        .copied()
}

fn check_group(body: &Body, g: &Group<'_, '_>) -> Vec<Violation> {
    match body {
        Body::Never(p) => g
            .positions(p)
            .into_iter()
            .map(|i| g.violation(format!("`{p}` happened{}", g.at(i)), vec![g.facts[i].event]))
            .collect(),
        Body::Count { pattern, bound } => {
            let found = g.positions(pattern);
            let n = found.len() as u64;
            if bound.holds(n) {
                return Vec::new();
            }
            let shown: Vec<usize> = match bound {
                Bound::AtMost(b) | Bound::Exactly(b) if n > *b => found
                    .iter()
                    .skip(*b as usize)
                    .take(CONTEXT)
                    .copied()
                    .collect(),
                _ => found.iter().take(CONTEXT).copied().collect(),
            };
            let offending = shown.iter().map(|&i| g.facts[i].event).collect();
            vec![g.violation(
                format!(
                    "`{pattern}` happened {n} time{}, expected {bound}",
                    if n == 1 { "" } else { "s" }
                ),
                offending,
            )]
        }
        Body::BeforeFirst { first, then } => {
            let Some(&b) = g.positions(then).first() else {
                return Vec::new();
            };
            if (0..b).any(|i| matches(first, g.facts[i])) {
                return Vec::new();
            }
            vec![g.violation(
                format!("`{then}` happened{} before any `{first}`", g.at(b)),
                vec![g.facts[b].event],
            )]
        }
        Body::After {
            trigger,
            steps,
            within,
        } => {
            let steps_at: Vec<Vec<usize>> = steps.iter().map(|s| g.positions(s)).collect();
            g.positions(trigger)
                .into_iter()
                .filter_map(|t| {
                    let (matched, missing) = follow(g, t, steps, &steps_at, *within);
                    let missing = missing?;
                    let mut offending = vec![g.facts[t].event];
                    offending.extend(matched.iter().map(|&i| g.facts[i].event));
                    let last = matched.last().copied().unwrap_or(t);
                    let mut message = format!(
                        "`{trigger}`{} was not followed by `{}`",
                        g.at(t),
                        steps[missing]
                    );
                    if missing > 0 {
                        message += &format!(" after `{}`{}", steps[missing - 1], g.at(last));
                    }
                    message += &match (within, next_after(&steps_at[missing], last)) {
                        (Some(limit), Some(late)) => format!(
                            " within {} (it came {} after the trigger)",
                            render::duration(duration_ns(*limit)),
                            render::duration(elapsed(g, t, late))
                        ),
                        (Some(limit), None) => format!(
                            " within {} (not before the end of the capture)",
                            render::duration(duration_ns(*limit))
                        ),
                        (None, _) => " (not before the end of the capture)".to_owned(),
                    };
                    Some(g.violation(message, offending))
                })
                .collect()
        }
        Body::Sequence { steps, within } => {
            let steps_at: Vec<Vec<usize>> = steps.iter().map(|s| g.positions(s)).collect();
            let mut best: Vec<usize> = Vec::new();
            let mut fastest: Option<u64> = None;
            for &start in &steps_at[0] {
                let (rest, missing) = follow(g, start, &steps[1..], &steps_at[1..], None);
                let mut matched = vec![start];
                matched.extend(rest);
                if missing.is_none() {
                    let took = elapsed(g, start, *matched.last().unwrap_or(&start));
                    if within.is_none_or(|limit| took <= duration_ns(limit)) {
                        return Vec::new();
                    }
                    fastest = Some(fastest.map_or(took, |f| f.min(took)));
                }
                let stop = missing.is_some();
                if matched.len() > best.len() {
                    best = matched;
                }
                if stop {
                    // Steps match at their earliest: a later start cannot get further.
                    break;
                }
            }
            let message = match (fastest, within) {
                (Some(took), Some(limit)) => format!(
                    "the sequence happened, but never within {} (fastest: {})",
                    render::duration(duration_ns(*limit)),
                    render::duration(took)
                ),
                _ => match best.len() {
                    0 => format!(
                        "`{}` never happened, so the sequence did not start",
                        steps[0]
                    ),
                    n => format!(
                        "the sequence stopped after `{}`{}: `{}` never followed",
                        steps[n - 1],
                        g.at(best[n - 1]),
                        steps[n]
                    ),
                },
            };
            let offending = best.iter().map(|&i| g.facts[i].event).collect();
            vec![g.violation(message, offending)]
        }
    }
}

/// Matches `steps` one after the other from position `from`, each at its earliest, within
/// `within` of `from`; returns the positions matched and the index of the first step missing.
fn follow(
    g: &Group<'_, '_>,
    from: usize,
    steps: &[Pattern],
    steps_at: &[Vec<usize>],
    within: Option<Duration>,
) -> (Vec<usize>, Option<usize>) {
    let mut matched = Vec::with_capacity(steps.len());
    let mut last = from;
    for (k, positions) in steps_at.iter().enumerate() {
        match next_after(positions, last) {
            Some(p) if within.is_none_or(|limit| elapsed(g, from, p) <= duration_ns(limit)) => {
                matched.push(p);
                last = p;
            }
            _ => return (matched, Some(k)),
        }
    }
    (matched, None)
}

fn elapsed(g: &Group<'_, '_>, from: usize, to: usize) -> u64 {
    g.facts[to].ts_ns.saturating_sub(g.facts[from].ts_ns)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether fact `f` matches pattern `p`.
pub fn matches(p: &Pattern, f: &Fact<'_>) -> bool {
    let atom = match (&p.atom, &f.kind) {
        (Atom::Enter(name), FactKind::Enter(n)) => name.matches(n),
        (Atom::Exit { callback, ret }, FactKind::Exit(n, r)) => {
            callback.matches(n) && ret.is_none_or(|(cmp, v)| cmp.holds(*r, v))
        }
        (
            Atom::Mdio { op, reg, value },
            FactKind::Mdio {
                op: o,
                reg: r,
                value: v,
                error,
            },
        ) => {
            op.is_none_or(|op| op == *o)
                && reg.is_none_or(|reg| reg == *r)
                && match value {
                    None => true,
                    Some(ValueTest::Failed) => error.is_some(),
                    Some(ValueTest::Masked {
                        mask,
                        expect,
                        negated,
                    }) => error.is_none() && ((v & mask == *expect) != *negated),
                }
        }
        (Atom::State { from, to }, FactKind::State { from: f, to: t }) => {
            to == t && from.as_ref().is_none_or(|from| Some(from.as_str()) == *f)
        }
        (Atom::Link(up), FactKind::Link(u)) => up == u,
        (Atom::Error, FactKind::Exit(_, ret)) => *ret < 0,
        (Atom::Error, FactKind::Mdio { error, .. }) => error.is_some(),
        _ => false,
    };
    atom && p
        .inside
        .iter()
        .all(|name| f.inside.iter().any(|n| name.matches(n)))
        && p.states.as_ref().is_none_or(|s| s.contains(f.state))
}
