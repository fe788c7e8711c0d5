//! Runs a scenario that may abort the process in a child process: the test binary itself,
//! filtered to one test, so that an abort ("panic in a destructor during cleanup") fails that
//! test instead of killing the whole test run.

use std::process::Command;

/// The variable that tells the child which test it runs the scenario of.
const CHILD_VAR: &str = "LUMINA_CHILD_SCENARIO";

/// Runs `scenario` in a child process and asserts that the child exits normally (and that its
/// test passed). `test_name` must be the calling test's name (a test at the top of its file:
/// the function's name). In the child, the scenario runs directly. Under Miri, which cannot
/// spawn processes, it runs in this process: an abort then fails the Miri run.
pub fn in_child_process(test_name: &str, scenario: impl FnOnce()) {
    if cfg!(miri) || std::env::var(CHILD_VAR).as_deref() == Ok(test_name) {
        scenario();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(exe)
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, test_name)
        .output()
        .expect("the test binary runs as a child process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the scenario of `{test_name}` did not exit normally ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the child did not run `{test_name}`:\n{stdout}"
    );
}
