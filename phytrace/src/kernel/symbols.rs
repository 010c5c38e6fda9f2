//! Finding the Rust PHY driver callbacks in `/proc/kallsyms`.
//!
//! The callbacks are monomorphised generics of the `kernel::net::phy` abstractions, one symbol
//! per driver type and callback, v0-mangled with a crate hash that changes with every build.
//! They are found by demangling and matching
//! `<kernel::net::phy::Adapter<CRATE::TYPE>>::NAME_callback`, never by a fixed string.

use std::{fs, io, path::Path};

use memchr::{memchr, memmem, memrchr};

use super::kallsyms::Line;

/// Where the kernel lists its symbols.
pub const KALLSYMS: &str = "/proc/kallsyms";

/// One resolved driver callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallbackSymbol {
    /// Module the symbol lives in (`[ax88796b_rust]` in kallsyms), or `vmlinux`.
    pub module: String,
    /// The Rust type implementing the driver, e.g. `ax88796b_rust::PhyAX88772A`.
    pub driver_type: String,
    /// The operation without `_callback`, e.g. `read_status`.
    pub callback: String,
    /// Address (0 when kallsyms hides addresses from this user).
    pub address: u64,
    /// The mangled name, which kprobes attach to.
    pub symbol: String,
    /// The demangled path without crate hashes.
    pub demangled: String,
}

/// The first Rust function of vmlinux (the `kernel` crate's, v0-mangled `_R…`) in kallsyms text
/// read from `kallsyms`, which is read no further.
pub fn first_rust_function(kallsyms: impl io::BufRead) -> io::Result<Option<String>> {
    for line in kallsyms.lines() {
        let line = line?;
        if let Some(symbol) = Line::parse(&line)
            && symbol.module.is_none()
            && symbol.is_text()
            && symbol.name.starts_with("_R")
        {
            return Ok(Some(symbol.name.to_owned()));
        }
    }
    Ok(None)
}

/// Reads `/proc/kallsyms` (or another file in its format).
pub fn read_kallsyms(path: &Path) -> io::Result<Vec<CallbackSymbol>> {
    Ok(parse_kallsyms(&fs::read_to_string(path)?))
}

/// Extracts the PHY driver callbacks from kallsyms text.
pub fn parse_kallsyms(text: &str) -> Vec<CallbackSymbol> {
    // Only a line naming a `…_callback` can hold one: jump from one such name to the next
    // rather than splitting every line (kallsyms has ~100k lines, a few hundred of these).
    let finder = memmem::Finder::new("_callback");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = finder.find(rest.as_bytes()) {
        let (before, after) = rest.as_bytes().split_at(at);
        let start = memrchr(b'\n', before).map_or(0, |i| i + 1);
        let end = memchr(b'\n', after).map_or(rest.len(), |i| at + i);
        found.extend(rest.get(start..end).and_then(parse_line));
        rest = rest.get(end..).unwrap_or_default();
    }
    found
}

fn parse_line(line: &str) -> Option<CallbackSymbol> {
    let symbol = Line::parse(line).filter(Line::is_text)?;
    callback_symbol(
        symbol.name,
        symbol.module.unwrap_or("vmlinux"),
        symbol.address,
    )
}

/// The callback `symbol` of `module` at `address`, if it is one.
pub fn callback_symbol(symbol: &str, module: &str, address: u64) -> Option<CallbackSymbol> {
    // Only Rust v0 symbols (`_R…`) whose mangled form names both `Adapter` and a `…_callback`:
    // demangling only those keeps start-up fast (kallsyms has ~100k lines).
    if !symbol.starts_with("_R") || !symbol.contains("Adapter") || !symbol.contains("_callback") {
        return None;
    }
    let demangled = format!("{:#}", rustc_demangle::try_demangle(symbol).ok()?);
    let (driver_type, callback) = parse_adapter_path(&demangled)?;
    Some(CallbackSymbol {
        module: module.to_owned(),
        driver_type: driver_type.to_owned(),
        callback: callback.to_owned(),
        address,
        symbol: symbol.to_owned(),
        demangled,
    })
}

