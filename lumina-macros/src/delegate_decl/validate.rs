//! Validation: one function per rule, each recording its errors in the [`Ctxt`] on the
//! offending token, so every independent mistake is reported at once.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{GenericArgument, Lifetime, PathArguments, ReturnType, Type, TypeParamBound};

use super::parse::{DelegateDecl, Kind};
use crate::ctxt::Ctxt;

/// Runs every rule.
pub(crate) fn validate(cx: &Ctxt, decl: &DelegateDecl) {
    no_generics(cx, decl);
    no_derive(cx, decl);
    no_self_param(cx, decl);
    no_mut_pattern(cx, decl);
    unique_param_names(cx, decl);
    no_impl_trait(cx, decl);
    no_named_lifetimes(cx, decl);
    no_borrowed_return(cx, decl);
    no_unsized_by_value(cx, decl);
    sync_params_are_owned(cx, decl);
    sync_returns_nothing(cx, decl);
    sync_takes_at_most_four(cx, decl);
}

/// A thread-safe delegate's subscribers run on any thread and a queued one later on the game
/// thread: each gets its own clone of every argument, so a borrowed parameter has no meaning
/// there (the runtime's thread-safe delegate takes owned, `'static` arguments).
fn sync_params_are_owned(cx: &Ctxt, decl: &DelegateDecl) {
    if decl.kind != Kind::SyncMulticast {
        return;
    }
    for ty in decl.params.iter().filter_map(|param| param.ty.as_ref()) {
        if let Type::Reference(reference) = ty {
            cx.error_spanned_by(
                reference.and_token,
                "a thread-safe delegate's parameters are owned: expected a type such as `String` or `Arc<T>`, since every subscriber, on any thread, gets its own clone; remove `sync` to declare a game-thread delegate, which passes references",
            );
        }
    }
}

/// Subscribers of a thread-safe delegate may run on several threads at once (or later, queued):
/// there is no single call order to collect results in.
fn sync_returns_nothing(cx: &Ctxt, decl: &DelegateDecl) {
    if decl.kind != Kind::SyncMulticast {
        return;
    }
    if let Some(output) = &decl.output {
        cx.error_spanned_by(
            output,
            "a thread-safe delegate's subscribers return nothing: expected no `-> Type`; remove `sync` for a game-thread delegate with `broadcast_collect`",
        );
    }
}

/// The runtime's thread-safe delegate is written for up to four parameters; more travel as one
/// struct.
fn sync_takes_at_most_four(cx: &Ctxt, decl: &DelegateDecl) {
    if decl.kind != Kind::SyncMulticast {
        return;
    }
    if let Some(fifth) = decl.params.get(4) {
        let at = fifth
            .ty
            .as_ref()
            .map(|ty| ty.to_token_stream())
            .or_else(|| fifth.name.as_ref().map(|name| name.to_token_stream()))
            .unwrap_or_default();
        cx.error_spanned_by(
            at,
            "a thread-safe delegate takes at most 4 parameters: expected the fifth and later ones gathered into one struct",
        );
    }
}

/// A delegate type is one concrete signature: `Name<T>` cannot be expanded into a type whose
/// methods take `T` without every method growing bounds the user never asked for.
fn no_generics(cx: &Ctxt, decl: &DelegateDecl) {
    if let Some(generics) = &decl.generics {
        cx.error_spanned_by(
            generics,
            format!(
                "a delegate type cannot be generic: expected `{}(...)` with concrete parameter types; declare one delegate per signature",
                decl.name
            ),
        );
    }
}

/// The generated type already implements what it can (`Default`, `Debug`, and `Clone` for
/// single-cast); a derive would conflict with those or fail inside the runtime's type.
fn no_derive(cx: &Ctxt, decl: &DelegateDecl) {
    let implemented = match decl.kind {
        Kind::Multicast | Kind::SyncMulticast => "`Default` and `Debug`",
        Kind::Single => "`Clone`, `Default` and `Debug`",
    };
    for attr in decl
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
    {
        cx.error_spanned_by(
            attr,
            format!("`#[derive]` is not supported on a delegate declaration: the type already implements {implemented}"),
        );
    }
}

/// Subscribers are free functions, closures or member bindings (`add_member` passes the object
/// itself); a `self` parameter has no meaning in a signature.
fn no_self_param(cx: &Ctxt, decl: &DelegateDecl) {
    for param in &decl.params {
        if let Some(self_token) = &param.self_token {
            cx.error_spanned_by(
                self_token,
                "a delegate signature has no `self` parameter: expected `name: Type`; to call a method, bind it with `add_member(&object, Type::method)`",
            );
        }
    }
}

/// Parameter names only name the arguments in the generated methods; a pattern like `mut x`
/// would have no effect there and suggests the user expects a function body.
fn no_mut_pattern(cx: &Ctxt, decl: &DelegateDecl) {
    for param in &decl.params {
        if let Some(mut_token) = &param.mut_token {
            cx.error_spanned_by(
                mut_token,
                "parameter patterns are not allowed: expected `name: Type`; remove `mut`",
            );
        }
    }
}

