//! Keeps `examples/expanded/` current: each listed example with every lumina macro call
//! replaced by its expansion, pretty-printed with prettyplease, so readers can see exactly what
//! the macros write.
//!
//! The test fails when a file there is stale; `LUMINA_BLESS=1 cargo test --test expanded`
//! rewrites them. `tests/expanded_examples_run.rs` compiles and runs each expansion.
//!
//! The expansion code is the macro crate's own: its modules work on `proc_macro2` tokens, so this
//! test includes them with `#[path]` and calls them outside a proc-macro context.
//!
//! # Adding an example
//! 1. Add its name to [`EXAMPLES`].
//! 2. If it uses a lumina macro not yet in [`expand_macro`], include that macro's module below
//!    (`#[path = "../lumina-macros/src/<module>/mod.rs"]`) and add one match arm for it.
//! 3. Run `LUMINA_BLESS=1 cargo test --test expanded`, read the new file, and add a
//!    `#[path]` module and a test for it to `tests/expanded_examples_run.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::{self, VisitMut};
use syn::{Attribute, Item, Meta, Stmt, UseTree};

#[allow(dead_code)] // only some of the error helpers are used by the included macros
#[path = "../lumina-macros/src/ctxt.rs"]
mod ctxt;
#[path = "../lumina-macros/src/delegate_decl/mod.rs"]
mod delegate_decl;
#[path = "../lumina-macros/src/event_class/mod.rs"]
mod event_class;
#[path = "../lumina-macros/src/gameplay_tags/mod.rs"]
mod gameplay_tags;
#[path = "../lumina-macros/src/script_delegate/mod.rs"]
mod script_delegate;

/// The examples (in `examples/<name>.rs`) whose expansion lives in `examples/expanded/<name>.rs`.
const EXAMPLES: &[&str] = &[
    "delegates",
    "input_events",
    "script_delegates",
    "message_bus",
];

/// How a macro was invoked.
enum Invocation {
    /// `name!(input)`: a function-like macro in item or statement position.
    FunctionLike(TokenStream),
    /// `#[name(args)] item`: an attribute macro; `item` no longer carries the attribute.
    #[allow(dead_code)] // read by the arms of attribute macros as they land
    Attribute {
        args: TokenStream,
        item: TokenStream,
    },
}

/// The expansion of the lumina macro `name`, or `None` when `name` is not a lumina macro of that
/// kind. One arm per macro.
fn expand_macro(name: &str, invocation: Invocation) -> Option<TokenStream> {
    match (name, invocation) {
        ("declare_multicast_delegate", Invocation::FunctionLike(input)) => {
            Some(delegate_decl::multicast(input))
        }
        ("declare_delegate", Invocation::FunctionLike(input)) => Some(delegate_decl::single(input)),
        ("gameplay_tags", Invocation::FunctionLike(input)) => {
            Some(gameplay_tags::gameplay_tags(input))
        }
        ("event_class", Invocation::Attribute { args, item }) => {
            Some(event_class::event_class(args, item))
        }
        ("script_delegate", Invocation::Attribute { args, item }) => {
            Some(script_delegate::payload::expand_attribute(args, item))
        }
        (_, Invocation::FunctionLike(_) | Invocation::Attribute { .. }) => None,
    }
}

/// The expansion of the lumina derive `name` for `item` (the item as written, helper attributes
/// included), or `None` when `name` is not a lumina derive. One arm per derive.
fn expand_derive(name: &str, item: TokenStream) -> Option<TokenStream> {
    match name {
        "ScriptComponent" => Some(script_delegate::component::expand_derive(item)),
        _ => None,
    }
}

/// The helper attributes each lumina derive declares; removed from the item once it is expanded.
const DERIVE_HELPERS: &[(&str, &str)] = &[("ScriptComponent", "property")];

/// Replaces every lumina macro call in a file by its expansion.
struct Expander {
    example: String,
    /// Names of the macros that were expanded, whose `use` imports are then removed.
    expanded: BTreeSet<String>,
}

