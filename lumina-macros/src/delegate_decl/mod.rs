//! `declare_multicast_delegate!` and `declare_delegate!`: named delegate types.
//!
//! [`parse`] reads the declaration into a typed model, [`validate`] checks it with one function
//! per rule, [`expand`] writes the newtype and its forwarding methods. The entry points work on
//! `proc_macro2` tokens, so they also run outside a proc-macro context (the facade's
//! `tests/expanded.rs` uses them to write `examples/expanded/`).

mod expand;
mod parse;
mod sync;
mod validate;

use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};
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
                .map(sync::fallback_kind)
                .map(|decl| expand::expand(&decl))
                .unwrap_or_default();
            finish(Err(error), fallback)
        }
    }
}

/// Rewrites what validation rejected, leaving a declaration that expands without errors and
/// keeps the shape the user wrote (the same parameters, a return type if they wrote one), so
/// code subscribing to and broadcasting the delegate shows no follow-on error. A type that cannot
/// be kept (missing, `impl Trait`, unsized, a borrowed return, or naming a rejected generic)
/// becomes a type parameter of the fallback type, which the using code infers; named lifetimes
/// are elided.
fn sanitize(mut decl: DelegateDecl) -> DelegateDecl {
    // The user's generics become the fallback's type parameters, renamed so they cannot clash
    // with the generated methods' own (`add_member<T>`).
    let user_generics: Vec<Ident> = decl
        .generics
        .take()
        .map(|generics| {
            generics
                .params
                .iter()
                .filter_map(|param| match param {
                    syn::GenericParam::Type(param) => Some(param.ident.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut generics: Vec<Ident> = user_generics.iter().map(fallback_name).collect();
    let mut unknown = 0;
    let mut fresh = |generics: &mut Vec<Ident>| {
        let name = Ident::new(&format!("__LuminaUnknown{unknown}"), Span::call_site());
        unknown += 1;
        generics.push(name.clone());
        syn::Type::Verbatim(name.into_token_stream())
    };
    let keep = |ty: &syn::Type| -> Option<syn::Type> {
        let ty = rename_generics(elide_lifetimes(ty.to_token_stream()), &user_generics);
        let ty: syn::Type = syn::parse2(ty).ok()?;
        let unknown = matches!(ty, syn::Type::Infer(_));
        (!unknown && !validate::has_rejected_type(&ty)).then_some(ty)
    };
    decl.attrs.retain(|attr| !attr.path().is_ident("derive"));
    decl.params.retain(|param| param.self_token.is_none());
    // A return type borrowing from the arguments (`fn(&str) -> &str`): with every borrow
    // `'static`, code passing literals and returning a part of its argument compiles.
    let borrowed_output = decl.output.as_ref().is_some_and(|output| {
        let elided = elide_lifetimes(output.to_token_stream());
        syn::parse2::<syn::Type>(elided).is_ok_and(|output| {
            validate::has_rejected_output(&output) && !validate::has_rejected_type(&output)
        })
    });
    if borrowed_output {
        let to_static =
            |ty: &syn::Type| syn::parse2::<syn::Type>(static_borrows(ty.to_token_stream()));
        for param in &mut decl.params {
            if let Some(ty) = param.ty.as_ref().and_then(|ty| to_static(ty).ok()) {
                param.ty = Some(ty);
            }
        }
        decl.output = decl
            .output
            .as_ref()
            .and_then(|output| to_static(output).ok());
    }
    let mut seen = Vec::new();
    for param in &mut decl.params {
        param.mut_token = None;
        param.ty = Some(match param.ty.as_ref().and_then(&keep) {
            Some(ty) => ty,
            None => fresh(&mut generics),
        });
        if let Some(name) = &param.name {
            if seen.contains(name) {
                param.name = None;
            } else {
                seen.push(name.clone());
            }
        }
    }
    if let Some(output) = &decl.output {
        decl.output = Some(
            match keep(output).filter(|output| !validate::has_rejected_output(output)) {
                Some(output) => output,
                None => fresh(&mut generics),
            },
        );
    }
    // A type parameter no type mentions would be an error of its own.
    let mut used = TokenStream::new();
    for ty in decl.params.iter().filter_map(|param| param.ty.as_ref()) {
        used.extend(ty.to_token_stream());
    }
    used.extend(decl.output.to_token_stream());
    generics.retain(|generic| mentions(used.clone(), generic));
    decl.fallback_generics = generics;
    decl
}

/// Whether `tokens` contain the identifier `name`.
fn mentions(tokens: TokenStream, name: &Ident) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == *name,
        TokenTree::Group(group) => mentions(group.stream(), name),
        _ => false,
    })
}

/// The fallback's name for the user's generic parameter `T`.
fn fallback_name(ident: &Ident) -> Ident {
    Ident::new(&format!("__LuminaGeneric{ident}"), ident.span())
}

/// `tokens` with every named lifetime but `'static` elided to `'_`.
fn elide_lifetimes(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut after_quote = false;
    for tree in tokens {
        let tree = match tree {
            TokenTree::Punct(punct) if punct.as_char() == '\'' => {
                after_quote = true;
                out.push(TokenTree::Punct(punct));
                continue;
            }
            TokenTree::Ident(ident) if after_quote && ident != "static" => {
                TokenTree::Ident(Ident::new("_", ident.span()))
            }
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), elide_lifetimes(group.stream()));
                new.set_span(group.span());
                TokenTree::Group(new)
            }
            other => other,
        };
        after_quote = false;
        out.push(tree);
    }
    out.into_iter().collect()
}

/// `tokens` with every borrow `'static`: elided ones (`&T`, `&mut T`, `'_`) and named ones.
fn static_borrows(tokens: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = elide_lifetimes(tokens).into_iter().collect();
    let mut out = Vec::new();
    let mut index = 0;
    while index < trees.len() {
        match &trees[index] {
            TokenTree::Punct(punct) if punct.as_char() == '&' => {
                out.push(trees[index].clone());
                let has_lifetime = matches!(trees.get(index + 1), Some(TokenTree::Punct(next)) if next.as_char() == '\'');
                if has_lifetime {
                    // `&'_ T`: skip the `'_`, write `'static`.
                    index += 2;
                }
                out.extend(quote::quote!('static));
            }
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), static_borrows(group.stream()));
                new.set_span(group.span());
                out.push(TokenTree::Group(new));
            }
            other => out.push(other.clone()),
        }
        index += 1;
    }
    out.into_iter().collect()
}

/// `tokens` with the user's generic parameters renamed as in [`fallback_name`].
fn rename_generics(tokens: TokenStream, names: &[Ident]) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(ident) if names.contains(&ident) => {
                TokenTree::Ident(fallback_name(&ident))
            }
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), rename_generics(group.stream(), names));
                new.set_span(group.span());
                TokenTree::Group(new)
            }
            other => other,
        })
        .collect()
}
