//! Game modules (rules MB1-MB6, R5): builds the fixture engine and game modules of
//! `tests/modules/` with the shared runtime (the guide's commands), runs the engine through its
//! scenarios and checks the whole trace. The load/unload cycle and the re-entry scenario also run
//! under valgrind's memcheck, which must report no error (no read of unmapped or freed memory);
//! valgrind is required, never skipped (`.ci/run` installs it).

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

/// `cargo build` of the fixtures with `RUSTFLAGS="-C prefer-dynamic"`, as the guide says. They
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
        ("libreentrant_module.so", "reentrant.so"),
        ("libbus_module.so", "bus.so"),
        ("libfindings_module.so", "findings.so"),
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
engine: Module.Loot.Found before the load: not registered
v1: start-up
v1: tick subscription is DelegateHandle(5)
engine: on_module_loaded game_module_v1
engine: loaded module#1; engine handles around the load: 4 and 13
engine: 8 subscriptions attributed to the module
engine: Module.Loot.Found after the load: carries u32
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
engine: reloaded as module#2; v1 still mapped: true
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
engine: unloaded game_module_v2; v2 still mapped: true
engine: subscribers: on_tick 1, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0
engine: frame 3
engine: tick 3
engine: queue ran 0 task(s)
engine: Module.Loot.Found after the unload: carries u32
engine: unload again: no game module is loaded as module#2: it was unloaded already (or reloaded, which gives a new id)
engine: kept mapped: 2 version(s), each of them bytes: true, still referenced: 0
engine: unmap module#1: Ok(()); still mapped: false
engine: unmap module#2: Ok(()); still mapped: false
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
    // One tag registry: the module's start-up registered its tag set, which the engine then
    // finds by name (GB1), and keeps after the unload.
    assert!(
        trace.contains("engine: Module.Loot.Found after the load: carries u32"),
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
        "engine: Module.Loot.Found before the load: not registered\nv1: start-up\nv1: tick subscription is DelegateHandle(5)\nengine: on_module_loaded game_module_v1\n"
    ), "{trace}");
}

#[test]
fn mb4_unload_removes_every_subscription_before_unmapping() {
    let trace = cycle_trace("mb4");
    // Shut-down, then every callable dropped, then on_module_unloaded; the library stays
    // mapped (MB6) until the engine unmaps it explicitly.
    let unload = lines_between(&trace, "v2: shut-down", "engine: frame 3");
    assert_eq!(
        unload,
        [
            "v2: shut-down",
            "v2: capture of the tick lambda dropped",
            "engine: on_module_unloaded",
            "engine: unloaded game_module_v2; v2 still mapped: true",
            "engine: subscribers: on_tick 1, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0",
        ]
    );
    let after = lines_between(&trace, "engine: frame 3", "engine: done");
    assert!(
        after.iter().all(|line| line.starts_with("engine:")),
        "{after:?}"
    );

    // During a broadcast, from the engine's subscriber that runs first: allowed (MB6); the
    // module's subscribers not reached yet do not run (M3), its capture is dropped when the
    // broadcast ends (M4); unloading twice: an error.
    let dir = libraries("mb4-errors");
    let (errors, _) = run(engine("errors", &dir, None));
    assert!(
        errors.contains(
            "v1: shut-down\nunload during a broadcast: game_module_v1\nv1: capture of the tick \
             lambda dropped\nunload again: no game module is loaded as module#2"
        ),
        "{errors}"
    );
    assert!(!errors.contains("v1: tick 7"), "{errors}");
    // Reflected types cannot be unregistered: the explicit unmap is refused, and the registry
    // works.
    assert!(
        errors.contains(
            "reflecting: start-up; the engine's registry has ModuleScore: true\nreflecting: loaded \
             module#3\nreflecting: unloaded; still mapped: true; registry still has ModuleScore: \
             true\nreflecting: unmap: Err(the library of game module `reflecting_module` cannot \
             be unmapped: it registered reflected types"
        ),
        "{errors}"
    );
    // The task v1 queued at start-up was dropped unrun at unload: its code is gone.
    assert!(
        errors.contains("still mapped: true\nengine: queue ran 0 task(s)"),
        "{errors}"
    );
    assert!(errors.contains("engine: subscribers: on_tick 0, on_hit 0, input 0, on_settings_saved 0, on_world_travelled 0, on_pre_engine_shutdown 0"), "{errors}");
}