impl Expander {
    /// The expansion of `tokens` as items; panics (failing the test) on a macro error.
    fn items(&mut self, name: &str, tokens: TokenStream) -> Vec<Item> {
        let text = tokens.to_string();
        assert!(
            !text.contains("compile_error"),
            "{}: `{name}` reported an error: {text}",
            self.example
        );
        self.expanded.insert(name.to_owned());
        let file: syn::File = syn::parse2(tokens).unwrap_or_else(|error| {
            panic!(
                "{}: expansion of `{name}` is not items: {error}",
                self.example
            )
        });
        file.items
    }

    /// The items replacing `item`, or `None` when it is not a lumina macro call.
    fn expand_item(&mut self, item: &Item) -> Option<Vec<Item>> {
        self.expand_attribute_item(item)
            .or_else(|| self.expand_derives(item))
    }

    /// `item` without its lumina derives and their helper attributes, followed by the derives'
    /// expansions; `None` when it derives no lumina macro.
    fn expand_derives(&mut self, item: &Item) -> Option<Vec<Item>> {
        let mut stripped = item.clone();
        let attrs = item_attrs(&mut stripped)?;
        let mut derived = Vec::new();
        for attr in attrs
            .iter_mut()
            .filter(|attr| attr.path().is_ident("derive"))
        {
            let paths = attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            let (ours, others): (Vec<syn::Path>, Vec<syn::Path>) =
                paths.into_iter().partition(|path| {
                    macro_name(path)
                        .is_some_and(|n| expand_derive(&n, TokenStream::new()).is_some())
                });
            derived.extend(ours.iter().filter_map(macro_name));
            *attr = syn::parse_quote!(#[derive(#(#others),*)]);
        }
        if derived.is_empty() {
            return None;
        }
        attrs.retain(|attr| {
            !(attr.path().is_ident("derive")
                && matches!(&attr.meta, Meta::List(list) if list.tokens.is_empty()))
        });
        let helpers: Vec<&str> = DERIVE_HELPERS
            .iter()
            .filter(|(derive, _)| derived.iter().any(|name| name == derive))
            .map(|(_, helper)| *helper)
            .collect();
        if let Item::Struct(item_struct) = &mut stripped {
            for field in item_struct.fields.iter_mut() {
                field
                    .attrs
                    .retain(|attr| !helpers.iter().any(|helper| attr.path().is_ident(helper)));
            }
        }
        let mut items = vec![stripped];
        for name in derived {
            let tokens = expand_derive(&name, item.to_token_stream()).expect("a lumina derive");
            items.extend(self.items(&name, tokens));
        }
        Some(items)
    }

    /// The items replacing an attribute-macro or function-like macro call, or `None`.
    fn expand_attribute_item(&mut self, item: &Item) -> Option<Vec<Item>> {
        if let Item::Macro(call) = item {
            let name = macro_name(&call.mac.path)?;
            let tokens = expand_macro(&name, Invocation::FunctionLike(call.mac.tokens.clone()))?;
            return Some(self.items(&name, tokens));
        }
        let mut item = item.clone();
        let attrs = item_attrs(&mut item)?;
        let (index, name, args) = attrs.iter().enumerate().find_map(|(index, attr)| {
            // Only lumina's attributes: a doc comment or derive before them is not a macro call.
            let name =
                macro_name(attr.path()).filter(|name| LUMINA_MACROS.contains(&name.as_str()))?;
            Some((index, name, attribute_args(attr)))
        })?;
        attrs.remove(index);
        let invocation = Invocation::Attribute {
            args,
            item: item.to_token_stream(),
        };
        let tokens = expand_macro(&name, invocation)?;
        Some(self.items(&name, tokens))
    }

    fn expand_items(&mut self, items: &mut Vec<Item>) {
        let mut expanded = Vec::with_capacity(items.len());
        for mut item in items.drain(..) {
            match self.expand_item(&item) {
                Some(replacement) => expanded.extend(replacement),
                None => {
                    self.visit_item_mut(&mut item);
                    expanded.push(item);
                }
            }
        }
        *items = expanded;
    }
}

impl VisitMut for Expander {
    fn visit_file_mut(&mut self, file: &mut syn::File) {
        self.expand_items(&mut file.items);
    }

