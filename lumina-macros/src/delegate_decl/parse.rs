//! Parsing of `[attrs] [vis] Name[(params)] [-> Ret]` into a typed model that keeps the user's
//! tokens for spans.
//!
//! Parsing is lenient where a mistake leaves the user's intent clear (a `mut` pattern, a `self`
//! parameter, generics, a missing type): it records what it saw in the model, and the validation
//! rules report it, so every independent mistake shows at once.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Generics, Ident, Token, Type, Visibility};

use crate::ctxt::Ctxt;

/// Which macro is being expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// `declare_multicast_delegate!`
    Multicast,
    /// `declare_delegate!`
    Single,
    /// `declare_multicast_delegate!(sync ...)`: a thread-safe delegate (TS1).
    SyncMulticast,
}

impl Kind {
    /// The macro's name, for messages.
    pub(crate) fn macro_name(self) -> &'static str {
        match self {
            Kind::Multicast | Kind::SyncMulticast => "declare_multicast_delegate",
            Kind::Single => "declare_delegate",
        }
    }
}

/// A parsed declaration.
pub(crate) struct DelegateDecl {
    pub(crate) kind: Kind,
    /// Attributes and doc comments, passed through to the struct.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) name: Ident,
    /// `Name<T>`: not supported, reported by validation.
    pub(crate) generics: Option<Generics>,
    pub(crate) params: Vec<Param>,
    /// `None` without `-> R`.
    pub(crate) output: Option<Type>,
    /// Type parameters of the expansion: always empty, except in the fallback after an error,
    /// where the user's rejected generics and the types that could not be kept become type
    /// parameters inferred from the code using the delegate.
    pub(crate) fallback_generics: Vec<Ident>,
}

/// One parameter: `name: Type`, `_: Type` or `Type`.
pub(crate) struct Param {
    /// The name the user wrote, if any.
    pub(crate) name: Option<Ident>,
    /// `mut name: Type`: patterns are not allowed, reported by validation.
    pub(crate) mut_token: Option<Token![mut]>,
    /// A `self` parameter in any form (`self`, `&self`, `&mut self`, `self: Type`): reported by
    /// validation; the token is kept for the span.
    pub(crate) self_token: Option<TokenStream>,
    /// `None` when the type is missing after `name:` (reported at parse time).
    pub(crate) ty: Option<Type>,
}

/// Parses the macro input. Errors are recorded in `cx`; `None` when no delegate name could be
/// found (nothing to expand then).
pub(crate) fn parse(cx: &Ctxt, kind: Kind, input: TokenStream) -> Option<DelegateDecl> {
    let parser = |input: ParseStream<'_>| {
        let decl = parse_decl(cx, kind, input);
        // Whatever was not read has been reported already.
        skip_rest(input);
        Ok(decl)
    };
    match parser.parse2(input) {
        Ok(decl) => decl,
        Err(error) => {
            cx.syn_error(error);
            None
        }
    }
}