/// The engine under valgrind's memcheck: an error fails the run.
const MEMCHECK: &[&str] = &[
    "valgrind",
    "--tool=memcheck",
    "--error-exitcode=9",
    "--leak-check=no",
];

/// Fails with memcheck's report unless it found no error.
fn assert_memcheck_clean(report: &str) {
    assert!(
        report.contains("ERROR SUMMARY: 0 errors from 0 contexts"),
        "memcheck reported errors:\n{report}"
    );
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
    let (trace, report) = run(engine("cycle", &dir, Some(MEMCHECK)));
    assert_eq!(trace, CYCLE);
    assert_memcheck_clean(&report);
}

#[test]
fn mb5_hot_reload_runs_only_the_new_version() {
    let trace = cycle_trace("mb5");
    assert!(trace.contains("engine: source changed: true"), "{trace}");
    assert!(
        trace.contains("engine: reloaded as module#2; v1 still mapped: true"),
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

// ---- R5: code stays mapped while it can run (the `reentrant_module` fixture) ----

/// Every point where the module's code runs, with both operations: the scenario of R5/R6.
const EVERY_POINT: &[&str] = &[
    "start-up-unload",
    "start-up-reload",
    "shut-down-unload",
    "shut-down-reload",
    "subscriber-unload",
    "subscriber-reload",
    "task-unload",
    "task-reload",
    "panicking-task-unload",
    "panicking-task-reload",
    "drop-unload",
    "drop-reload",
    "queued-drop-unload",
    "queued-drop-reload",
    "removed-drop-unload",
    "removed-drop-reload",
    "queued-behind",
    "coroutine-unload",
    "coroutine-reload",
    "coroutine-drop-unload",
    "engine-callback",
];

fn reentry(test: &str, plans: &[&str], under: Option<&[&str]>) -> (String, String) {
    let dir = libraries(test);
    let mut command = engine("reentry", &dir, under);
    command.args(plans);
    run(command)
}

/// The lines of one plan's part of the trace.
fn plan_lines<'a>(trace: &'a str, plan: &str) -> Vec<&'a str> {
    let start = format!("engine: plan {plan}");
    trace
        .lines()
        .skip_while(|line| *line != start)
        .skip(1)
        .take_while(|line| !line.starts_with("engine: plan ") && *line != "engine: done")
        .collect()
}

/// After each plan nothing of the module is left: not loaded, nothing refers to it, no
/// subscription (its copies stay mapped, MB6).
fn assert_gone(trace: &str, plan: &str) {
    assert!(
        trace.contains(&format!(
            "engine: after {plan}: loaded 0, still referenced 0, on_tick 0, copies mapped"
        )),
        "{plan}:\n{trace}"
    );
}

const BEING_UNLOADED: &str = "cannot be unloaded now: it is being unloaded already (this call \
                              came from code its unload runs: its shut-down, or the `Drop` of one \
                              of its callables or captures)";

/// In `plan` (`<point>-<operation>`), the module's shut-down ran once, the `operation` its code
/// re-entered from `point` during the unload was refused as "being unloaded already" and
/// returned into mapped code, then the outer unload finished, leaving nothing.
fn assert_refused_while_leaving(trace: &str, plan: &str) {
    let lines = plan_lines(trace, plan);
    let shut_downs = lines
        .iter()
        .filter(|l| l.starts_with("module: shut-down"))
        .count();
    assert_eq!(shut_downs, 1, "{plan}: {lines:#?}");
    let (point, operation) = plan.rsplit_once('-').unwrap();
    let refused = lines
        .iter()
        .position(|l| {
            l.starts_with(&format!("module: {operation} of module#"))
                && l.contains(&format!(
                    "from its {point}: game module `reentrant_module` {BEING_UNLOADED}"
                ))
        })
        .unwrap_or_else(|| panic!("{plan}: no refusal in {lines:#?}"));
    assert_eq!(
        lines[refused + 1],
        format!("module: back in its {point} after the {operation}")
    );
    assert!(
        lines[refused + 2..].iter().any(|l| l
            .starts_with("engine: unload reentrant_module (module#")
            && l.contains("Ok(")),
        "{plan}: {lines:#?}"
    );
    assert_gone(trace, plan);
}