/// The names become the parameters of `broadcast`/`execute`: two with one name cannot compile.
fn unique_param_names(cx: &Ctxt, decl: &DelegateDecl) {
    let mut seen = HashSet::new();
    for param in &decl.params {
        let Some(name) = &param.name else { continue };
        if !seen.insert(name.to_string()) {
            cx.error_spanned_by(
                name,
                format!(
                    "duplicate parameter name `{name}`: expected a distinct name for each parameter"
                ),
            );
        }
    }
}

/// `impl Trait` is not a type a `dyn Fn` signature can hold; a trait object or a concrete type
/// is.
fn no_impl_trait(cx: &Ctxt, decl: &DelegateDecl) {
    for (ty, position) in signature_types(decl) {
        let message = match position {
            Position::Parameter => {
                "`impl Trait` is not allowed in a delegate parameter: expected a concrete type, a reference such as `&dyn Trait`, or `Box<dyn Trait>`"
            }
            Position::Return => {
                "`impl Trait` is not allowed as a delegate's return type: expected a concrete type or `Box<dyn Trait>`"
            }
        };
        for_each_impl_trait(ty, &mut |impl_trait| {
            cx.error_spanned_by(impl_trait, message)
        });
    }
}

/// A named lifetime (`&'a T`) would have to be declared on the type; every reference in a
/// delegate signature already accepts any lifetime when it is elided (`&T`). `'static` is fine.
fn no_named_lifetimes(cx: &Ctxt, decl: &DelegateDecl) {
    for (ty, _) in signature_types(decl) {
        for_each_lifetime(ty, &mut |lifetime| {
            if is_named(lifetime) {
                cx.error_spanned_by(
                    lifetime,
                    format!(
                        "undeclared lifetime `{lifetime}`: elide it (`&Type`); a delegate's reference parameters accept any lifetime"
                    ),
                );
            }
        });
    }
}

/// A returned borrow would have to come from an argument, but `execute(&self, ..)` and
/// `broadcast_collect` tie elided output lifetimes to the delegate itself, so such a signature
/// cannot be expanded; rustc's own errors about it point into generated code.
fn no_borrowed_return(cx: &Ctxt, decl: &DelegateDecl) {
    let Some(output) = &decl.output else { return };
    for_each_elided_borrow(output, &mut |borrow| {
        cx.error_spanned_by(
            borrow,
            "a delegate's return type cannot borrow from its arguments: expected an owned type (`String`, `Rc<T>`) or a `&'static` reference",
        );
    });
}

/// Parameters and results are passed by value, so their size must be known: `str`, `[T]` and
/// `dyn Trait` need a reference or an owning pointer. (rustc's own errors for this point into
/// generated code, several times.)
fn no_unsized_by_value(cx: &Ctxt, decl: &DelegateDecl) {
    for (ty, position) in signature_types(decl) {
        if let Some(expected) = unsized_alternatives(ty) {
            let what = match position {
                Position::Parameter => "parameter",
                Position::Return => "return value",
            };
            cx.error_spanned_by(
                ty,
                format!(
                    "a {what} is passed by value, so its type needs a size known at compile time: expected {expected}"
                ),
            );
        }
    }
}

/// Where a type stands in the signature.
#[derive(Clone, Copy)]
enum Position {
    Parameter,
    Return,
}

/// Every parameter type that was written, then the return type.
fn signature_types(decl: &DelegateDecl) -> impl Iterator<Item = (&Type, Position)> {
    let params = decl.params.iter().filter_map(|param| param.ty.as_ref());
    params
        .map(|ty| (ty, Position::Parameter))
        .chain(decl.output.iter().map(|ty| (ty, Position::Return)))
}

/// For an unsized type written by value, what to write instead.
fn unsized_alternatives(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Paren(paren) => unsized_alternatives(&paren.elem),
        Type::Group(group) => unsized_alternatives(&group.elem),
        Type::Path(path) if path.qself.is_none() && path.path.is_ident("str") => {
            Some("`&str` or `String`")
        }
        Type::Slice(_) => Some("a slice reference such as `&[T]`, or `Vec<T>`"),
        Type::TraitObject(_) => Some("`&dyn Trait` or `Box<dyn Trait>`"),
        _ => None,
    }
}

/// Calls `f` with the tokens of every reference without a lifetime and every `'_` inside `ty`.
fn for_each_elided_borrow(ty: &Type, f: &mut dyn FnMut(TokenStream)) {
    if let Type::Reference(reference) = ty
        && reference.lifetime.is_none()
    {
        f(reference.and_token.to_token_stream());
    }
    let mut children = Vec::new();
    let mut lifetimes = Vec::new();
    for_each_child(ty, &mut |child| children.push(child), &mut |lifetime| {
        lifetimes.push(lifetime)
    });
    if let Type::Reference(syn::TypeReference {
        lifetime: Some(lifetime),
        ..
    }) = ty
    {
        lifetimes.push(lifetime);
    }
    for lifetime in lifetimes {
        if lifetime.ident == "_" {
            f(lifetime.to_token_stream());
        }
    }
    for child in children {
        for_each_elided_borrow(child, f);
    }
}

