//! Expansion: one typed `static` per tag, naming the runtime through `::lumina::__private`, and,
//! in the module form, the set's `all()` and `register()` (GB1), which name the public
//! `::lumina::bus` items their signatures show. Generated function names are lowercase, so no
//! tag constant (always upper case) can collide with them.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::TagsDecl;
use super::validate::FlatTag;

pub(crate) fn expand(decl: &TagsDecl, tags: &[FlatTag]) -> TokenStream {
    let statics = tags.iter().map(|tag| {
        let FlatTag {
            name,
            constant,
            payload,
            retained,
            script,
            docs,
            explicit,
        } = tag;
        let payload_ty = match payload {
            Some(ty) => quote!(#ty),
            None => quote!(()),
        };
        let summary = match (payload, explicit) {
            (Some(ty), _) => {
                format!(
                    " Gameplay tag `{name}`, carrying `{}`{}.",
                    quote!(#ty).to_string().replace(' ', ""),
                    if *retained { ", retained" } else { "" }
                ) + if *script {
                    " Managed scripts send and hear it (`#[script]`)."
                } else {
                    ""
                }
            }
            (None, true) => format!(
                " Gameplay tag `{name}`, without payload{}.",
                if *retained { ", retained" } else { "" }
            ),
            (None, false) => format!(" Gameplay tag `{name}`, the parent of tags declared below."),
        };
        let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
        // `#[script]`: the payload's reflected layout goes with the key, so a payload that is not
        // reflected is one trait error, on the payload type (GB8).
        let key = if *script {
            match payload {
                Some(ty) => quote_spanned! {ty.span()=>
                    ::lumina::__private::script_tag_key::<#ty>(#name, #retained)
                },
                None => quote!(::lumina::__private::script_tag_key::<()>(#name, #retained)),
            }
        } else {
            quote!(::lumina::__private::TagKey::new(#name, #retained))
        };
        let span = constant.span();
        let vis = if decl.module.is_some() {
            quote!(pub)
        } else {
            TokenStream::new()
        };
        quote_spanned! {span=>
            #(#docs)*
            #separator
            #[doc = #summary]
            #vis static #constant: ::lumina::__private::TagKey<#payload_ty> = #key;
        }
    });
    match &decl.module {
        None => quote!(#(#statics)*),
        Some(module) => {
            let attrs = &module.attrs;
            let vis = &module.vis;
            let ident = &module.ident;
            let constants = tags.iter().map(|tag| &tag.constant);
            quote! {
                #(#attrs)*
                #vis mod #ident {
                    #[allow(unused_imports)]
                    use super::*;
                    #(#statics)*

                    /// Every tag of this set, parents first, whatever its payload type.
                    #[allow(dead_code)]
                    pub fn all() -> &'static [&'static dyn ::lumina::bus::DeclaredTag] {
                        static TAGS: &[&dyn ::lumina::bus::DeclaredTag] =
                            &[#(&self::#constants),*];
                        TAGS
                    }

                    /// Registers every tag of this set in the process's tag registry, with its
                    /// payload type, retention and script layout, so data files, scripts and the
                    /// C ABI find it by name before Rust uses it. Call it once at start-up (the
                    /// engine for its sets, a game module when it loads); calling it again costs
                    /// one atomic load per tag. Returns the first conflict, a tag another set
                    /// declares with another payload type; every other tag is still registered.
                    #[allow(dead_code)]
                    pub fn register() -> ::core::result::Result<(), ::lumina::bus::TagConflict> {
                        ::lumina::bus::register_tags(self::all())
                    }
                }
            }
        }
    }
}
