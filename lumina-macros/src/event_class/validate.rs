//! Validation: one function per rule, each recording its errors on the user's offending token in
//! a shared [`Ctxt`], so every independent mistake shows in one compile.

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::parse::{Argument, Input};
use super::variants::EVENT_TYPES;
use crate::ctxt::Ctxt;

/// A checked event class: everything the expansion needs.
pub(crate) struct EventClass<'a> {
    /// The struct, unchanged.
    pub(crate) item: &'a syn::ItemStruct,
    /// The event type variant, with the user's span.
    pub(crate) variant: syn::Ident,
}

pub(crate) fn validate(input: &Input) -> syn::Result<EventClass<'_>> {
    let cx = Ctxt::new();
    let variant = check_argument(&cx, input);
    check_single_argument(&cx, input);
    let item = check_item_is_struct(&cx, &input.item);
    if let Some(item) = item {
        check_not_generic(&cx, item);
    }
    check_no_duplicate_attribute(&cx, input);
    cx.check()?;
    Ok(EventClass {
        item: item.expect("checked above"),
        variant: variant.expect("checked above"),
    })
}

/// The argument must be one of `EventType`'s variant names: the expansion names
/// `EventType::<argument>`, and an unknown name would otherwise surface as a resolution error
/// about a hidden path. A typo gets the closest name; anything else gets the whole list.
fn check_argument(cx: &Ctxt, input: &Input) -> Option<syn::Ident> {
    match &input.argument {
        // B6: a bare `#[event_class]` declares a game's own event class, of event type `None`.
        Argument::Missing => Some(syn::Ident::new("None", input.attribute_span)),
        Argument::Name(name) if EVENT_TYPES.contains(&name.to_string().as_str()) => {
            Some(name.clone())
        }
        Argument::Name(name) => {
            cx.error_spanned_by(name, unknown_variant_message(&name.to_string()));
            None
        }
        Argument::Path(path) => {
            let last = path.segments.last().expect("a path has a segment");
            let message = if EVENT_TYPES.contains(&last.ident.to_string().as_str()) {
                format!(
                    "expected the variant name alone: write `{}`, without the path",
                    last.ident
                )
            } else {
                unknown_variant_message(&path.to_token_stream().to_string().replace(' ', ""))
            };
            cx.error_spanned_by(path, message);
            None
        }
        Argument::Other(tokens) => {
            if let Ok(literal) = syn::parse2::<syn::LitStr>(tokens.clone()) {
                let name = literal.value();
                let message = if EVENT_TYPES.contains(&name.as_str()) {
                    format!("expected a name, not a string: write `{name}` without quotes")
                } else {
                    format!(
                        "expected a name, not a string; {}",
                        unknown_variant_message(&name)
                    )
                };
                cx.error_spanned_by(literal, message);
                return None;
            }
            cx.error_spanned_by(
                tokens,
                format!(
                    "expected an event type name such as `KeyPressed`, found `{tokens}`; \
                     valid names: {}",
                    list()
                ),
            );
            None
        }
    }
}

/// An event class has exactly one event type; a second argument is a mistake, not ignored.
fn check_single_argument(cx: &Ctxt, input: &Input) {
    if let Some(extra) = &input.extra {
        cx.error_spanned_by(
            extra,
            "unexpected second argument: an event class has exactly one event type",
        );
    }
}

/// Only a struct can be an event class: an enum or union would be several kinds of event behind
/// one event type and one `TypeId`, which handlers could not tell apart with `is::<T>()`.
fn check_item_is_struct<'a>(cx: &Ctxt, item: &'a syn::Item) -> Option<&'a syn::ItemStruct> {
    let (keyword, what): (TokenStream, &str) = match item {
        syn::Item::Struct(item) => return Some(item),
        syn::Item::Enum(item) => (item.enum_token.to_token_stream(), "an enum"),
        syn::Item::Union(item) => (item.union_token.to_token_stream(), "a union"),
        syn::Item::Fn(item) => (item.sig.fn_token.to_token_stream(), "a function"),
        syn::Item::Trait(item) => (item.trait_token.to_token_stream(), "a trait"),
        syn::Item::Impl(item) => (item.impl_token.to_token_stream(), "an impl block"),
        syn::Item::Type(item) => (item.type_token.to_token_stream(), "a type alias"),
        other => (other.to_token_stream(), "this item"),
    };
    let hint = if matches!(item, syn::Item::Enum(_)) {
        "; declare one struct per kind of event"
    } else {
        ""
    };
    cx.error_spanned_by(
        keyword,
        format!("expected a struct: `#[event_class]` cannot make {what} an event class{hint}"),
    );
    None
}

/// Events are identified by `TypeId`, so a class must be `'static` (no lifetimes), and each
/// instantiation of a generic struct would be a separate class sharing one event type and one
/// name: handlers matching `Foo<A>` would silently miss `Foo<B>`.
fn check_not_generic(cx: &Ctxt, item: &syn::ItemStruct) {
    let generics = &item.generics;
    if generics.params.is_empty() {
        return;
    }
    let message = if generics.lifetimes().next().is_some() {
        "an event class cannot borrow: events are told apart by `TypeId`, which needs a `'static` \
         type; own the data instead (e.g. `String`, `PathBuf`)"
    } else {
        "an event class cannot be generic: each instantiation would be a separate class with the \
         same event type, so handlers matching one would miss the others; make the varying part \
         a field"
    };
    cx.error_spanned_by(generics, message);
}

/// One `#[event_class]` per struct: two would mean two event types, and the second expansion
/// would implement the trait twice.
fn check_no_duplicate_attribute(cx: &Ctxt, input: &Input) {
    for attribute in input.duplicate_attributes() {
        cx.error_spanned_by(
            attribute,
            "duplicate `#[event_class]`: an event class has exactly one event type",
        );
    }
}

fn unknown_variant_message(name: &str) -> String {
    match suggestion(name) {
        Some(suggestion) => {
            format!("unknown event type `{name}`; did you mean `{suggestion}`?")
        }
        // Most likely the name of the game's own event (B6).
        None => format!(
            "unknown event type `{name}`; for a game's own event class write a bare \
             `#[event_class]`, without an event type; the event types of input and window \
             events are: {}",
            list()
        ),
    }
}

fn list() -> String {
    EVENT_TYPES.join(", ")
}

/// The valid name closest to `name`, if it is close enough to be a typo (a third of its length).
fn suggestion(name: &str) -> Option<&'static str> {
    EVENT_TYPES
        .iter()
        .map(|candidate| (edit_distance(name, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, case-insensitive (a wrong case is a typo worth suggesting a fix for).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2_a_typo_gets_the_closest_name() {
        assert_eq!(suggestion("KeyPresed"), Some("KeyPressed"));
        assert_eq!(suggestion("keypressed"), Some("KeyPressed"));
        assert_eq!(suggestion("MouseScroll"), Some("MouseScrolled"));
        assert_eq!(suggestion("Explosion"), None);
    }

    #[test]
    fn e2_a_name_far_from_all_lists_every_name() {
        let message = unknown_variant_message("Explosion");
        for name in EVENT_TYPES {
            assert!(message.contains(name), "{message} lacks {name}");
        }
    }
}
