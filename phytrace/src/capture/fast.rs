//! A parser for event lines exactly as [`Writer`](super::Writer) writes them, about three times
//! faster than serde_json. It accepts a strict subset of JSON (no whitespace, escapes, `null`,
//! unknown or repeated keys) and returns `None` for anything else, so that the reader falls
//! back to serde_json, which accepts any valid record and explains errors. Where it returns a
//! record, it is the one serde_json would have returned.

use std::borrow::Cow;

use super::format::WireEvent;
use crate::event::{Duplex, LossCause, MdioOp};

/// Parses `line` as an event record, or `None` if it is not in the writer's exact form.
pub(crate) fn parse_event(line: &str) -> Option<WireEvent<'_>> {
    let mut s = Scanner { s: line, i: 0 };
    s.byte(b'{')?;
    let mut w = WireEvent::default();
    let mut seen = 0u32;
    loop {
        let key = s.string()?;
        s.byte(b':')?;
        let bit = match key {
            "type" => set(&mut w.record, Cow::Borrowed(s.string()?), 0),
            "ts" => set(&mut w.ts, s.int()?, 1),
            "cpu" => set(&mut w.cpu, s.int()?, 2),
            "tid" => set(&mut w.tid, s.int()?, 3),
            "phy" => set(&mut w.phy, Some(s.int()?), 4),
            "kind" => set(&mut w.kind, Cow::Borrowed(s.string()?), 5),
            "cb" => set(&mut w.cb, Some(s.int()?), 6),
            "depth" => set(&mut w.depth, Some(s.int()?), 7),
            "state" => set(&mut w.state, Some(s.int()?), 8),
            "state_after" => set(&mut w.state_after, Some(s.int()?), 9),
            "lat" => set(&mut w.lat, Some(s.int()?), 10),
            "ret" => set(&mut w.ret, Some(s.int()?), 11),
            "up" => set(&mut w.up, Some(s.boolean()?), 12),
            "speed" => set(&mut w.speed, Some(s.int()?), 13),
            "duplex" => set(&mut w.duplex, Some(duplex(s.string()?)?), 14),
            "op" => set(&mut w.op, Some(op(s.string()?)?), 15),
            "reg" => set(&mut w.reg, Some(s.int()?), 16),
            "val" => set(&mut w.val, Some(s.int()?), 17),
            "err" => set(&mut w.err, Some(s.int()?), 18),
            "module" => set(&mut w.module, Some(Cow::Borrowed(s.string()?)), 19),
            "callbacks" => set(&mut w.callbacks, Some(s.int()?), 20),
            "reattached" => set(&mut w.reattached, Some(s.boolean()?), 21),
            "count" => set(&mut w.count, Some(s.int()?), 22),
            "mac" => set(&mut w.mac, Some(Cow::Borrowed(s.string()?)), 23),
            "netdev" => set(&mut w.netdev, Some(Cow::Borrowed(s.string()?)), 24),
            "tx_pause" => set(&mut w.tx_pause, Some(s.boolean()?), 25),
            "rx_pause" => set(&mut w.rx_pause, Some(s.boolean()?), 26),
            "devad" => set(&mut w.devad, Some(s.int()?), 27),
            "cause" => set(&mut w.cause, Some(loss_cause(s.string()?)?), 28),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match s.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    // `type`, `ts`, `cpu`, `tid` and `kind` are required, and nothing may follow the object.
    let required = 0b10_1111;
    (s.i == line.len() && seen & required == required).then_some(w)
}

/// Stores `value`; returns the key's bit in the `seen` mask.
fn set<T>(slot: &mut T, value: T, bit: u32) -> u32 {
    *slot = value;
    1 << bit
}

fn duplex(s: &str) -> Option<Duplex> {
    match s {
        "half" => Some(Duplex::Half),
        "full" => Some(Duplex::Full),
        "unknown" => Some(Duplex::Unknown),
        _ => None,
    }
}

fn loss_cause(s: &str) -> Option<LossCause> {
    LossCause::ALL.into_iter().find(|cause| cause.name() == s)
}

fn op(s: &str) -> Option<MdioOp> {
    match s {
        "read" => Some(MdioOp::Read),
        "write" => Some(MdioOp::Write),
        _ => None,
    }
}

/// A cursor over the line.
struct Scanner<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scanner<'a> {
    fn next(&mut self) -> Option<u8> {
        let b = *self.s.as_bytes().get(self.i)?;
        self.i += 1;
        Some(b)
    }

    fn byte(&mut self, expected: u8) -> Option<()> {
        (self.next()? == expected).then_some(())
    }

    /// A string without escapes or control characters (our strings are short: a plain loop
    /// beats a vectorised search).
    fn string(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.i;
        let bytes = self.s.as_bytes();
        loop {
            match *bytes.get(self.i)? {
                b'"' => break,
                b'\\' | 0..0x20 => return None,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        // Both ends are ASCII quotes, so these are char boundaries.
        self.s.get(start..self.i - 1)
    }

    fn boolean(&mut self) -> Option<bool> {
        let rest = &self.s[self.i..];
        let (value, len) = if rest.starts_with("true") {
            (true, 4)
        } else if rest.starts_with("false") {
            (false, 5)
        } else {
            return None;
        };
        self.i += len;
        Some(value)
    }

    /// A JSON integer (`0|-?[1-9][0-9]*`; `-0` is left to serde) that fits `T`.
    fn int<T: TryFrom<i128>>(&mut self) -> Option<T> {
        let bytes = self.s.as_bytes();
        let negative = bytes.get(self.i) == Some(&b'-');
        self.i += usize::from(negative);
        let digits = bytes[self.i..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let leading_zero = bytes.get(self.i) == Some(&b'0') && (digits > 1 || negative);
        if digits == 0 || digits > 20 || leading_zero {
            return None;
        }
        let mut magnitude = 0u64;
        for &digit in &bytes[self.i..self.i + digits] {
            magnitude = magnitude
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        self.i += digits;
        let value = if negative {
            -i128::from(magnitude)
        } else {
            i128::from(magnitude)
        };
        T::try_from(value).ok()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::capture::Writer;
    use crate::synth::{self, Synth};

    /// Event lines of a synthetic capture.
    fn lines() -> &'static [String] {
        static LINES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        LINES.get_or_init(make_lines)
    }

    fn make_lines() -> Vec<String> {
        let mut out = Vec::new();
        {
            let mut w = Writer::new(&mut out, "mem", &synth::header()).unwrap();
            for e in Synth::with_phys(9, 3).take(2_000) {
                w.write(&e).unwrap();
            }
        }
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with(r#"{"type":"event""#))
            .map(str::to_owned)
            .collect()
    }

    fn serde(line: &str) -> Option<WireEvent<'_>> {
        serde_json::from_str(line).ok()
    }

    #[test]
    fn accepts_every_line_the_writer_writes() {
        for line in lines() {
            assert_eq!(parse_event(line), serde(line), "{line}");
            assert!(parse_event(line).is_some(), "{line}");
        }
    }

    #[test]
    fn leaves_other_forms_to_serde() {
        for line in [
            r#"{"type":"event","ts":1,"cpu":0,"tid":0,"kind":"lost","count":1} "#,
            r#"{ "type":"event","ts":1,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":1,"cpu":0,"tid":0,"kind":"lost","count":null}"#,
            r#"{"type":"event","ts":1,"cpu":0,"tid":0,"kind":"lo\u0073t","count":1}"#,
            r#"{"type":"event","ts":1,"cpu":0,"tid":0,"kind":"lost","count":1,"extra":2}"#,
            r#"{"type":"event","ts":1,"ts":2,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":01,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":1.0,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":-1,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":-0,"cpu":0,"tid":0,"kind":"lost","count":1}"#,
            r#"{"type":"event","ts":1,"cpu":0,"tid":0,"kind":"mdio","reg":65536}"#,
            r#"{"type":"event","ts":1,"cpu":0,"kind":"lost","count":1}"#,
        ] {
            assert_eq!(parse_event(line), None, "{line}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn agrees_with_serde_on_damaged_lines(
            index in 0usize..2_000,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        ) {
            let lines = lines();
            let mut bytes = lines[index % lines.len()].clone().into_bytes();
            for (at, byte) in edits {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            if let Ok(line) = std::str::from_utf8(&bytes)
                && let Some(fast) = parse_event(line)
            {
                prop_assert_eq!(Some(fast), serde(line));
            }
        }
    }
}
