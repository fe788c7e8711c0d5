//! Game modules (rules MB1-MB5): builds the fixture engine and game modules of `tests/modules/`
//! with the shared runtime (the README's commands), runs the engine through its scenarios and
//! checks the whole trace. The load/unload cycle also runs under valgrind's memcheck, which must
//! report no error (no read of unmapped or freed memory); valgrind is required, never skipped
//! (`.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixtures' target directory, under this build's target directory.
fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("modules")
}

/// `cargo build` of the fixtures with `RUSTFLAGS="-C prefer-dynamic"`, as the README says. They
/// build with lumina's own lock file (copied in; every registry package they use is in it), so
/// they use exactly the dependency versions lumina is tested with and need no network.
fn cargo_build(args: &[&str]) {
    std::fs::copy(
        root().join("Cargo.lock"),
        root().join("tests/modules/Cargo.lock"),
    )
    .expect("copy Cargo.lock to the fixtures");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .env("RUSTFLAGS", "-C prefer-dynamic")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .args(["build", "--quiet", "--manifest-path"])
        .arg(root().join("tests/modules/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir())
        .args(args)
        .output()
        .expect("could not run cargo to build the module fixtures");
    assert!(
        output.status.success(),
        "building the module fixtures failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Builds the fixtures once per test run; returns the folder of the built engine and libraries.
fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        cargo_build(&["--workspace", "--exclude", "own_runtime"]);
        // Alone, so that its `lumina` keeps its own runtime (no feature unification).
        cargo_build(&["-p", "own_runtime"]);
        target_dir().join("debug")
    })
}

/// A fresh folder with the libraries under the names the engine expects.
fn libraries(test: &str) -> PathBuf {
    let built = built();
    let dir = target_dir().join("run").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (from, to) in [
        ("libgame_module_v1.so", "v1.so"),
        ("libgame_module_v2.so", "v2.so"),
        ("libown_runtime.so", "own.so"),
        ("libmismatch.so", "mismatch.so"),
        ("libplain_library.so", "plain.so"),
        ("libfailing_module.so", "failing.so"),
        ("libreflecting_module.so", "reflecting.so"),
    ] {
        std::fs::copy(built.join(from), dir.join(to)).unwrap();
    }
    dir
}

/// The engine command for `scenario`, with the shared libraries (std's and the runtime's) on the
/// library path, as `cargo run` sets it.
fn engine(scenario: &str, dir: &Path, under: Option<&[&str]>) -> Command {
    let sysroot_libs = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "target-libdir"])
        .output()
        .expect("rustc --print target-libdir");
    let sysroot_libs = String::from_utf8(sysroot_libs.stdout).unwrap();
    let library_path = format!("{}:{}", sysroot_libs.trim(), built().display());
    let host = built().join("module_host");
    let mut command = match under {
        Some(wrapper) => {
            let mut command = Command::new(wrapper[0]);
            command.args(&wrapper[1..]).arg(host);
            command
        }
        None => Command::new(host),
    };
    command
        .arg(scenario)
        .arg(dir)
        .env("LD_LIBRARY_PATH", library_path)
        .env("RUST_BACKTRACE", "0")
        // The module copies go to a folder of this run.
        .env("TMPDIR", dir);
    command
}