#[test]
fn r5_u1_unload_reentered_from_a_drop_its_unload_runs_is_refused() {
    let plans = ["drop-unload", "drop-reload", "queued-drop-unload"];
    let (trace, _) = reentry("r5-u1", &plans, None);
    for plan in plans {
        assert_refused_while_leaving(&trace, plan);
    }
}

#[test]
fn r5_mb4_unload_from_its_shut_down_or_start_up_is_refused_and_says_why() {
    let plans = [
        "shut-down-unload",
        "shut-down-reload",
        "start-up-unload",
        "start-up-reload",
    ];
    let (trace, _) = reentry("r5-entry", &plans, None);
    for plan in &plans[..2] {
        assert_refused_while_leaving(&trace, plan);
    }
    for plan in &plans[2..] {
        let lines = plan_lines(&trace, plan);
        assert!(
            lines.iter().any(|l| l.contains(
                "from its start-up: game module `reentrant_module` cannot be unloaded now: this \
                 call came from its own start-up, which must return first; queue the unload with \
                 `main_thread::enqueue` to run it at the next frame"
            )),
            "{plan}: {lines:#?}"
        );
        // The load itself succeeds; the engine's unload later works.
        assert!(
            lines.iter().any(|l| l.starts_with("engine: load: Ok(")),
            "{lines:#?}"
        );
        assert_gone(&trace, plan);
    }
}

/// In `plan` (`<point>-<operation>`), the module's own code at `point` unloaded (or reloaded)
/// it, and the unload ran at once, inside that code (MB6: the code returns into its library,
/// which stays mapped): its shut-down first, then `Ok`, then the module's code goes on.
fn assert_ran_at_once(trace: &str, plan: &str) -> Vec<String> {
    let lines = plan_lines(trace, plan);
    let (point, operation) = plan.rsplit_once('-').unwrap();
    let asked = lines
        .iter()
        .position(|l| {
            l.starts_with(&format!("module: {operation} of module#"))
                && l.contains(&format!("from its {point}: Ok("))
        })
        .unwrap_or_else(|| panic!("{plan}: not run at once: {lines:#?}"));
    let shut_down = lines
        .iter()
        .position(|l| l.starts_with("module: shut-down of module#"))
        .unwrap();
    assert!(shut_down < asked, "{plan}: {lines:#?}");
    assert_eq!(
        lines[asked + 1],
        format!("module: back in its {point} after the {operation}")
    );
    assert_gone(trace, plan);
    lines.iter().map(|l| (*l).to_owned()).collect()
}

