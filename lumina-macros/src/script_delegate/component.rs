//! `#[derive(ScriptComponent)]`: reflects a component's `#[property(..)]` script delegate fields,
//! the spec's `PROPERTY(Editable, Category = "Events")`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ctxt::{Ctxt, finish};

/// The parsed component: its name and the fields marked `#[property(..)]`.
struct Component<'a> {
    ident: &'a syn::Ident,
    properties: Vec<Property<'a>>,
}

/// One `#[property(..)]` field.
struct Property<'a> {
    ident: &'a syn::Ident,
    ty: &'a syn::Type,
    editable: bool,
    category: Option<syn::LitStr>,
}

/// Entry point of `#[derive(ScriptComponent)]`. A derive's input stays in place by itself; the
/// fallback on error is the `ScriptComponent` impl, with no reflected properties, so code naming
/// the trait on the type adds no follow-on error.
pub(crate) fn expand_derive(input: TokenStream) -> TokenStream {
    let fallback = match syn::parse2::<syn::DeriveInput>(input.clone()) {
        Ok(derive) => fallback_impl(&derive),
        Err(_) => TokenStream::new(),
    };
    finish(expand_checked(input), fallback)
}

fn fallback_impl(input: &syn::DeriveInput) -> TokenStream {
    let ident = &input.ident;
    let name = ident.to_string();
    let (impl_generics, type_args) = crate::ctxt::static_generics(&input.generics);
    quote! {
        #[automatically_derived]
        impl #impl_generics ::lumina::__private::ScriptComponent for #ident #type_args {
            const COMPONENT: &'static ::lumina::__private::ComponentInfo =
                &::lumina::__private::ComponentInfo {
                    name: #name,
                    size: ::core::mem::size_of::<Self>(),
                    align: ::core::mem::align_of::<Self>(),
                    properties: &[],
                };
        }
    }
}

fn expand_checked(input: TokenStream) -> syn::Result<TokenStream> {
    let input: syn::DeriveInput = syn::parse2(input)?;
    let cx = Ctxt::new();
    super::validate_no_generics(&cx, &input.generics, "a script component");
    let fields = validate_named_struct(&cx, &input);
    let properties = fields
        .into_iter()
        .flatten()
        .filter_map(|field| parse_property(&cx, field))
        .collect::<Vec<_>>();
    let component = Component {
        ident: &input.ident,
        properties,
    };
    if fields.is_some() {
        validate_has_properties(&cx, &component);
    }
    cx.check()?;
    Ok(expand(&component))
}

/// Properties are addressed by field name and offset, so the component is a struct with named
/// fields.
fn validate_named_struct<'a>(
    cx: &Ctxt,
    input: &'a syn::DeriveInput,
) -> Option<&'a syn::punctuated::Punctuated<syn::Field, syn::Token![,]>> {
    match &input.data {
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Named(fields) => Some(&fields.named),
            _ => {
                cx.error_spanned_by(
                    &input.ident,
                    "expected a struct with named fields: delegate properties are reflected by name",
                );
                None
            }
        },
        syn::Data::Enum(data) => {
            cx.error_spanned_by(
                data.enum_token,
                "expected a struct: `ScriptComponent` reflects the delegate fields of a struct",
            );
            None
        }
        syn::Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "expected a struct: `ScriptComponent` reflects the delegate fields of a struct",
            );
            None
        }
    }
}

/// Parses `#[property]` / `#[property(editable, category = "..")]` on a field; `None` for fields
/// without it. Each key may appear once.
fn parse_property<'a>(cx: &Ctxt, field: &'a syn::Field) -> Option<Property<'a>> {
    let attrs: Vec<_> = field
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("property"))
        .collect();
    let attr = attrs.first()?;
    for duplicate in &attrs[1..] {
        cx.error_spanned_by(
            duplicate,
            "duplicate `#[property]`: write every key in one `#[property(..)]`",
        );
    }
    let mut property = Property {
        ident: field.ident.as_ref()?,
        ty: &field.ty,
        editable: false,
        category: None,
    };
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Some(property);
    }
    let mut editable_seen: Option<Span> = None;
    let parsed = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("editable") {
            if editable_seen.is_some() {
                cx.error_spanned_by(&meta.path, "duplicate `editable`");
            }
            editable_seen = Some(meta.path.span());
            property.editable = true;
            Ok(())
        } else if meta.path.is_ident("category") {
            let value = meta.value()?;
            let expr: syn::Expr = value.parse()?;
            match expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(category),
                    ..
                }) => {
                    if property.category.is_some() {
                        cx.error_spanned_by(&meta.path, "duplicate `category`");
                    }
                    property.category = Some(category);
                }
                other => {
                    cx.error_spanned_by(other, "expected a string literal: `category = \"Events\"`")
                }
            }
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown property key `{}`: expected `editable` or `category = \"..\"`",
                meta.path
                    .get_ident()
                    .map_or_else(|| "?".to_owned(), ToString::to_string)
            )))
        }
    });
    if let Err(error) = parsed {
        cx.syn_error(error);
    }
    Some(property)
}

/// A component without a `#[property]` field would reflect nothing: the derive is a mistake, or
/// the attribute was forgotten.
fn validate_has_properties(cx: &Ctxt, component: &Component<'_>) {
    if component.properties.is_empty() {
        cx.error_spanned_by(
            component.ident,
            "no `#[property(..)]` field: mark the `ScriptDelegate` fields to reflect, e.g. \
             `#[property(editable, category = \"Events\")]`",
        );
    }
}

fn expand(component: &Component<'_>) -> TokenStream {
    let ident = &component.ident;
    let name = ident.to_string();
    let properties = component.properties.iter().map(|property| {
        let field = &property.ident;
        let field_name = field.to_string();
        let ty = &property.ty;
        let category = property
            .category
            .as_ref()
            .map_or_else(|| "Default".to_owned(), syn::LitStr::value);
        let flags: u32 = u32::from(property.editable);
        // Spanned at the field's type: a field that is not a script delegate errors there.
        let payload = quote_spanned! {ty.span()=>
            <#ty as ::lumina::__private::DelegateProperty>::PAYLOAD
        };
        quote! {
            ::lumina::__private::PropertyInfo {
                name: #field_name,
                category: #category,
                flags: ::lumina::__private::PropertyFlags(#flags),
                payload: #payload,
                offset: ::core::mem::offset_of!(#ident, #field),
            }
        }
    });
    let registration = super::register(quote! {
        ::lumina::__private::RegisteredComponent(
            <#ident as ::lumina::__private::ScriptComponent>::COMPONENT
        )
    });
    quote! {
        const _: () = {
            // A static, not a const: reflection data has one address, which the C ABI hands
            // out as a handle and compares.
            static REFLECTION: ::lumina::__private::ComponentInfo = ::lumina::__private::ComponentInfo {
                name: #name,
                size: ::core::mem::size_of::<#ident>(),
                align: ::core::mem::align_of::<#ident>(),
                properties: &[#(#properties),*],
            };

            impl ::lumina::__private::ScriptComponent for #ident {
                const COMPONENT: &'static ::lumina::__private::ComponentInfo = &REFLECTION;
            }

            #registration
        };
    }
}
