//! `#[event_class]` and `#[event_class(Variant)]`: makes a struct an event class (rules E2, E5,
//! B6).
//!
//! - [`parse`]: the attribute argument and the item, into [`parse::Input`], keeping every span.
//! - [`validate`]: one function per rule, errors collected in a [`Ctxt`](crate::ctxt::Ctxt), into
//!   [`validate::EventClass`].
//! - [`expand`]: the `EventClass` impl; cannot fail.
//! - [`variants`]: the names of `EventType`'s variants, checked against the runtime by a test.

mod expand;
mod parse;
mod validate;
mod variants;

use proc_macro2::TokenStream;

/// The whole macro: parse, validate, expand. On errors: the errors, the user's item (without any
/// duplicate `#[event_class]`, which would only repeat the error), and an `EventClass` impl for
/// it when it is a type, so that dispatching it or matching it in a handler adds no error.
pub(crate) fn event_class(args: TokenStream, item: TokenStream) -> TokenStream {
    let input = parse::Input::parse(args, item);
    let mut fallback = input.fallback();
    fallback.extend(expand::fallback_impl(&input));
    crate::ctxt::finish(validate::validate(&input).map(expand::expand), fallback)
}