/// MB6: unloading (or reloading) a module from its own code needs no refusal and no deferral
/// any more: from its queued task (the module's other task in the same drain is dropped unrun),
/// from a task that panics after asking, from its subscriber during a broadcast, and from the
/// `Drop` of its capture that the engine's `clear` runs. Each returns `Ok` inside the module's
/// code, and nothing of the module is left afterwards.
#[test]
fn mb6_unload_from_its_own_code_runs_at_once() {
    let plans = [
        "task-unload",
        "task-reload",
        "queued-behind",
        "panicking-task-unload",
        "panicking-task-reload",
        "subscriber-unload",
        "subscriber-reload",
        "removed-drop-unload",
        "removed-drop-reload",
    ];
    let (trace, _) = reentry("mb6-own-code", &plans, None);
    for plan in plans.iter().filter(|plan| **plan != "queued-behind") {
        let lines = assert_ran_at_once(&trace, plan);
        if plan.ends_with("-reload") {
            // The new version started inside the call, and the engine's unload ended it.
            let start_ups = lines
                .iter()
                .filter(|l| l.starts_with("module: start-up of module#"))
                .count();
            assert_eq!(start_ups, 2, "{plan}: {lines:#?}");
        }
        if plan.starts_with("task-") {
            // The module's second task, queued in the same drain, was dropped unrun.
            assert!(
                lines.contains(&"engine: queue ran 1 task(s)".to_owned()),
                "{lines:#?}"
            );
        }
        if plan.starts_with("panicking-task") {
            let panicked = "engine: the drain panicked: the module's task panics after asking";
            assert!(lines.contains(&panicked.to_owned()), "{plan}: {lines:#?}");
        }
    }
    assert_gone(&trace, "queued-behind");
    assert!(!trace.contains("must not"), "{trace}");
}

/// MB4 and MB6 for coroutine tasks (X5), with a real module: its task, spawned on the game
/// thread's executor at start-up, awaits the engine's tick delegate's next broadcast.
/// - Woken by a tick, the task unloads (or reloads) its own module from inside its poll: the
///   unload runs at once (its code returns into its library, which stays mapped), and the task
///   itself, being polled, is dropped as soon as its poll returns: a later tick wakes nothing.
/// - An unload asked from the `Drop` of a capture of the task, which the unload itself runs, is
///   refused as "being unloaded already".
#[test]
fn mb4_mb6_a_modules_coroutine_task_that_unloads_its_module_is_dropped_after_its_poll() {
    let plans = [
        "coroutine-unload",
        "coroutine-reload",
        "coroutine-drop-unload",
    ];
    let (trace, _) = reentry("mb4-coroutine", &plans, None);
    for (plan, operation) in [
        ("coroutine-unload", "unload"),
        ("coroutine-reload", "reload"),
    ] {
        let lines = plan_lines(&trace, plan);
        let at = |wanted: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(wanted))
                .unwrap_or_else(|| panic!("{plan}: no {wanted:?} in {lines:#?}"))
        };
        let woke = at("module: coroutine woke at tick ");
        let shut_down = at("module: shut-down of module#");
        let asked = at(&format!("module: {operation} of module#"));
        assert!(
            lines[asked].contains("from its coroutine: Ok("),
            "{plan}: {lines:#?}"
        );
        assert_eq!(
            lines[asked + 1],
            format!("module: back in its coroutine after the {operation}")
        );
        assert_eq!(lines[asked + 2], "module: coroutine capture dropped");
        assert!(woke < shut_down && shut_down < asked, "{plan}: {lines:#?}");
        assert_gone(&trace, plan);
    }
    assert_refused_while_leaving(&trace, "coroutine-drop-unload");
    let lines = plan_lines(&trace, "coroutine-drop-unload");
    assert!(
        lines.contains(&"module: coroutine waits for a tick"),
        "{lines:#?}"
    );
    assert!(!trace.contains("must not"), "{trace}");
}

/// MB6 and B5: a subscription the module's start-up made with the engine's callable (code of
/// the engine's API library, as shared generic code is) is the module's, because the module's
/// code was running: its unload removes it, though no address of its callable lies in the
/// module. A `Subscription` the engine kept from before the unload still reads its bind site,
/// in the module's library, which stays mapped.
#[test]
fn r5_d4_mb6_an_engine_callable_the_module_subscribed_goes_with_it_and_its_bind_site_stays_readable()
 {
    let (trace, _) = reentry("r5-d4", &["engine-callback"], None);
    let lines = plan_lines(&trace, "engine-callback");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("engine: unload: Ok(") && l.ends_with("copies mapped 1")),
        "{lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("engine_api: engine callback")),
        "the module's subscription of the engine's callable went with it: {lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("engine: listed after the unload: ")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("engine: kept from before the unload: reentrant_module/src/lib.rs:")),
        "{lines:#?}"
    );
    assert!(
        lines.contains(
            &"engine: debug after the unload: MulticastDelegate { len: 0, subscriptions: [] }"
        ),
        "{lines:#?}"
    );
}