fn parse_decl(cx: &Ctxt, mut kind: Kind, input: ParseStream<'_>) -> Option<DelegateDecl> {
    let attrs = match input.call(Attribute::parse_outer) {
        Ok(attrs) => attrs,
        Err(error) => {
            cx.syn_error(error);
            return None;
        }
    };
    let vis = match input.parse::<Visibility>() {
        Ok(vis) => vis,
        Err(error) => {
            cx.syn_error(error);
            return None;
        }
    };
    // `pub sync Name(..)`: the thread-safe form (TS1). `sync` followed by the name; a delegate
    // named `sync` itself (`pub sync(..)`) is still a name.
    if kind == Kind::Multicast
        && input.peek(Ident)
        && input.peek2(Ident)
        && input
            .fork()
            .parse::<Ident>()
            .is_ok_and(|word| word == "sync")
    {
        let _sync: Ident = input.parse().expect("peeked `sync`");
        kind = Kind::SyncMulticast;
    }
    // `pub struct Name(..)` / `pub fn Name(..)` / `pub type Name`: the macro declares the type
    // itself; say so, and carry on with the name that follows.
    if input.peek(Token![struct]) || input.peek(Token![fn]) || input.peek(Token![type]) {
        let keyword: proc_macro2::TokenTree = input.parse().expect("peeked a keyword");
        cx.error_spanned_by(
            &keyword,
            format!(
                "unexpected `{keyword}`: {}! declares the type itself; write only its name, e.g. `pub OnDamage(amount: u32)`",
                kind.macro_name()
            ),
        );
    }
    // `pub "OnDamage"(..)`: the string says which name was meant; after the error, reading goes
    // on with it, so code using `OnDamage` adds no error.
    let meant = input
        .fork()
        .parse::<syn::LitStr>()
        .ok()
        .and_then(|literal| syn::parse_str::<Ident>(&literal.value()).ok());
    let name = match parse_name(kind, &vis, input) {
        Ok(name) => name,
        Err(error) => {
            cx.syn_error(error);
            meant?
        }
    };
    let generics = if input.peek(Token![<]) {
        match input.parse::<Generics>() {
            Ok(generics) => Some(generics),
            Err(error) => {
                cx.syn_error(error);
                return None;
            }
        }
    } else {
        None
    };
    // `Name, &Window, u32`: the C++ macro's form. Say where parameters go, and read them anyway
    // so the declared type matches the user's intent.
    let cpp_style = if input.peek(Token![,]) && !input.peek2(syn::token::Paren) {
        let comma: Token![,] = input.parse().expect("peeked `,`");
        cx.error_spanned_by(
            comma,
            format!(
                "expected `(` after the name: parameters go in parentheses, e.g. `{}!(pub {}(window: &Window, size: u32))`",
                kind.macro_name(),
                name
            ),
        );
        true
    } else {
        false
    };
    let has_parens = input.peek(syn::token::Paren);
    let params = if cpp_style {
        parse_params(cx, input)
    } else if input.peek(syn::token::Paren) {
        match parenthesized(input) {
            Ok(content) => parse_params(cx, &content),
            Err(error) => {
                cx.syn_error(error);
                return None;
            }
        }
    } else {
        Vec::new()
    };
    let output = if input.peek(Token![->]) {
        let arrow: Token![->] = input.parse().expect("peeked `->`");
        if input.is_empty() || input.peek(Token![;]) {
            cx.error_spanned_by(
                arrow,
                "expected a return type after `->`, e.g. `-> bool`; leave out `->` for no return value",
            );
            // Reported; `_` tells the fallback that a return type was meant.
            Some(Type::Infer(syn::TypeInfer {
                underscore_token: Default::default(),
            }))
        } else {
            match input.parse::<Type>() {
                Ok(ty) => Some(ty),
                Err(error) => {
                    cx.syn_error(syn::Error::new(
                        error.span(),
                        "expected a return type, e.g. `-> bool`",
                    ));
                    skip_rest(input);
                    Some(Type::Infer(syn::TypeInfer {
                        underscore_token: Default::default(),
                    }))
                }
            }
        }
    } else {
        None
    };
    // A trailing `;` is harmless.
    let _: Option<Token![;]> = input.parse().unwrap_or(None);
    if !input.is_empty() {
        let expected = if output.is_some() {
            "the end of the declaration"
        } else if !has_parens && !cpp_style {
            "`(` with the parameters, `-> ReturnType` or the end of the declaration"
        } else {
            "`-> ReturnType` or the end of the declaration"
        };
        cx.error_at(
            input.span(),
            format!(
                "unexpected tokens after the signature: expected {expected}; {}! declares one delegate type",
                kind.macro_name()
            ),
        );
        skip_rest(input);
    }
    Some(DelegateDecl {
        kind,
        attrs,
        vis,
        name,
        generics,
        params,
        output,
        fallback_generics: Vec::new(),
    })
}

fn parse_name(kind: Kind, vis: &Visibility, input: ParseStream<'_>) -> syn::Result<Ident> {
    let expected = format!(
        "expected the delegate's type name, e.g. `{}!(pub OnDamage(amount: u32))`",
        kind.macro_name()
    );
    if input.is_empty() {
        // Point at the visibility when there is one (`pub` with nothing after it).
        let span = match vis {
            Visibility::Inherited => Span::call_site(),
            vis => vis.span(),
        };
        return Err(syn::Error::new(
            span,
            format!("missing the delegate's name: {expected}"),
        ));
    }
    if input.peek(Ident) {
        // `Ident::peek` excludes keywords, so this is a usable name.
        return input.parse();
    }
    let unexpected: proc_macro2::TokenTree = input.parse()?;
    if let Ok(literal) = syn::parse2::<syn::LitStr>(unexpected.clone().into())
        && syn::parse_str::<Ident>(&literal.value()).is_ok()
    {
        return Err(syn::Error::new(
            unexpected.span(),
            format!(
                "expected a name, not a string: write `{}` without quotes",
                literal.value()
            ),
        ));
    }
    Err(syn::Error::new(
        unexpected.span(),
        format!("`{unexpected}` is not a valid delegate name: {expected}"),
    ))
}

/// Parses a comma-separated parameter list, recording errors and keeping every parameter that
/// could be read.
fn parse_params(cx: &Ctxt, content: ParseStream<'_>) -> Vec<Param> {
    let mut params = Vec::new();
    while !content.is_empty() {
        match parse_param(cx, content) {
            Ok(param) => params.push(param),
            Err(error) => {
                cx.syn_error(error);
                skip_rest(content);
                break;
            }
        }
        if content.is_empty() {
            break;
        }
        if let Err(error) = content.parse::<Token![,]>() {
            cx.syn_error(syn::Error::new(
                error.span(),
                "expected `,` or `)` after the parameter's type",
            ));
            // A forgotten comma before a well-formed parameter: read on as if it were there,
            // so the declaration keeps its parameters and using it adds no error.
            let looks_like_param = (content.peek(Ident) || content.peek(Token![_]))
                && content.peek2(Token![:])
                && !content.peek2(Token![::]);
            if !looks_like_param {
                skip_rest(content);
                break;
            }
        }
    }
    params
}

