//! Procedural macros of [lumina](https://docs.rs/lumina). Use them through the `lumina` facade,
//! which re-exports each of them; expansions name the runtime as `::lumina::__private::...`.
//!
//! Each macro is split the way thiserror splits its derive: *parse* into a typed model that keeps
//! the user's tokens for spans, *validate* with one function per rule (errors collected in a
//! [`ctxt::Ctxt`] so every mistake shows at once), and *expand*, which cannot fail.

#[allow(dead_code)] // used by the macros as they land
mod ctxt;