/// R6 for modules: unload and reload re-entered from every point where the module's code runs,
/// in one process, under valgrind's memcheck: no read of unmapped or freed memory, nothing of
/// the module left after each plan.
#[test]
fn r5_mb4_reentry_from_every_point_runs_clean_under_memcheck() {
    let (trace, report) = reentry(
        "r5-memcheck",
        EVERY_POINT,
        Some(&[
            "valgrind",
            "--tool=memcheck",
            "--error-exitcode=9",
            "--leak-check=no",
        ]),
    );
    for plan in EVERY_POINT
        .iter()
        .filter(|plan| **plan != "engine-callback")
    {
        assert_gone(&trace, plan);
    }
    assert!(trace.ends_with("engine: done\n"), "{trace}");
    assert_memcheck_clean(&report);
}

/// The engine's scenario of a module on its message bus (`module_host bus`).
fn bus_trace(test: &str, under: Option<&[&str]>) -> String {
    let dir = libraries(test);
    run(engine("bus", &dir, under)).0
}

#[test]
fn mb4_r5_gb7_a_modules_bus_listeners_and_its_retained_and_posted_payloads_go_before_the_unmap() {
    let trace = bus_trace("bus", None);
    let lines: Vec<&str> = trace.lines().collect();
    // Twice: the second load is a reload of the same file, which works the same way.
    let round = [
        // Its own send reaches its partial listener; its posts wait for a delivery point.
        "bus_module: heard BusModule.Loot",
        "bus_module: started",
        // Its three listeners and the engine's; one of its posts is queued (the one from its
        // thread waits in the inbox until a delivery point).
        "engine: loaded; listeners 4, posted 1",
    ];
    let unload = [
        "bus_module: shut-down",
        "engine_api: module payload Loot 1 dropped",
        "engine_api: module payload Note 2 dropped",
        "engine_api: module payload Note 3 dropped",
        "engine: unloaded bus_module; still mapped: true; module payloads dropped by the unload: 3",
        "engine: listeners 1, posted 0",
        "engine: delivered 0",
    ];
    let mut expected: Vec<String> = Vec::new();
    for frame in 1..=2 {
        expected.extend(round.iter().map(|line| (*line).to_owned()));
        expected.push(format!("engine: squad 10 heard frame {frame} for Some(5)"));
        expected.push(format!("bus_module: heard frame {frame}"));
        expected.push(format!("bus_module: heard frame {frame} once"));
        expected.extend(unload.iter().map(|line| (*line).to_owned()));
    }
    expected.push("engine: done".to_owned());
    assert_eq!(lines, expected, "{trace}");
    // Sends after the unload reach nothing of the module (not even its parent relation, so
    // squad 10 is not reached); its posts were never delivered.
    assert!(!trace.contains("heard frame 11"), "{trace}");
    assert!(!trace.contains("heard BusModule.Note"), "{trace}");
}

#[test]
fn mb4_r5_a_modules_bus_payloads_dropped_at_unload_run_clean_under_memcheck() {
    let dir = libraries("bus-memcheck");
    let (trace, report) = run(engine("bus", &dir, Some(MEMCHECK)));
    assert_eq!(trace, bus_trace("bus-plain", None));
    assert_memcheck_clean(&report);
}

/// R5 at the game thread's exit: a module still loaded when its game thread exits stays mapped
/// while the thread's other thread-locals drop what it left (here a coroutine task it spawned,
/// in the tasks' thread-local, which the engine made first, so it is destroyed after the module
/// list). Without it, the module list's destructor unmapped the library first and the task's
/// `Drop` ran unmapped code: the engine crashed.
#[test]
fn r5_a_module_loaded_when_its_game_thread_exits_stays_mapped_for_what_it_left() {
    let dir = libraries("r5-exit-loaded");
    let (trace, _) = run(engine("exit-loaded", &dir, None));
    let lines: Vec<&str> = trace.lines().collect();
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(wanted))
            .unwrap_or_else(|| panic!("no {wanted:?} in {lines:#?}"))
    };
    let exits = at("engine: the game thread exits with the module loaded");
    let dropped = at("module: coroutine-drop dropped");
    let exited = at("engine: the game thread exited");
    assert!(exits < dropped && dropped < exited, "{lines:#?}");
    assert_eq!(lines[dropped + 1], "module: at its coroutine-drop, stays");
}