fn parse_param(cx: &Ctxt, input: ParseStream<'_>) -> syn::Result<Param> {
    // `self`, `&self`, `&mut self`, `&'a self`, `mut self`, `self: Type`
    let fork = input.fork();
    let _: Option<Token![&]> = fork.parse()?;
    let _: Option<syn::Lifetime> = fork.parse().ok();
    let _: Option<Token![mut]> = fork.parse()?;
    if fork.peek(Token![self]) {
        let mut self_tokens = TokenStream::new();
        while !input.peek(Token![self]) {
            let tree: proc_macro2::TokenTree = input.parse()?;
            self_tokens.extend([tree]);
        }
        let self_token: Token![self] = input.parse()?;
        self_tokens.extend(quote::quote!(#self_token));
        let ty = if input.peek(Token![:]) && !input.peek(Token![::]) {
            let _: Token![:] = input.parse()?;
            Some(input.parse::<Type>()?)
        } else {
            None
        };
        return Ok(Param {
            name: None,
            mut_token: None,
            self_token: Some(self_tokens),
            ty,
        });
    }

    // `(x, y): (f32, f32)`: a pattern is an error, but its type is clear, so the parameter is
    // kept (unnamed) and code using the delegate sees no follow-on error.
    if input.peek(syn::token::Paren) && input.peek2(Token![:]) && !input.peek2(Token![::]) {
        let pattern: proc_macro2::TokenTree = input.parse()?;
        cx.error_spanned_by(
            pattern,
            "parameter patterns are not allowed: expected `name: Type` or just `Type`",
        );
        let _: Token![:] = input.parse()?;
        return Ok(Param {
            name: None,
            mut_token: None,
            self_token: None,
            ty: Some(parse_type(input)?),
        });
    }

    let mut_token: Option<Token![mut]> = input.parse()?;
    let named = (input.peek(Ident) || input.peek(Token![_]))
        && input.peek2(Token![:])
        && !input.peek2(Token![::]);
    if mut_token.is_some() && !named {
        return Err(syn::Error::new(
            input.span(),
            "expected a parameter name after `mut`",
        ));
    }
    if !named {
        let ty = parse_type(input)?;
        return Ok(Param {
            name: None,
            mut_token: None,
            self_token: None,
            ty: Some(ty),
        });
    }
    let name = if input.peek(Token![_]) {
        let _: Token![_] = input.parse()?;
        None
    } else {
        Some(input.parse::<Ident>()?)
    };
    let colon: Token![:] = input.parse()?;
    let ty = if input.is_empty() || input.peek(Token![,]) {
        let what = match &name {
            Some(name) => format!("`{name}`"),
            None => "`_`".to_owned(),
        };
        cx.error_spanned_by(
            colon,
            format!(
                "expected the type of parameter {what} after `:`, e.g. `{}: u32`",
                name.as_ref().map_or("amount".to_owned(), Ident::to_string)
            ),
        );
        None
    } else {
        Some(parse_type(input)?)
    };
    Ok(Param {
        name,
        mut_token,
        self_token: None,
        ty,
    })
}

/// A parameter or return type; the error says what was expected.
fn parse_type(input: ParseStream<'_>) -> syn::Result<Type> {
    if input.peek(syn::token::Paren) && input.peek2(Token![:]) {
        let pattern: proc_macro2::TokenTree = input.fork().parse()?;
        return Err(syn::Error::new_spanned(
            pattern,
            "parameter patterns are not allowed: expected `name: Type` or just `Type`",
        ));
    }
    input.parse::<Type>().map_err(|error| {
        let span: Span = error.span();
        syn::Error::new(span, "expected a parameter type, e.g. `u32` or `&Window`")
    })
}

fn parenthesized<'a>(input: ParseStream<'a>) -> syn::Result<syn::parse::ParseBuffer<'a>> {
    let content;
    syn::parenthesized!(content in input);
    Ok(content)
}

fn skip_rest(input: ParseStream<'_>) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((_, next)) = rest.token_tree() {
            rest = next;
        }
        Ok(((), rest))
    });
}

/// Whether a parameter type is a reference (passed through untouched, never cloned, M11).
pub(crate) fn is_reference(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Paren(inner) => is_reference(&inner.elem),
        Type::Group(inner) => is_reference(&inner.elem),
        _ => false,
    }
}

/// Whether a parameter type is a `&mut` reference (reborrowed for each subscriber).
pub(crate) fn is_mut_reference(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => reference.mutability.is_some(),
        Type::Paren(inner) => is_mut_reference(&inner.elem),
        Type::Group(inner) => is_mut_reference(&inner.elem),
        _ => false,
    }
}
