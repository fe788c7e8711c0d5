//! `declare_multicast_delegate!` and `declare_delegate!`: named delegate types.
//!
//! [`parse`] reads the declaration into a typed model, [`validate`] checks it with one function
//! per rule, [`expand`] writes the newtype and its forwarding methods. The entry points work on
//! `proc_macro2` tokens, so they also run outside a proc-macro context (the facade's
//! `tests/expanded.rs` uses them to write `examples/expanded/`).

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::ctxt::{Ctxt, finish};
use parse::{DelegateDecl, Kind};

/// Expands `declare_multicast_delegate!(...)`.
pub(crate) fn multicast(input: TokenStream) -> TokenStream {
    declare(Kind::Multicast, input)
}

/// Expands `declare_delegate!(...)`.
pub(crate) fn single(input: TokenStream) -> TokenStream {
    declare(Kind::Single, input)
}

fn declare(kind: Kind, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let decl = parse::parse(&cx, kind, input);
    if let Some(decl) = &decl {
        validate::validate(&cx, decl);
    }
    match (cx.check(), decl) {
        (Ok(()), Some(decl)) => expand::expand(&decl),
        (Ok(()), None) => unreachable!("parse returns None only after recording an error"),
        (Err(error), decl) => {
            // Keep the user's type in place (with the offending parts left out), so code using
            // it shows no follow-on errors.
            let fallback = decl
                .map(sanitize)
                .map(|decl| expand::expand(&decl))
                .unwrap_or_default();
            finish(Err(error), fallback)
        }
    }
}

/// Removes what validation rejected, leaving a declaration that expands without errors.
fn sanitize(mut decl: DelegateDecl) -> DelegateDecl {
    // Types naming the rejected generic parameters cannot be expanded without them.
    let generic_names: Vec<String> = decl
        .generics
        .take()
        .map(|generics| {
            generics
                .params
                .iter()
                .filter_map(|param| match param {
                    syn::GenericParam::Type(param) => Some(param.ident.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let rejected = |ty: &syn::Type| {
        validate::has_rejected_type(ty) || mentions_any(ty.to_token_stream(), &generic_names)
    };
    decl.attrs.retain(|attr| !attr.path().is_ident("derive"));
    decl.params.retain(|param| {
        param.self_token.is_none() && param.ty.as_ref().is_some_and(|ty| !rejected(ty))
    });
    let mut seen = Vec::new();
    for param in &mut decl.params {
        param.mut_token = None;
        if let Some(name) = &param.name {
            if seen.contains(name) {
                param.name = None;
            } else {
                seen.push(name.clone());
            }
        }
    }
    if decl
        .output
        .as_ref()
        .is_some_and(|output| rejected(output) || validate::has_rejected_output(output))
    {
        decl.output = None;
    }
    decl
}

/// Whether `tokens` contain one of `names` as an identifier.
fn mentions_any(tokens: TokenStream, names: &[String]) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => names.iter().any(|name| ident == name),
        proc_macro2::TokenTree::Group(group) => mentions_any(group.stream(), names),
        _ => false,
    })
}
