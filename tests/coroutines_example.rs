//! Runs `examples/coroutines.rs` as a process and compares its whole output (X5, X1): the door's
//! sequence starts at the first frame, resumes at the frame after the switch's broadcast (the
//! task is polled by `process_queue`, never inside the broadcast), and plays its sound two
//! frames later; the switch is flipped by a typed key handler.

const EXPECTED: &str = "\
[frame 1] the vault door waits for its switch
[frame 2] the player presses E
[frame 3] the player flipped the switch: the vault door opens
[frame 5] sound: door_open.wav
door open: true
sequence: Finished
";

#[test]
fn x5_coroutines_example_opens_the_door_then_plays_the_sound_two_frames_later() {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--quiet", "--example", "coroutines"])
        .output()
        .expect("cargo runs the example");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "example failed: {stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), EXPECTED);
}
