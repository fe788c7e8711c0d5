//! The thread-safe form, `declare_multicast_delegate!(pub sync Name(params))` (TS1): a newtype
//! over the runtime's `SyncMulticastDelegate` that dereferences to it, so every operation and
//! the subscription builder are the runtime's own; the expansion writes only `new` and a
//! `broadcast` whose argument clones are spanned at the user's types (a parameter that is not
//! `Clone` is one error there, as for the game-thread form).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

use super::expand::{Arg, cfg_attrs, fallback_generics, local, signature_doc, struct_attrs};
use super::parse::{DelegateDecl, Kind};

/// After an error, the kind whose expansion keeps the user's code free of follow-on errors: a
/// thread-safe declaration that borrows, returns or takes more than four parameters (already
/// reported) expands as a game-thread delegate, which has the same method names and takes those
/// signatures.
pub(super) fn fallback_kind(mut decl: DelegateDecl) -> DelegateDecl {
    let borrows = decl
        .params
        .iter()
        .any(|param| matches!(param.ty, Some(Type::Reference(_))));
    if decl.kind == Kind::SyncMulticast
        && (borrows || decl.output.is_some() || decl.params.len() > 4)
    {
        decl.kind = Kind::Multicast;
    }
    decl
}

/// Expands a validated (or sanitized) thread-safe declaration.
pub(super) fn expand(decl: &DelegateDecl, args: &[Arg]) -> TokenStream {
    let name = &decl.name;
    let vis = &decl.vis;
    let private = quote!(::lumina::__private);
    let names: Vec<_> = args.iter().map(|arg| &arg.name).collect();
    let types: Vec<_> = args.iter().map(|arg| &arg.ty).collect();
    let signature = quote! {
        dyn ::core::ops::Fn(#(#types),*) + ::core::marker::Send + ::core::marker::Sync
    };
    let target = quote!(#private::SyncMulticastDelegate<#signature>);
    let f = local("f");
    // Each clone is spanned at its parameter's type: `SyncCloneArg` fails there, in our words.
    let clones = args
        .iter()
        .map(|Arg { name, ty }| quote_spanned!(ty.span()=> #private::sync_clone_arg::<#ty>(#name)));
    let signature_line = format!(
        "A thread-safe multicast delegate `{}`, declared with `declare_multicast_delegate!(sync ...)`.",
        signature_doc(decl, args)
    );
    let attrs = struct_attrs(
        decl,
        &[
            &signature_line,
            "",
            "`Send + Sync`: subscribe, remove and broadcast from any thread through `&self`. It",
            "dereferences to `SyncMulticastDelegate`, whose `add_lambda`, `add_static`,",
            "`add_member`, `add_queued`, `subscribe()` (options: priority, once, muted,",
            "self-aware), `remove`, `scoped`, `block` and `registration()` it offers.",
        ],
    );
    let cfgs = cfg_attrs(decl);
    let (generic_params, generic_args) = fallback_generics(decl);
    quote! {
        #attrs
        #[derive(Default, Debug)]
        #vis struct #name #generic_params(#target);

        #cfgs
        #[allow(dead_code)]
        impl #generic_params #name #generic_args {
            /// An empty delegate (allocates its shared state).
            #[must_use]
            pub fn new() -> Self {
                Self(#private::SyncMulticastDelegate::new())
            }

            /// Calls every subscriber present when the broadcast starts, in priority order,
            /// each with its own clone of the arguments; from any thread, also from inside a
            /// subscriber. Allocates nothing; holds no lock while a subscriber runs.
            pub fn broadcast(&self, #(#names: #types),*) {
                self.0.broadcast_with(
                    ::core::marker::PhantomData::<Self>,
                    (#(#names,)*),
                    |#f, (#(#names,)*)| #f(#(#clones),*),
                );
            }
        }

        #cfgs
        impl #generic_params ::core::ops::Deref for #name #generic_args {
            type Target = #target;

            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }
    }
}
