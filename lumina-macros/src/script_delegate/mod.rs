//! `#[script_delegate]` (payloads) and `#[derive(ScriptComponent)]` (components' delegate
//! properties): rule SD6. Each is parse -> validate (one function per rule) -> expand.

pub(crate) mod component;
pub(crate) mod payload;

use proc_macro2::TokenStream;
use quote::quote;

/// The `inventory` registration of a reflected type, as generated code spells it.
fn register(registration: TokenStream) -> TokenStream {
    quote! {
        ::lumina::__private::inventory::submit! { #registration }
    }
}

/// Rejects generic parameters: a reflected type has one layout, known when it registers.
fn validate_no_generics(cx: &crate::ctxt::Ctxt, generics: &syn::Generics, what: &str) {
    if let Some(param) = generics.params.first() {
        cx.error_spanned_by(
            param,
            format!(
                "{what} cannot be generic: reflection registers one concrete layout per type; \
                 declare a concrete struct"
            ),
        );
    } else if let Some(where_clause) = &generics.where_clause {
        cx.error_spanned_by(where_clause, format!("{what} cannot have a where clause"));
    }
}
