//! `#[script_delegate]`: makes a struct a reflected, blittable script delegate payload.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ctxt::{Ctxt, finish};

/// The parsed payload: the user's struct (kept whole, so it can be emitted back unchanged) and
/// its named fields.
struct Payload {
    item: syn::ItemStruct,
    has_repr_c: bool,
}

/// Entry point of `#[script_delegate]`.
pub(crate) fn expand_attribute(args: TokenStream, input: TokenStream) -> TokenStream {
    let fallback = fallback(&input);
    finish(expand_checked(args, input), fallback)
}

/// The user's item, as emitted after an error: unchanged, except that a rejected `repr` is
/// dropped, so the compiler does not add its own errors about it to ours; then the impls later
/// code needs (`ScriptPayload`, `Blittable`, with no reflected fields), so that a
/// `ScriptDelegate` of the type, its broadcasts and its listeners add no follow-on error.
fn fallback(input: &TokenStream) -> TokenStream {
    let Ok(mut item) = syn::parse2::<syn::Item>(input.clone()) else {
        return input.clone();
    };
    if let syn::Item::Struct(item) = &mut item {
        item.attrs
            .retain(|attr| !attr.path().is_ident("repr") || is_repr_c(attr));
    }
    let impls = match &item {
        syn::Item::Struct(syn::ItemStruct {
            ident, generics, ..
        })
        | syn::Item::Enum(syn::ItemEnum {
            ident, generics, ..
        })
        | syn::Item::Union(syn::ItemUnion {
            ident, generics, ..
        }) => fallback_impls(ident, generics),
        _ => TokenStream::new(),
    };
    quote!(#item #impls)
}

fn fallback_impls(ident: &syn::Ident, generics: &syn::Generics) -> TokenStream {
    let name = ident.to_string();
    let (impl_generics, type_args) = crate::ctxt::static_generics(generics);
    quote! {
        #[automatically_derived]
        // SAFETY: the fallback of a payload with an error: the program does not compile.
        unsafe impl #impl_generics ::lumina::__private::ScriptPayload for #ident #type_args {
            const PAYLOAD: &'static ::lumina::__private::PayloadInfo =
                &::lumina::__private::PayloadInfo {
                    name: #name,
                    size: ::core::mem::size_of::<Self>(),
                    align: ::core::mem::align_of::<Self>(),
                    fields: &[],
                };
        }

        #[automatically_derived]
        // SAFETY: as above.
        unsafe impl #impl_generics ::lumina::__private::Blittable for #ident #type_args {
            const FIELD_TYPE: ::lumina::__private::FieldType =
                ::lumina::__private::FieldType::Struct(
                    <Self as ::lumina::__private::ScriptPayload>::PAYLOAD,
                );
        }
    }
}

fn expand_checked(args: TokenStream, input: TokenStream) -> syn::Result<TokenStream> {
    let item = parse(input)?;
    let cx = Ctxt::new();
    validate_no_arguments(&cx, &args);
    validate_named_fields(&cx, &item.item);
    // A lifetime parameter that only serves reference fields is part of that one mistake, which
    // the field's error explains.
    let only_for_references = item.item.generics.type_params().next().is_none()
        && item.item.generics.const_params().next().is_none()
        && item
            .item
            .fields
            .iter()
            .any(|field| matches!(field.ty, syn::Type::Reference(_)));
    if !only_for_references {
        super::validate_no_generics(&cx, &item.item.generics, "a script delegate payload");
    }
    validate_repr(&cx, &item.item);
    for field in &item.item.fields {
        validate_blittable(&cx, &field.ty);
    }
    cx.check()?;
    Ok(expand(&item))
}