/// Splits `<kernel::net::phy::Adapter<T>>::NAME_callback` into `(T, NAME)`.
fn parse_adapter_path(demangled: &str) -> Option<(&str, &str)> {
    let rest = demangled.strip_prefix("<kernel::net::phy::Adapter<")?;
    let (driver_type, method) = rest.split_once(">>::")?;
    let callback = method.strip_suffix("_callback")?;
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    (valid(callback) && !driver_type.is_empty()).then_some((driver_type, callback))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `<kernel::net::phy::Adapter<ax88796b_rust::PhyAX88772A>>::read_status_callback`.
    const MANGLED: &str = "_RNvMs_NtNtCs1234567890a_6kernel3net3phyINtB4_7AdapterNtCs0987654321b_13ax88796b_rust11PhyAX88772AE20read_status_callback";

    #[test]
    fn the_first_rust_function_of_vmlinux_is_found() {
        let text = "ffffffff81000000 T _stext\n\
                    ffffffffa0000000 t _RNvCs1_3foo3bar\t[some_module]\n\
                    ffffffff81200000 D _RNvCs1_6kernel4DATA\n\
                    ffffffff81300000 t _RNvCs1_6kernel5print\n\
                    ffffffff81400000 t _RNvCs1_6kernel5later\n";
        assert_eq!(
            first_rust_function(text.as_bytes()).unwrap().as_deref(),
            Some("_RNvCs1_6kernel5print")
        );
        assert_eq!(
            first_rust_function(&b"ffffffff81000000 T _stext\n"[..]).unwrap(),
            None
        );
    }

    #[test]
    fn adapter_paths_are_split() {
        assert_eq!(
            parse_adapter_path(
                "<kernel::net::phy::Adapter<ax88796b_rust::PhyAX88772A>>::read_status_callback"
            ),
            Some(("ax88796b_rust::PhyAX88772A", "read_status"))
        );
        assert_eq!(
            parse_adapter_path(
                "<ax88796b_rust::PhyAX88772A as kernel::net::phy::Driver>::read_status"
            ),
            None
        );
        assert_eq!(
            parse_adapter_path("<kernel::net::phy::Adapter<T>>::new"),
            None
        );
    }

    /// The driver module's lines of /proc/kallsyms, as the test kernel lists them.
    const RECORDED: &str = include_str!("../../tests/data/kallsyms-ax88796b_rust.txt");

    #[test]
    fn the_recorded_driver_symbols_resolve_to_its_callbacks() {
        let found = parse_kallsyms(RECORDED);
        let mut callbacks: Vec<&str> = found.iter().map(|s| s.callback.as_str()).collect();
        callbacks.sort_unstable();
        // Identical code is merged: only Adapter<PhyAX88772A> copies exist.
        assert_eq!(
            callbacks,
            [
                "link_change_notify",
                "read_status",
                "resume",
                "soft_reset",
                "suspend"
            ]
        );
        for symbol in &found {
            assert_eq!(symbol.module, "ax88796b_rust");
            assert_eq!(symbol.driver_type, "ax88796b_rust::PhyAX88772A");
            assert!(symbol.address >= 0xffff_ffff_a000_0000, "{symbol:?}");
            assert!(
                symbol
                    .demangled
                    .starts_with("<kernel::net::phy::Adapter<ax88796b_rust::PhyAX88772A>>::"),
                "{}",
                symbol.demangled
            );
        }
    }

    #[test]
    fn kallsyms_lines_are_filtered_and_demangled() {
        let text = format!(
            "ffffffffc0002000 t {MANGLED}\t[ax88796b_rust]\n\
             ffffffff81000000 T _stext\n\
             ffffffffc0002100 d {MANGLED}\t[ax88796b_rust]\n"
        );
        let found = parse_kallsyms(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        let cb = &found[0];
        assert_eq!(cb.module, "ax88796b_rust");
        assert_eq!(cb.driver_type, "ax88796b_rust::PhyAX88772A");
        assert_eq!(cb.callback, "read_status");
        assert_eq!(cb.address, 0xffff_ffff_c000_2000);
        assert_eq!(cb.symbol, MANGLED);
    }

    /// Lines of kallsyms: callbacks, and look-alikes that name a `_callback` too.
    fn sample_lines() -> Vec<String> {
        vec![
            format!("ffffffffc0002000 t {MANGLED}\t[ax88796b_rust]"),
            format!("ffffffffc0002000 T {MANGLED}"),
            format!("ffffffffc0002100 d {MANGLED}\t[ax88796b_rust]"),
            "ffffffff81000000 T rcu_callback\t[_callback]".to_owned(),
            "ffffffff81000000 T _stext".to_owned(),
            "_callback".to_owned(),
            String::new(),
        ]
    }

    proptest! {
        #[test]
        fn skipping_to_callbacks_finds_what_reading_every_line_finds(
            lines in prop::collection::vec(prop::sample::select(sample_lines()), 0..12),
            trailing_newline in any::<bool>(),
        ) {
            let mut text = lines.join("\n");
            if trailing_newline {
                text.push('\n');
            }
            let every_line: Vec<CallbackSymbol> = text.lines().filter_map(parse_line).collect();
            prop_assert_eq!(parse_kallsyms(&text), every_line);
        }
    }
}
