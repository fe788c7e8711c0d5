//! Runs `examples/message_bus.rs` as a process and compares its whole output: its tags, registered
//! at start-up, are found by name before Rust uses them (GB1); damage addressed to
//! a soldier bubbles to the squad (GB4), which consumes critical hits (GB3); the UI's partial
//! listener on `Combat` hears each child tag it is given (GB3); a late scoreboard hears the
//! retained match state at once (GB6); the worker thread's posts arrive at the delivery point in
//! post order (GB5); the announcer's one-shot listener hears the first damage only (X3).

const EXPECTED: &str = "\
data: Loot.Found is a tag (depth 2)
warmup:
alice takes a hit:
  soldier 1: -30 hp, 70 left
  squad: Combat.Damage reached the squad from soldier 1
  announcer: first blood on 1
  ui: Combat.Damage for Some(1)
bob takes a critical hit:
  squad: shields soldier 2 from a critical 80 (consumed)
a medic heals everyone:
  ui: Combat.Heal for None
a scoreboard joins late:
  scoreboard: Fighting { round: 1 } (retained: true)
the loot worker posts from its thread:
end of frame:
  loot: sword worth 40
  loot: shield worth 25
  delivered 2 posted messages
round 2:
  scoreboard: Fighting { round: 2 } (retained: false)
listeners: 6
";

#[test]
fn gb3_gb6_message_bus_example_bubbles_consumes_retains_and_delivers_posts() {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--quiet", "--example", "message_bus"])
        .output()
        .expect("cargo runs the example");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "example failed: {stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), EXPECTED);
}