/// Calls `f` on every `impl Trait` inside `ty`.
fn for_each_impl_trait(ty: &Type, f: &mut dyn FnMut(&syn::TypeImplTrait)) {
    match ty {
        Type::ImplTrait(impl_trait) => f(impl_trait),
        other => for_each_child(
            other,
            &mut |child| for_each_impl_trait(child, f),
            &mut |_| {},
        ),
    }
}

/// Whether `ty` breaks a rule of this module (so the fallback expansion leaves it out).
pub(crate) fn has_rejected_type(ty: &Type) -> bool {
    let mut rejected = unsized_alternatives(ty).is_some();
    for_each_impl_trait(ty, &mut |_| rejected = true);
    for_each_lifetime(ty, &mut |lifetime| rejected |= is_named(lifetime));
    rejected
}

/// Whether the return type `ty` breaks a rule of this module.
pub(crate) fn has_rejected_output(ty: &Type) -> bool {
    let mut rejected = has_rejected_type(ty);
    for_each_elided_borrow(ty, &mut |_| rejected = true);
    rejected
}

fn is_named(lifetime: &Lifetime) -> bool {
    lifetime.ident != "static" && lifetime.ident != "_"
}

/// Calls `f` on every lifetime written inside `ty`.
fn for_each_lifetime(ty: &Type, f: &mut dyn FnMut(&Lifetime)) {
    if let Type::Reference(syn::TypeReference {
        lifetime: Some(lifetime),
        ..
    }) = ty
    {
        f(lifetime);
    }
    let mut lifetimes = Vec::new();
    let mut children = Vec::new();
    for_each_child(ty, &mut |child| children.push(child), &mut |lifetime| {
        lifetimes.push(lifetime)
    });
    for lifetime in lifetimes {
        f(lifetime);
    }
    for child in children {
        for_each_lifetime(child, f);
    }
}

/// Calls `on_type` on the types directly inside `ty`, and `on_lifetime` on lifetimes used as
/// generic arguments or bounds directly inside it.
fn for_each_child<'a>(
    ty: &'a Type,
    on_type: &mut dyn FnMut(&'a Type),
    on_lifetime: &mut dyn FnMut(&'a Lifetime),
) {
    match ty {
        Type::Array(array) => on_type(&array.elem),
        Type::Group(group) => on_type(&group.elem),
        Type::Paren(paren) => on_type(&paren.elem),
        Type::Ptr(ptr) => on_type(&ptr.elem),
        Type::Reference(reference) => on_type(&reference.elem),
        Type::Slice(slice) => on_type(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().for_each(on_type),
        Type::Path(path) => {
            if let Some(qself) = &path.qself {
                on_type(&qself.ty);
            }
            for segment in &path.path.segments {
                path_arguments(&segment.arguments, on_type, on_lifetime);
            }
        }
        Type::TraitObject(object) => bounds(object.bounds.iter(), on_type, on_lifetime),
        Type::ImplTrait(impl_trait) => bounds(impl_trait.bounds.iter(), on_type, on_lifetime),
        Type::BareFn(bare_fn) => {
            bare_fn.inputs.iter().for_each(|input| on_type(&input.ty));
            if let ReturnType::Type(_, output) = &bare_fn.output {
                on_type(output);
            }
        }
        _ => {}
    }
}

fn bounds<'a>(
    bounds: impl Iterator<Item = &'a TypeParamBound>,
    on_type: &mut dyn FnMut(&'a Type),
    on_lifetime: &mut dyn FnMut(&'a Lifetime),
) {
    for bound in bounds {
        match bound {
            TypeParamBound::Trait(trait_bound) => {
                for segment in &trait_bound.path.segments {
                    path_arguments(&segment.arguments, on_type, on_lifetime);
                }
            }
            TypeParamBound::Lifetime(lifetime) => on_lifetime(lifetime),
            _ => {}
        }
    }
}

fn path_arguments<'a>(
    arguments: &'a PathArguments,
    on_type: &mut dyn FnMut(&'a Type),
    on_lifetime: &mut dyn FnMut(&'a Lifetime),
) {
    match arguments {
        PathArguments::AngleBracketed(angle) => {
            for argument in &angle.args {
                match argument {
                    GenericArgument::Type(ty) => on_type(ty),
                    GenericArgument::Lifetime(lifetime) => on_lifetime(lifetime),
                    GenericArgument::AssocType(assoc) => on_type(&assoc.ty),
                    _ => {}
                }
            }
        }
        PathArguments::Parenthesized(parenthesized) => {
            parenthesized.inputs.iter().for_each(&mut *on_type);
            if let ReturnType::Type(_, output) = &parenthesized.output {
                on_type(output);
            }
        }
        PathArguments::None => {}
    }
}