    fn visit_item_mod_mut(&mut self, module: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut module.content {
            self.expand_items(items);
        }
    }

    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for mut stmt in block.stmts.drain(..) {
            let replacement = match &stmt {
                Stmt::Item(item) => self.expand_item(item),
                Stmt::Macro(call) => macro_name(&call.mac.path).and_then(|name| {
                    let tokens =
                        expand_macro(&name, Invocation::FunctionLike(call.mac.tokens.clone()))?;
                    Some(self.items(&name, tokens))
                }),
                _ => None,
            };
            match replacement {
                Some(items) => stmts.extend(items.into_iter().map(Stmt::Item)),
                None => {
                    visit_mut::visit_stmt_mut(self, &mut stmt);
                    stmts.push(stmt);
                }
            }
        }
        block.stmts = stmts;
    }
}

/// Removes the `use` imports of expanded macros, which the expansion no longer needs.
struct UsePruner<'a> {
    names: &'a BTreeSet<String>,
}

impl UsePruner<'_> {
    /// Prunes `tree`; `false` when nothing is left of it.
    fn prune(&self, tree: &mut UseTree) -> bool {
        match tree {
            UseTree::Name(name) => !self.names.contains(&name.ident.to_string()),
            UseTree::Rename(rename) => !self.names.contains(&rename.ident.to_string()),
            UseTree::Path(path) => self.prune(&mut path.tree),
            UseTree::Glob(_) => true,
            UseTree::Group(group) => {
                let kept: Vec<UseTree> = std::mem::take(&mut group.items)
                    .into_iter()
                    .filter_map(|mut item| self.prune(&mut item).then_some(item))
                    .collect();
                if kept.len() == 1 {
                    // `use a::{b}` reads better as `use a::b`.
                    *tree = kept.into_iter().next().expect("one item");
                    return true;
                }
                group.items = kept.into_iter().collect();
                !group.items.is_empty()
            }
        }
    }

    fn prune_items(&self, items: &mut Vec<Item>) {
        items.retain_mut(|item| match item {
            Item::Use(item_use) => self.prune(&mut item_use.tree),
            _ => true,
        });
    }
}

impl VisitMut for UsePruner<'_> {
    fn visit_file_mut(&mut self, file: &mut syn::File) {
        self.prune_items(&mut file.items);
        visit_mut::visit_file_mut(self, file);
    }

    fn visit_item_mod_mut(&mut self, module: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut module.content {
            self.prune_items(items);
        }
        visit_mut::visit_item_mod_mut(self, module);
    }

    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        block.stmts.retain_mut(|stmt| match stmt {
            Stmt::Item(Item::Use(item_use)) => self.prune(&mut item_use.tree),
            _ => true,
        });
        visit_mut::visit_block_mut(self, block);
    }
}

/// The macro's name if `path` can name a lumina macro: `name` or `lumina::name`.
fn macro_name(path: &syn::Path) -> Option<String> {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [name] => Some(name.clone()),
        [krate, name] if krate == "lumina" => Some(name.clone()),
        _ => None,
    }
}

fn attribute_args(attr: &Attribute) -> TokenStream {
    match &attr.meta {
        Meta::Path(_) => TokenStream::new(),
        Meta::List(list) => list.tokens.clone(),
        Meta::NameValue(name_value) => name_value.value.to_token_stream(),
    }
}

fn item_attrs(item: &mut Item) -> Option<&mut Vec<Attribute>> {
    Some(match item {
        Item::Const(item) => &mut item.attrs,
        Item::Enum(item) => &mut item.attrs,
        Item::Fn(item) => &mut item.attrs,
        Item::Impl(item) => &mut item.attrs,
        Item::Mod(item) => &mut item.attrs,
        Item::Static(item) => &mut item.attrs,
        Item::Struct(item) => &mut item.attrs,
        Item::Trait(item) => &mut item.attrs,
        Item::Type(item) => &mut item.attrs,
        Item::Union(item) => &mut item.attrs,
        _ => return None,
    })
}

