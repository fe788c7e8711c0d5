//! Procedural macros of [lumina](https://docs.rs/lumina). Use them through the `lumina` facade,
//! which re-exports each of them; expansions name the runtime as `::lumina::__private::...`.
//!
//! Each macro is split the way thiserror splits its derive: *parse* into a typed model that keeps
//! the user's tokens for spans, *validate* with one function per rule (errors collected in a
//! `ctxt::Ctxt` so every mistake shows at once), and *expand*, which cannot fail.

#[allow(dead_code)] // used by the macros as they land
mod ctxt;
mod delegate_decl;

/// Declares a named multicast delegate type: any number of subscribers, called in the order
/// they were added.
///
/// ```text
/// declare_multicast_delegate!(pub ProjectLoaded);
/// declare_multicast_delegate!(pub WindowResize(window: &Window, size: UVec2));
/// declare_multicast_delegate!(pub Query(value: i32) -> bool);
/// ```
///
/// Use it through the facade, `lumina::declare_multicast_delegate!`, whose documentation has
/// the full, tested examples and lists the generated methods. Attributes and doc comments pass
/// through to the type; parameter names are optional; owned parameter types must be `Clone`.
#[proc_macro]
pub fn declare_multicast_delegate(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    delegate_decl::multicast(input.into()).into()
}

/// Declares a named single-cast delegate type: one callable or nothing.
///
/// ```text
/// declare_delegate!(pub Predicate(value: i32) -> bool);
/// declare_delegate!(pub Notify());
/// ```
///
/// Use it through the facade, `lumina::declare_delegate!`, whose documentation has the full,
/// tested examples and lists the generated methods.
#[proc_macro]
pub fn declare_delegate(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    delegate_decl::single(input.into()).into()
}
