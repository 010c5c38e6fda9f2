//! Evaluation of a [`Spec`]'s rules over the facts the model established from a capture.

use std::collections::BTreeSet;
use std::time::Duration;

use super::observed::{Observed, PhyFacts};
use super::reason::Reason;
use super::spec::{Atom, Body, Bound, Cmp, Pattern, Per, Rule, Selector, Spec, ValueTest};
use crate::event::Event;
use crate::model::{Fact, FactKind, LostReturn};
use crate::render;
use crate::stats::Latencies;

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
    pub reason: Reason,
    /// Indices of the events at fault, in the capture.
    pub offending: Vec<usize>,
    /// Indices of the events to show: the offending ones with a few of the group's around them.
    pub context: Vec<usize>,
    /// For a rule on latencies: the slowest offending call, `(latency, description)` such as
    /// `read_status 2.6ms at 8.856 on phy_sim-0:01`; `u64::MAX` for a call that never returned.
    pub slowest: Option<(u64, String)>,
}

/// One group's facts in order, with its name.
struct Group<'f> {
    name: String,
    /// Keys of its PHYs.
    keys: Vec<String>,
    facts: Vec<&'f Fact>,
    /// Distinct event indices of the facts, ascending.
    events: Vec<usize>,
    /// Time origin of the messages.
    start_ns: u64,
}

/// Checks every rule of `spec` on `events`; one outcome per rule, in spec order. Times in
/// reasons are taken since `start_ns`.
pub fn evaluate(spec: &Spec, events: &[Event], start_ns: u64) -> Vec<Outcome> {
    evaluate_observed(spec, &Observed::of(events), start_ns)
}

/// [`evaluate`] on events already applied to the model.
pub fn evaluate_observed(spec: &Spec, observed: &Observed, start_ns: u64) -> Vec<Outcome> {
    spec.rules
        .iter()
        .map(|rule| check_rule(rule, observed, start_ns))
        .collect()
}

fn check_rule(rule: &Rule, observed: &Observed, start_ns: u64) -> Outcome {
    let groups = groups(rule, observed, start_ns);
    let latency = rule.body.latency_patterns();
    let mut violations: Vec<Violation> = groups
        .iter()
        .flat_map(|g| {
            let mut v = check_group(&rule.body, g);
            v.extend(unjudged(&latency, g, &observed.unfinished));
            v
        })
        .collect();
    if !latency.is_empty() {
        // The slowest first (calls that never returned before all), so that reports show them.
        violations.sort_by_key(|v| std::cmp::Reverse(v.slowest.as_ref().map_or(0, |s| s.0)));
    }
    Outcome {
        groups: groups.into_iter().map(|g| g.name).collect(),
        violations,
    }
}

/// The groups `rule` is checked on: the PHYs its scope selects, one by one or by driver.
fn groups<'o>(rule: &Rule, observed: &'o Observed, start_ns: u64) -> Vec<Group<'o>> {
    let selected = selected_phys(rule, observed);
    match rule.scope.per {
        Per::Phy => selected
            .iter()
            .map(|(key, phy)| phy_group(key, phy, start_ns))
            .collect(),
        Per::Driver => {
            let drivers: BTreeSet<&str> = selected.iter().map(|(_, p)| &*p.driver).collect();
            drivers
                .into_iter()
                .map(|driver| driver_group(driver, &selected, start_ns))
                .collect()
        }
    }
}

/// The PHYs `rule`'s scope selects, by key.
fn selected_phys<'o>(rule: &Rule, observed: &'o Observed) -> Vec<(&'o String, &'o PhyFacts)> {
    observed
        .phys
        .iter()
        .filter(|(key, phy)| match &rule.scope.select {
            None => true,
            Some(Selector::Driver(d)) => phy.driver.contains(d.as_str()),
            Some(Selector::Phy(k)) => key.contains(k.as_str()),
            Some(Selector::PhyId(id)) => phy.phy_id == *id,
        })
        .collect()
}

