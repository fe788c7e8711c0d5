//! Expansion: the struct unchanged, plus its `EventClass` impl. Cannot fail.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::validate::EventClass;

pub(crate) fn expand(class: EventClass<'_>) -> TokenStream {
    let EventClass { item, variant } = class;
    let ident = &item.ident;
    let class_name = ident.to_string();
    // The variant keeps the user's span, so a resolution error would point at their token.
    let event_type = quote_spanned!(variant.span()=> ::lumina::__private::EventType::#variant);
    quote! {
        #item

        #[automatically_derived]
        impl ::lumina::__private::EventClass for #ident {
            const EVENT_TYPE: ::lumina::__private::EventType = #event_type;
            const CLASS_NAME: &'static ::core::primitive::str = #class_name;
        }
    }
}
