//! Compile-fail cases of `#[event_class]` (ui-tests/event_class/) and its compile-pass case.
//! Regenerate expectations with `TRYBUILD=overwrite`, then read every .stderr.

#[test]
fn ui_event_class() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui-tests/event_class/*.rs");
    cases.pass("ui-tests/pass/event-class.rs");
}
