//! Expansion of a validated declaration: a newtype over the runtime's generic delegate with
//! thin, documented forwarding methods. Cannot fail.
//!
//! Everything from the runtime is named through `::lumina::__private`, so a crate depending only
//! on `lumina` compiles the expansion. Locals of the generated bodies use mixed-site hygiene, so a
//! parameter the user names `owner` or `results` cannot collide with them.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::parse::{DelegateDecl, Kind, is_mut_reference, is_reference};

/// A parameter ready for expansion: a name (the user's, or `argN`) and a type.
pub(super) struct Arg {
    pub(super) name: Ident,
    pub(super) ty: Type,
}

impl Arg {
    /// The expression passing this argument to one subscriber in a broadcast: `&mut` references
    /// are reborrowed so every subscriber gets one; shared references are copied and owned
    /// arguments moved (each subscriber's is its own clone).
    fn pass(&self) -> TokenStream {
        let name = &self.name;
        if is_mut_reference(&self.ty) {
            quote!(&mut *#name)
        } else {
            quote!(#name)
        }
    }
}

/// Expands a declaration (validated, or sanitized after errors so no cascade appears).
pub(crate) fn expand(decl: &DelegateDecl) -> TokenStream {
    let args = args(decl);
    match decl.kind {
        Kind::Multicast => expand_multicast(decl, &args),
        Kind::Single => expand_single(decl, &args),
        Kind::SyncMulticast => super::sync::expand(decl, &args),
    }
}

/// Names every parameter: the user's name, or `argN` (made unique against the user's names).
fn args(decl: &DelegateDecl) -> Vec<Arg> {
    let taken: Vec<String> = decl
        .params
        .iter()
        .filter_map(|param| param.name.as_ref().map(Ident::to_string))
        .collect();
    decl.params
        .iter()
        .enumerate()
        .filter_map(|(index, param)| {
            let ty = param.ty.clone()?;
            let name = match &param.name {
                Some(name) => name.clone(),
                None => {
                    let mut name = format!("arg{index}");
                    while taken.contains(&name) {
                        name.push('_');
                    }
                    Ident::new(&name, Span::call_site())
                }
            };
            Some(Arg { name, ty })
        })
        .collect()
}

/// The type parameters of a fallback expansion (see `sanitize`): `<A: Clone + 'static>` for the
/// struct and impl (an owned multicast argument is cloned), `<A>` for the type. Both empty for a
/// valid declaration.
pub(super) fn fallback_generics(decl: &DelegateDecl) -> (TokenStream, TokenStream) {
    let names = &decl.fallback_generics;
    if names.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    (
        quote!(<#(#names: ::core::clone::Clone + 'static),*>),
        quote!(<#(#names),*>),
    )
}

/// A hygienic local of the generated bodies.
pub(super) fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// `fn(window: &Window, size: UVec2) -> bool`, for the generated rustdoc.
pub(super) fn signature_doc(decl: &DelegateDecl, args: &[Arg]) -> String {
    let params: Vec<String> = args
        .iter()
        .map(|arg| format!("{}: {}", arg.name, tokens_to_string(&arg.ty)))
        .collect();
    let output = decl
        .output
        .as_ref()
        .map(|output| format!(" -> {}", tokens_to_string(output)))
        .unwrap_or_default();
    format!("fn({}){output}", params.join(", "))
}

/// Renders tokens the way people write them (`&Window`, `Vec<u8>`), not `& Window`.
fn tokens_to_string(tokens: &impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        ("& ", "&"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" ;", ";"),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        ("' ", "'"),
        ("dyn(", "dyn ("),
        ("mut(", "mut ("),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// `dyn ::core::ops::Fn(&Window, UVec2) -> R`
fn fn_trait(decl: &DelegateDecl, args: &[Arg], first: Option<TokenStream>) -> TokenStream {
    let types = args.iter().map(|arg| &arg.ty);
    let first = first.map(|first| quote!(#first,));
    let output = decl.output.as_ref().map(|output| quote!(-> #output));
    quote!(::core::ops::Fn(#first #(#types),*) #output)
}

/// The user's attributes and docs, then the generated doc paragraph, one `///` line each.
pub(super) fn struct_attrs(decl: &DelegateDecl, summary: &[&str]) -> TokenStream {
    let attrs = &decl.attrs;
    let has_docs = attrs.iter().any(|attr| attr.path().is_ident("doc"));
    let separator = has_docs.then(|| quote!(#[doc = ""]));
    let lines = summary.iter().map(|line| format!(" {line}"));
    quote! {
        #(#attrs)*
        #separator
        #(#[doc = #lines])*
    }
}

/// What both expansions need: signatures, parameter lists and hygienic locals.
struct Common<'a> {
    /// `::core::ops::Fn(&Window, UVec2) -> R`
    signature: TokenStream,
    /// `::core::ops::Fn(&T, &Window, UVec2) -> R`, for member bindings.
    member_signature: TokenStream,
    /// `::core::ops::Fn(&ThisSubscription, &Window, UVec2) -> R`, for self-aware closures (X6).
    aware_signature: TokenStream,
    /// `::core::ops::Fn(&T, &ThisSubscription, &Window, UVec2) -> R`, for self-aware members.
    aware_member_signature: TokenStream,
    names: Vec<&'a Ident>,
    types: Vec<&'a Type>,
    rc: TokenStream,
    f: Ident,
    owner: Ident,
    method: Ident,
}

impl<'a> Common<'a> {
    fn new(decl: &DelegateDecl, args: &'a [Arg]) -> Self {
        Common {
            signature: fn_trait(decl, args, None),
            member_signature: fn_trait(decl, args, Some(quote!(&T))),
            aware_signature: fn_trait(
                decl,
                args,
                Some(quote!(&::lumina::__private::ThisSubscription)),
            ),
            aware_member_signature: fn_trait(
                decl,
                args,
                Some(quote!(&T, &::lumina::__private::ThisSubscription)),
            ),
            names: args.iter().map(|arg| &arg.name).collect(),
            types: args.iter().map(|arg| &arg.ty).collect(),
            rc: quote!(::lumina::__private::Rc),
            f: local("f"),
            owner: local("owner"),
            method: local("method"),
        }
    }

    /// The shared callable of a member binding, as a statement downgrading `owner` and the
    /// expression using it: calls `method` on the upgraded weak owner (the runtime only calls it
    /// while the owner is alive).
    fn member_callable(&self) -> (TokenStream, TokenStream) {
        let Common {
            names,
            types,
            rc,
            owner,
            method,
            ..
        } = self;
        let weak = local("weak");
        let object = local("object");
        let downgrade = quote!(let #weak = #rc::downgrade(#owner););
        let callable = quote! {
            #rc::new(move |#(#names: #types),*| {
                ::lumina::__private::call_member(
                    &#weak,
                    (#(#names,)*),
                    |#object, (#(#names,)*)| #method(#object, #(#names),*),
                )
            })
        };
        (downgrade, callable)
    }

    /// The shared callables of self-aware bindings (X6), built from `this` (the subscription):
    /// a closure's, and a member's (after the `downgrade` statement of `member_callable`).
    fn aware_callables(&self) -> (TokenStream, TokenStream) {
        let Common {
            names,
            types,
            rc,
            f,
            method,
            ..
        } = self;
        let (weak, this, object) = (local("weak"), local("this"), local("object"));
        let lambda = quote! {
            move |#this: ::lumina::__private::ThisSubscription| {
                #rc::new(move |#(#names: #types),*| #f(&#this, #(#names),*))
            }
        };
        let member = quote! {
            move |#this: ::lumina::__private::ThisSubscription| {
                #rc::new(move |#(#names: #types),*| {
                    ::lumina::__private::call_member(
                        &#weak,
                        (#(#names,)*),
                        |#object, (#(#names,)*)| #method(#object, &#this, #(#names),*),
                    )
                })
            }
        };
        (lambda, member)
    }
}

/// The user's `#[cfg(..)]` attributes, repeated on the impl blocks so they come and go with
/// the struct.
pub(super) fn cfg_attrs(decl: &DelegateDecl) -> TokenStream {
    let cfgs = decl.attrs.iter().filter(|attr| attr.path().is_ident("cfg"));
    quote!(#(#cfgs)*)
}

/// The user's `#[cfg(..)]` and `#[allow(..)]` attributes, for the other types the declaration
/// writes (an `allow(non_camel_case_types)` covers `<name>Registration` too).
fn cfg_and_allow_attrs(decl: &DelegateDecl) -> TokenStream {
    let attrs = decl
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("allow"));
    quote!(#(#attrs)*)
}

fn expand_multicast(decl: &DelegateDecl, args: &[Arg]) -> TokenStream {
    let name = &decl.name;
    let vis = &decl.vis;
    let common = Common::new(decl, args);
    let (downgrade, member_callable) = common.member_callable();
    let Common {
        signature,
        member_signature,
        names,
        types,
        rc,
        f,
        owner,
        method,
        ..
    } = &common;
    let signature_line = format!(
        "A multicast delegate `{}`, declared with `declare_multicast_delegate!`.",
        signature_doc(decl, args)
    );
    let attrs = struct_attrs(
        decl,
        &[
            &signature_line,
            "",
            "Any number of subscribers, called in the order they were added. Subscribe with",
            "`add_lambda`, `add_static` or `add_member` (each returns a `DelegateHandle` for",
            "`remove`), and call them all with `broadcast`. `subscribe()` takes options (priority,",
            "once, muted, self-aware) before the same finishes; `registration()` hands out a",
            "bind-only view.",
        ],
    );
    let cfgs = cfg_attrs(decl);
    let (generic_params, generic_args) = fallback_generics(decl);
    let handle = quote!(::lumina::__private::DelegateHandle);
    let output_arrow = decl.output.as_ref().map(|output| quote!(-> #output));
    let priority = local("priority");
    let registration = registration_name(decl);
    let fallback = &decl.fallback_generics;
    let next = expand_next(decl, args, &common);
    let next_delegate = next.as_ref().map(|(delegate, _)| delegate);
    let registration_type = expand_registration(decl, &common, next.as_ref().map(|(_, view)| view));
    let builder = builder_name(decl);
    let builder_type = expand_builder(decl, &common);
    let queued = expand_queued(decl, args);
    let passed: Vec<TokenStream> = args.iter().map(Arg::pass).collect();

    // Owned arguments travel in a tuple that `broadcast_with` clones for every subscriber but
    // the last (M11); references are captured by the call closure and passed through untouched.
    let owned: Vec<&Arg> = args.iter().filter(|arg| !is_reference(&arg.ty)).collect();
    let owned_names: Vec<&Ident> = owned.iter().map(|arg| &arg.name).collect();
    // The clone closure asserts `CloneArg` spanned at the user's type: a non-`Clone` parameter
    // is one error there, in our words (M11). It captures nothing, so the runtime's loop knows
    // the clone from its type and inlines it, out of line too (BENCHMARKS.md, N2).
    //
    // Two or more owned arguments whose types have drop glue travel as a tuple of the runtime's
    // `Guarded` elements (R2): a clone that panics part-way drops the finished elements under the
    // guard, and so does the loop when it drops the originals while the thread unwinds (a
    // subscriber panicked before the last one), each element under its own guard (a plain
    // tuple's drop glue would drop the second one plainly while the first one's panic unwinds,
    // and one whose `Drop` panics then aborts the process). The call takes them out first.
    // Without drop glue there is nothing to guard, and the guards' own drop glue would cost the
    // loop: `needs_drop` picks the path, a constant per type, so only one is compiled in. One
    // owned argument has nothing to guard either: a plain tuple.
    let guarded = quote!(::lumina::__private::Guarded);
    let guard_each = owned.len() >= 2;
    let owned_types: Vec<&Type> = owned.iter().map(|arg| &arg.ty).collect();
    let clone_each = |guard: bool| -> Vec<TokenStream> {
        owned
            .iter()
            .map(|arg| {
                let (ty, name) = (&arg.ty, &arg.name);
                if guard {
                    let clone =
                        quote_spanned!(ty.span()=> ::lumina::__private::clone_arg::<#ty>(&**#name));
                    quote!(#guarded::new(#clone))
                } else {
                    quote_spanned!(ty.span()=> ::lumina::__private::clone_arg::<#ty>(#name))
                }
            })
            .collect()
    };
    let (plain_cloned, guarded_cloned) = (clone_each(false), clone_each(true));
    let plain_wrapped = quote! {
        (#(#owned_names,)*),
        |(#(#owned_names,)*)| (#(#plain_cloned,)*)
    };
    let plain_call = quote!(#f(#(#passed),*));
    let guarded_wrapped = quote! {
        (#(#guarded::new(#owned_names),)*),
        |(#(#owned_names,)*)| (#(#guarded_cloned,)*)
    };
    let guarded_call = quote!({
        let (#(#owned_names,)*) = (#(#guarded::into_inner(#owned_names),)*);
        #f(#(#passed),*)
    });
    // A broadcast form, `form(arguments and their clone, a subscriber's call)`, on the path the
    // argument types pick.
    let paths = |form: &dyn Fn(&TokenStream, &TokenStream) -> TokenStream| {
        let plain = form(&plain_wrapped, &plain_call);
        if guard_each {
            let guarded_form = form(&guarded_wrapped, &guarded_call);
            quote! {
                if ::core::mem::needs_drop::<(#(#owned_types,)*)>() {
                    #guarded_form
                } else {
                    #plain
                }
            }
        } else {
            plain
        }
    };
    let broadcast = paths(&|wrapped, call| {
        quote! {
            ::lumina::__private::broadcast_with(
                ::core::marker::PhantomData::<Self>,
                &self.0,
                #wrapped,
                |#f, (#(#owned_names,)*)| { #call; },
            );
        }
    });
    let combine = decl.output.as_ref().map(|output| {
        let (fold, stop, init) = (local("fold"), local("stop"), local("init"));
        // The runtime holds the accumulator and the combiner under the guard while
        // subscribers run (R2).
        let fold_body = paths(&|wrapped, call| {
            quote! {
                ::lumina::__private::broadcast_fold(
                    ::core::marker::PhantomData::<Self>,
                    &self.0, #wrapped, #init, #fold, |#f, (#(#owned_names,)*)| #call,
                )
            }
        });
        let until_body = paths(&|wrapped, call| {
            quote! {
                ::lumina::__private::broadcast_until(
                    ::core::marker::PhantomData::<Self>,
                    &self.0, #wrapped, #stop, |#f, (#(#owned_names,)*)| #call,
                )
            }
        });
        quote! {
            /// Calls subscribers in order and folds their results as they come: the fold
            /// returns `Continue(next)` to go on or `Break(last)` to stop, and then no further
            /// subscriber runs. Returns the last accumulator. Allocates nothing.
            #[allow(clippy::too_many_arguments)]
            pub fn broadcast_fold<Acc>(
                &self,
                #(#names: #types,)*
                #init: Acc,
                #fold: impl ::core::ops::FnMut(Acc, #output) -> ::core::ops::ControlFlow<Acc, Acc>,
            ) -> Acc {
                #fold_body
            }

            /// Calls subscribers in order until `stop(result)` breaks: returns the break's
            /// value, or `None` if every subscriber ran. Allocates nothing.
            #[allow(clippy::too_many_arguments)]
            pub fn broadcast_until<Out>(
                &self,
                #(#names: #types,)*
                #stop: impl ::core::ops::FnMut(#output) -> ::core::ops::ControlFlow<Out>,
            ) -> ::core::option::Option<Out> {
                #until_body
            }
        }
    });
    // The results are gathered by the runtime, which guards those held while later
    // subscribers run (R2).
    let collect = decl.output.as_ref().map(|output| {
        let body = paths(&|wrapped, call| {
            quote! {
                ::lumina::__private::broadcast_collect(
                    ::core::marker::PhantomData::<Self>,
                    &self.0, #wrapped, |#f, (#(#owned_names,)*)| #call,
                )
            }
        });
        quote! {
            /// Calls every subscriber like `broadcast` and returns their results in call order.
            #[must_use]
            pub fn broadcast_collect(&self, #(#names: #types),*) -> ::std::vec::Vec<#output> {
                #body
            }
        }
    });

    quote! {
        #attrs
        #[derive(Default, Debug)]
        #vis struct #name #generic_params(::lumina::__private::MulticastDelegate<dyn #signature>);

        #cfgs
        #[allow(dead_code)]
        impl #generic_params #name #generic_args {
            /// An empty delegate. Allocates nothing.
            #[must_use]
            pub const fn new() -> Self {
                Self(::lumina::__private::MulticastDelegate::new())
            }

            /// Adds a closure; the returned handle removes it.
            #[track_caller]
            pub fn add_lambda(&self, #f: impl #signature + 'static) -> #handle {
                self.0.add_shared(#rc::new(#f))
            }

            /// Adds a plain function; the returned handle removes it, and so does
            /// `remove_static` with the same function.
            #[track_caller]
            pub fn add_static(&self, #f: fn(#(#types),*) #output_arrow) -> #handle {
                self.subscribe().add_static(#f)
            }

            /// A subscription with options: `priority`, `once`, `muted` and `self_aware`, one
            /// method each, then `add_lambda`, `add_static`, `add_member`, `add_method` or
            /// `add_shared`, which returns the handle. Nothing is subscribed until then.
            #[inline]
            pub fn subscribe(&self) -> #builder<'_, #(#fallback),*> {
                #builder(self.0.subscribe())
            }

            /// Removes every subscription made by `add_static` (any form) with this function;
            /// returns how many. Identity is the function pointer's value, and only
            /// subscriptions made from a plain function take part (see
            /// `MulticastDelegate::remove_static` for what folding identical code does to it).
            pub fn remove_static(&self, #f: fn(#(#types),*) #output_arrow) -> usize {
                self.0.remove_keyed(
                    ::lumina::__private::fn_address(#f as *const ()),
                    ::core::option::Option::None::<&#rc<()>>,
                )
            }

            /// Adds `method` of `owner` (a plain method, such as `Hud::show`), held weakly like
            /// `add_member`; the returned handle removes it, and so does `remove_method` with the
            /// same owner and method.
            #[track_caller]
            pub fn add_method<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: fn(&T, #(#types),*) #output_arrow,
            ) -> #handle {
                self.subscribe().add_method(#owner, #method)
            }

            /// Removes every subscription made by `add_method` with this owner and this method;
            /// returns how many. Identity is the owner's object and the method's address, as for
            /// `remove_static`: a binding of another object, or made by `add_member`, never
            /// matches.
            pub fn remove_method<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: fn(&T, #(#types),*) #output_arrow,
            ) -> usize {
                self.0.remove_keyed(
                    ::lumina::__private::fn_address(#method as *const ()),
                    ::core::option::Option::Some(#owner),
                )
            }

            /// Adds a block to the subscription of `handle`: it keeps its place and priority and
            /// still counts, but broadcasts skip it until as many `unblock`s (blocks are
            /// counted). `false` for an invalid, foreign or removed handle.
            pub fn block(&self, handle: #handle) -> bool {
                self.0.block(handle)
            }

            /// Lifts one block of the subscription of `handle`; `false` if it has none.
            pub fn unblock(&self, handle: #handle) -> bool {
                self.0.unblock(handle)
            }

            /// Whether the subscription of `handle` is present and blocked.
            #[must_use]
            pub fn is_blocked(&self, handle: #handle) -> bool {
                self.0.is_blocked(handle)
            }

            /// Blocks the subscription of `handle` while the returned guard lives (counted:
            /// guards nest and drop in any order).
            pub fn block_scoped(&self, handle: #handle) -> ::lumina::__private::ScopedBlock {
                self.0.block_scoped(handle)
            }

            /// Mutes the whole delegate while the returned guard lives: no broadcast calls
            /// anyone meanwhile (counted: guards nest and drop in any order).
            pub fn mute(&self) -> ::lumina::__private::ScopedMute {
                self.0.mute()
            }

            /// Whether a `mute` guard of this delegate lives.
            #[must_use]
            pub fn is_muted(&self) -> bool {
                self.0.is_muted()
            }

            /// Moves the subscription of `handle` to `priority`, among that priority's
            /// subscribers in the order added; during a broadcast, once the outermost ends.
            pub fn set_priority(&self, handle: #handle, #priority: i32) -> bool {
                self.0.set_priority(handle, #priority)
            }

            /// Adds a method of `owner`, held weakly: once `owner` is dropped it never runs again,
            /// stops counting in `len`, and is pruned. The returned handle removes it, and so
            /// does `remove_all(&owner)`.
            #[track_caller]
            pub fn add_member<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: impl #member_signature + 'static,
            ) -> #handle {
                #downgrade
                self.0.add_shared_member(#owner, #member_callable)
            }

            /// A bind-only view of this delegate: it subscribes and unsubscribes, but cannot
            /// broadcast or clear. Hand it out instead of the delegate, so only its owner fires it.
            #[must_use]
            pub fn registration(&self) -> #registration<'_, #(#fallback),*> {
                #registration(self)
            }

            /// Removes the subscription of `handle`; `false` (and no change) for an invalid,
            /// foreign or already removed handle. During a broadcast, a removed subscriber not
            /// yet reached does not run.
            pub fn remove(&self, handle: #handle) -> bool {
                self.0.remove(handle)
            }

            /// Removes every member binding of `owner`; returns how many were removed.
            pub fn remove_all<T: ?Sized>(&self, #owner: &#rc<T>) -> usize {
                self.0.remove_all(#owner)
            }

            /// Every subscription present, in the order they run, with where it was made and
            /// whether its owner lives (B5).
            pub fn subscriptions(&self) -> ::std::vec::Vec<::lumina::__private::Subscription> {
                self.0.subscriptions()
            }

            /// Turns `handle` into a guard that unsubscribes when it is dropped (B1).
            pub fn scoped(&self, handle: #handle) -> ::lumina::__private::ScopedSubscription {
                self.0.scoped(handle)
            }

            /// Whether a live member binding of `owner` exists.
            #[must_use]
            pub fn is_bound_to<T: ?Sized>(&self, #owner: &#rc<T>) -> bool {
                self.0.is_bound_to(#owner)
            }

            /// Removes every subscriber. During a broadcast nothing further runs in it.
            pub fn clear(&self) {
                self.0.clear();
            }

            /// Whether a live subscriber exists.
            #[must_use]
            pub fn is_bound(&self) -> bool {
                self.0.is_bound()
            }

            /// How many live subscribers there are.
            #[must_use]
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// `true` when no live subscriber exists.
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// Calls every subscriber present when the broadcast starts, in the order they were
            /// added, discarding results. References are passed through; an owned argument is
            /// cloned for every subscriber but the last, which gets the original.
            pub fn broadcast(&self, #(#names: #types),*) {
                #broadcast
            }

            /// `broadcast`, then `clear`: for one-shot signals. Subscribers added during the
            /// broadcast are cleared too.
            pub fn broadcast_and_clear(&self, #(#names: #types),*) {
                self.broadcast(#(#names),*);
                self.clear();
            }

            #collect
            #combine

            #next_delegate
        }

        #registration_type
        #builder_type
        #queued
    }
}

/// The bind-only view `<Name>Registration<'a>` of a declared multicast delegate (B2): the
/// subscribe and unsubscribe methods of `Name`, forwarded, and nothing that broadcasts or clears.
fn expand_registration(
    decl: &DelegateDecl,
    common: &Common<'_>,
    next: Option<&TokenStream>,
) -> TokenStream {
    let name = &decl.name;
    let vis = &decl.vis;
    let registration = registration_name(decl);
    let builder = builder_name(decl);
    let cfgs = cfg_attrs(decl);
    let Common {
        signature,
        member_signature,
        names,
        types,
        rc,
        f,
        owner,
        method,
        ..
    } = common;
    let priority = local("priority");
    let handle = quote!(::lumina::__private::DelegateHandle);
    let output_arrow = decl.output.as_ref().map(|output| quote!(-> #output));
    let doc = format!(
        " A bind-only view of `{name}`, made by `{name}::registration`: it subscribes and \
         unsubscribes, but cannot broadcast or clear, so only the owner of the `{name}` fires it."
    );
    let struct_attrs = cfg_and_allow_attrs(decl);
    // After errors, the fallback's type parameters (see `fallback_generics`).
    let fallback = &decl.fallback_generics;
    let (_, generic_args) = fallback_generics(decl);
    quote! {
        #struct_attrs
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        #[allow(dead_code)]
        #vis struct #registration<'a, #(#fallback: ::core::clone::Clone + 'static),*>(
            &'a #name #generic_args
        );

        #cfgs
        #[allow(dead_code)]
        impl<#(#fallback: ::core::clone::Clone + 'static),*> #registration<'_, #(#fallback),*> {
            /// Adds a closure; the returned handle removes it.
            #[track_caller]
            pub fn add_lambda(&self, #f: impl #signature + 'static) -> #handle {
                self.0.add_lambda(#f)
            }

            /// Adds a plain function; the returned handle removes it.
            #[track_caller]
            pub fn add_static(&self, #f: fn(#(#types),*) #output_arrow) -> #handle {
                self.0.add_static(#f)
            }

            /// A subscription with options, as the delegate's `subscribe`.
            #[inline]
            pub fn subscribe(&self) -> #builder<'_, #(#fallback),*> {
                self.0.subscribe()
            }

            /// Adds a method of `owner`, held weakly: once `owner` is dropped it never runs again.
            #[track_caller]
            pub fn add_member<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: impl #member_signature + 'static,
            ) -> #handle {
                self.0.add_member(#owner, #method)
            }

            /// Removes the subscription of `handle`; `false` (and no change) for an invalid,
            /// foreign or already removed handle.
            pub fn remove(&self, handle: #handle) -> bool {
                self.0.remove(handle)
            }

            /// Removes every member binding of `owner`; returns how many were removed.
            pub fn remove_all<T: ?Sized>(&self, #owner: &#rc<T>) -> usize {
                self.0.remove_all(#owner)
            }

            /// Whether a live member binding of `owner` exists.
            #[must_use]
            pub fn is_bound_to<T: ?Sized>(&self, #owner: &#rc<T>) -> bool {
                self.0.is_bound_to(#owner)
            }

            /// Whether a live subscriber exists.
            #[must_use]
            pub fn is_bound(&self) -> bool {
                self.0.is_bound()
            }

            /// How many live subscribers there are.
            #[must_use]
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// `true` when no live subscriber exists.
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// Turns `handle` into a guard that unsubscribes when it is dropped, so a listener
            /// given only this view keeps its subscription for a scope.
            pub fn scoped(&self, handle: #handle) -> ::lumina::__private::ScopedSubscription {
                self.0.scoped(handle)
            }

            /// Every subscription present, in the order they run, with where it was made.
            pub fn subscriptions(&self) -> ::std::vec::Vec<::lumina::__private::Subscription> {
                self.0.subscriptions()
            }

            /// Removes every subscription made by `add_static` with this function.
            pub fn remove_static(&self, #f: fn(#(#types),*) #output_arrow) -> usize {
                self.0.remove_static(#f)
            }

            /// Adds `method` of `owner` (a plain method), held weakly; `remove_method` with the
            /// same owner and method removes it.
            #[track_caller]
            pub fn add_method<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: fn(&T, #(#types),*) #output_arrow,
            ) -> #handle {
                self.0.add_method(#owner, #method)
            }

            /// Removes every subscription made by `add_method` with this owner and this method.
            pub fn remove_method<T: ::core::any::Any>(
                &self,
                #owner: &#rc<T>,
                #method: fn(&T, #(#types),*) #output_arrow,
            ) -> usize {
                self.0.remove_method(#owner, #method)
            }

            /// Blocks the subscription of `handle` until `unblock`.
            pub fn block(&self, handle: #handle) -> bool {
                self.0.block(handle)
            }

            /// Lifts one block of the subscription of `handle`; `false` if it has none.
            pub fn unblock(&self, handle: #handle) -> bool {
                self.0.unblock(handle)
            }

            /// Whether the subscription of `handle` is present and blocked.
            #[must_use]
            pub fn is_blocked(&self, handle: #handle) -> bool {
                self.0.is_blocked(handle)
            }

            /// Blocks the subscription of `handle` while the returned guard lives.
            pub fn block_scoped(&self, handle: #handle) -> ::lumina::__private::ScopedBlock {
                self.0.block_scoped(handle)
            }

            /// Moves the subscription of `handle` to `priority`.
            pub fn set_priority(&self, handle: #handle, #priority: i32) -> bool {
                self.0.set_priority(handle, #priority)
            }

            /// Not available on a view: only the delegate's owner fires it. Generic (its
            /// parameter is always `Self`), so that it is never compiled unless called: a
            /// method whose bounds never hold must not be exported by the runtime's `dylib`.
            #[doc(hidden)]
            #[allow(unused_variables, clippy::ptr_arg)]
            pub fn broadcast<__LuminaView>(&self, #(#names: #types),*)
            where
                Self: ::lumina::__private::Is<__LuminaView>,
                __LuminaView: ?Sized + ::lumina::__private::OwnerBroadcasts,
            {
                ::core::unreachable!()
            }

            /// Not available on a view: only the delegate's owner fires it.
            #[doc(hidden)]
            #[allow(unused_variables, clippy::ptr_arg)]
            pub fn broadcast_and_clear<__LuminaView>(&self, #(#names: #types),*)
            where
                Self: ::lumina::__private::Is<__LuminaView>,
                __LuminaView: ?Sized + ::lumina::__private::OwnerBroadcasts,
            {
                ::core::unreachable!()
            }

            /// Not available on a view: only the delegate's owner clears it.
            #[doc(hidden)]
            pub fn clear<__LuminaView>(&self)
            where
                Self: ::lumina::__private::Is<__LuminaView>,
                __LuminaView: ?Sized + ::lumina::__private::OwnerClears,
            {
                ::core::unreachable!()
            }
            #next
        }
    }
}

/// Whether `ty` (a referent, an owned parameter or the result) cannot be named in `next()`'s
/// bounds and future: it borrows (a reference or a lifetime inside), or is a trait object or an
/// `impl` type. Such a delegate has no `next()`.
fn not_nameable(ty: &Type) -> bool {
    let text = ty.to_token_stream().to_string();
    text.contains('&') || text.contains('\'') || text.contains("dyn") || text.contains("impl")
}

/// The referent of a reference parameter type (through parentheses and invisible groups).
fn referent(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Reference(reference) => Some(&reference.elem),
        Type::Paren(inner) => referent(&inner.elem),
        Type::Group(inner) => referent(&inner.elem),
        _ => None,
    }
}

/// `next()` (X5) for a declared multicast delegate and its view: the future of the next
/// broadcast, resolving with its arguments, owned ones as the broadcast clones them and
/// referenced ones through `ToOwned`. Its bounds (`ToOwned` referents, a `Default` result) are
/// higher-ranked, so they are checked where `next()` is called, not here: a delegate whose
/// arguments cannot be owned simply has no usable `next()`, and no new error. Not generated when
/// a referent, an owned parameter or the result borrows or is a trait object (see
/// [`not_nameable`]).
fn expand_next(
    decl: &DelegateDecl,
    args: &[Arg],
    common: &Common<'_>,
) -> Option<(TokenStream, TokenStream)> {
    let Common {
        names, types, rc, ..
    } = common;
    let mut outputs = Vec::new();
    // The referents' owned copies (user code), made after every owned argument is guarded.
    let (mut owned, mut copies) = (Vec::new(), Vec::new());
    let mut bounds = Vec::new();
    // One type parameter per referent (and one for a result), inferred to be that type by
    // `__private::Is`: the bounds name the method's own parameters, so `ToOwned` and `Default`
    // are required where `next()` is called, and the method is only compiled for a caller (a
    // dylib exporting every non-generic method would otherwise compile one whose bounds do not
    // hold).
    let mut params = Vec::new();
    for arg in args {
        let name = &arg.name;
        match referent(&arg.ty) {
            Some(elem) => {
                if not_nameable(elem) {
                    return None;
                }
                let param = format_ident!("__Referent{}", params.len());
                outputs.push(quote!(<#param as ::std::borrow::ToOwned>::Owned));
                let reference = if is_mut_reference(&arg.ty) {
                    quote!(&*#name)
                } else {
                    quote!(#name)
                };
                copies.push((
                    name,
                    quote! {
                        ::std::borrow::ToOwned::to_owned(
                            <#elem as ::lumina::__private::Is<#param>>::as_same(#reference)
                        )
                    },
                ));
                bounds.push(quote! {
                    #elem: ::lumina::__private::Is<#param>,
                    #param: ?::core::marker::Sized + ::std::borrow::ToOwned + 'static,
                    <#param as ::std::borrow::ToOwned>::Owned: 'static,
                });
                params.push(param);
            }
            None => {
                let ty = &arg.ty;
                if not_nameable(ty) {
                    return None;
                }
                outputs.push(quote!(#ty));
                owned.push(name);
            }
        }
    }
    if decl.output.as_ref().is_some_and(not_nameable) {
        return None;
    }
    let (result, result_bound) = match &decl.output {
        Some(output) => {
            let param = format_ident!("__Result");
            let bound = quote! {
                #output: ::lumina::__private::Is<#param>,
                #param: ::core::default::Default,
            };
            let result = quote! {
                <#output as ::lumina::__private::Is<#param>>::from_same(
                    <#param as ::core::default::Default>::default()
                )
            };
            params.push(param);
            (result, bound)
        }
        None => (quote!(), quote!()),
    };
    let generics = (!params.is_empty()).then(|| quote!(<#(#params),*>));
    let sender = local("sender");
    // The owned arguments are guarded before any copy is made, so a panicking `ToOwned` drops
    // them and the copies made before it under the guard (R2); the tuple keeps the parameters'
    // order. With no copy, or one element, nothing can panic while another is held: a plain
    // tuple.
    let guarded = quote!(::lumina::__private::Guarded);
    let guard = !copies.is_empty() && args.len() > 1;
    let values: Vec<TokenStream> = args
        .iter()
        .map(|arg| {
            let name = &arg.name;
            match copies.iter().find(|(copy, _)| *copy == name) {
                _ if guard => quote!(#guarded::into_inner(#name)),
                Some((_, copy)) => copy.clone(),
                None => quote!(#name),
            }
        })
        .collect();
    if !guard {
        (owned, copies) = (Vec::new(), Vec::new());
    }
    let copy_names: Vec<&Ident> = copies.iter().map(|(name, _)| *name).collect();
    let copy_values: Vec<&TokenStream> = copies.iter().map(|(_, value)| value).collect();
    let future = quote!(::lumina::__private::NextBroadcast<(#(#outputs,)*)>);
    let doc = quote! {
        /// The future of the next broadcast (X5): resolves with its arguments as owned values
        /// (owned ones as the broadcast clones them; a reference argument becomes the owned value
        /// its `ToOwned` gives, so `(u32, &str)` resolves as `(u32, String)`, since the future
        /// outlives the broadcast's borrows), or `Err(lumina::Gone)` if
        /// the delegate is dropped or cleared first. Subscribed now, so a broadcast running now
        /// does not reach it; dropping it unsubscribes. Poll it with any executor, or run it on
        /// the game thread with `lumina::coroutine::spawn_local`.
    };
    let signature = quote! {
        #doc
        #[track_caller]
        pub fn next #generics (&self) -> #future
        where
            #(#bounds)*
            #result_bound
    };
    let delegate = quote! {
        #signature
        {
            ::lumina::__private::next_broadcast(&self.0, |#sender| {
                #rc::new(move |#(#names: #types),*| {
                    #(let #owned = #guarded::new(#owned);)*
                    #(let #copy_names = #guarded::new(#copy_values);)*
                    #sender.send((#(#values,)*));
                    #result
                })
            })
        }
    };
    let view = quote! {
        #signature
        {
            self.0.next::<#(#params),*>()
        }
    };
    Some((delegate, view))
}

/// `Name` + `Registration`, at the name's span.
fn builder_name(decl: &DelegateDecl) -> Ident {
    format_ident!("{}Subscribe", decl.name, span = decl.name.span())
}

/// The builder `<Name>Subscribe<'a>` of a declared multicast delegate (A1): the runtime's
/// `Subscribe` (options, modes, insertion), with the finishes in the declared signature.
fn expand_builder(decl: &DelegateDecl, common: &Common<'_>) -> TokenStream {
    let name = &decl.name;
    let vis = &decl.vis;
    let builder = builder_name(decl);
    let cfgs = cfg_attrs(decl);
    let struct_attrs = cfg_and_allow_attrs(decl);
    let (downgrade, member_callable) = common.member_callable();
    let (aware_lambda, aware_member) = common.aware_callables();
    let Common {
        signature,
        member_signature,
        aware_signature,
        aware_member_signature,
        types,
        rc,
        f,
        owner,
        method,
        ..
    } = common;
    let priority = local("priority");
    let handle = quote!(::lumina::__private::DelegateHandle);
    let output_arrow = decl.output.as_ref().map(|output| quote!(-> #output));
    let private = quote!(::lumina::__private);
    let fallback = &decl.fallback_generics;
    let doc = format!(
        " A subscription to a `{name}` being made, from `{name}::subscribe`: options first \
         (`priority`, `once`, `muted`, `self_aware`), then a finish that returns the handle."
    );
    quote! {
        #struct_attrs
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        #[must_use = "a subscription is made only by a finish such as `add_lambda`: nothing is subscribed yet"]
        #[allow(dead_code)]
        #vis struct #builder<'a, #(#fallback: ::core::clone::Clone + 'static,)* M = #private::Plain>(
            #private::Subscribe<'a, #private::MulticastDelegate<dyn #signature>, M>
        );

        #cfgs
        #[allow(dead_code)]
        impl<'a, #(#fallback: ::core::clone::Clone + 'static,)* M> #builder<'a, #(#fallback,)* M> {
            /// Runs before every subscriber of a lower `priority`; the plain forms are 0.
            #[inline]
            pub fn priority(self, #priority: i32) -> Self {
                Self(self.0.priority(#priority))
            }

            /// Runs at most once: removed right before its call starts.
            #[inline]
            pub fn once(self) -> Self {
                Self(self.0.once())
            }

            /// Starts blocked: present and counted, skipped by broadcasts until `unblock`.
            #[inline]
            pub fn muted(self) -> Self {
                Self(self.0.muted())
            }

            /// Belongs to `key`: `remove_all(&key)` removes it, and it never runs again once
            /// `key` is dropped (held weakly).
            #[inline]
            pub fn key<K: ::core::any::Any>(self, key: &'a #private::Rc<K>) -> Self {
                Self(self.0.key(key))
            }

            /// The callable receives its own subscription first (`&ThisSubscription`).
            #[inline]
            pub fn self_aware(self) -> #builder<'a, #(#fallback,)* #private::SelfAware>
            where
                M: #private::NotSelfAware,
            {
                #builder(self.0.self_aware())
            }

            /// Finishes with a plain function; `remove_static` finds it. Not after `self_aware`.
            #[track_caller]
            #[inline]
            pub fn add_static(self, #f: fn(#(#types),*) #output_arrow) -> #handle
            where
                M: #private::TakesPlainFunction,
            {
                self.0.add_keyed(
                    #private::fn_address(#f as *const ()),
                    ::core::option::Option::None::<&#rc<()>>,
                    #rc::new(#f),
                )
            }

            /// Finishes with a plain method of `owner`, held weakly; `remove_method` finds it.
            /// Not after `self_aware`.
            #[track_caller]
            #[inline]
            pub fn add_method<T: ::core::any::Any>(
                self,
                #owner: &#rc<T>,
                #method: fn(&T, #(#types),*) #output_arrow,
            ) -> #handle
            where
                M: #private::TakesPlainFunction,
            {
                #downgrade
                self.0.add_keyed(
                    #private::fn_address(#method as *const ()),
                    ::core::option::Option::Some(#owner),
                    #member_callable,
                )
            }
        }

        #cfgs
        #[allow(dead_code)]
        impl<#(#fallback: ::core::clone::Clone + 'static),*> #builder<'_, #(#fallback,)* #private::Plain> {
            /// Finishes with a closure.
            #[track_caller]
            #[inline]
            pub fn add_lambda(self, #f: impl #signature + 'static) -> #handle {
                self.0.add_shared(#rc::new(#f))
            }

            /// Finishes with a method of `owner`, held weakly: it never runs once `owner` is
            /// dropped.
            #[track_caller]
            #[inline]
            pub fn add_member<T: ::core::any::Any>(
                self,
                #owner: &#rc<T>,
                #method: impl #member_signature + 'static,
            ) -> #handle {
                #downgrade
                self.0.add_shared_member(#owner, #member_callable)
            }

            /// Finishes with an already shared callable.
            #[track_caller]
            #[inline]
            pub fn add_shared(self, callable: #rc<dyn #signature>) -> #handle {
                self.0.add_shared(callable)
            }
        }

        #cfgs
        #[allow(dead_code)]
        impl<#(#fallback: ::core::clone::Clone + 'static),*> #builder<'_, #(#fallback,)* #private::SelfAware> {
            /// Finishes with a closure that receives its own subscription first.
            #[track_caller]
            #[inline]
            pub fn add_lambda(self, #f: impl #aware_signature + 'static) -> #handle {
                self.0.add_shared(#aware_lambda)
            }

            /// Finishes with a method of `owner` (held weakly) that receives its own
            /// subscription after the owner.
            #[track_caller]
            #[inline]
            pub fn add_member<T: ::core::any::Any>(
                self,
                #owner: &#rc<T>,
                #method: impl #aware_member_signature + 'static,
            ) -> #handle {
                #downgrade
                self.0.add_shared_member(#owner, #aware_member)
            }
        }
    }
}

fn registration_name(decl: &DelegateDecl) -> Ident {
    format_ident!("{}Registration", decl.name, span = decl.name.span())
}

/// `QueuedBroadcast` for a declared multicast delegate whose parameter types are all owned, with
/// no reference or lifetime anywhere in them, so a `QueuedSender` can carry its arguments to the
/// game thread (B4). Nothing for the others: a sender for them is an error naming the trait.
fn expand_queued(decl: &DelegateDecl, args: &[Arg]) -> TokenStream {
    if !args
        .iter()
        .all(|arg| is_plain_owned(arg.ty.to_token_stream()))
    {
        return TokenStream::new();
    }
    let name = &decl.name;
    let cfgs = cfg_attrs(decl);
    let names: Vec<&Ident> = args.iter().map(|arg| &arg.name).collect();
    let types: Vec<&Type> = args.iter().map(|arg| &arg.ty).collect();
    let (generic_params, generic_args) = fallback_generics(decl);
    quote! {
        #cfgs
        impl #generic_params ::lumina::__private::QueuedBroadcast for #name #generic_args {
            type Args = (#(#types,)*);

            fn broadcast_args(&self, (#(#names,)*): Self::Args) {
                self.broadcast(#(#names),*);
            }
        }
    }
}

/// Whether a type's tokens hold no `&` and no lifetime.
fn is_plain_owned(tokens: TokenStream) -> bool {
    tokens.into_iter().all(|tree| match tree {
        proc_macro2::TokenTree::Punct(punct) => !matches!(punct.as_char(), '&' | '\''),
        proc_macro2::TokenTree::Group(group) => is_plain_owned(group.stream()),
        _ => true,
    })
}

fn expand_single(decl: &DelegateDecl, args: &[Arg]) -> TokenStream {
    let name = &decl.name;
    let vis = &decl.vis;
    let common = Common::new(decl, args);
    let (downgrade, member_callable) = common.member_callable();
    let Common {
        signature,
        member_signature,
        names,
        types,
        rc,
        f,
        owner,
        method,
        ..
    } = &common;
    let signature_line = format!(
        "A single-cast delegate `{}`, declared with `declare_delegate!`.",
        signature_doc(decl, args)
    );
    let attrs = struct_attrs(
        decl,
        &[
            &signature_line,
            "",
            "One callable or nothing. Bind it with `create_lambda`, `create_static` or",
            "`create_member`; call it with `execute` (panics when unbound) or `execute_if_bound`",
            "(returns `None` when unbound).",
        ],
    );
    let cfgs = cfg_attrs(decl);
    let (generic_params, generic_args) = fallback_generics(decl);
    let delegate = quote!(::lumina::__private::Delegate);
    let output = decl
        .output
        .as_ref()
        .map_or_else(|| quote!(()), ToTokens::to_token_stream);
    let output_arrow = decl.output.as_ref().map(|output| quote!(-> #output));
    let type_name = name.to_string();

    quote! {
        #attrs
        #[derive(Clone, Default, Debug)]
        #vis struct #name #generic_params(#delegate<dyn #signature>);

        #cfgs
        #[allow(dead_code)]
        impl #generic_params #name #generic_args {
            /// An unbound delegate.
            #[must_use]
            pub const fn new() -> Self {
                Self(#delegate::new())
            }

            /// A delegate bound to a closure.
            #[must_use]
            pub fn create_lambda(#f: impl #signature + 'static) -> Self {
                Self(#delegate::from(#rc::new(#f) as #rc<dyn #signature>))
            }

            /// A delegate bound to a plain function.
            #[must_use]
            pub fn create_static(#f: fn(#(#types),*) #output_arrow) -> Self {
                Self(#delegate::from(#rc::new(#f) as #rc<dyn #signature>))
            }

            /// A delegate bound to a method of `owner`, held weakly: once `owner` is dropped the
            /// delegate is unbound and never calls it.
            #[must_use]
            pub fn create_member<T: ::core::any::Any>(
                #owner: &#rc<T>,
                #method: impl #member_signature + 'static,
            ) -> Self {
                #downgrade
                Self(#delegate::from_shared_member(#owner, #member_callable))
            }

            /// Whether a callable is bound and, for a member binding, its object is alive.
            #[must_use]
            pub fn is_bound(&self) -> bool {
                self.0.is_bound()
            }

            /// Whether this is a live member binding of `owner`.
            #[must_use]
            pub fn is_bound_to<T: ?Sized>(&self, #owner: &#rc<T>) -> bool {
                self.0.is_bound_to(#owner)
            }

            /// Drops the bound callable, if any; afterwards `is_bound` is false.
            pub fn unbind(&mut self) {
                self.0.unbind();
            }

            /// Calls the bound callable.
            ///
            /// # Panics
            /// When nothing is bound, or the bound object was dropped. Check `is_bound` first,
            /// or call `execute_if_bound`, which returns `None` instead.
            #[track_caller]
            pub fn execute(&self, #(#names: #types),*) #output_arrow {
                #(let #names = ::lumina::__private::Guarded::new(#names);)*
                let #f = self.0.callable_or_panic(#type_name);
                #f(#(#names.into_inner()),*)
            }

            /// Calls the bound callable if there is one: `Some(result)`, or `None` when nothing is
            /// bound or the bound object was dropped.
            pub fn execute_if_bound(&self, #(#names: #types),*) -> ::core::option::Option<#output> {
                ::lumina::__private::callable_if_bound(
                    &self.0,
                    (#(::lumina::__private::Guarded::new(#names),)*),
                )
                .map(|(#f, (#(#names,)*))| #f(#(#names.into_inner()),*))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tokens_to_string;

    /// The generated rustdoc states the signature the way people write it.
    #[test]
    fn signature_types_render_as_written() {
        for written in [
            "&Window",
            "&mut Vec<u8>",
            "&'static str",
            "std::borrow::Cow<'_, str>",
            "(u32, u32)",
            "&mut (u32, u32)",
            "[u8; 4]",
            "Box<dyn Fn(u32) -> bool>",
            "Option<&'static str>",
            "fn(u32)",
            "&dyn std::fmt::Debug",
        ] {
            let ty: syn::Type = syn::parse_str(written).expect("a type");
            assert_eq!(tokens_to_string(&ty), written);
        }
    }
}
