//! Parsing: the tree of tags as written, with the user's tokens kept for spans.
//!
//! ```text
//! gameplay_tags! {
//!     [#[attrs] vis mod name {]
//!         #[doc] #[retained] #[script] Segment(.Segment)* [: PayloadType] [{ children }],
//!         ...
//!     [}]
//! }
//! ```

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Token, Type, Visibility, braced};

/// The whole input: the tags, optionally inside a module the macro writes.
pub(crate) struct TagsDecl {
    pub(crate) module: Option<Module>,
    pub(crate) nodes: Vec<Node>,
}

/// `#[attrs] vis mod name { ... }`.
pub(crate) struct Module {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) ident: Ident,
}

/// One entry of the tree: `Combat.Damage: Damage { Critical: Damage }`.
pub(crate) struct Node {
    pub(crate) attrs: Vec<Attribute>,
    /// The dotted path, relative to the enclosing node.
    pub(crate) path: Vec<Ident>,
    pub(crate) payload: Option<Type>,
    pub(crate) children: Vec<Node>,
}

impl Parse for TagsDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let fork = input.fork();
        let _ = fork.call(Attribute::parse_outer)?;
        let _: Visibility = fork.parse()?;
        if fork.peek(Token![mod]) {
            let attrs = input.call(Attribute::parse_outer)?;
            let vis: Visibility = input.parse()?;
            input.parse::<Token![mod]>()?;
            let ident: Ident = input.parse()?;
            let content;
            braced!(content in input);
            let nodes = parse_nodes(&content)?;
            if !input.is_empty() {
                return Err(input.error(
                    "unexpected tokens after the tags' module: expected one `mod name { ... }`",
                ));
            }
            return Ok(TagsDecl {
                module: Some(Module { attrs, vis, ident }),
                nodes,
            });
        }
        Ok(TagsDecl {
            module: None,
            nodes: parse_nodes(input)?,
        })
    }
}

fn parse_nodes(input: ParseStream<'_>) -> syn::Result<Vec<Node>> {
    let nodes = Punctuated::<Node, Token![,]>::parse_terminated(input)?;
    Ok(nodes.into_iter().collect())
}

impl Parse for Node {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        if !input.peek(Ident) {
            return Err(
                input.error("expected a gameplay tag name, such as `Combat` or `Combat.Damage`")
            );
        }
        let mut path = vec![input.parse::<Ident>()?];
        while input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            if !input.peek(Ident) {
                return Err(input.error("expected the next segment of the tag name after `.`"));
            }
            path.push(input.parse()?);
        }
        let payload = if input.peek(Token![:]) {
            input.parse::<Token![:]>()?;
            Some(input.parse::<Type>()?)
        } else {
            None
        };
        let children = if input.peek(syn::token::Brace) {
            let content;
            braced!(content in input);
            parse_nodes(&content)?
        } else {
            Vec::new()
        };
        Ok(Node {
            attrs,
            path,
            payload,
            children,
        })
    }
}
