//! Error context shared by every macro: collects every independent error before failing, so a
//! user sees all of their mistakes at once (the approach of serde_derive).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

/// Collects errors while a macro validates its input. Must be finished with [`Ctxt::check`].
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error spanning `tokens` (the user's offending token, never the whole call).
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at `span`.
    pub(crate) fn error_at<M: Display>(&self, span: proc_macro2::Span, message: M) {
        self.syn_error(syn::Error::new(span, message));
    }

    /// Records an already built error.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push(error);
    }

    /// Ends collection: `Err` with every error combined if any was recorded.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("Ctxt dropped without check");
        }
    }
}

/// Turns a macro result into tokens: the expansion, or the errors followed by `fallback` (the
/// user's item left in place, so no cascade of follow-on errors appears).
pub(crate) fn finish(result: syn::Result<TokenStream>, fallback: TokenStream) -> TokenStream {
    match result {
        Ok(tokens) => tokens,
        Err(error) => {
            let mut tokens = error.to_compile_error();
            tokens.extend(fallback);
            tokens
        }
    }
}

/// The generics of an impl that a fallback writes for the user's type after an error, so that
/// later code using the type finds the impls it expects: lifetime parameters become `'static`,
/// type parameters gain a `'static` bound (lumina's traits require `'static`), const parameters
/// stay. Returns the impl's parameters (`<T: Bound + 'static>`) and the type's arguments
/// (`<'static, T>`).
pub(crate) fn static_generics(generics: &syn::Generics) -> (TokenStream, TokenStream) {
    use quote::quote;
    if generics.params.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let mut params = Vec::new();
    let mut args = Vec::new();
    for param in &generics.params {
        match param {
            syn::GenericParam::Lifetime(_) => args.push(quote!('static)),
            syn::GenericParam::Type(param) => {
                let ident = &param.ident;
                let bounds = &param.bounds;
                let plus = (!bounds.is_empty()).then(|| quote!(+));
                params.push(quote!(#ident: #bounds #plus 'static));
                args.push(quote!(#ident));
            }
            syn::GenericParam::Const(param) => {
                let (ident, ty) = (&param.ident, &param.ty);
                params.push(quote!(const #ident: #ty));
                args.push(quote!(#ident));
            }
        }
    }
    (quote!(<#(#params),*>), quote!(<#(#args),*>))
}
