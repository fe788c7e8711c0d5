//! Validation: flattens the tree into one entry per tag (parents first) and checks it with one
//! function per rule, each recording its error on the user's token. What an error rejects is left
//! out of the entries, so the fallback expansion is the rest.

use std::collections::HashMap;

use syn::{Attribute, Ident, Type};

use super::parse::{Node, TagsDecl};
use crate::ctxt::Ctxt;

/// One tag to expand.
pub(crate) struct FlatTag {
    /// `Combat.Damage.Critical`.
    pub(crate) name: String,
    /// `COMBAT_DAMAGE_CRITICAL`, spanned at the tag's last segment.
    pub(crate) constant: Ident,
    pub(crate) payload: Option<Type>,
    pub(crate) retained: bool,
    /// `#[script]`: managed scripts send and hear it through the C ABI (GB8).
    pub(crate) script: bool,
    pub(crate) docs: Vec<Attribute>,
    /// Written by the user (`Combat.Damage` writes `Combat` implicitly).
    pub(crate) explicit: bool,
}

/// Every tag of the declaration, parents before children; records every mistake in `cx`.
pub(crate) fn validate(cx: &Ctxt, decl: &TagsDecl) -> Vec<FlatTag> {
    let mut tags: Vec<FlatTag> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    flatten(cx, &decl.nodes, "", &mut tags, &mut index);
    unique_constants(cx, &mut tags);
    tags
}

fn flatten(
    cx: &Ctxt,
    nodes: &[Node],
    prefix: &str,
    tags: &mut Vec<FlatTag>,
    index: &mut HashMap<String, usize>,
) {
    for node in nodes {
        let mut name = prefix.to_owned();
        for (position, segment) in node.path.iter().enumerate() {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(&segment.to_string());
            let last = position + 1 == node.path.len();
            match index.get(&name) {
                Some(&found) if last && tags[found].explicit => {
                    duplicate(cx, segment, &name);
                    // The first declaration stands; this one's children are still declared.
                }
                Some(&found) if last => {
                    let (docs, Flags { retained, script }) = attributes(cx, &node.attrs);
                    let tag = &mut tags[found];
                    tag.explicit = true;
                    tag.payload.clone_from(&node.payload);
                    tag.retained = retained;
                    tag.script = script;
                    tag.docs = docs;
                }
                Some(_) => {}
                None => {
                    let (docs, Flags { retained, script }) = if last {
                        attributes(cx, &node.attrs)
                    } else {
                        (Vec::new(), Flags::default())
                    };
                    index.insert(name.clone(), tags.len());
                    tags.push(FlatTag {
                        name: name.clone(),
                        constant: Ident::new(&constant_name(&name), segment.span()),
                        payload: if last { node.payload.clone() } else { None },
                        retained,
                        script,
                        docs,
                        explicit: last,
                    });
                }
            }
        }
        flatten(cx, &node.children, &name, tags, index);
    }
}

/// A tag is declared once: a second declaration could disagree on its payload type (GB2).
fn duplicate(cx: &Ctxt, segment: &Ident, name: &str) {
    cx.error_spanned_by(
        segment,
        format!(
            "duplicate gameplay tag `{name}`: it is already declared above; declare each tag once, with its payload type"
        ),
    );
}

/// The flag attributes of one tag.
#[derive(Default)]
struct Flags {
    /// `#[retained]`.
    retained: bool,
    /// `#[script]`.
    script: bool,
}

/// Doc comments pass through; `#[retained]` keeps the channel's last message (GB6); `#[script]`
/// lets managed scripts send and hear the tag (GB8); any other attribute is an error.
fn attributes(cx: &Ctxt, attrs: &[Attribute]) -> (Vec<Attribute>, Flags) {
    let mut docs = Vec::new();
    let mut flags = Flags::default();
    for attr in attrs {
        if attr.path().is_ident("doc") {
            docs.push(attr.clone());
            continue;
        }
        let (flag, name) = if attr.path().is_ident("retained") {
            (&mut flags.retained, "retained")
        } else if attr.path().is_ident("script") {
            (&mut flags.script, "script")
        } else {
            cx.error_spanned_by(
                attr,
                "unknown attribute on a gameplay tag: expected `#[retained]`, `#[script]` or a \
                 doc comment",
            );
            continue;
        };
        if matches!(attr.meta, syn::Meta::Path(_)) {
            *flag = true;
        } else {
            cx.error_spanned_by(
                attr,
                format!("`#[{name}]` takes no arguments: expected `#[{name}]`"),
            );
        }
    }
    (docs, flags)
}

/// Two tags cannot make the same constant (`A.B` and `A_B` both make `A_B`): the later one is an
/// error and is left out.
fn unique_constants(cx: &Ctxt, tags: &mut Vec<FlatTag>) {
    let mut seen: HashMap<String, String> = HashMap::new();
    tags.retain(|tag| {
        let constant = tag.constant.to_string();
        match seen.get(&constant) {
            Some(first) => {
                cx.error_spanned_by(
                    &tag.constant,
                    format!(
                        "gameplay tags `{first}` and `{}` would both be the constant `{constant}`: rename one",
                        tag.name
                    ),
                );
                false
            }
            None => {
                seen.insert(constant, tag.name.clone());
                true
            }
        }
    });
}

/// `Combat.HitPoints` -> `COMBAT_HIT_POINTS`.
pub(crate) fn constant_name(name: &str) -> String {
    let mut out = String::new();
    for (index, segment) in name.split('.').enumerate() {
        if index > 0 {
            out.push('_');
        }
        let mut previous_lower = false;
        for ch in segment.chars() {
            if ch.is_uppercase() && previous_lower {
                out.push('_');
            }
            previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
            out.extend(ch.to_uppercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::constant_name;

    #[test]
    fn gb1_constant_names_are_screaming_snake_per_segment() {
        assert_eq!(
            constant_name("Combat.Damage.Critical"),
            "COMBAT_DAMAGE_CRITICAL"
        );
        assert_eq!(constant_name("Combat.HitPoints"), "COMBAT_HIT_POINTS");
        assert_eq!(constant_name("UI.Hud2"), "UI_HUD2");
    }
}