/// R2: an engine kept in a thread local of its game thread unloads its modules when it is
/// dropped, at the thread's exit, after the module list and the record of running module code
/// (first used later) were destroyed. It first drains the queue, which runs a task the module
/// queued (its library stays mapped). The module functions answer as for a module that is not
/// loaded (every module left then stays mapped), and a load says the thread is exiting.
/// Without it, the list and the record were reached with `with`, which panicked inside a
/// thread local's destructor: the process aborted.
#[test]
fn r2_an_engine_in_a_thread_local_that_unloads_at_thread_exit_does_not_abort() {
    let dir = libraries("r2-exit-unloads");
    let (trace, _) = run(engine("exit-unloads", &dir, None));
    let lines: Vec<&str> = trace.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with("engine: the game thread exits"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let not_loaded = "Err(no game module is loaded as module#1: it was unloaded already (or \
                      reloaded, which gives a new id))";
    let unload = format!("engine: unload at exit: {not_loaded}");
    let reload = format!("engine: reload at exit: {not_loaded}");
    let load = format!(
        "engine: load at exit: Err(cannot load the game module at {}: the game thread is \
         exiting (its module list is gone; load modules before the thread ends))",
        dir.join("v2.so").display()
    );
    assert_eq!(
        lines[from + 1..],
        [
            "engine: dropped at thread exit; modules listed: 0",
            "v1: queued from a worker thread, ran on the game thread",
            "engine: queue at exit ran 1 task(s)",
            &*unload,
            &*reload,
            "engine: mapped path at exit: None, source changed: false",
            &*load,
            "engine: the game thread exited",
        ],
        "{trace}"
    );
}

/// MB4, R5: a `Drop` that the unload runs late (a queued task's capture, dropped unrun after
/// the module's subscriptions were removed; a coroutine task's, dropped after that) subscribes
/// the module's code again: the unload removes that too before it unmaps. Without it the late
/// subscription stayed, and the engine's next tick called the unmapped library: a crash.
#[test]
fn mb4_r5_a_subscription_made_by_a_drop_the_unload_runs_late_goes_before_the_unmap() {
    let plans = ["queued-drop-subscribe", "coroutine-drop-subscribe"];
    let (trace, _) = reentry("mb4-late-subscribe", &plans, None);
    for plan in plans {
        let lines = plan_lines(&trace, plan);
        let (point, _) = plan.rsplit_once('-').unwrap();
        assert!(
            lines.contains(&format!("module: subscribed from its {point}").as_str()),
            "{plan}: {lines:#?}"
        );
        assert_gone(&trace, plan);
    }
    assert!(!trace.contains("must not"), "{trace}");
}

/// R5 for a value a module's code leaves with the main-thread queue outside any invocation list:
/// a waker of its own type, registered by a frame-waiting future (`coroutine::frames(1)`) that
/// it polled with its own executor from its shut-down and then dropped. The waker stays with the
/// frame waiters; the next drain wakes it. Without the unload dropping it (while the library is
/// still mapped), that drain called the waker's `wake` in the unmapped library: the engine
/// crashed (SIGSEGV).
#[test]
fn r5_mb4_a_frame_waker_a_module_left_is_dropped_before_the_unmap() {
    let (trace, _) = reentry("r5-frame-waker", &["frame-waker"], None);
    let lines = plan_lines(&trace, "frame-waker");
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(wanted))
            .unwrap_or_else(|| panic!("no {wanted:?} in {lines:#?}"))
    };
    let left = at("module: left a frame waker");
    let dropped = at("module: frame waker dropped");
    let unloaded = at("engine: unload reentrant_module (module#");
    assert!(lines[unloaded].contains("Ok("), "{lines:#?}");
    assert!(left < dropped && dropped < unloaded, "{lines:#?}");
    assert!(!trace.contains("must not"), "{trace}");
    assert_gone(&trace, "frame-waker");
}

