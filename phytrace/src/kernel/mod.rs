//! What phytrace knows of the running kernel, read without loading anything into it: its BTF,
//! kallsyms and the Rust drivers' callback symbols, modules and module files, the search of
//! its code for call sites ([`code`]), the kprobes it lists, the privileges and support
//! tracing needs, and what it refuses.

pub(crate) mod btf;
pub mod code;
pub(crate) mod driver_tables;
pub(crate) mod error;
pub(crate) mod kallsyms;
pub(crate) mod kprobes;
pub(crate) mod mdio;
pub(crate) mod module_files;
pub(crate) mod modules;
pub(crate) mod privileges;
pub(crate) mod snapshot;
pub(crate) mod support;
pub(crate) mod symbols;
#[cfg(test)]
mod test_elf;
pub(crate) mod tracefs;
