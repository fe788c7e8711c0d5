//! The documentation stands on its own (the diagnostics rules of `lumina::rules`): every rule id
//! cited in a tracked file is defined in the catalogue `src/rules.md`, no tracked file refers to a
//! path outside the repository, and every test the guide's failure-mode table names exists.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The families of rule ids, longest first so `SD4` is not read as `S` + `D4`.
const FAMILIES: &[&str] = &[
    "SD", "MB", "PL", "GB", "TS", "A", "H", "M", "S", "T", "Q", "C", "E", "P", "B", "R", "X", "V",
];

/// Words shaped like rule ids that are not citations, each with where it comes from.
const NOT_RULE_IDS: &[(&str, &str)] = &[
    ("X11", "the X Window System (winit's backends)"),
    ("C11", "the ISO C standard lumina.h is compiled as"),
    (
        "P6",
        "the magic number of a binary PPM image (the window test reads its screenshot)",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every tracked file that is text, with its path relative to the repository's root.
fn tracked_text_files() -> Vec<(PathBuf, String)> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git runs (the repository is a git clone; install git to run this test)");
    assert!(output.status.success(), "git ls-files failed: {output:?}");
    let list = String::from_utf8(output.stdout).expect("utf-8 paths");
    let files: Vec<(PathBuf, String)> = list
        .split('\0')
        .filter(|path| !path.is_empty())
        .filter_map(|path| {
            let bytes = std::fs::read(root().join(path)).ok()?;
            let text = String::from_utf8(bytes).ok()?;
            Some((PathBuf::from(path), text))
        })
        .collect();
    assert!(
        files.len() > 100,
        "only {} tracked text files found",
        files.len()
    );
    files
}

/// `Some(id)` when `word` has the shape of a rule id: a family, then one or two digits.
fn rule_id_shape(word: &str) -> Option<&str> {
    let family = FAMILIES.iter().find(|family| word.starts_with(**family))?;
    let digits = &word[family.len()..];
    let shaped = (1..=2).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    shaped.then_some(word)
}

/// The rule ids cited in `text`: words (runs of ASCII letters and digits) shaped like an id.
fn cited_ids(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(rule_id_shape)
        .filter(|word| !NOT_RULE_IDS.iter().any(|(not, _)| not == word))
        .map(str::to_owned)
        .collect()
}

/// The ids the catalogue defines: entries `<a id="m3"></a>**M3**`, anchor and name agreeing.
fn defined_ids() -> BTreeSet<String> {
    let catalogue = std::fs::read_to_string(root().join("src/rules.md")).expect("src/rules.md");
    let mut defined = BTreeSet::new();
    for entry in catalogue.split("<a id=\"").skip(1) {
        let (anchor, rest) = entry.split_once("\"></a>**").expect("an anchored entry");
        let (name, _) = rest.split_once("**").expect("a bold rule id");
        assert_eq!(
            anchor,
            name.to_lowercase(),
            "the anchor of {name} must be its id"
        );
        assert!(rule_id_shape(name).is_some(), "{name} is not a rule id");
        assert!(defined.insert(name.to_owned()), "{name} is defined twice");
    }
    defined
}

#[test]
fn every_rule_id_cited_in_the_repository_is_defined_in_the_catalogue() {
    let defined = defined_ids();
    // Every family of the rules has its entries (a sanity check of the parsing above).
    for id in [
        "H1", "M13", "S3", "T1", "Q3", "C3", "E5", "P4", "SD8", "MB5", "PL4", "B6", "GB9",
    ] {
        assert!(defined.contains(id), "the catalogue lacks {id}");
    }
    let mut undefined = Vec::new();
    let mut citations = 0;
    for (path, text) in tracked_text_files() {
        for id in cited_ids(&text) {
            citations += 1;
            if !defined.contains(&id) {
                undefined.push(format!("{}: {id}", path.display()));
            }
        }
    }
    assert!(citations > 100, "only {citations} citations found");
    assert!(
        undefined.is_empty(),
        "rule ids cited but not defined in src/rules.md:\n{}",
        undefined.join("\n")
    );
}

#[test]
fn the_id_scanner_finds_citations_and_nothing_else() {
    let ids = cited_ids("rules M1-M12, SD4 and MB4 (`m3_test`, E0277, C11, XM3, M3a, H0, B6)");
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(ids, ["B6", "M1", "M12", "MB4", "SD4"]);
}

/// Text that points outside the repository: the places a reader of a clone cannot follow.
fn outside_markers() -> Vec<String> {
    // Spelled in pieces, so that this file does not match itself.
    vec![
        ["DESIGN", ".md"].concat(),
        ["shared", "/spec"].concat(),
        ["..", "/shared"].concat(),
        ["/work", "/"].concat(),
        ["delegates-and-events", ".txt"].concat(),
        ["/home", "/"].concat(),
    ]
}

/// Where a relative path starting with `../`, written in the file `file`, leads: `None` when it
/// leaves the repository.
fn resolve_parent_path(file: &Path, written: &str) -> Option<PathBuf> {
    let mut resolved: Vec<Component<'_>> = file.parent()?.components().collect();
    for component in Path::new(written).components() {
        match component {
            Component::ParentDir => {
                resolved.pop()?;
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    Some(resolved.iter().collect())
}

/// The references to places outside the repository in `text`, a file at `path`.
fn outside_references(path: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for marker in outside_markers() {
        if text.contains(&marker) {
            found.push(format!("{}: mentions `{marker}`", path.display()));
        }
    }
    let parent = ["..", "/"].concat();
    for (index, _) in text.match_indices(&parent) {
        // Only a path that starts here: not the tail of `a/../b` or of `...`.
        let before = text[..index].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '/') {
            continue;
        }
        let written: String = text[index..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "._-/".contains(*c))
            .collect();
        if resolve_parent_path(path, &written).is_none() {
            found.push(format!(
                "{}: `{written}` leaves the repository",
                path.display()
            ));
        }
    }
    found
}

#[test]
fn no_tracked_file_refers_to_a_path_outside_the_repository() {
    let mut found = Vec::new();
    for (path, text) in tracked_text_files() {
        found.extend(outside_references(&path, &text));
    }
    assert!(
        found.is_empty(),
        "references outside the repository:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_outside_reference_check_catches_what_it_must() {
    let file = Path::new("src/lib.rs");
    let leaving = ["..", "/..", "/notes.md"].concat();
    assert_eq!(outside_references(file, &leaving).len(), 1);
    assert!(outside_references(file, "include_str!(\"../README.md\")").is_empty());
    assert!(outside_references(file, "see `ui-tests/pass` ... and more").is_empty());
    let design = ["see ", "DESIGN", ".md"].concat();
    assert_eq!(outside_references(file, &design).len(), 1);
}

/// The rows of the guide's failure-mode table: each names test files and tests
/// (`tests/x.rs`: `name`, `other`) or ui cases (`ui-tests/...rs`).
#[test]
fn every_test_named_in_the_guides_failure_mode_table_exists() {
    let guide = std::fs::read_to_string(root().join("src/guide.md")).expect("src/guide.md");
    let table = guide
        .split("# Common failure modes")
        .nth(1)
        .expect("the guide's failure-mode section");
    let rows: Vec<&str> = table
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| Symptom"))
        .collect();
    assert!(rows.len() >= 9, "the spec's nine failure modes, at least");
    let mut checked = 0;
    for row in rows {
        let proof = row.trim_end_matches('|').rsplit('|').next().unwrap();
        let mut file: Option<String> = None;
        let mut proved = false;
        for quoted in proof.split('`').skip(1).step_by(2) {
            if quoted.starts_with("tests/") || quoted.starts_with("ui-tests/") {
                assert!(root().join(quoted).is_file(), "{quoted} does not exist");
                proved |= quoted.starts_with("ui-tests/");
                file = Some(quoted.to_owned());
            } else {
                let file = file.as_ref().expect("a test name follows its file");
                let source = std::fs::read_to_string(root().join(file)).unwrap();
                assert!(
                    source.contains(&format!("fn {quoted}(")),
                    "{file} has no test `{quoted}` (the guide's row: {row})"
                );
                proved = true;
                checked += 1;
            }
        }
        assert!(proved, "a row without a test: {row}");
    }
    assert!(checked >= 9);
}
