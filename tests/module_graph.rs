//! N3: the runtime's modules form no import circle. Every module of `lumina-runtime/src` stands
//! above what it uses: this test reads each module's source, finds the paths it names through
//! `crate::`, `super::` and `self::` (in `use` items and inline), resolves each to the module that
//! defines the item (following re-exports: `invocation/mod.rs` re-exporting `list::Block` is
//! not a use of `invocation` by whoever names `crate::invocation::Block`), and fails on any
//! cycle, printing the edges that close it with their file and line.
//!
//! A module's own children are not edges (a parent contains them), nor is test-only code
//! (`#[cfg(test)] mod ... { }` blocks, `tests.rs` files and the files of a `tests/` folder).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One module: its path (`""` for the crate root, `invocation::list`) and its source text with
/// comments, strings and test-only blocks blanked out.
struct Module {
    path: String,
    file: String,
    code: String,
}

/// An edge of the graph: `from` names an item of `to` at `line` of `from`'s file.
#[derive(Clone, Debug)]
struct Edge {
    from: String,
    to: String,
    line: usize,
    text: String,
}

/// Blanks comments, string and char literals (keeping newlines, so line numbers stay right).
fn strip(source: &str) -> String {
    let bytes: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i] == '/' && bytes.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if bytes[i] == '*' && bytes.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(bytes[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            // A raw string: r"..", r#".."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while bytes.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if bytes.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= bytes.len() {
                    break;
                }
                if bytes[j] == '"' && (1..=hashes).all(|k| bytes.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &skipped in &bytes[i..j.min(bytes.len())] {
                out.push(blank(skipped));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                if bytes[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < bytes.len() {
                    out.push(blank(bytes[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < bytes.len() && bytes[j] != '\'' {
                    j += 1;
                }
                for _ in i..=j.min(bytes.len() - 1) {
                    out.push(' ');
                }
                i = j + 1;
            } else if bytes.get(i + 2) == Some(&'\'') {
                out.push_str("   ");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Blanks every `#[cfg(test)]` item that is a `mod` with a body: test code may use anything.
fn strip_test_modules(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: String = out.iter().collect();
    let mut from = 0;
    while let Some(found) = text[from..].find("#[cfg(test)]") {
        let start = from + found;
        let rest = &text[start + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let is_mod = trimmed.starts_with("mod ") || trimmed.starts_with("pub(crate) mod ");
        let open = rest.find('{');
        let semicolon = rest.find(';');
        if let (true, Some(open)) = (is_mod, open)
            && semicolon.is_none_or(|semicolon| semicolon > open)
        {
            let open = start + "#[cfg(test)]".len() + open;
            let mut depth = 0;
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            let begin = chars.iter().position(|&(at, _)| at == start).unwrap();
            for (index, &(at, c)) in chars.iter().enumerate().skip(begin) {
                if at >= open && c == '{' {
                    depth += 1;
                } else if at > open && c == '}' {
                    depth -= 1;
                }
                if c != '\n' {
                    out[index] = ' ';
                }
                if at > open && depth == 0 {
                    break;
                }
            }
        }
        from = start + 1;
    }
    out.into_iter().collect()
}

/// Every module file under `src`, with its module path.
fn read_modules(src: &Path) -> Vec<Module> {
    let mut modules = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source directory") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut segments: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            // Test-only: `tests.rs` and every file under a `tests/` folder.
            if segments.iter().any(|segment| segment == "tests") {
                continue;
            }
            if segments
                .last()
                .is_some_and(|last| last == "mod" || last == "lib")
            {
                segments.pop();
            }
            // A crate of its own (the dylib's), not a module of the runtime.
            if !path.starts_with(src) || segments.first().is_some_and(|first| first == "dylib") {
                continue;
            }
            let source = std::fs::read_to_string(&path).expect("readable source file");
            modules.push(Module {
                path: segments.join("::"),
                file: path.display().to_string(),
                code: strip_test_modules(&strip(&source)),
            });
        }
    }
    modules.sort_by(|a, b| a.path.cmp(&b.path));
    modules
}

/// A token of a path: an identifier, `::`, `{`, `}`, `,`, `*` or `;`, with its line.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Semicolon,
    Other,
}

fn tokenize(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if is_ident(c) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            tokens.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push((Token::Colons, line));
            i += 2;
        } else {
            tokens.push((
                match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    '*' => Token::Star,
                    ';' => Token::Semicolon,
                    _ => Token::Other,
                },
                line,
            ));
            i += 1;
        }
    }
    tokens
}

/// One path a module names: its segments as written (`super`, `entry`, `Entry`), the name it
/// is imported as (for `use` items), and its line.
#[derive(Clone, Debug)]
struct Named {
    segments: Vec<String>,
    alias: Option<String>,
    line: usize,
    /// How many inline `mod name { }` blocks of the file the path sits in.
    inline_depth: usize,
}

/// Expands a use tree starting at `tokens[*at]` under `prefix`.
fn use_tree(
    tokens: &[(Token, usize)],
    at: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<Named>,
    inline_depth: usize,
) {
    let mut segments = prefix;
    let line = tokens.get(*at).map_or(0, |token| token.1);
    loop {
        match tokens.get(*at).map(|token| &token.0) {
            Some(Token::Ident(name)) => {
                segments.push(name.clone());
                *at += 1;
                if tokens.get(*at).map(|token| &token.0) == Some(&Token::Colons) {
                    *at += 1;
                    continue;
                }
                let mut alias = None;
                if tokens.get(*at).map(|token| &token.0) == Some(&Token::Ident("as".into())) {
                    if let Some((Token::Ident(name), _)) = tokens.get(*at + 1) {
                        alias = Some(name.clone());
                    }
                    *at += 2;
                }
                out.push(Named {
                    alias: Some(alias.unwrap_or_else(|| segments.last().unwrap().clone())),
                    segments,
                    line,
                    inline_depth,
                });
                return;
            }
            Some(Token::Open) => {
                *at += 1;
                loop {
                    match tokens.get(*at).map(|token| &token.0) {
                        Some(Token::Close) => {
                            *at += 1;
                            return;
                        }
                        Some(Token::Comma) => *at += 1,
                        None => return,
                        _ => use_tree(tokens, at, segments.clone(), out, inline_depth),
                    }
                }
            }
            Some(Token::Star) => {
                *at += 1;
                out.push(Named {
                    segments,
                    alias: None,
                    line,
                    inline_depth,
                });
                return;
            }
            _ => return,
        }
    }
}

/// Every path a module's code names: its `use` items (expanded) and its inline
/// `crate::`/`super::`/`self::` paths.
fn named_paths(code: &str) -> Vec<Named> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        match token {
            Token::Open => depth += 1,
            Token::Close => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some((Token::Ident(_), _)), Some((Token::Open, _))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push(depth);
                }
            }
            Token::Ident(word) if word == "use" => {
                let mut at = i + 1;
                use_tree(&tokens, &mut at, Vec::new(), &mut out, inline.len());
                i = at;
                continue;
            }
            Token::Ident(word)
                if (word == "crate" || word == "super" || word == "self")
                    && tokens.get(i + 1).map(|token| &token.0) == Some(&Token::Colons)
                    && (i == 0 || tokens[i - 1].0 != Token::Colons) =>
            {
                let mut segments = vec![word.clone()];
                let mut at = i + 1;
                while tokens.get(at).map(|token| &token.0) == Some(&Token::Colons) {
                    match tokens.get(at + 1) {
                        Some((Token::Ident(name), _)) => segments.push(name.clone()),
                        _ => break,
                    }
                    at += 2;
                }
                out.push(Named {
                    segments,
                    alias: None,
                    line: *line,
                    inline_depth: inline.len(),
                });
                i = at;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The graph of the modules' uses.
struct Graph {
    modules: BTreeMap<String, Vec<Named>>,
    files: BTreeMap<String, String>,
}

fn parent(path: &str) -> Option<String> {
    if path.is_empty() {
        None
    } else {
        Some(
            path.rsplit_once("::")
                .map_or(String::new(), |(up, _)| up.to_owned()),
        )
    }
}

fn join(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}::{name}")
    }
}

/// `a` is `b` or contains it.
fn contains(a: &str, b: &str) -> bool {
    a.is_empty() || a == b || b.starts_with(&format!("{a}::"))
}

impl Graph {
    fn new(modules: Vec<Module>) -> Self {
        let mut graph = Graph {
            modules: BTreeMap::new(),
            files: BTreeMap::new(),
        };
        for module in modules {
            graph
                .modules
                .insert(module.path.clone(), named_paths(&module.code));
            graph.files.insert(module.path, module.file);
        }
        graph
    }

    /// Absolute segments of a path named in `module`; `None` for paths outside the crate
    /// (`std::..`, other crates).
    fn absolute(&self, module: &str, named: &Named) -> Option<Vec<String>> {
        let mut segments = named.segments.iter().peekable();
        let mut base = module.to_owned();
        let mut inline = named.inline_depth;
        let first = segments.peek()?.as_str();
        match first {
            "crate" => {
                base = String::new();
                segments.next();
            }
            "self" | "super" => {
                while let Some(word) = segments.peek() {
                    match word.as_str() {
                        "self" => {}
                        "super" if inline > 0 => inline -= 1,
                        "super" => base = parent(&base)?,
                        _ => break,
                    }
                    segments.next();
                }
            }
            // A child module named without `self::` (uniform paths).
            name if self.modules.contains_key(&join(module, name)) => {}
            _ => return None,
        }
        let mut out: Vec<String> = if base.is_empty() {
            Vec::new()
        } else {
            base.split("::").map(str::to_owned).collect()
        };
        out.extend(segments.cloned());
        Some(out)
    }

    /// The module that defines what `segments` (absolute) names, following re-exports; `None`
    /// for a glob or a name no module defines.
    fn resolve(&self, segments: &[String], hops: usize) -> Option<String> {
        if hops > 16 {
            return None;
        }
        // The longest prefix that is a module.
        let mut module = String::new();
        let mut used = 0;
        for (index, segment) in segments.iter().enumerate() {
            let candidate = join(&module, segment);
            if self.modules.contains_key(&candidate) {
                module = candidate;
                used = index + 1;
            } else {
                break;
            }
        }
        let Some(item) = segments.get(used) else {
            return Some(module);
        };
        // Re-exported by `module`? Then it is defined where the re-export points.
        for named in &self.modules[&module] {
            if named.inline_depth == 0
                && named.alias.as_deref() == Some(item.as_str())
                && let Some(target) = self.absolute(&module, named)
            {
                let mut rest = target;
                rest.extend(segments[used + 1..].iter().cloned());
                return self.resolve(&rest, hops + 1);
            }
        }
        Some(module)
    }

    fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for (module, paths) in &self.modules {
            for named in paths {
                let Some(absolute) = self.absolute(module, named) else {
                    continue;
                };
                let Some(to) = self.resolve(&absolute, 0) else {
                    continue;
                };
                // Itself, or one of its children: not a use.
                if contains(module, &to) {
                    continue;
                }
                edges.push(Edge {
                    from: module.clone(),
                    to,
                    line: named.line,
                    text: named.segments.join("::"),
                });
            }
        }
        edges
    }
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(edges: &[Edge]) -> Vec<BTreeSet<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in edges {
        next.entry(&edge.from).or_default().insert(&edge.to);
        next.entry(&edge.to).or_default();
    }
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(node: &'a str, next: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let index = s.index.len();
        s.index.insert(node, index);
        s.low.insert(node, index);
        s.stack.push(node);
        s.on_stack.insert(node);
        for &to in &next[node] {
            if !s.index.contains_key(to) {
                visit(to, next, s);
                let low = s.low[node].min(s.low[to]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(to) {
                let low = s.low[node].min(s.index[to]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = BTreeSet::new();
            loop {
                let top = s.stack.pop().unwrap();
                s.on_stack.remove(top);
                component.insert(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &node in next.keys() {
        if !state.index.contains_key(node) {
            visit(node, &next, &mut state);
        }
    }
    state.out
}

/// The report of one cycle: the edges between its modules, with file and line.
fn describe(graph: &Graph, edges: &[Edge], cycle: &BTreeSet<String>) -> String {
    let mut out = format!("import circle between {cycle:?}:\n");
    for edge in edges {
        if cycle.contains(&edge.from) && cycle.contains(&edge.to) {
            out.push_str(&format!(
                "  {} -> {}   ({}:{}: {})\n",
                edge.from, edge.to, graph.files[&edge.from], edge.line, edge.text
            ));
        }
    }
    out
}

fn module(path: &str, source: &str) -> Module {
    Module {
        path: path.to_owned(),
        file: format!("{path}.rs"),
        code: strip_test_modules(&strip(source)),
    }
}

#[test]
fn n3_the_runtime_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("lumina-runtime/src");
    let graph = Graph::new(read_modules(&src));
    assert!(
        graph.modules.contains_key("invocation::list")
            && graph.modules.contains_key("main_thread")
            && graph.modules.contains_key(""),
        "the runtime's modules were not found under {}",
        src.display()
    );
    let edges = graph.edges();
    assert!(
        edges.len() > 50,
        "only {} edges: is the parser blind?",
        edges.len()
    );
    let report: Vec<String> = cycles(&edges)
        .iter()
        .map(|cycle| describe(&graph, &edges, cycle))
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn n3_the_checker_finds_a_circle_through_a_re_export_super_and_an_inline_path() {
    // `b` uses `a` through the parent's re-export; `a` uses `b` inline through `super::`.
    let graph = Graph::new(vec![
        module("", "mod p;\n"),
        module("p", "mod a;\nmod b;\npub(crate) use a::Thing;\n"),
        module("p::a", "pub struct Thing;\nfn f() { super::b::g(); }\n"),
        module("p::b", "use crate::p::Thing;\npub fn g() {}\n"),
        module(
            "q",
            "// use crate::p::a::Thing;\nconst S: &str = \"crate::p::b::g\";\n\
             #[cfg(test)]\nmod tests { use crate::p::b::g; }\n",
        ),
    ]);
    let edges = graph.edges();
    let found = cycles(&edges);
    let expected: BTreeSet<String> = ["p::a".to_owned(), "p::b".to_owned()].into();
    assert_eq!(found, vec![expected], "edges: {edges:?}");
    // Comments, strings and test modules name nothing.
    assert!(edges.iter().all(|edge| edge.from != "q"), "{edges:?}");
    // The parent re-exporting its child is not a use of the parent.
    assert!(edges.iter().all(|edge| edge.to != "p"), "{edges:?}");
}

#[test]
fn n3_the_checker_follows_a_uniform_path_and_ignores_children_and_inline_modules() {
    let graph = Graph::new(vec![
        module("", "mod x;\nmod y;\npub use x::X;\n"),
        module(
            "x",
            "mod inner;\nuse inner::I;\npub struct X;\nmod sealed { use super::X; }\n",
        ),
        module("x::inner", "pub struct I;\n"),
        module("y", "use crate::X;\n"),
    ]);
    let edges = graph.edges();
    let pairs: Vec<(&str, &str)> = edges
        .iter()
        .map(|edge| (edge.from.as_str(), edge.to.as_str()))
        .collect();
    // `y` names `crate::X`, which is `x`'s; `x` using its child and its inline module's
    // `super::X` are not edges.
    assert_eq!(pairs, vec![("y", "x")]);
    assert!(cycles(&edges).is_empty());
}

/// The runtime's top-level modules, each taken whole (`invocation` with its files, `bus` with
/// `bus::script`...): the edges between different ones.
fn top_level_edges(edges: &[Edge]) -> Vec<Edge> {
    let top = |path: &str| path.split("::").next().unwrap_or_default().to_owned();
    edges
        .iter()
        .filter(|edge| top(&edge.from) != top(&edge.to))
        .map(|edge| Edge {
            from: top(&edge.from),
            to: top(&edge.to),
            ..edge.clone()
        })
        .collect()
}

#[test]
fn n3_the_runtime_is_layered_folder_by_folder() {
    // A folder is one layer: the module loader (`module`) stands above the lists, the bus, the
    // queue and the delegates it unloads, and the records they all write into (`track`) below
    // them; so no top-level module (a file or a folder with its files) uses one that uses it.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("lumina-runtime/src");
    let graph = Graph::new(read_modules(&src));
    let edges = top_level_edges(&graph.edges());
    let report: Vec<String> = cycles(&edges)
        .iter()
        .map(|cycle| {
            let mut out = format!("import circle between {cycle:?}:\n");
            for edge in &edges {
                if cycle.contains(&edge.from) && cycle.contains(&edge.to) {
                    out.push_str(&format!(
                        "  {} -> {}   (line {}: {})\n",
                        edge.from, edge.to, edge.line, edge.text
                    ));
                }
            }
            out
        })
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
    // The loader is above what it unloads, the records below what records into them.
    let uses = |from: &str, to: &str| edges.iter().any(|e| e.from == from && e.to == to);
    assert!(uses("module", "invocation") || uses("module", "main_thread"));
    assert!(uses("invocation", "track") && uses("bus", "track"));
    assert!(!uses("track", "module") && !uses("track", "invocation"));
}

#[test]
fn n3_runtime_modules_import_from_the_defining_module_not_the_crate_roots_re_exports() {
    // So the import graph shows the real layering: `crate::scoped::ScopedBlock`, never
    // `crate::ScopedBlock` (the crate root re-exports for users, not for its own modules).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("lumina-runtime/src");
    let mut found = Vec::new();
    for module in read_modules(&src) {
        for (number, line) in module.code.lines().enumerate() {
            let through_root = line.contains("use crate::{")
                || line
                    .match_indices("crate::")
                    .any(|(at, _)| line[at + 7..].starts_with(|c: char| c.is_ascii_uppercase()));
            if through_root {
                found.push(format!("{}:{}: {}", module.file, number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "through the crate root:\n{}",
        found.join("\n")
    );
}