/// R5 for a game module's viewport in the engine's `InputViewportRegistry`, which is no
/// invocation list: the registry holds the viewport's handler weakly, through a vtable in the
/// module's library. The module's handler is dropped by its unload (a tick lambda's capture owns
/// it), and the registry's weak reference outlived it; the engine's next viewport pruned it, and
/// dropping that last weak reference reads the handler's layout from its vtable, unmapped by
/// then: the engine crashed (SIGSEGV). The unload removes the module's viewports while the
/// library is mapped.
#[test]
fn r5_mb4_a_modules_viewport_is_removed_before_the_unmap() {
    let (trace, _) = reentry("r5-viewport", &["viewport"], None);
    let lines = plan_lines(&trace, "viewport");
    assert!(lines.contains(&"module: added a viewport"), "{lines:#?}");
    assert!(lines.contains(&"engine: viewports 1"), "{lines:#?}");
    assert!(!trace.contains("must not"), "{trace}");
    assert_gone(&trace, "viewport");
}

/// R5 for a `QueuedSender` a game module made, whose clone outlives the module (kept by another
/// thread, or leaked): the game thread's registry of senders is no invocation list, and its entry
/// holds the module's accessor, its captures and the module's vtables. The module's object went
/// with its unload; the engine's next look at the registry pruned the dead entry and ran its drop
/// in the unmapped library: the engine crashed (SIGSEGV). The unload drops the entry while the
/// library is mapped (the accessor's capture is dropped then), and a send through the leftover
/// clone finds no entry.
#[test]
fn r5_mb4_a_queued_senders_entry_a_module_made_is_dropped_before_the_unmap() {
    let (trace, _) = reentry("r5-queued-sender", &["queued-sender"], None);
    let lines = plan_lines(&trace, "queued-sender");
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(wanted))
            .unwrap_or_else(|| panic!("no {wanted:?} in {lines:#?}"))
    };
    let made = at("module: made a queued sender");
    let dropped = at("module: queued sender's accessor capture dropped");
    let unloaded = at("engine: unload reentrant_module (module#");
    assert!(lines[unloaded].contains("Ok("), "{lines:#?}");
    assert!(made < dropped && dropped < unloaded, "{lines:#?}");
    assert!(lines.contains(&"engine: queued targets 0"), "{lines:#?}");
    assert_gone(&trace, "queued-sender");
}

/// R5 and MB4 for a closure of a game module bound into a single-cast `Delegate` the engine
/// stores (outside any invocation list): before, the unload left the binding alone, and the
/// engine's next `execute_if_bound` called the closure in the unmapped library (SIGSEGV), as would
/// the delegate's drop (the closure's `Drop`). The unload now drops the module's callable while
/// the library is mapped (its capture's `Drop`, module code, runs before the unload returns), and
/// the engine's delegate is unbound afterwards: `is_bound` is false, `execute_if_bound` returns
/// `None`, `execute` panics with the unbound message, and dropping it runs nothing of the module.
/// While the engine holds the callable for a call, the unload is refused (`Busy`).
#[test]
fn r5_mb4_a_modules_closure_in_an_engine_single_cast_delegate_is_dropped_before_the_unmap() {
    let (trace, _) = reentry("r5-single-cast", &["single-cast"], None);
    let lines = plan_lines(&trace, "single-cast");
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(wanted))
            .unwrap_or_else(|| panic!("no {wanted:?} in {lines:#?}"))
    };
    let bound = at("module: bound the score query: 41 -> Some(42)");
    // Held by the engine for a call (`Delegate::callable`): the unload is refused meanwhile.
    let held = at("engine: unload reentrant_module (module#");
    assert!(
        lines[held].contains(
            "while the score query is held: Err(game module `reentrant_module` cannot be \
             unloaded now"
        ),
        "{lines:#?}"
    );
    let dropped = at("module: single-cast binding's capture dropped");
    let unloaded = lines
        .iter()
        .rposition(|l| l.starts_with("engine: unload reentrant_module (module#"))
        .unwrap();
    assert!(lines[unloaded].contains("Ok("), "{lines:#?}");
    assert!(
        bound < held && held < dropped && dropped < unloaded,
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"engine: score query bound false, 41 -> None"),
        "{lines:#?}"
    );
    let executed = at("engine: score query execute: ");
    assert!(
        lines[executed].contains("::execute` called with nothing bound"),
        "{lines:#?}"
    );
    assert!(lines.contains(&"engine: score query dropped"), "{lines:#?}");
    assert_gone(&trace, "single-cast");
}

