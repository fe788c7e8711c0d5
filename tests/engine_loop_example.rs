//! Runs `examples/engine_loop.rs`, the README's main example, as a real process (it ends with
//! `std::process::exit`), and checks its trace: every point of the engine loop, in order.

use std::process::Command;

/// Runs the example with the cargo that runs this test, and returns its stdout.
fn run_engine_loop_example() -> String {
    let output = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "engine_loop"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 trace");
    assert!(
        output.status.success(),
        "the example failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Asserts that each of `expected` is part of a line of `trace`, in this order.
fn assert_in_order(trace: &str, expected: &[&str]) {
    let mut lines = trace.lines();
    for step in expected {
        assert!(
            lines.any(|line| line.contains(step)),
            "missing, or out of order: {step:?}\n--- trace ---\n{trace}"
        );
    }
}

#[test]
fn c1_c2_c3_t1_q1_q2_engine_loop_example_runs_the_whole_engine_lifecycle_in_order() {
    let trace = run_engine_loop_example();
    assert_in_order(
        &trace,
        &[
            // T1: the engine designates its game thread.
            "[engine] game thread designated: main",
            // C1/C2: modules subscribe from their start-up, then are announced.
            "[renderer] start-up: subscribing",
            "[engine] on_module_loaded(Renderer, linked in)",
            "[editor] start-up: settings panel open on Engine.InputSettings (mouse_sensitivity 1)",
            "[engine] on_module_loaded(Editor, bin/libeditor.so)",
            "[engine] on_module_loaded(Input, linked in)",
            "[engine] on_module_loaded(HotReload, linked in)",
            // C2: the lifecycle signals, in the spec's order.
            "[engine] firing on_pre_engine_init",
            "[renderer] on_pre_engine_init: mounting Content/game.pak",
            "[engine] firing on_post_engine_init",
            "[renderer] on_post_engine_init",
            // C2: a late subscription is reported naming the signal, and has_fired() tells.
            "-- frame 1 --",
            "[achievements] created lazily",
            "WARN",
            "[achievements] handle valid: false; has_fired(): true",
            // Q1/Q2: a worker's results are broadcast on the game thread at process_queue.
            "[content-watcher] saw Content/Scripts/door.lua change on thread content-watcher",
            "[hot-reload] on_content_file_modified(Content/Scripts/door.lua) on thread main: reloading script",
            "[hot-reload] on_content_file_modified(Content/Textures/door.png) on thread main: re-uploading texture",
            "[editor] on_content_file_renamed: the open editor now saves to Content/Scripts/gate.lua",
            "[engine] frame 1: process_queue ran 3 task(s) on thread main",
            // C1: world travel; the old world comes as an identity only, caches are dropped.
            "-- frame 2 --",
            "[engine] travel Arena",
            "[renderer] post_world_unload: streaming pool flushed",
            "[renderer] on_world_travelled(",
            "[engine] frame 2: process_queue ran 0 task(s)",
            // C1: settings saved by a worker; the open editor refreshes live.
            "-- frame 3 --",
            "[settings-writer] wrote Engine.InputSettings and Engine.AudioSettings",
            "[editor] on_settings_saved(Engine.InputSettings): settings panel refreshed live, mouse_sensitivity 1 -> 2.5",
            "[input] on_settings_saved(Engine.InputSettings): action map rebuilt",
            "[engine] frame 3: process_queue ran 1 task(s) on thread main",
            // C3: bound, the editor ends its play session and the process goes on...
            "-- frame 4 --",
            "[gameplay] the player chose Quit",
            "[editor] on_game_quit_requested: play-in-editor session 1 ended",
            "[engine] on_game_quit_requested was bound: the process goes on",
            "-- frame 5 --",
            "[editor] shut down: removed its 3 bindings",
            "[engine] on_module_unloaded",
            // ...unbound, the engine shuts down and the process exits.
            "-- frame 6 --",
            "[gameplay] the player chose Quit",
            "[engine] on_game_quit_requested is unbound: shutting down",
            "[engine] firing on_pre_engine_shutdown",
            "[renderer] on_pre_engine_shutdown: releasing GPU resources",
            "[engine] exiting the process after 6 frames in",
        ],
    );

    // The late-subscription report names the signal.
    let warning = trace
        .lines()
        .find(|line| line.contains("WARN"))
        .expect("a warning");
    assert!(
        warning.contains("CoreDelegates::on_post_engine_init"),
        "{warning}"
    );
    assert_eq!(trace.matches("WARN").count(), 1, "{trace}");

    // The old world's cached handles are dropped, the new one's kept.
    let travelled = trace
        .lines()
        .find(|line| line.contains("on_world_travelled("))
        .unwrap();
    assert!(
        travelled.contains("dropped 3 cached entity handles") && travelled.ends_with("1 world(s)"),
        "{travelled}"
    );

    // The audio settings class is not the editor's business: one refresh only.
    assert_eq!(trace.matches("refreshed live").count(), 1, "{trace}");
    // Nothing was printed by the late subscriber, or after the process exited.
    assert!(!trace.contains("never printed"), "{trace}");
    assert!(
        trace
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .contains("exiting the process")
    );

    // It runs in well under a second (measured inside the process, without cargo's start-up).
    let last = trace.trim_end().lines().last().unwrap();
    let millis: u128 = last
        .rsplit_once(" in ")
        .and_then(|(_, rest)| rest.strip_suffix(" ms"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {last:?}"));
    assert!(millis < 1000, "took {millis} ms");
}