/// The pretty-printed expansion of `examples/<example>.rs`.
fn expand_example(root: &Path, example: &str) -> String {
    let source_path = root.join("examples").join(format!("{example}.rs"));
    let source = std::fs::read_to_string(&source_path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", source_path.display()));
    let mut file = syn::parse_file(&source)
        .unwrap_or_else(|error| panic!("parsing {}: {error}", source_path.display()));
    let mut expander = Expander {
        example: example.to_owned(),
        expanded: BTreeSet::new(),
    };
    expander.visit_file_mut(&mut file);
    UsePruner {
        names: &expander.expanded,
    }
    .visit_file_mut(&mut file);
    format!(
        "// @generated by tests/expanded.rs from examples/{example}.rs: every lumina macro call\n\
         // replaced by its expansion. Do not edit; refresh with\n\
         // `LUMINA_BLESS=1 cargo test --test expanded`.\n\n{}",
        with_safety_comments(&prettyplease::unparse(&file))
    )
}

/// A macro's `// SAFETY:` comments do not survive expansion: the generated file says where the
/// argument is, before each `unsafe impl` (clippy's `undocumented_unsafe_blocks`).
fn with_safety_comments(code: &str) -> String {
    let mut out = String::new();
    for line in code.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("unsafe impl") {
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(indent);
            out.push_str(
                "// SAFETY: written by the macro, whose source gives the argument (reflection \
                 computed from the `#[repr(C)]` struct, every field blittable).\n",
            );
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn expanded_path(root: &Path, example: &str) -> PathBuf {
    root.join("examples")
        .join("expanded")
        .join(format!("{example}.rs"))
}

#[test]
fn expanded_examples_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("LUMINA_BLESS").is_some();
    let mut stale = Vec::new();
    for example in EXAMPLES {
        let expanded = expand_example(root, example);
        let path = expanded_path(root, example);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(expanded.as_str()) {
            continue;
        }
        if bless {
            std::fs::create_dir_all(path.parent().expect("examples/expanded"))
                .expect("create examples/expanded/");
            std::fs::write(&path, expanded)
                .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale expansions: {stale:?}; run `LUMINA_BLESS=1 cargo test --test expanded` and \
         review the diff"
    );
}

/// Every lumina macro a user can call, expanded in [`expand_macro`] or not (yet).
const LUMINA_MACROS: &[&str] = &[
    "declare_multicast_delegate",
    "declare_delegate",
    "event_class",
    "script_delegate",
    "ScriptComponent",
    "gameplay_tags",
];

/// Collects the lumina macros still called in a file.
#[derive(Default)]
struct Leftovers(Vec<String>);

impl VisitMut for Leftovers {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        self.note(&mac.path);
    }

    fn visit_attribute_mut(&mut self, attr: &mut Attribute) {
        self.note(attr.path());
        if attr.path().is_ident("derive")
            && let Ok(paths) = attr.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
        {
            for path in &paths {
                self.note(path);
            }
        }
    }
}

impl Leftovers {
    fn note(&mut self, path: &syn::Path) {
        if let Some(name) = macro_name(path).filter(|name| LUMINA_MACROS.contains(&name.as_str())) {
            self.0.push(name);
        }
    }
}

#[test]
fn every_lumina_macro_call_in_the_examples_is_expanded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for example in EXAMPLES {
        let mut expanded =
            syn::parse_file(&expand_example(root, example)).expect("expansion parses");
        let mut leftovers = Leftovers::default();
        leftovers.visit_file_mut(&mut expanded);
        assert!(
            leftovers.0.is_empty(),
            "{example}: {:?} left unexpanded; add an arm to expand_macro",
            leftovers.0
        );
    }
}
