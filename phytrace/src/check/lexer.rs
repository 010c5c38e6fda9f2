//! Tokens of one spec line, each with the column it starts at.

use std::time::Duration;

use super::spec::SpecError;

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A keyword or a name: `rule`, `read_status`, `BMCR`, `NOLINK`.
    Word(String),
    /// A double-quoted string, unescaped.
    Str(String),
    /// An integer: `5`, `-5`, `0x8000`, `0b1000`.
    Int(i64),
    /// A duration: `100ms`, `2s`.
    Duration(Duration),
    /// Punctuation: `:` `=` `!=` `<` `<=` `>` `>=` `&` `|` `->` `.` `..`.
    Punct(&'static str),
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Self::Word(w) => format!("`{w}`"),
            Self::Str(s) => format!("string {s:?}"),
            Self::Int(n) => format!("number {n}"),
            Self::Duration(d) => format!("duration {d:?}"),
            Self::Punct(p) => format!("`{p}`"),
        }
    }
}

/// A token and its 1-based column (in characters) and byte range in the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned {
    /// The token.
    pub tok: Tok,
    /// Column of its first character.
    pub col: usize,
    /// Byte offset of its start in the line.
    pub start: usize,
    /// Byte offset after its end.
    pub end: usize,
}

const PUNCTS: &[&str] = &[
    "->", "!=", "<=", ">=", "..", ":", "=", "<", ">", "&", "|", ".",
];

/// Units a duration may have, with their length in nanoseconds.
const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
];

/// Splits `line` (line number `line_no`) into tokens, stopping at a `#` comment.
pub fn tokenize(line: &str, line_no: usize) -> Result<Vec<Spanned>, SpecError> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(line.len(), |&(b, _)| b);
    let err = |i: usize, message: String| SpecError::new(line_no, i + 1, message);
    let mut toks = Vec::new();
    let mut i = 0;
    while let Some(&(_, c)) = chars.get(i) {
        let start = i;
        let tok = if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == '#' {
            break;
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i).map(|&(_, c)| c) {
                    None => return Err(err(start, "unterminated string".to_owned())),
                    Some('"') => break,
                    Some('\\') => {
                        match chars.get(i + 1).map(|&(_, c)| c) {
                            Some(e @ ('"' | '\\')) => s.push(e),
                            _ => return Err(err(i, "only \\\" and \\\\ escapes exist".to_owned())),
                        }
                        i += 1;
                    }
                    Some(c) => s.push(c),
                }
                i += 1;
            }
            i += 1;
            Tok::Str(s)
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(|&(_, d)| d.is_ascii_digit()))
        {
            i += 1;
            while chars
                .get(i)
                .is_some_and(|&(_, c)| c.is_alphanumeric() || c == '_')
            {
                i += 1;
            }
            number(&line[byte_at(start)..byte_at(i)]).map_err(|m| err(start, m))?
        } else if c.is_alphabetic() || c == '_' {
            while chars
                .get(i)
                .is_some_and(|&(_, c)| c.is_alphanumeric() || c == '_')
            {
                i += 1;
            }
            Tok::Word(line[byte_at(start)..byte_at(i)].to_owned())
        } else if let Some(p) = PUNCTS.iter().find(|p| line[byte_at(i)..].starts_with(**p)) {
            i += p.chars().count();
            Tok::Punct(p)
        } else {
            return Err(err(i, format!("unexpected character {c:?}")));
        };
        toks.push(Spanned {
            tok,
            col: start + 1,
            start: byte_at(start),
            end: byte_at(i),
        });
    }
    Ok(toks)
}

/// Reads an integer or a duration.
fn number(text: &str) -> Result<Tok, String> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (radix, body) = match digits.get(..2) {
        Some("0x" | "0X") => (16, &digits[2..]),
        Some("0b" | "0B") => (2, &digits[2..]),
        _ => (10, digits),
    };
    let clean: String = body.chars().filter(|&c| c != '_').collect();
    if let Ok(n) = i64::from_str_radix(&clean, radix) {
        return Ok(Tok::Int(if neg { -n } else { n }));
    }
    if radix == 10 && !neg {
        let split = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        let (value, unit) = body.split_at(split);
        if let (Ok(value), Some(&(_, ns))) =
            (value.parse::<u64>(), UNITS.iter().find(|(u, _)| *u == unit))
        {
            return value
                .checked_mul(ns)
                .map(|ns| Tok::Duration(Duration::from_nanos(ns)))
                .ok_or_else(|| format!("duration `{text}` is too long"));
        }
        if !value.is_empty() && value.parse::<u64>().is_ok() {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (use ns, us, ms, s or m)"
            ));
        }
    }
    Err(format!("`{text}` is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(line: &str) -> Vec<Tok> {
        tokenize(line, 1)
            .unwrap()
            .into_iter()
            .map(|s| s.tok)
            .collect()
    }

    #[test]
    fn words_numbers_durations_strings_punctuation() {
        assert_eq!(
            toks(r#"rule "a \"b\"": exit x ret <= -5 0x8000 0b11 100ms -> # c"#),
            [
                Tok::Word("rule".into()),
                Tok::Str("a \"b\"".into()),
                Tok::Punct(":"),
                Tok::Word("exit".into()),
                Tok::Word("x".into()),
                Tok::Word("ret".into()),
                Tok::Punct("<="),
                Tok::Int(-5),
                Tok::Int(0x8000),
                Tok::Int(3),
                Tok::Duration(Duration::from_millis(100)),
                Tok::Punct("->"),
            ]
        );
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = tokenize("never read BMCR = 12xs", 4).unwrap_err();
        assert_eq!((e.line, e.column), (4, 19));
        assert!(e.message.contains("unknown unit"), "{e}");
        let e = tokenize("rule \"open", 2).unwrap_err();
        assert_eq!((e.line, e.column), (2, 6));
        let e = tokenize("a é $", 1).unwrap_err();
        assert_eq!(e.column, 5);
    }
}
