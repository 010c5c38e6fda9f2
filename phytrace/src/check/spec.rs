//! The rule language: its syntax tree and its parser (grammar in `docs/check.md`).
//!
//! One rule per line, `#` starts a comment:
//!
//! ```text
//! rule "reset before poll": exit soft_reset before first enter read_status
//! rule "no errors": never exit any error
//! rule "re-init on NOLINK" for driver "AX88772A": after state NOLINK: enter link_change_notify then enter soft_reset within 1s
//! ```

use std::fmt;
use std::time::Duration;

use super::lexer::{Spanned, Tok, tokenize};
use crate::event::{KmsgLevel, MdioOp};
use crate::registers;

/// A parse error, with the 1-based line and column it was found at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct SpecError {
    /// Line number.
    pub line: usize,
    /// Column, in characters.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl SpecError {
    /// An error at `line`:`column`.
    pub fn new(line: usize, column: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            column,
            message: message.into(),
        }
    }
}

/// A parsed spec: its rules in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The rules.
    pub rules: Vec<Rule>,
}

/// One named rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its name, unique in the spec.
    pub name: String,
    /// Line it is defined on.
    pub line: usize,
    /// Which PHYs it applies to, and how they are grouped.
    pub scope: Scope,
    /// What must hold.
    pub body: Body,
}

/// Which PHYs a rule checks and how their events are grouped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// Only these PHYs (all when `None`).
    pub select: Option<Selector>,
    /// Each PHY separately, or the PHYs of each driver together.
    pub per: Per,
}

/// A choice of PHYs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// The bound driver's name contains this text.
    Driver(String),
    /// The `bus:addr` key contains this text.
    Phy(String),
    /// This PHY ID.
    PhyId(u32),
}

/// How the events of the selected PHYs are grouped before checking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Per {
    /// Each PHY is checked on its own.
    #[default]
    Phy,
    /// The PHYs bound to the same driver are checked as one stream.
    Driver,
}

/// What a rule requires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// `A before first B`: if B happens, A happened earlier.
    BeforeFirst {
        /// A.
        first: Pattern,
        /// B.
        then: Pattern,
    },
    /// `after A: B then C [within T]`: every A is followed by B, then C (within T of A).
    After {
        /// A.
        trigger: Pattern,
        /// B, C, …
        steps: Vec<Pattern>,
        /// Longest time from A to the last step.
        within: Option<Duration>,
    },
    /// `never A`.
    Never(Pattern),
    /// `sequence A then B … [within T]`: A, B, … happen in this order at least once.
    Sequence {
        /// A, B, …
        steps: Vec<Pattern>,
        /// Longest time from the first to the last.
        within: Option<Duration>,
    },
    /// `count A at least|at most|exactly N`.
    Count {
        /// What is counted.
        pattern: Pattern,
        /// The bound.
        bound: Bound,
    },
    /// `pN exit C latency OP T`: the Nth percentile of the latencies of the returns `pattern`
    /// matches (its latency condition taken out) compares to T.
    Percentile {
        /// N, 1 to 100 (100: the maximum).
        percentile: u8,
        /// The returns whose latencies are taken.
        pattern: Pattern,
        /// The comparison.
        cmp: Cmp,
        /// T.
        bound: Duration,
    },
}

impl Body {
    /// The callbacks whose latency the rule judges (`exit C latency …` patterns and
    /// percentiles); a call of one of these whose return was lost cannot be judged.
    pub fn latency_patterns(&self) -> Vec<&Pattern> {
        let all: Vec<&Pattern> = match self {
            Self::Percentile { pattern, .. } => return vec![pattern],
            Self::BeforeFirst { first, then } => vec![first, then],
            Self::After { trigger, steps, .. } => std::iter::once(trigger).chain(steps).collect(),
            Self::Never(p) | Self::Count { pattern: p, .. } => vec![p],
            Self::Sequence { steps, .. } => steps.iter().collect(),
        };
        all.into_iter()
            .filter(|p| {
                matches!(
                    p.atom,
                    Atom::Exit {
                        latency: Some(_),
                        ..
                    }
                )
            })
            .collect()
    }
}

/// A bound on a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// `at least N`.
    AtLeast(u64),
    /// `at most N`.
    AtMost(u64),
    /// `exactly N`.
    Exactly(u64),
}

