//! Relocatable ELF objects for the module-file readers' tests, built with `object::write`.

use object::{
    SymbolFlags, SymbolKind, SymbolScope,
    write::{Object, Symbol, SymbolId, SymbolSection},
};

/// A symbol `name` the object uses and does not define (a kernel function, a thunk).
pub fn undefined(obj: &mut Object<'_>, name: &str) -> SymbolId {
    obj.add_symbol(Symbol {
        name: name.as_bytes().to_vec(),
        value: 0,
        size: 0,
        kind: SymbolKind::Unknown,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Undefined,
        flags: SymbolFlags::None,
    })
}
