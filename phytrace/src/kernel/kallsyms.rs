//! One line of `/proc/kallsyms` (`ADDRESS KIND NAME [MODULE]`), read in one place for every
//! reader of it.

/// A symbol as a kallsyms line gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Its address: 0 where the kernel hides addresses (no root or `CAP_SYSLOG`).
    pub address: u64,
    /// The symbol's type letter (`t`/`T`: code).
    pub kind: &'a str,
    pub name: &'a str,
    /// The module holding it (`None`: vmlinux).
    pub module: Option<&'a str>,
}

impl<'a> Line<'a> {
    /// The symbol `line` gives, if it is a kallsyms line.
    pub fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.split_whitespace();
        let (address, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
        Some(Self {
            address: u64::from_str_radix(address, 16).ok()?,
            kind,
            name,
            module: fields
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']')),
        })
    }

    /// Whether the symbol is code (a function).
    pub fn is_text(&self) -> bool {
        self.kind.eq_ignore_ascii_case("t")
    }
}

/// The symbols of kallsyms text `text`, in order.
pub fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.lines().filter_map(Line::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_of_vmlinux_and_one_of_a_module() {
        assert_eq!(
            Line::parse("ffffffff81000000 T _stext"),
            Some(Line {
                address: 0xffff_ffff_8100_0000,
                kind: "T",
                name: "_stext",
                module: None
            })
        );
        let line = Line::parse("0000000000000000 t phylink_resolve\t[phylink]").unwrap();
        assert_eq!(
            (line.address, line.module, line.is_text()),
            (0, Some("phylink"), true)
        );
        assert_eq!(Line::parse("ffffffff81000000 T"), None);
        assert_eq!(Line::parse("not-hex T name"), None);
    }
}