impl Bound {
    /// Whether `n` satisfies the bound.
    pub fn holds(self, n: u64) -> bool {
        match self {
            Self::AtLeast(b) => n >= b,
            Self::AtMost(b) => n <= b,
            Self::Exactly(b) => n == b,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AtLeast(n) => write!(f, "at least {n}"),
            Self::AtMost(n) => write!(f, "at most {n}"),
            Self::Exactly(n) => write!(f, "exactly {n}"),
        }
    }
}

/// An event pattern: an event kind with conditions, and where it must happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The event.
    pub atom: Atom,
    /// `inside C`: callbacks that must be running on the same thread (outer ones too).
    pub inside: Vec<Name>,
    /// `while state S|T` (or `while state not S`).
    pub states: Option<StateSet>,
    /// Source text, for messages.
    pub text: String,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The registers an MDIO pattern names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registers {
    /// `any`: every register, Clause 22 or Clause 45.
    Any,
    /// A Clause 22 register: `BMSR`, `1`.
    C22(u16),
    /// Registers `first` to `last` of MMD `devad`: `pcs.STAT1`, `3.0x8000..0xBFFF`, or the
    /// whole MMD (`pcs`, `pcs.any`).
    C45 {
        /// The MMD.
        devad: u8,
        /// First register.
        first: u16,
        /// Last register.
        last: u16,
    },
}

impl Registers {
    /// Whether an access to register `reg` (of MMD `devad` for Clause 45) is one of them.
    pub fn contains(&self, devad: Option<u8>, reg: u16) -> bool {
        match *self {
            Self::Any => true,
            Self::C22(r) => devad.is_none() && r == reg,
            Self::C45 {
                devad: d,
                first,
                last,
            } => devad == Some(d) && (first..=last).contains(&reg),
        }
    }

    /// The one register named, if it is one.
    fn single(&self) -> Option<registers::Register> {
        match *self {
            Self::Any => None,
            Self::C22(reg) => Some(registers::Register::C22(reg)),
            Self::C45 { devad, first, last } => {
                (first == last).then_some(registers::Register::C45 { devad, reg: first })
            }
        }
    }
}

/// A callback name, or `any`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Name {
    /// Any callback.
    Any,
    /// This one (`read_status`).
    Is(String),
}

impl Name {
    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Is(n) => n == name,
        }
    }
}

/// A set of `phy_state` names (upper case, without `PHY_`), possibly negated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateSet {
    /// `not`: every state but these.
    pub negated: bool,
    /// The names.
    pub names: Vec<String>,
}

impl StateSet {
    /// Whether `state` is in the set (an unknown state is in no set, and not in a negated one).
    pub fn contains(&self, state: Option<&str>) -> bool {
        state.is_some_and(|s| self.names.iter().any(|n| n == s) != self.negated)
    }
}

/// The kinds of event a pattern can match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Atom {
    /// `enter NAME`: a callback was entered.
    Enter(Name),
    /// `exit NAME [error | ret OP N] [latency OP T]`: a callback returned.
    Exit {
        /// The callback.
        callback: Name,
        /// Condition on its return value.
        ret: Option<(Cmp, i64)>,
        /// Condition on its latency.
        latency: Option<(Cmp, Duration)>,
    },
    /// `read|write|mdio REG [value]`: an MDIO access.
    Mdio {
        /// `None` for `mdio` (either).
        op: Option<MdioOp>,
        /// The registers it names.
        reg: Registers,
        /// Condition on the value, or on failure.
        value: Option<ValueTest>,
    },
    /// `state [FROM ->] TO`: `phy_state` became TO (first seen, or changed).
    State {
        /// Required previous state.
        from: Option<String>,
        /// The new state.
        to: String,
    },
    /// `link up|down`: the link reported at a callback's return changed.
    Link(bool),
    /// `mac_link_up`, `mac_link_down`, `carrier up|down`, `phylink_resolve`: the MAC side
    /// (named as [`crate::event::MacChange::name`] names them).
    Mac(&'static str),
    /// `kmsg "TEXT"|any [level NAME]`: a kernel message about the PHY, containing TEXT, at
    /// level NAME or more severe.
    Kmsg {
        /// Text the message contains (`None` for `any`).
        text: Option<String>,
        /// Least severe level matched (syslog number: 3 for `err`).
        level: Option<u8>,
    },
    /// `error`: a callback returned a negative value or an MDIO access failed.
    Error,
}

