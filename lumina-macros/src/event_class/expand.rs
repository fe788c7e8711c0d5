//! Expansion: the struct unchanged, plus its `EventClass` impl. Cannot fail.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::parse::{Argument, Input};
use super::validate::EventClass;
use super::variants::EVENT_TYPES;

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

/// After an error: the `EventClass` impl of the user's type as if the attribute were right (its
/// event type when the argument names one, otherwise `None`), so that later code dispatching or
/// matching the type shows no follow-on error. Nothing for an item that is not a type.
pub(crate) fn fallback_impl(input: &Input) -> TokenStream {
    let (ident, generics) = match &input.item {
        syn::Item::Struct(item) => (&item.ident, &item.generics),
        syn::Item::Enum(item) => (&item.ident, &item.generics),
        syn::Item::Union(item) => (&item.ident, &item.generics),
        _ => return TokenStream::new(),
    };
    let variant = match &input.argument {
        Argument::Name(name) if EVENT_TYPES.contains(&name.to_string().as_str()) => quote!(#name),
        Argument::Path(path) => match path.segments.last() {
            Some(last) if EVENT_TYPES.contains(&last.ident.to_string().as_str()) => {
                let name = &last.ident;
                quote!(#name)
            }
            _ => quote!(None),
        },
        _ => quote!(None),
    };
    let class_name = ident.to_string();
    let (impl_generics, type_args) = crate::ctxt::static_generics(generics);
    quote! {
        #[automatically_derived]
        impl #impl_generics ::lumina::__private::EventClass for #ident #type_args {
            const EVENT_TYPE: ::lumina::__private::EventType =
                ::lumina::__private::EventType::#variant;
            const CLASS_NAME: &'static ::core::primitive::str = #class_name;
        }
    }
}
