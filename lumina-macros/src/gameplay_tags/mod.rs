//! `gameplay_tags!`: hierarchical gameplay tags with their payload types (rules GB1, GB2).
//!
//! [`parse`] reads the tree of tags into a typed model, [`validate`] flattens it into one entry
//! per tag and checks it with one function per rule (a duplicate tag, two tags making the same
//! constant, an unknown attribute), [`expand`] writes one typed `static` per tag and, in the
//! module form, the set's `all()` and `register()` (GB1). After an error
//! the fallback expands the tags that are fine (the first of two duplicates, a tag with its
//! unknown attribute left out) with `all()` and `register()` over them, so code using them shows
//! no follow-on error.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

use crate::ctxt::{Ctxt, finish};

/// Expands `gameplay_tags! { ... }`.
pub(crate) fn gameplay_tags(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let decl = match syn::parse2::<parse::TagsDecl>(input) {
        Ok(decl) => decl,
        Err(error) => {
            cx.syn_error(error);
            return finish(cx.check().map(|()| TokenStream::new()), TokenStream::new());
        }
    };
    let tags = validate::validate(&cx, &decl);
    let expansion = expand::expand(&decl, &tags);
    match cx.check() {
        Ok(()) => expansion,
        Err(error) => finish(Err(error), expansion),
    }
}