/// A comparison of a return value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `=`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Cmp {
    /// `lhs OP rhs`.
    pub fn holds<T: PartialOrd>(self, lhs: T, rhs: T) -> bool {
        match self {
            Self::Eq => lhs == rhs,
            Self::Ne => lhs != rhs,
            Self::Lt => lhs < rhs,
            Self::Le => lhs <= rhs,
            Self::Gt => lhs > rhs,
            Self::Ge => lhs >= rhs,
        }
    }
}

impl Cmp {
    /// How the spec writes it: `<`.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
        }
    }
}

/// A condition on an MDIO access's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueTest {
    /// The access failed.
    Failed,
    /// It succeeded and `value & mask` equals (or, negated, differs from) `expect`.
    Masked {
        /// Bits compared.
        mask: u16,
        /// Their expected value.
        expect: u16,
        /// `!=`.
        negated: bool,
    },
}

/// `p99` → `Some(Some(99))`; `p0`, `p101`, `p9x` → `Some(None)` (a percentile meant, and
/// wrong); any other word → `None`.
fn percentile_word(word: &str) -> Option<Option<u8>> {
    let digits = word.strip_prefix('p')?;
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().ok().filter(|p| (1..=100).contains(p)))
}

/// Parses a whole spec.
pub fn parse(text: &str) -> Result<Spec, SpecError> {
    let mut rules: Vec<Rule> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let toks = tokenize(line, line_no)?;
        if toks.is_empty() {
            continue;
        }
        let rule = Parser {
            line,
            line_no,
            toks: &toks,
            pos: 0,
        }
        .rule()?;
        if let Some(other) = rules.iter().find(|r| r.name == rule.name) {
            return Err(SpecError::new(
                line_no,
                toks.get(1).map_or(1, |t| t.col),
                format!(
                    "rule {:?} is already defined on line {}",
                    rule.name, other.line
                ),
            ));
        }
        rules.push(rule);
    }
    Ok(Spec { rules })
}