/// The trace of `module_host findings` (issue 30's five findings, MB6).
const FINDINGS: &str = "\
engine: boxed task ran
engine: boxed coroutine polled
engine: queue ran 2 task(s)
engine: boxed coroutine Finished
engine: posted call ran
engine: delivered 1
engine: helper mapped before the load: false
module_helper: settings saved: Game.FindingsSettings
findings: ready, round 1
findings: started
engine: loaded: on_tick 2, on_settings_saved 2, queued 3, coroutines 1, posted 1, helper mapped true
engine: 4 subscriptions attributed to the module
findings: shut-down
engine: unloaded findings_module
engine: unloaded: on_tick 1, on_settings_saved 1, queued 0, coroutines 0, posted 0, helper mapped true
engine: boxed tick 1
engine: queue ran 0 task(s)
engine: delivered 0
engine: state retained: false
engine: mirror retained: true
engine: mirror state
engine: names kept: [\"FindingsSettings\", \"FindingsReady\", \"FindingsModule::on_ready\", \"AudioSettings\"]
engine: kept mapped: 1 version(s), bytes > 0: true, still referenced: 0
engine: done
";

/// MB6 against issue 30's five findings, each of which made the engine run or read the module's
/// code after its library was unmapped (SIGSEGV): a module (`findings_module`) stores code where
/// a record by code address cannot see it, and its unload must still take back every behaviour
/// of it, leave the engine's values alone, and keep what it handed out readable.
///
/// 1. Closures of a helper `dylib` the module links (`module_helper`), subscribed to
///    `on_settings_saved` and queued from there: the helper, mapped by the module's load, stays
///    mapped after the unload, and both are gone (`on_settings_saved 1`, `queued 0`).
/// 2. Generic code the engine's API library shares (`add_lambda`, `enqueue`, `spawn_local` of
///    boxed callables): attributed to the module because its code ran when they were stored; with
///    that attribution broken, the boxed task and coroutine ran after the unload
///    ("findings: boxed task ran" — checked once by hand).
/// 3. A message posted into the queue the engine's own post made: dropped (`posted 0`,
///    `delivered 0`).
/// 4. A retained message the module put in place of the engine's: gone (`state retained:
///    false`); the mirror, the engine's message in place of the module's: kept and replayed.
/// 5. `&'static str` names of the module's data (a `SettingsClass`, an event class, a
///    `LifecycleSignal`) printed after the unload: readable, since the library stays mapped.
#[test]
fn mb6_what_a_module_stores_out_of_sight_of_its_records_goes_with_its_unload() {
    let dir = libraries("mb6-findings");
    let (trace, _) = run(engine("findings", &dir, None));
    assert_eq!(trace, FINDINGS);
}

/// The same scenario under memcheck: no read of unmapped or freed memory anywhere (each finding
/// was "not within mapped region" before MB6).
#[test]
fn mb6_the_five_findings_run_clean_under_memcheck() {
    let dir = libraries("mb6-findings-memcheck");
    let (trace, report) = run(engine("findings", &dir, Some(MEMCHECK)));
    assert_eq!(trace, FINDINGS);
    assert_memcheck_clean(&report);
}
