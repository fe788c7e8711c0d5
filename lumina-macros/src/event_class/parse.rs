//! Parsing: the attribute's argument and the annotated item, into a typed model that keeps the
//! user's tokens for spans. Parsing never fails; what is wrong is recorded and reported by
//! [`validate`](super::validate), so every mistake shows at once.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

/// What the attribute's parentheses held.
pub(crate) enum Argument {
    /// `#[event_class]` or `#[event_class()]`.
    Missing,
    /// A single name: the event type variant, e.g. `KeyPressed`.
    Name(syn::Ident),
    /// A path such as `EventType::KeyPressed`; its last segment is the likely intent.
    Path(syn::Path),
    /// Anything else, e.g. a string literal: the offending tokens.
    Other(TokenStream),
}

/// The parsed attribute and item.
pub(crate) struct Input {
    /// The attribute's argument.
    pub(crate) argument: Argument,
    /// Tokens after the first argument and its comma (a trailing comma alone is fine).
    pub(crate) extra: Option<TokenStream>,
    /// The annotated item. Attribute macros only ever see items; anything syn does not know
    /// stays `Item::Verbatim`.
    pub(crate) item: syn::Item,
    /// Where the attribute is, for errors with no better token (a missing argument).
    pub(crate) attribute_span: Span,
    /// The item's tokens as written, for the fallback.
    tokens: TokenStream,
}

impl Input {
    pub(crate) fn parse(args: TokenStream, item: TokenStream) -> Self {
        let (argument, extra) = parse_argument(args);
        Input {
            argument,
            extra,
            item: parse_item(item.clone()),
            attribute_span: Span::call_site(),
            tokens: item,
        }
    }

    /// The other `#[event_class]` attributes on the item (one is one too many).
    pub(crate) fn duplicate_attributes(&self) -> impl Iterator<Item = &syn::Attribute> {
        item_attributes(&self.item)
            .iter()
            .filter(|attribute| is_event_class_attribute(attribute))
    }

    /// The user's item as written, minus duplicate `#[event_class]` attributes, emitted after
    /// the errors so that no follow-on errors appear.
    pub(crate) fn fallback(&self) -> TokenStream {
        let mut item = parse_item(self.tokens.clone());
        if let Some(attributes) = item_attributes_mut(&mut item) {
            attributes.retain(|attribute| !is_event_class_attribute(attribute));
        }
        item.into_token_stream()
    }
}

fn parse_item(tokens: TokenStream) -> syn::Item {
    syn::parse2::<syn::Item>(tokens.clone()).unwrap_or(syn::Item::Verbatim(tokens))
}

fn parse_argument(args: TokenStream) -> (Argument, Option<TokenStream>) {
    let tokens: Vec<TokenTree> = args.into_iter().collect();
    let comma = tokens
        .iter()
        .position(|token| matches!(token, TokenTree::Punct(punct) if punct.as_char() == ','));
    let (first, rest) = match comma {
        Some(index) => (&tokens[..index], &tokens[index + 1..]),
        None => (&tokens[..], &[][..]),
    };
    let extra = (!rest.is_empty()).then(|| rest.iter().cloned().collect());
    let first_stream: TokenStream = first.iter().cloned().collect();
    let argument = match first {
        [] => Argument::Missing,
        [TokenTree::Ident(_)] => match syn::parse2::<syn::Ident>(first_stream.clone()) {
            Ok(name) => Argument::Name(name),
            // A keyword, e.g. `#[event_class(type)]`.
            Err(_) => Argument::Other(first_stream),
        },
        _ => match syn::parse2::<syn::Path>(first_stream.clone()) {
            Ok(path) if path.segments.len() > 1 => Argument::Path(path),
            _ => Argument::Other(first_stream),
        },
    };
    (argument, extra)
}

/// Whether `attribute` is `#[event_class(..)]`, however it is spelled (`#[lumina::event_class]`).
fn is_event_class_attribute(attribute: &syn::Attribute) -> bool {
    attribute
        .path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "event_class")
}

fn item_attributes(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Struct(item) => &item.attrs,
        syn::Item::Enum(item) => &item.attrs,
        syn::Item::Union(item) => &item.attrs,
        _ => &[],
    }
}

fn item_attributes_mut(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    match item {
        syn::Item::Struct(item) => Some(&mut item.attrs),
        syn::Item::Enum(item) => Some(&mut item.attrs),
        syn::Item::Union(item) => Some(&mut item.attrs),
        _ => None,
    }
}