fn run(mut command: Command) -> (String, String) {
    let output = command.output().expect("could not run the module host");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "the module host failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// The trace of the load, frame, hot reload, frame, unload, frame cycle.
const CYCLE: &str = "\
v1: start-up
v1: tick subscription is DelegateHandle(5)
engine: on_module_loaded game_module_v1
engine: loaded module#1; engine handles around the load: 4 and 13
engine: 8 subscriptions attributed to the module
engine: subscribers: on_tick 3, on_hit 2, input 1, on_settings_saved 1, on_world_travelled 1, on_pre_engine_shutdown 1
engine: frame 1
engine: tick 1
v1: tick 1
v1: static tick 1
v1: hit for 1.5
v1: member hit 1.5
v1: input handler got AppTick 1
v1: settings saved: Engine.AudioSettings
v1: travelled 1 (true)
v1: queued from a worker thread, ran on the game thread
engine: queue ran 1 task(s)
engine: source changed: true
v1: shut-down
v1: capture of the tick lambda dropped
engine: on_module_unloaded
v2: start-up
v2: tick subscription is DelegateHandle(14)
engine: on_module_loaded game_module_v2
engine: reloaded as module#2; v1 still mapped: false
engine: subscribers: on_tick 3, on_hit 2, input 1, on_settings_saved 1, on_world_travelled 1, on_pre_engine_shutdown 1
engine: frame 2
engine: tick 2
v2: tick 2
v2: static tick 2
v2: hit for 2.5
v2: member hit 2.5
v2: input handler got AppTick 2
v2: settings saved: Engine.AudioSettings
v2: travelled 1 (true)
v2: queued from a worker thread, ran on the game thread
engine: queue ran 1 task(s)
v2: shut-down
v2: capture of the tick lambda dropped
engine: on_module_unloaded
engine: unloaded game_module_v2; v2 still mapped: false
engine: subscribers: on_tick 1, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0
engine: frame 3
engine: tick 3
engine: queue ran 0 task(s)
engine: unload again: no game module is loaded as module#2: it was unloaded already (or reloaded, which gives a new id)
engine: done
";

fn cycle_trace(test: &str) -> String {
    let dir = libraries(test);
    run(engine("cycle", &dir, None)).0
}

fn lines_between<'a>(trace: &'a str, from: &str, to: &str) -> Vec<&'a str> {
    trace
        .lines()
        .skip_while(|line| *line != from)
        .take_while(|line| *line != to)
        .collect()
}

#[test]
fn mb1_engine_and_module_share_one_runtime() {
    let trace = cycle_trace("mb1");
    // One handle counter: the module's first handle lies between the engine's handles.
    assert!(
        trace.contains("engine handles around the load: 4 and 13"),
        "{trace}"
    );
    assert!(
        trace.contains("v1: tick subscription is DelegateHandle(5)"),
        "{trace}"
    );
    // One game thread, one queue: a task the module enqueued from a worker thread runs at the
    // engine's `process_queue`; the module's `CoreDelegates::get` is the engine's.
    assert!(
        trace.contains(
            "v1: queued from a worker thread, ran on the game thread\nengine: queue ran 1 task(s)"
        ),
        "{trace}"
    );
    assert!(
        trace.contains("v1: settings saved: Engine.AudioSettings"),
        "{trace}"
    );
    assert_eq!(trace, CYCLE);
}

#[test]
fn mb2_module_with_its_own_runtime_is_named_at_first_touch_and_refused() {
    let dir = libraries("mb2");
    let (touch, _) = run(engine("own-copy-touch", &dir, None));
    assert!(
        touch.contains("own copy: start-up ran to the end: false"),
        "{touch}"
    );
    let message = touch
        .lines()
        .find(|line| line.starts_with("own copy: lumina:"))
        .unwrap_or_else(|| panic!("no MB2 message:\n{touch}"));
    assert!(
        message.contains("`CoreDelegates::get` (engine-wide state) touched from a game module that carries its own copy of the lumina runtime"),
        "{message}"
    );
    assert!(
        message.contains("enable the `dynamic_linking` feature of `lumina`"),
        "{message}"
    );
    assert!(
        message.contains("RUSTFLAGS=\"-C prefer-dynamic\""),
        "{message}"
    );
    assert!(
        !message.contains("no game thread is designated"),
        "{message}"
    );

    let (errors, _) = run(engine("errors", &dir, None));
    assert!(
        errors.contains(&format!(
            "own: SeparateRuntime: game module `own_runtime` ({}) carries its own copy of the \
             lumina runtime",
            dir.join("own.so").display()
        )),
        "{errors}"
    );
}

#[test]
fn mb3_load_checks_the_build_and_refuses_bad_libraries() {
    let dir = libraries("mb3");
    let (errors, _) = run(engine("errors", &dir, None));
    let d = dir.display();
    for expected in [
        format!("missing: NotFound: no game module at {d}/missing.so: no such file"),
        format!("text: NotALibrary: {d}/not_a_library.txt is not a loadable library ("),
        format!(
            "plain: MissingEntryPoints: {d}/plain.so is a library but not a game module: it \
             exports no `lumina_game_module_v1`; declare its entry points with \
             `lumina::game_module!(start_up, shut_down)`"
        ),
        format!(
            "mismatch: BuildMismatch: game module `mismatch` ({d}/mismatch.so) was built against \
             lumina 0.0.0-other built by rustc"
        ),
        "v1 again: AlreadyLoaded: a game module named `game_module_v1` is loaded already"
            .to_owned(),
        "failing: StartUpFailed: the start-up of game module `failing_module` panicked: the level \
         file is missing (the module was unloaded again)"
            .to_owned(),
        "failing: on_tick subscribers left: 0, loaded modules: 0".to_owned(),
    ] {
        assert!(
            errors.contains(&expected),
            "missing {expected:?} in:\n{errors}"
        );
    }
    assert!(!errors.contains("must never run"), "{errors}");
    // Start-up runs, then on_module_loaded fires.
    let trace = cycle_trace("mb3");
    assert!(trace.starts_with(
        "v1: start-up\nv1: tick subscription is DelegateHandle(5)\nengine: on_module_loaded game_module_v1\n"
    ), "{trace}");
}