fn parse(input: TokenStream) -> syn::Result<Payload> {
    let item: syn::Item = syn::parse2(input)?;
    match item {
        syn::Item::Struct(item) => {
            let has_repr_c = item.attrs.iter().any(is_repr_c);
            Ok(Payload { item, has_repr_c })
        }
        syn::Item::Enum(item) => Err(syn::Error::new_spanned(
            item.enum_token,
            "expected a struct: an enum has no layout that c# can mirror; use a struct with a \
             `u32` tag field",
        )),
        other => Err(syn::Error::new(
            first_token_span(&other),
            "expected a struct with named fields: `#[script_delegate]` makes a payload struct",
        )),
    }
}

fn first_token_span(item: &syn::Item) -> proc_macro2::Span {
    quote!(#item)
        .into_iter()
        .next()
        .map_or_else(proc_macro2::Span::call_site, |token| token.span())
}

fn is_repr_c(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("repr")
        && attr
            .parse_args::<syn::Ident>()
            .is_ok_and(|ident| ident == "C")
}

/// The attribute takes nothing: everything it needs is in the struct.
fn validate_no_arguments(cx: &Ctxt, args: &TokenStream) {
    if let Some(first) = args.clone().into_iter().next() {
        cx.error_spanned_by(
            first,
            "`#[script_delegate]` takes no arguments; write `#[script_delegate]` on the payload struct",
        );
    }
}

/// Managed mirrors address fields by name, so tuple and unit structs cannot be mirrored.
fn validate_named_fields(cx: &Ctxt, item: &syn::ItemStruct) {
    match &item.fields {
        syn::Fields::Named(_) => {}
        syn::Fields::Unnamed(fields) => cx.error_spanned_by(
            fields,
            "expected named fields: the c# mirror of a payload names every field",
        ),
        syn::Fields::Unit => cx.error_spanned_by(
            &item.ident,
            "expected named fields: for a delegate without payload use `ScriptDelegate<()>`",
        ),
    }
}

/// The macro sets `#[repr(C)]` (the layout c# mirrors); any other representation breaks it.
fn validate_repr(cx: &Ctxt, item: &syn::ItemStruct) {
    for attr in item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("repr"))
    {
        if !is_repr_c(attr) {
            cx.error_spanned_by(
                attr,
                "a script delegate payload is `#[repr(C)]`, which `#[script_delegate]` adds; \
                 remove this `repr`",
            );
        }
    }
}

/// A field must be copied bit for bit into managed memory and mean the same there. Types that
/// are known to be wrong get an error saying why here; any other type is checked by the
/// `Blittable` bound in the expansion.
fn validate_blittable(cx: &Ctxt, ty: &syn::Type) {
    if let Some(reason) = not_blittable_reason(ty) {
        cx.error_spanned_by(ty, reason);
    }
}

