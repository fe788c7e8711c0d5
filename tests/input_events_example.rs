//! Runs `examples/input_events.rs` as a process and compares its whole output: the focused
//! viewport takes W before the editor chrome (P1, P2), the chrome gets what the viewport leaves
//! (Ctrl+S, F5, the click), a nested dispatch reaches the HUD (P4, E5), window events are not
//! routed to viewports, and a dropped viewport gets nothing more (P3).

const EXPECTED: &str = "\
W before the viewport has focus:
  chrome: key W
click into the viewport:
  chrome: MouseButtonPressed left by the viewports
W with the viewport focused:
  viewport: W moves the camera
  hud: camera at (0, 1)
Ctrl+S with the viewport focused:
  chrome: key S (save)
F5 with the viewport focused:
  chrome: key F5
a window resize (not input, so not routed to viewports):
  consumed: false
the viewport closes; keys go to the chrome again:
  chrome: key W
handlers registered: 3
";

#[test]
fn p1_p4_input_events_example_routes_keys_viewport_first_then_chrome() {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--quiet", "--example", "input_events"])
        .output()
        .expect("cargo runs the example");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "example failed: {stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), EXPECTED);
}