/// One PHY's group, named by its key and driver.
fn phy_group<'o>(key: &str, phy: &'o PhyFacts, start_ns: u64) -> Group<'o> {
    let name = if phy.driver.is_empty() {
        key.to_owned()
    } else {
        format!("{key} ({})", phy.driver)
    };
    group(
        name,
        vec![key.to_owned()],
        phy.facts.iter().collect(),
        start_ns,
    )
}

/// The group of the `selected` PHYs bound to `driver`: their facts merged in event order.
fn driver_group<'o>(
    driver: &str,
    selected: &[(&String, &'o PhyFacts)],
    start_ns: u64,
) -> Group<'o> {
    let members: Vec<_> = selected
        .iter()
        .filter(|(_, p)| &*p.driver == driver)
        .collect();
    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    let mut facts: Vec<&Fact> = members.iter().flat_map(|(_, p)| p.facts.iter()).collect();
    // Stable: the facts of one event keep their order.
    facts.sort_by_key(|f| f.event);
    let driver = if driver.is_empty() {
        "no driver"
    } else {
        driver
    };
    let name = format!("{driver} ({})", keys.join(", "));
    let keys = keys.iter().map(|k| (*k).to_owned()).collect();
    group(name, keys, facts, start_ns)
}

fn group(name: String, keys: Vec<String>, facts: Vec<&Fact>, start_ns: u64) -> Group<'_> {
    let mut events: Vec<usize> = facts.iter().map(|f| f.event).collect();
    events.dedup();
    Group {
        name,
        keys,
        facts,
        events,
        start_ns,
    }
}

impl Group<'_> {
    /// Positions of the facts matching `p`.
    fn positions(&self, p: &Pattern) -> Vec<usize> {
        (0..self.facts.len())
            .filter(|&i| matches(p, self.facts[i]))
            .collect()
    }

    fn violation(&self, reason: Reason, offending: Vec<usize>) -> Violation {
        let mut context = BTreeSet::new();
        for &event in &offending {
            let at = self.events.partition_point(|&e| e < event);
            let from = at.saturating_sub(CONTEXT);
            let to = (at + CONTEXT + 1).min(self.events.len());
            context.extend(&self.events[from..to]);
        }
        Violation {
            group: self.name.clone(),
            reason,
            offending,
            context: context.into_iter().collect(),
            slowest: None,
        }
    }

    /// The slowest of the returns at `positions`: `(latency, description)`.
    fn slowest(&self, positions: &[usize]) -> Option<(u64, String)> {
        positions
            .iter()
            .filter_map(|&i| match &self.facts[i].kind {
                FactKind::Exit {
                    callback,
                    latency_ns,
                    ..
                } => Some((*latency_ns, callback, i)),
                _ => None,
            })
            .max_by_key(|&(ns, _, _)| ns)
            .map(|(ns, name, i)| {
                let key = self.keys.first().map_or("", String::as_str);
                let on = if self.keys.len() == 1 {
                    format!(" on {key}")
                } else {
                    String::new()
                };
                (
                    ns,
                    format!("{name} {}{}{on}", render::duration(ns), self.at(i)),
                )
            })
    }

    /// ` at 1.234567`: the time of the fact at `pos`, as `dump` shows it.
    fn at(&self, pos: usize) -> String {
        let time = render::relative_time(self.facts[pos].ts_ns, self.start_ns);
        format!(" at {}", time.trim_start())
    }

    /// The time of the fact at `pos` since the capture started.
    fn since_start(&self, pos: usize) -> u64 {
        self.facts[pos].ts_ns.saturating_sub(self.start_ns)
    }
}

/// The first position in `positions` after `after`.
fn next_after(positions: &[usize], after: usize) -> Option<usize> {
    positions
        .get(positions.partition_point(|&p| p <= after))
        .copied()
}

