//! Compile-fail and compile-pass cases of every lumina macro (trybuild).
//!
//! Every directory of `ui-tests/` is a group of compile-fail cases (`ui-tests/<group>/*.rs`,
//! each with the expected `.stderr` beside it), except `ui-tests/pass/`, whose cases must
//! compile. A case can only name `lumina`, which proves every macro works through the facade.
//! A new group needs no change here. Regenerate a `.stderr` with `TRYBUILD=overwrite`, then
//! read it: it must point at the user's token and read well.

use std::path::Path;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui-tests");
    let mut groups: Vec<String> = std::fs::read_dir(&root)
        .expect("ui-tests/ exists")
        .map(|entry| entry.expect("readable ui-tests/ entry"))
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    groups.sort();
    for group in groups {
        let pattern = format!("ui-tests/{group}/*.rs");
        if group == "pass" {
            cases.pass(pattern);
        } else {
            cases.compile_fail(pattern);
        }
    }
}
