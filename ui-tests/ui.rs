//! Compile-fail cases of every lumina macro (trybuild), and the check that every compile-pass
//! case is built.
//!
//! Every directory of `ui-tests/` is a group of compile-fail cases (`ui-tests/<group>/*.rs`,
//! each with the expected `.stderr` beside it), except `ui-tests/pass/`, whose cases must
//! compile and run: they are test targets of this package of their own (`pass-<case>`, see
//! `ui-tests/Cargo.toml`), and [`every_pass_case_is_a_test_target`] keeps that list whole. A case can only name `lumina`, which proves every macro works through the facade.
//! A new group needs no change here. Regenerate a `.stderr` with `TRYBUILD=overwrite`, then
//! read it: it must point at the user's token and read well.
//!
//! This file and the cases are the package `lumina-ui-tests` (`ui-tests/Cargo.toml`), whose only
//! dev-dependencies are lumina and trybuild: trybuild's project builds just those (rule N1).
//! Paths in the `.stderr` files are relative to `ui-tests/` (`bus/duplicate-tag.rs`), and
//! lumina's own sources are `$WORKSPACE/...`.
//!
//! One error per mistake (the diagnostics rules of `lumina::rules`): a case makes one mistake
//! and its `.stderr` holds exactly one error. The cases that make several on purpose are named
//! `every-mistake-at-once*` or `several-*`, and say how many in a `// mistakes: N` line. A case
//! named `*-then-used` repeats another case's mistake and then uses the item the ordinary way
//! (dispatching, broadcasting, binding to it), which must add no error.

use std::path::{Path, PathBuf};

/// Where trybuild writes the output of a case that has no `.stderr` yet: not a group.
const WIP: &str = "wip";

/// The groups of `ui-tests/` (directory names, without trybuild's `wip/`), sorted.
fn groups() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut groups: Vec<String> = std::fs::read_dir(root)
        .expect("ui-tests/ exists")
        .map(|entry| entry.expect("readable ui-tests/ entry"))
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|group| group != WIP)
        .collect();
    groups.sort();
    groups
}

/// Every compile-fail case. They are in a `TestCases` of their own, without the compile-pass
/// cases: trybuild then checks them all in ONE `cargo check --bins --keep-going` (cargo compiles
/// them in parallel), while a `TestCases` that also holds a pass case builds every case in build
/// mode, one cargo invocation after another (about 145 of them).
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    for group in groups().into_iter().filter(|group| group != "pass") {
        cases.compile_fail(format!("{group}/*.rs"));
    }
}

/// Every compile-pass case (`ui-tests/pass/*.rs`) is a `[[test]]` target named `pass-<case>` in
/// this package's manifest, so a new case cannot be left unbuilt.
#[test]
fn every_pass_case_is_a_test_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the manifest");
    let mut cases = 0;
    for case in std::fs::read_dir(root.join("pass")).expect("ui-tests/pass/ exists") {
        let case = case.expect("readable case").path();
        if case.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let stem = case.file_stem().unwrap().to_string_lossy();
        let target = format!("name = \"pass-{stem}\"\npath = \"pass/{stem}.rs\"\nharness = false");
        assert!(
            manifest.contains(&target),
            "ui-tests/pass/{stem}.rs is not a test target: add to ui-tests/Cargo.toml\n[[test]]\n{target}"
        );
        cases += 1;
    }
    assert!(cases >= 4, "only {cases} compile-pass cases");
}

/// The compile-fail cases: every `ui-tests/<group>/*.rs` outside `ui-tests/pass/`.
fn compile_fail_cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases = Vec::new();
    for group in std::fs::read_dir(root).expect("ui-tests/ exists") {
        let group = group.expect("readable ui-tests/ entry").path();
        if !group.is_dir() || group.ends_with("pass") || group.ends_with(WIP) {
            continue;
        }
        for case in std::fs::read_dir(&group).expect("readable group") {
            let case = case.expect("readable case").path();
            if case.extension().is_some_and(|ext| ext == "rs") {
                cases.push(case);
            }
        }
    }
    cases.sort();
    cases
}

/// How many mistakes a case makes on purpose: 1, or its `// mistakes: N` line when its name says
/// it makes several.
fn mistakes(case: &Path, source: &str) -> usize {
    let name = case.file_stem().unwrap().to_string_lossy();
    let declared = source
        .lines()
        .find_map(|line| line.trim().strip_prefix("// mistakes: "))
        .map(|count| count.trim().parse::<usize>().expect("`// mistakes: N`"));
    if name.starts_with("every-mistake-at-once") || name.starts_with("several-") {
        let count = declared.unwrap_or_else(|| panic!("{name} lacks `// mistakes: N`"));
        assert!(
            count > 1,
            "{name} is named for several mistakes but declares {count}"
        );
        count
    } else {
        assert!(
            declared.is_none(),
            "{name} declares its mistakes but is not named `several-*`"
        );
        1
    }
}

/// The errors a `.stderr` holds: its lines starting with `error` (`error:` and `error[E..]:`).
fn error_count(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|line| line.starts_with("error:") || line.starts_with("error["))
        .count()
}

#[test]
fn one_error_per_mistake() {
    let cases = compile_fail_cases();
    assert!(cases.len() > 80, "only {} compile-fail cases", cases.len());
    let mut wrong = Vec::new();
    for case in &cases {
        let source = std::fs::read_to_string(case).unwrap();
        let stderr = std::fs::read_to_string(case.with_extension("stderr"))
            .unwrap_or_else(|_| panic!("{} has no .stderr", case.display()));
        let (expected, found) = (mistakes(case, &source), error_count(&stderr));
        if expected != found {
            wrong.push(format!(
                "{}: {expected} mistake(s), {found} error(s)",
                case.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_then_used_case_repeats_a_case() {
    let cases = compile_fail_cases();
    let then_used: Vec<&PathBuf> = cases
        .iter()
        .filter(|case| case.to_string_lossy().ends_with("-then-used.rs"))
        .collect();
    assert!(
        then_used.len() >= 40,
        "only {} then-used cases",
        then_used.len()
    );
    for case in then_used {
        let original = case.to_string_lossy().replace("-then-used.rs", ".rs");
        assert!(
            Path::new(&original).is_file(),
            "{} repeats no case",
            case.display()
        );
    }
}

#[test]
fn the_error_counter_counts_errors_only() {
    let stderr = "error: one\n --> x.rs:1:1\nerror[E0277]: two\nwarning: not one\n  = note: error: not one either\n";
    assert_eq!(error_count(stderr), 2);
}