fn check_group(body: &Body, g: &Group<'_>) -> Vec<Violation> {
    match body {
        Body::Never(p) => g.never(p),
        Body::Percentile {
            percentile,
            pattern,
            cmp,
            bound,
        } => g
            .percentile(*percentile, pattern, *cmp, *bound)
            .into_iter()
            .collect(),
        Body::Count { pattern, bound } => g.count(pattern, *bound).into_iter().collect(),
        Body::BeforeFirst { first, then } => g.before_first(first, then).into_iter().collect(),
        Body::After {
            trigger,
            steps,
            within,
        } => g.after(trigger, steps, *within),
        Body::Sequence { steps, within } => g.sequence(steps, *within).into_iter().collect(),
    }
}

/// Whether `p` matches returns by their latency (`exit C latency > T`): its violations name
/// the slowest call.
fn judges_latency(p: &Pattern) -> bool {
    matches!(
        p.atom,
        Atom::Exit {
            latency: Some(_),
            ..
        }
    )
}

/// The check of each kind of rule body on one group.
impl Group<'_> {
    /// `never A`: each A is a violation.
    fn never(&self, p: &Pattern) -> Vec<Violation> {
        self.positions(p)
            .into_iter()
            .map(|i| {
                let mut v = self.violation(
                    Reason::Happened {
                        pattern: p.clone(),
                        at_ns: self.since_start(i),
                    },
                    vec![self.facts[i].event],
                );
                if judges_latency(p) {
                    v.slowest = self.slowest(&[i]);
                }
                v
            })
            .collect()
    }

    /// `pN exit C latency OP T`: the percentile of the latencies of the returns `pattern`
    /// matches compares to `bound`; a violation shows the slowest calls, which moved it.
    fn percentile(
        &self,
        percentile: u8,
        pattern: &Pattern,
        cmp: Cmp,
        bound: Duration,
    ) -> Option<Violation> {
        let returns: Vec<(u64, usize)> = self
            .positions(pattern)
            .into_iter()
            .filter_map(|i| match self.facts[i].kind {
                FactKind::Exit { latency_ns, .. } => Some((latency_ns, i)),
                _ => None,
            })
            .collect();
        let mut latencies = Latencies::default();
        for &(latency_ns, _) in &returns {
            latencies.record(latency_ns);
        }
        let value = latencies.percentile(f64::from(percentile))?;
        let limit = duration_ns(bound);
        if cmp.holds(value, limit) {
            return None;
        }
        let mut slow = returns;
        slow.sort_by_key(|&(ns, i)| (std::cmp::Reverse(ns), i));
        slow.truncate(CONTEXT);
        let positions: Vec<usize> = slow.iter().map(|&(_, i)| i).collect();
        let mut offending: Vec<usize> = positions.iter().map(|&i| self.facts[i].event).collect();
        offending.sort_unstable();
        let mut v = self.violation(
            Reason::Percentile {
                percentile,
                pattern: pattern.clone(),
                count: latencies.count(),
                value_ns: value,
                cmp,
                limit_ns: limit,
            },
            offending,
        );
        v.slowest = self.slowest(&positions);
        Some(v)
    }

    /// `count A at least|at most|exactly N`; a violation shows the first matches, or the first
    /// ones beyond the bound.
    fn count(&self, pattern: &Pattern, bound: Bound) -> Option<Violation> {
        let found = self.positions(pattern);
        let n = found.len() as u64;
        if bound.holds(n) {
            return None;
        }
        let shown: Vec<usize> = match bound {
            Bound::AtMost(b) | Bound::Exactly(b) if n > b => found
                .iter()
                .skip(b as usize)
                .take(CONTEXT)
                .copied()
                .collect(),
            _ => found.iter().take(CONTEXT).copied().collect(),
        };
        let offending = shown.iter().map(|&i| self.facts[i].event).collect();
        let mut v = self.violation(
            Reason::Count {
                pattern: pattern.clone(),
                count: n,
                bound,
            },
            offending,
        );
        if judges_latency(pattern) {
            v.slowest = self.slowest(&found);
        }
        Some(v)
    }

    /// `A before first B`: the first B, if no A came before it.
    fn before_first(&self, first: &Pattern, then: &Pattern) -> Option<Violation> {
        let &b = self.positions(then).first()?;
        if (0..b).any(|i| matches(first, self.facts[i])) {
            return None;
        }
        Some(self.violation(
            Reason::NotPreceded {
                first: first.clone(),
                then: then.clone(),
                at_ns: self.since_start(b),
            },
            vec![self.facts[b].event],
        ))
    }

    /// `after A: B then C [within T]`: each A not followed by all the steps (in time).
    fn after(
        &self,
        trigger: &Pattern,
        steps: &[Pattern],
        within: Option<Duration>,
    ) -> Vec<Violation> {
        let steps_at: Vec<Vec<usize>> = steps.iter().map(|s| self.positions(s)).collect();
        self.positions(trigger)
            .into_iter()
            .filter_map(|t| {
                let (matched, missing_index) = follow(self, t, steps, &steps_at, within);
                let missing_index = missing_index?;
                let mut offending = vec![self.facts[t].event];
                offending.extend(matched.iter().map(|&i| self.facts[i].event));
                let last = matched.last().copied().unwrap_or(t);
                let trigger = trigger.clone();
                let at_ns = self.since_start(t);
                let after = (missing_index > 0)
                    .then(|| (steps[missing_index - 1].clone(), self.since_start(last)));
                let missing = steps[missing_index].clone();
                let reason = match (within, next_after(&steps_at[missing_index], last)) {
                    (Some(limit), Some(late)) => Reason::StepLate {
                        trigger,
                        at_ns,
                        missing,
                        after,
                        within_ns: duration_ns(limit),
                        came_ns: elapsed(self, t, late),
                    },
                    (within, _) => Reason::StepMissing {
                        trigger,
                        at_ns,
                        missing,
                        after,
                        within_ns: within.map(duration_ns),
                    },
                };
                Some(self.violation(reason, offending))
            })
            .collect()
    }

    /// `sequence A then B … [within T]`: unless the steps happened in order (in time) at
    /// least once, the furthest the sequence got.
    fn sequence(&self, steps: &[Pattern], within: Option<Duration>) -> Option<Violation> {
        let steps_at: Vec<Vec<usize>> = steps.iter().map(|s| self.positions(s)).collect();
        let mut best: Vec<usize> = Vec::new();
        let mut fastest: Option<u64> = None;
        for &start in &steps_at[0] {
            let (rest, missing) = follow(self, start, &steps[1..], &steps_at[1..], None);
            let mut matched = vec![start];
            matched.extend(rest);
            if missing.is_none() {
                let took = elapsed(self, start, *matched.last().unwrap_or(&start));
                if within.is_none_or(|limit| took <= duration_ns(limit)) {
                    return None;
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
        let reason = match (fastest, within) {
            (Some(took), Some(limit)) => Reason::SequenceTooSlow {
                within_ns: duration_ns(limit),
                fastest_ns: took,
            },
            _ => match best.len() {
                0 => Reason::SequenceNotStarted {
                    first: steps[0].clone(),
                },
                n => Reason::SequenceStopped {
                    last: steps[n - 1].clone(),
                    at_ns: self.since_start(best[n - 1]),
                    missing: steps[n].clone(),
                },
            },
        };
        let offending = best.iter().map(|&i| self.facts[i].event).collect();
        Some(self.violation(reason, offending))
    }
}

/// Matches `steps` one after the other from position `from`, each at its earliest, within
/// `within` of `from`; returns the positions matched and the index of the first step missing.
fn follow(
    g: &Group<'_>,
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

fn elapsed(g: &Group<'_>, from: usize, to: usize) -> u64 {
    g.facts[to].ts_ns.saturating_sub(g.facts[from].ts_ns)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether fact `f` matches pattern `p`.
pub fn matches(p: &Pattern, f: &Fact) -> bool {
    let atom = match (&p.atom, &f.kind) {
        (Atom::Enter(name), FactKind::Enter(n)) => name.matches(n),
        (
            Atom::Exit {
                callback,
                ret,
                latency,
            },
            FactKind::Exit {
                callback: n,
                ret: r,
                latency_ns,
            },
        ) => {
            callback.matches(n)
                && ret.is_none_or(|(cmp, v)| cmp.holds(*r, v))
                && latency.is_none_or(|(cmp, limit)| cmp.holds(*latency_ns, duration_ns(limit)))
        }
        (
            Atom::Mdio { op, reg, value },
            FactKind::Mdio {
                op: o,
                devad,
                reg: r,
                value: v,
                error,
            },
        ) => {
            op.is_none_or(|op| op == *o)
                && reg.contains(*devad, *r)
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
            to.as_str() == t.as_ref()
                && from
                    .as_deref()
                    .is_none_or(|from| f.as_deref() == Some(from))
        }
        (Atom::Link(up), FactKind::Link(u)) => up == u,
        (Atom::Mac(name), FactKind::Mac(n)) => name == n,
        (Atom::Kmsg { text, level }, FactKind::Kmsg { text: t, level: l }) => {
            text.as_deref().is_none_or(|text| t.contains(text))
                && level.is_none_or(|level| l.is_some_and(|l| l <= level))
        }
        (Atom::Error, FactKind::Exit { ret, .. }) => *ret < 0,
        (Atom::Error, FactKind::Mdio { error, .. }) => error.is_some(),
        _ => false,
    };
    atom && happened_where(p, f)
}

/// Whether fact `f` happened where pattern `p` asks: `inside` its callbacks, `while` its states.
fn happened_where(p: &Pattern, f: &Fact) -> bool {
    p.inside
        .iter()
        .all(|name| f.inside.iter().any(|n| name.matches(n)))
        && p.states
            .as_ref()
            .is_none_or(|s| s.contains(f.state.as_deref()))
}

/// A rule on latencies cannot judge a call whose return was lost: each call of the group that
/// one of its `patterns` would judge (same callback; `inside` and `while state` as at the
/// entry) and that never returned is a violation of its own, never silently left out.
fn unjudged(patterns: &[&Pattern], g: &Group<'_>, lost: &[LostReturn]) -> Vec<Violation> {
    if patterns.is_empty() {
        return Vec::new();
    }
    lost.iter()
        .filter(|l| g.keys.contains(&l.key))
        .filter(|l| {
            let entered = l.open.enter_event;
            let at = g.facts.partition_point(|f| f.event < entered);
            let entry = g.facts[at..]
                .iter()
                .take_while(|f| f.event == entered)
                .find(|f| matches!(f.kind, FactKind::Enter(_)));
            patterns.iter().any(|p| {
                let Atom::Exit { callback, .. } = &p.atom else {
                    return false;
                };
                callback.matches(&l.open.callback.name)
                    && entry.is_some_and(|f| happened_where(p, f))
            })
        })
        .map(|l| {
            let name = &l.open.callback.name;
            let at = render::relative_time(l.open.enter_ns, g.start_ns);
            let ran_ns = l.known_at_ns.saturating_sub(l.open.enter_ns);
            let ran = render::duration(ran_ns);
            let mut v = g.violation(
                Reason::NeverReturned {
                    callback: name.to_string(),
                    at_ns: l.open.enter_ns.saturating_sub(g.start_ns),
                    why: l.why,
                    ran_ns,
                },
                vec![l.open.enter_event],
            );
            v.slowest = Some((
                u64::MAX,
                format!(
                    "{name} entered at {} (no return, at least {ran}) on {}",
                    at.trim_start(),
                    l.key
                ),
            ));
            v
        })
        .collect()
}