#[test]
fn mb4_unload_removes_every_subscription_before_unmapping() {
    let trace = cycle_trace("mb4");
    // Shut-down, then every callable dropped (the capture's Drop runs while mapped), then
    // on_module_unloaded, then the library is gone from the address space.
    let unload = lines_between(&trace, "v2: shut-down", "engine: frame 3");
    assert_eq!(
        unload,
        [
            "v2: shut-down",
            "v2: capture of the tick lambda dropped",
            "engine: on_module_unloaded",
            "engine: unloaded game_module_v2; v2 still mapped: false",
            "engine: subscribers: on_tick 1, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0",
        ]
    );
    let after = lines_between(&trace, "engine: frame 3", "engine: done");
    assert!(
        after.iter().all(|line| line.starts_with("engine:")),
        "{after:?}"
    );

    // During a broadcast: refused, and works after it; unloading twice: an error.
    let dir = libraries("mb4-errors");
    let (errors, _) = run(engine("errors", &dir, None));
    assert!(errors.contains("busy: game module `game_module_v1` cannot be unloaded now: 2 delegate(s) it subscribed to are broadcasting; retry after it returns"), "{errors}");
    assert!(!errors.contains("unloaded during a broadcast"), "{errors}");
    // Reflected types cannot be unregistered: that library stays mapped, and the registry works.
    assert!(
        errors.contains(
            "reflecting: start-up; the engine's registry has ModuleScore: true\nreflecting: loaded \
             module#3\nreflecting: unloaded; still mapped: true; registry still has ModuleScore: \
             true\n"
        ),
        "{errors}"
    );
    // The task v1 queued at start-up was dropped unrun at unload: its code is gone.
    assert!(
        errors.contains("registry still has ModuleScore: true\nengine: queue ran 0 task(s)"),
        "{errors}"
    );
    assert!(
        errors
            .contains("unload: game_module_v1\nunload again: no game module is loaded as module#2"),
        "{errors}"
    );
    assert!(errors.contains("engine: subscribers: on_tick 0, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0"), "{errors}");
}

#[test]
fn mb4_load_unload_cycle_runs_clean_under_memcheck() {
    let found = Command::new("sh")
        .args(["-c", "command -v valgrind"])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "valgrind is not installed, so the memcheck run of MB4 cannot run: \
         `apt-get install -y valgrind` (.ci/run does this)"
    );
    let dir = libraries("mb4-memcheck");
    let (trace, report) = run(engine(
        "cycle",
        &dir,
        Some(&[
            "valgrind",
            "--tool=memcheck",
            "--error-exitcode=9",
            "--leak-check=no",
        ]),
    ));
    assert_eq!(trace, CYCLE);
    assert!(
        report.contains("ERROR SUMMARY: 0 errors from 0 contexts"),
        "memcheck reported errors:\n{report}"
    );
}

#[test]
fn mb5_hot_reload_runs_only_the_new_version() {
    let trace = cycle_trace("mb5");
    assert!(trace.contains("engine: source changed: true"), "{trace}");
    assert!(
        trace.contains("engine: reloaded as module#2; v1 still mapped: false"),
        "{trace}"
    );
    let frame_2 = lines_between(&trace, "engine: frame 2", "engine: queue ran 1 task(s)");
    assert_eq!(frame_2.len(), 10, "{frame_2:?}");
    assert!(
        frame_2.iter().all(|line| !line.starts_with("v1:")),
        "{frame_2:?}"
    );
    assert_eq!(
        frame_2
            .iter()
            .filter(|line| line.starts_with("v2:"))
            .count(),
        8
    );
}
