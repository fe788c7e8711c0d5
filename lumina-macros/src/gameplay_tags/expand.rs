//! Expansion: one typed `static` per tag, naming the runtime through `::lumina::__private`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::parse::TagsDecl;
use super::validate::FlatTag;

pub(crate) fn expand(decl: &TagsDecl, tags: &[FlatTag]) -> TokenStream {
    let statics = tags.iter().map(|tag| {
        let FlatTag {
            name,
            constant,
            payload,
            retained,
            docs,
            explicit,
        } = tag;
        let payload_ty = match payload {
            Some(ty) => quote!(#ty),
            None => quote!(()),
        };
        let summary = match (payload, explicit) {
            (Some(ty), _) => format!(
                " Gameplay tag `{name}`, carrying `{}`{}.",
                quote!(#ty).to_string().replace(' ', ""),
                if *retained { ", retained" } else { "" }
            ),
            (None, true) => format!(
                " Gameplay tag `{name}`, without payload{}.",
                if *retained { ", retained" } else { "" }
            ),
            (None, false) => format!(" Gameplay tag `{name}`, the parent of tags declared below."),
        };
        let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
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
            #vis static #constant: ::lumina::__private::TagKey<#payload_ty> =
                ::lumina::__private::TagKey::new(#name, #retained);
        }
    });
    match &decl.module {
        None => quote!(#(#statics)*),
        Some(module) => {
            let attrs = &module.attrs;
            let vis = &module.vis;
            let ident = &module.ident;
            quote! {
                #(#attrs)*
                #vis mod #ident {
                    #[allow(unused_imports)]
                    use super::*;
                    #(#statics)*
                }
            }
        }
    }
}