fn not_blittable_reason(ty: &syn::Type) -> Option<String> {
    let reason = match ty {
        syn::Type::Reference(_) => {
            "a reference is not blittable: managed code cannot know how long it lives; copy the \
             value into the payload"
                .to_owned()
        }
        syn::Type::Ptr(_) => {
            "a raw pointer is not blittable: managed code cannot know what it points at or how \
             long it lives; pass an id instead"
                .to_owned()
        }
        syn::Type::Tuple(_) => {
            "a tuple is not blittable: it has no guaranteed layout; use a nested \
             `#[script_delegate]` struct"
                .to_owned()
        }
        syn::Type::Array(_) => "an array is not supported in a payload: c# mirrors it as a \
                                managed array; use separate fields or a nested \
                                `#[script_delegate]` struct"
            .to_owned(),
        syn::Type::Slice(_) => "a slice is not blittable: it has no fixed size".to_owned(),
        syn::Type::BareFn(_) => {
            "a function pointer is not blittable: managed code cannot call rust functions through \
             it; bind a managed listener instead"
                .to_owned()
        }
        syn::Type::TraitObject(_) | syn::Type::ImplTrait(_) => {
            "a trait object is not blittable: it has no fixed size or layout".to_owned()
        }
        syn::Type::Paren(inner) => return not_blittable_reason(&inner.elem),
        syn::Type::Group(inner) => return not_blittable_reason(&inner.elem),
        syn::Type::Path(path) => {
            let last = path.path.segments.last()?;
            let name = last.ident.to_string();
            match name.as_str() {
                "String" | "str" | "OsString" | "PathBuf" | "CString" => format!(
                    "`{name}` is not blittable: it owns heap memory that managed code can neither \
                     read nor free; pass a fixed-size id (for example a `u64` name hash) instead"
                ),
                "Vec" | "VecDeque" | "HashMap" | "HashSet" | "BTreeMap" | "BTreeSet" => format!(
                    "`{name}` is not blittable: it owns heap memory that managed code can neither \
                     read nor free; use fixed-size fields"
                ),
                "Box" | "Rc" | "Arc" | "Weak" | "Cell" | "RefCell" => format!(
                    "`{name}` is not blittable: it owns or shares rust memory that managed code \
                     cannot manage; store the value itself"
                ),
                "Option" => "`Option` is not blittable: it has no layout that c# can mirror; use \
                             a sentinel value or a `u8` flag field"
                    .to_owned(),
                "char" => "`char` is not blittable: it is a 4-byte unicode scalar in rust but a \
                           2-byte utf-16 unit in c#; use `u32`"
                    .to_owned(),
                "bool" => "`bool` is not blittable: it is 1 byte in rust but marshalled as 4 in \
                           c#, and any byte other than 0 or 1 is undefined behaviour in rust; use \
                           `u8`"
                    .to_owned(),
                "i128" | "u128" => format!(
                    "`{name}` is not blittable: c# has no 128-bit integer with the same layout; \
                     use two `u64` fields"
                ),
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(reason)
}

fn expand(payload: &Payload) -> TokenStream {
    let item = &payload.item;
    let ident = &item.ident;
    let name = ident.to_string();
    let repr = if payload.has_repr_c {
        quote!()
    } else {
        quote!(#[repr(C)])
    };
    let fields = item.fields.iter().filter_map(|field| {
        let field_ident = field.ident.as_ref()?;
        let field_name = field_ident.to_string();
        let ty = &field.ty;
        // Spanned at the field's type: a non-blittable type's error points there.
        let field_type = quote_spanned! {ty.span()=>
            <#ty as ::lumina::__private::Blittable>::FIELD_TYPE
        };
        Some(quote! {
            ::lumina::__private::FieldInfo {
                name: #field_name,
                ty: #field_type,
                offset: ::core::mem::offset_of!(#ident, #field_ident),
                size: ::core::mem::size_of::<#ty>(),
            }
        })
    });
    let registration = super::register(quote! {
        ::lumina::__private::RegisteredPayload(
            <#ident as ::lumina::__private::ScriptPayload>::PAYLOAD
        )
    });
    quote! {
        #repr
        #item

        const _: () = {
            // A static, not a const: reflection data has one address, which the C ABI hands
            // out as a handle and compares.
            static REFLECTION: ::lumina::__private::PayloadInfo = ::lumina::__private::PayloadInfo {
                name: #name,
                size: ::core::mem::size_of::<#ident>(),
                align: ::core::mem::align_of::<#ident>(),
                fields: &[#(#fields),*],
            };

            // SAFETY: `REFLECTION` is computed from the `#[repr(C)]` struct itself (`size_of`,
            // `align_of`, `offset_of` of each field), whose fields are all `Blittable`: any
            // bytes in them form a valid value.
            unsafe impl ::lumina::__private::ScriptPayload for #ident {
                const PAYLOAD: &'static ::lumina::__private::PayloadInfo = &REFLECTION;
            }

            // SAFETY: as above; a nested payload is described by its own reflection.
            unsafe impl ::lumina::__private::Blittable for #ident {
                const FIELD_TYPE: ::lumina::__private::FieldType =
                    ::lumina::__private::FieldType::Struct(
                        <#ident as ::lumina::__private::ScriptPayload>::PAYLOAD,
                    );
            }

            #registration
        };
    }
}