/// Recursive descent over the tokens of one line.
struct Parser<'a> {
    line: &'a str,
    line_no: usize,
    toks: &'a [Spanned],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }

    /// An error at the current token (or at the end of the line).
    fn error(&self, message: impl Into<String>) -> SpecError {
        let column = match self.toks.get(self.pos) {
            Some(t) => t.col,
            None => self.line.chars().count() + 1,
        };
        SpecError::new(self.line_no, column, message)
    }

    /// "expected X, found Y".
    fn expected(&self, what: &str) -> SpecError {
        let found = self
            .peek()
            .map_or_else(|| "the end of the line".to_owned(), Tok::describe);
        self.error(format!("expected {what}, found {found}"))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let yes = self.peek_word() == Some(word);
        self.pos += usize::from(yes);
        yes
    }

    fn expect_word(&mut self, word: &str) -> Result<(), SpecError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{word}`")))
        }
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let yes = matches!(self.peek(), Some(Tok::Punct(q)) if *q == p);
        self.pos += usize::from(yes);
        yes
    }

    fn expect_punct(&mut self, p: &str) -> Result<(), SpecError> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn string(&mut self, what: &str) -> Result<String, SpecError> {
        match self.peek() {
            Some(Tok::Str(s)) if !s.is_empty() => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            Some(Tok::Str(_)) => Err(self.error(format!("{what} must not be empty"))),
            _ => Err(self.expected(&format!("{what} in double quotes"))),
        }
    }

    fn word(&mut self, what: &str) -> Result<String, SpecError> {
        match self.peek_word() {
            Some(w) => {
                let w = w.to_owned();
                self.pos += 1;
                Ok(w)
            }
            None => Err(self.expected(what)),
        }
    }

    fn int(&mut self, what: &str) -> Result<i64, SpecError> {
        match self.peek() {
            Some(Tok::Int(n)) => {
                let n = *n;
                self.pos += 1;
                Ok(n)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// An integer that fits `T` (a count, a PHY ID, a register value).
    fn int_in<T: TryFrom<i64>>(&mut self, what: &str) -> Result<T, SpecError> {
        let at = self.pos;
        let n = self.int(what)?;
        T::try_from(n).map_err(|_| {
            self.pos = at;
            self.error(format!("{n} is out of range for {what}"))
        })
    }

    fn rule(mut self) -> Result<Rule, SpecError> {
        self.expect_word("rule")?;
        let name = self.string("a rule name")?;
        let mut scope = Scope::default();
        if self.eat_word("for") {
            scope.select = Some(match self.peek_word() {
                Some("driver") => {
                    self.pos += 1;
                    Selector::Driver(self.string("a driver name")?)
                }
                Some("phy") => {
                    self.pos += 1;
                    Selector::Phy(self.string("a PHY key (bus:addr)")?)
                }
                Some("phy_id") => {
                    self.pos += 1;
                    Selector::PhyId(self.int_in("a PHY ID")?)
                }
                _ => return Err(self.expected("`driver`, `phy` or `phy_id`")),
            });
        }
        if self.eat_word("per") {
            scope.per = match self.peek_word() {
                Some("phy") => Per::Phy,
                Some("driver") => Per::Driver,
                _ => return Err(self.expected("`phy` or `driver`")),
            };
            self.pos += 1;
        }
        self.expect_punct(":")?;
        let body = self.body()?;
        if self.peek().is_some() {
            return Err(self.expected("the end of the rule"));
        }
        Ok(Rule {
            name,
            line: self.line_no,
            scope,
            body,
        })
    }

    fn body(&mut self) -> Result<Body, SpecError> {
        if self.eat_word("never") {
            return Ok(Body::Never(self.pattern()?));
        }
        if self.eat_word("count") {
            let pattern = self.pattern()?;
            let bound = if self.eat_word("at") {
                if self.eat_word("least") {
                    Bound::AtLeast(self.int_in("a count")?)
                } else if self.eat_word("most") {
                    Bound::AtMost(self.int_in("a count")?)
                } else {
                    return Err(self.expected("`least` or `most`"));
                }
            } else if self.eat_word("exactly") {
                Bound::Exactly(self.int_in("a count")?)
            } else {
                return Err(self.expected("`at least`, `at most` or `exactly`"));
            };
            return Ok(Body::Count { pattern, bound });
        }
        if let Some(percentile) = self.peek_word().and_then(percentile_word) {
            return self.percentile(percentile);
        }
        if self.eat_word("sequence") {
            let steps = self.steps()?;
            let within = self.within()?;
            return Ok(Body::Sequence { steps, within });
        }
        if self.eat_word("after") {
            let trigger = self.pattern()?;
            self.expect_punct(":")?;
            let steps = self.steps()?;
            let within = self.within()?;
            return Ok(Body::After {
                trigger,
                steps,
                within,
            });
        }
        if self.peek().is_none() {
            return Err(self.expected("`never`, `count`, `sequence`, `after` or an event"));
        }
        let first = self.pattern()?;
        self.expect_word("before")?;
        self.expect_word("first")?;
        let then = self.pattern()?;
        Ok(Body::BeforeFirst { first, then })
    }

    /// `pattern { "then" pattern }`.
    fn steps(&mut self) -> Result<Vec<Pattern>, SpecError> {
        let mut steps = vec![self.pattern()?];
        while self.eat_word("then") {
            steps.push(self.pattern()?);
        }
        Ok(steps)
    }

    fn within(&mut self) -> Result<Option<Duration>, SpecError> {
        if !self.eat_word("within") {
            return Ok(None);
        }
        self.duration().map(Some)
    }

    fn duration(&mut self) -> Result<Duration, SpecError> {
        match self.peek() {
            Some(Tok::Duration(d)) => {
                let d = *d;
                self.pos += 1;
                Ok(d)
            }
            _ => Err(self.expected("a duration such as `100ms`")),
        }
    }

    /// `pN exit C … latency OP T` (the `pN` word is next).
    fn percentile(&mut self, percentile: Option<u8>) -> Result<Body, SpecError> {
        let Some(percentile) = percentile else {
            return Err(self.error("a percentile is `p1` to `p100` (`p50`, `p99`)"));
        };
        self.pos += 1;
        let mut pattern = self.pattern()?;
        let Atom::Exit { latency, .. } = &mut pattern.atom else {
            return Err(self.error(format!(
                "`p{percentile}` takes the latencies of returns: `p{percentile} exit NAME latency < 5ms`"
            )));
        };
        let Some((cmp, bound)) = latency.take() else {
            return Err(self.expected("`latency` and a bound, as in `latency < 5ms`"));
        };
        // The pattern names the returns; the bound is the rule's.
        if let Some(at) = pattern.text.find(" latency") {
            pattern.text.truncate(at);
        }
        Ok(Body::Percentile {
            percentile,
            pattern,
            cmp,
            bound,
        })
    }

    fn pattern(&mut self) -> Result<Pattern, SpecError> {
        let start = self.toks.get(self.pos).map_or(self.line.len(), |t| t.start);
        let atom = self.atom()?;
        let mut inside = Vec::new();
        let mut states = None;
        loop {
            if self.eat_word("inside") {
                inside.push(self.callback()?);
            } else if self.peek_word() == Some("while") {
                if states.is_some() {
                    return Err(self.error("only one `while state` per event"));
                }
                self.pos += 1;
                self.expect_word("state")?;
                let negated = self.eat_word("not");
                let mut names = vec![self.state()?];
                while self.eat_punct("|") {
                    names.push(self.state()?);
                }
                states = Some(StateSet { negated, names });
            } else {
                break;
            }
        }
        let end = self.toks[..self.pos].last().map_or(start, |t| t.end);
        Ok(Pattern {
            atom,
            inside,
            states,
            text: self.line.get(start..end).unwrap_or_default().to_owned(),
        })
    }

    fn atom(&mut self) -> Result<Atom, SpecError> {
        const EVENTS: &str = "an event (`enter`, `exit`, `read`, `write`, `mdio`, `state`, `link`, `mac_link_up`, `mac_link_down`, `carrier`, `phylink_resolve`, `kmsg` or `error`)";
        let Some(word) = self.peek_word().map(str::to_owned) else {
            return Err(self.expected(EVENTS));
        };
        self.pos += 1;
        Ok(match word.as_str() {
            "enter" => Atom::Enter(self.callback()?),
            "exit" => {
                let callback = self.callback()?;
                let ret = if self.eat_word("error") {
                    Some((Cmp::Lt, 0))
                } else if self.eat_word("ret") {
                    let cmp = self.cmp()?;
                    Some((cmp, self.int("a return value")?))
                } else {
                    None
                };
                let latency = if self.eat_word("latency") {
                    let cmp = self.cmp()?;
                    Some((cmp, self.duration()?))
                } else {
                    None
                };
                Atom::Exit {
                    callback,
                    ret,
                    latency,
                }
            }
            "read" | "write" | "mdio" => {
                let op = match word.as_str() {
                    "read" => Some(MdioOp::Read),
                    "write" => Some(MdioOp::Write),
                    _ => None,
                };
                let reg = self.register()?;
                let value = self.value_test(&reg)?;
                Atom::Mdio { op, reg, value }
            }
            "state" => {
                let first = self.state()?;
                if self.eat_punct("->") {
                    Atom::State {
                        from: Some(first),
                        to: self.state()?,
                    }
                } else {
                    Atom::State {
                        from: None,
                        to: first,
                    }
                }
            }
            "link" => match self.peek_word() {
                Some("up") => {
                    self.pos += 1;
                    Atom::Link(true)
                }
                Some("down") => {
                    self.pos += 1;
                    Atom::Link(false)
                }
                _ => return Err(self.expected("`up` or `down`")),
            },
            "mac_link_up" => Atom::Mac("mac_link_up"),
            "mac_link_down" => Atom::Mac("mac_link_down"),
            "phylink_resolve" => Atom::Mac("phylink_resolve"),
            "carrier" => match self.peek_word() {
                Some("up") => {
                    self.pos += 1;
                    Atom::Mac("carrier_on")
                }
                Some("down") => {
                    self.pos += 1;
                    Atom::Mac("carrier_off")
                }
                _ => return Err(self.expected("`up` or `down`")),
            },
            "kmsg" => {
                let text = if self.eat_word("any") {
                    None
                } else {
                    Some(self.string("the text of a kernel message, or `any`")?)
                };
                let level = if self.eat_word("level") {
                    Some(self.level()?)
                } else {
                    None
                };
                Atom::Kmsg { text, level }
            }
            "error" => Atom::Error,
            _ => {
                self.pos -= 1;
                return Err(self.expected(EVENTS));
            }
        })
    }

    /// A syslog level name (`err`, `warn`, …), as its number.
    fn level(&mut self) -> Result<u8, SpecError> {
        const LEVELS: &str =
            "a level (`emerg`, `alert`, `crit`, `err`, `warn`, `notice`, `info` or `debug`)";
        let Some(word) = self.peek_word().map(str::to_ascii_lowercase) else {
            return Err(self.expected(LEVELS));
        };
        let word = match word.as_str() {
            "error" => "err",
            "warning" => "warn",
            other => other,
        };
        let level = KmsgLevel::NAMES.iter().position(|n| *n == word);
        match level.and_then(|l| u8::try_from(l).ok()) {
            Some(level) => {
                self.pos += 1;
                Ok(level)
            }
            None => Err(self.expected(LEVELS)),
        }
    }

    fn callback(&mut self) -> Result<Name, SpecError> {
        let name = self.word("a callback name or `any`")?;
        Ok(if name == "any" {
            Name::Any
        } else {
            Name::Is(name.strip_suffix("_callback").unwrap_or(&name).to_owned())
        })
    }

    /// A `phy_state` name, normalised to upper case without `PHY_`.
    fn state(&mut self) -> Result<String, SpecError> {
        let name = self.word("a phy_state name such as `NOLINK`")?;
        let upper = name.to_ascii_uppercase();
        Ok(upper.strip_prefix("PHY_").unwrap_or(&upper).to_owned())
    }

    fn cmp(&mut self) -> Result<Cmp, SpecError> {
        let cmp = match self.peek() {
            Some(Tok::Punct("=")) => Cmp::Eq,
            Some(Tok::Punct("!=")) => Cmp::Ne,
            Some(Tok::Punct("<")) => Cmp::Lt,
            Some(Tok::Punct("<=")) => Cmp::Le,
            Some(Tok::Punct(">")) => Cmp::Gt,
            Some(Tok::Punct(">=")) => Cmp::Ge,
            _ => return Err(self.expected("a comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`)")),
        };
        self.pos += 1;
        Ok(cmp)
    }

    /// A register: `any`; Clause 22 by name or number (`BMSR`, `1`); Clause 45 as `MMD.REG`
    /// with the MMD by short name or number and the register by name, number, range or `any`
    /// (`pcs.STAT1`, `3.0xE854`, `3.0x8000..0xBFFF`, `pcs.any`); or an MMD alone (`pcs`).
    fn register(&mut self) -> Result<Registers, SpecError> {
        if matches!(
            self.toks.get(self.pos + 1).map(|t| &t.tok),
            Some(Tok::Punct("."))
        ) {
            return self.c45_register();
        }
        match self.peek() {
            Some(Tok::Int(_)) => {
                let reg: u16 = self.int_in("a register number")?;
                if reg > 31 {
                    self.pos -= 1;
                    return Err(self.error(format!(
                        "register {reg} is not a Clause 22 register (0 to 31); a Clause 45 one is `MMD.REG`, as in `3.0x0001`"
                    )));
                }
                Ok(Registers::C22(reg))
            }
            Some(Tok::Word(w)) if w == "any" => {
                self.pos += 1;
                Ok(Registers::Any)
            }
            Some(Tok::Word(w)) => {
                if let Some(num) = registers::number(w) {
                    self.pos += 1;
                    return Ok(Registers::C22(num));
                }
                if let Some(devad) = registers::mmd_named(w) {
                    self.pos += 1;
                    return Ok(Registers::C45 {
                        devad,
                        first: 0,
                        last: u16::MAX,
                    });
                }
                let known: Vec<_> = registers::SPECS.iter().map(|s| s.name).collect();
                let mmds: Vec<_> = registers::mmd_short_names().collect();
                Err(self.error(format!(
                    "unknown register `{w}` (known: {}; or a number; or an MMD: {})",
                    known.join(", "),
                    mmds.join(", ")
                )))
            }
            _ => Err(self.expected("a register name, a register number or `any`")),
        }
    }

    /// `MMD.REG` (the MMD is next, then `.`).
    fn c45_register(&mut self) -> Result<Registers, SpecError> {
        let devad = match self.peek() {
            Some(Tok::Int(_)) => {
                let devad: u8 = self.int_in("an MMD (0 to 31)")?;
                if devad > 31 {
                    self.pos -= 1;
                    return Err(
                        self.error(format!("MMD {devad} is not a device address (0 to 31)"))
                    );
                }
                devad
            }
            Some(Tok::Word(w)) => match registers::mmd_named(w) {
                Some(devad) => {
                    self.pos += 1;
                    devad
                }
                None => {
                    let mmds: Vec<_> = registers::mmd_short_names().collect();
                    return Err(self.error(format!(
                        "unknown MMD `{w}` (known: {}; or a number 0 to 31)",
                        mmds.join(", ")
                    )));
                }
            },
            _ => return Err(self.expected("an MMD")),
        };
        self.expect_punct(".")?;
        let mmd = registers::mmd_short_name(devad).map_or_else(|| devad.to_string(), str::to_owned);
        match self.peek() {
            Some(Tok::Int(_)) => {
                let first: u16 = self.int_in("a register number (0 to 0xffff)")?;
                let last = if self.eat_punct("..") {
                    let last: u16 = self.int_in("a register number (0 to 0xffff)")?;
                    if last < first {
                        self.pos -= 1;
                        return Err(self.error(format!(
                            "the range ends at {last:#06x}, before it starts at {first:#06x}"
                        )));
                    }
                    last
                } else {
                    first
                };
                Ok(Registers::C45 { devad, first, last })
            }
            Some(Tok::Word(w)) if w == "any" => {
                self.pos += 1;
                Ok(Registers::C45 {
                    devad,
                    first: 0,
                    last: u16::MAX,
                })
            }
            Some(Tok::Word(w)) => match registers::c45::number(devad, w) {
                Some(reg) => {
                    self.pos += 1;
                    Ok(Registers::C45 {
                        devad,
                        first: reg,
                        last: reg,
                    })
                }
                None => {
                    let known: Vec<_> = registers::c45::specs(devad).iter().map(|s| s.name).collect();
                    let known = if known.is_empty() {
                        "none by name".to_owned()
                    } else {
                        known.join(", ")
                    };
                    Err(self.error(format!(
                        "MMD {mmd} has no register `{w}` (known: {known}; or a number or a range)"
                    )))
                }
            },
            _ => Err(self.expected(&format!(
                "a register of MMD {mmd}: a name, a number, a range such as `0x8000..0xBFFF` or `any`"
            ))),
        }
    }

    fn value_test(&mut self, reg: &Registers) -> Result<Option<ValueTest>, SpecError> {
        let reg = reg.single();
        let masked = |mask, expect, negated| {
            Some(ValueTest::Masked {
                mask,
                expect,
                negated,
            })
        };
        Ok(match self.peek() {
            Some(Tok::Word(w)) if w == "error" => {
                self.pos += 1;
                Some(ValueTest::Failed)
            }
            Some(Tok::Punct(p @ ("=" | "!="))) => {
                let negated = *p == "!=";
                self.pos += 1;
                masked(0xffff, self.int_in("a 16-bit value")?, negated)
            }
            Some(Tok::Punct("&")) => {
                self.pos += 1;
                let mask = self.int_in("a 16-bit mask")?;
                let negated = if self.eat_punct("!=") {
                    true
                } else {
                    self.expect_punct("=")?;
                    false
                };
                masked(mask, self.int_in::<u16>("a 16-bit value")? & mask, negated)
            }
            Some(Tok::Word(w)) if w == "has" || w == "lacks" => {
                let has = w == "has";
                self.pos += 1;
                let mut bits = self.bit(reg)?;
                while self.eat_punct("|") {
                    bits |= self.bit(reg)?;
                }
                masked(bits, if has { bits } else { 0 }, false)
            }
            _ => None,
        })
    }

    /// A bit of register `reg` by name (`RESET`), or a mask.
    fn bit(&mut self, reg: Option<registers::Register>) -> Result<u16, SpecError> {
        match self.peek() {
            Some(Tok::Int(_)) => self.int_in("a 16-bit mask"),
            Some(Tok::Word(w)) => {
                let spec = reg.and_then(registers::Register::spec);
                let Some(spec) = spec else {
                    return Err(self.error(format!(
                        "bit names need a register with a decoder; use a mask instead of `{w}`"
                    )));
                };
                match spec.bits.iter().find(|b| b.name.eq_ignore_ascii_case(w)) {
                    Some(bit) => {
                        self.pos += 1;
                        Ok(bit.mask)
                    }
                    None => {
                        let known: Vec<_> = spec.bits.iter().map(|b| b.name).collect();
                        Err(self.error(format!(
                            "{} has no bit `{w}` (bits: {})",
                            spec.name,
                            known.join(", ")
                        )))
                    }
                }
            }
            _ => Err(self.expected("a bit name or a mask")),
        }
    }
}

#[cfg(test)]
mod tests;
