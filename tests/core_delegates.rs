//! The core delegates: rules C1-C3, and T1 for the engine-wide set.
//!
//! Every test holds a `GameThreadScope`: its thread is the game thread while the test runs, and
//! each test gets a fresh set of core delegates.

mod support;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::rc::Rc;
use std::thread;

use lumina::DelegateHandle;
use lumina::core_delegates::{CoreDelegates, ModuleInfo, QuitOutcome, SettingsClass, WorldId};
use lumina::main_thread::{self, GameThreadScope};
use support::{capture_tracing, panic_message};

/// Names pushed by subscribers, in call order.
#[derive(Clone, Default)]
struct Calls(Rc<RefCell<Vec<String>>>);

impl Calls {
    fn push(&self, call: impl Into<String>) {
        self.0.borrow_mut().push(call.into());
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.borrow_mut())
    }
}

// ---------------------------------------------------------------------------------------------
// T1: the set belongs to the game thread.
// ---------------------------------------------------------------------------------------------

#[test]
fn t1_core_delegates_on_another_thread_panics_naming_enqueue() {
    let _game = GameThreadScope::enter();
    let _ = CoreDelegates::get().on_post_engine_init().add_lambda(|| {});
    let worker = thread::Builder::new()
        .name("asset-loader".into())
        .spawn(|| {
            let _ = CoreDelegates::get();
        })
        .unwrap();
    let message = panic_message(
        &*worker
            .join()
            .expect_err("CoreDelegates off the game thread"),
    );
    assert!(message.contains("`CoreDelegates::get`"), "{message}");
    assert!(message.contains("`asset-loader`"), "{message}");
    assert!(message.contains("not the game thread"), "{message}");
    assert!(message.contains("main_thread::enqueue"), "{message}");
    // The game thread's set is untouched: no copy was made for the worker.
    assert_eq!(CoreDelegates::get().on_post_engine_init().len(), 1);
}

#[test]
fn t1_core_delegates_without_a_game_thread_panics_naming_enqueue() {
    let payload = panic::catch_unwind(CoreDelegates::get).expect_err("no game thread here");
    let message = panic_message(&*payload);
    assert!(message.contains("main_thread::enqueue"), "{message}");
}

#[test]
fn t1_a_reference_kept_past_its_session_panics_instead_of_reaching_a_dead_set() {
    let game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    drop(game);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| core.on_world_travelled().len()))
        .expect_err("session is over");
    let message = panic_message(&*payload);
    assert!(
        message.contains("`CoreDelegates::on_world_travelled`"),
        "{message}"
    );
    assert!(message.contains("main_thread::enqueue"), "{message}");
}

#[test]
fn t1_each_game_thread_session_starts_with_a_fresh_set() {
    let calls = Calls::default();
    {
        let _game = GameThreadScope::enter();
        let core = CoreDelegates::get();
        let sink = calls.clone();
        let _ = core
            .on_world_travelled()
            .add_lambda(move |_, _| sink.push("first session"));
        core.on_pre_engine_init().broadcast_and_clear();
        assert!(core.on_pre_engine_init().has_fired());
    }
    // The next session, on another thread: nothing of the first one is left.
    thread::spawn(|| {
        let _game = GameThreadScope::enter();
        let core = CoreDelegates::get();
        assert!(!core.on_world_travelled().is_bound());
        assert!(!core.on_pre_engine_init().has_fired());
        core.on_world_travelled()
            .broadcast(WorldId::new_unique(), WorldId::new_unique());
    })
    .join()
    .unwrap();
    assert!(
        calls.take().is_empty(),
        "the first session's subscriber was dropped"
    );
}

/// Panics when dropped: a subscriber with a faulty destructor.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("faulty destructor");
    }
}

#[test]
fn t1_a_panicking_destructor_at_scope_end_still_empties_the_set_and_releases_the_game_thread() {
    let game_thread = thread::spawn(|| {
        let game = GameThreadScope::enter();
        let core = CoreDelegates::get();
        let faulty = PanicOnDrop;
        let _ = core.on_module_loaded().add_lambda(move |_| {
            let _keep = &faulty;
        });
        let _ = core.on_game_quit_requested().add_lambda(|| {});
        core.on_post_engine_init().broadcast_and_clear();
        let payload = panic::catch_unwind(AssertUnwindSafe(|| drop(game)))
            .expect_err("the destructor's panic propagates");
        assert_eq!(panic_message(&*payload), "faulty destructor");

        // Released: this thread can be the game thread again, and finds an empty, re-armed set
        // (the subscribers after the faulty one were dropped too).
        let _again = GameThreadScope::enter();
        let core = CoreDelegates::get();
        assert!(!core.on_module_loaded().is_bound());
        assert!(!core.on_game_quit_requested().is_bound());
        assert!(!core.on_post_engine_init().has_fired());
    });
    game_thread.join().unwrap();
    // And so can another thread.
    let _game = GameThreadScope::enter();
    assert!(main_thread::is_game_thread());
}

#[test]
fn t1_worker_results_reach_core_delegates_through_enqueue() {
    let _game = GameThreadScope::enter();
    let game_thread = thread::current().id();
    let ran_on = Rc::new(Cell::new(None));
    let sink = Rc::clone(&ran_on);
    let _ = CoreDelegates::get()
        .on_world_travelled()
        .add_lambda(move |_, _| sink.set(Some(thread::current().id())));

    thread::spawn(|| {
        // Off the game thread: compute, then hand the broadcast to the game thread.
        let (old, new) = (WorldId::new_unique(), WorldId::new_unique());
        main_thread::enqueue(move || {
            CoreDelegates::get()
                .on_world_travelled()
                .broadcast(old, new)
        });
    })
    .join()
    .unwrap();
    assert_eq!(ran_on.get(), None);
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(ran_on.get(), Some(game_thread));
}

// ---------------------------------------------------------------------------------------------
// C1: every signal of the spec's table, with its arguments.
// ---------------------------------------------------------------------------------------------

static INPUT_SETTINGS: SettingsClass = SettingsClass::new("InputSettings", "Engine");

#[test]
fn c1_every_signal_of_the_spec_delivers_its_arguments() {
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    let calls = Calls::default();

    let sink = calls.clone();
    let _ = core
        .on_module_loaded()
        .add_lambda(move |module: &ModuleInfo| {
            sink.push(format!(
                "module loaded {} {:?}",
                module.name.as_str(),
                module.path.as_deref()
            ));
        });
    let sink = calls.clone();
    let _ = core
        .on_module_unloaded()
        .add_lambda(move || sink.push("module unloaded"));
    let sink = calls.clone();
    let _ = core
        .post_world_unload()
        .add_lambda(move || sink.push("world unloaded"));
    let sink = calls.clone();
    let _ = core
        .on_world_travelled()
        .add_lambda(move |old, new| sink.push(format!("travelled {} {}", old != new, new)));
    let sink = calls.clone();
    let _ = core
        .on_content_file_modified()
        .add_lambda(move |path: &Path| {
            sink.push(format!("modified {}", path.display()));
        });
    let sink = calls.clone();
    let _ = core
        .on_content_file_renamed()
        .add_lambda(move |old: &Path, new: &Path| {
            sink.push(format!("renamed {} -> {}", old.display(), new.display()));
        });
    let sink = calls.clone();
    let _ = core
        .on_settings_saved()
        .add_lambda(move |class: &SettingsClass| {
            let same = std::ptr::eq(class, &INPUT_SETTINGS);
            sink.push(format!(
                "settings saved {class} (the static itself: {same})"
            ));
        });
    let sink = calls.clone();
    let _ = core
        .on_game_quit_requested()
        .add_lambda(move || sink.push("quit requested"));

    let module = ModuleInfo {
        path: Some("bin/libeditor.so".into()),
        ..ModuleInfo::new("Editor")
    };
    core.on_module_loaded().broadcast(&module);
    core.on_module_unloaded().broadcast();
    core.post_world_unload().broadcast();
    let lobby = WorldId::new_unique();
    core.on_world_travelled()
        .broadcast(WorldId::new_unique(), lobby);
    core.on_content_file_modified()
        .broadcast(Path::new("Content/door.lua"));
    core.on_content_file_renamed()
        .broadcast(Path::new("Content/door.lua"), Path::new("Content/gate.lua"));
    core.on_settings_saved().broadcast(&INPUT_SETTINGS);
    core.on_game_quit_requested().broadcast();

    assert_eq!(
        calls.take(),
        [
            "module loaded Editor Some(\"bin/libeditor.so\")".to_owned(),
            "module unloaded".to_owned(),
            "world unloaded".to_owned(),
            format!("travelled true {lobby}"),
            "modified Content/door.lua".to_owned(),
            "renamed Content/door.lua -> Content/gate.lua".to_owned(),
            "settings saved Engine.InputSettings (the static itself: true)".to_owned(),
            "quit requested".to_owned(),
        ]
    );
}

#[test]
fn c1_world_ids_are_unique_identities_across_threads() {
    let here: Vec<WorldId> = (0..100).map(|_| WorldId::new_unique()).collect();
    let there = thread::spawn(|| (0..100).map(|_| WorldId::new_unique()).collect::<Vec<_>>())
        .join()
        .unwrap();
    let all: HashSet<WorldId> = here.iter().chain(&there).copied().collect();
    assert_eq!(all.len(), 200, "no two worlds share an id");
    let copy = here[0];
    assert_eq!(copy, here[0]);
    assert_ne!(here[0], here[1]);
}

#[test]
fn c1_the_engine_types_describe_what_subscribers_filter_on() {
    let module = ModuleInfo::new("Renderer");
    assert_eq!(
        (module.name.as_str(), module.path.as_deref()),
        ("Renderer", None)
    );
    assert_eq!(module.to_string(), "Renderer");
    assert_eq!(INPUT_SETTINGS.name, "InputSettings");
    assert_eq!(INPUT_SETTINGS.category, "Engine");
    assert_eq!(
        INPUT_SETTINGS,
        SettingsClass::new("InputSettings", "Engine")
    );
    assert_ne!(INPUT_SETTINGS, SettingsClass::new("InputSettings", "Game"));
}

#[test]
fn c1_a_member_subscriber_to_a_core_signal_is_held_weakly() {
    struct Panel {
        refreshed: Cell<u32>,
    }
    let _game = GameThreadScope::enter();
    let saved = CoreDelegates::get().on_settings_saved();
    let panel = Rc::new(Panel {
        refreshed: Cell::new(0),
    });
    let _ = saved.add_member(&panel, |panel: &Panel, _: &SettingsClass| {
        panel.refreshed.set(panel.refreshed.get() + 1);
    });
    saved.broadcast(&INPUT_SETTINGS);
    assert_eq!(panel.refreshed.get(), 1);
    assert!(saved.is_bound_to(&panel));
    drop(panel); // the editor closed the panel without unsubscribing
    assert!(!saved.is_bound());
    saved.broadcast(&INPUT_SETTINGS);
}

// ---------------------------------------------------------------------------------------------
// C2: one-shot lifecycle signals, has_fired, and reported late subscriptions.
// ---------------------------------------------------------------------------------------------

#[test]
fn c2_lifecycle_signals_fire_once_in_the_engines_order_then_forget_their_subscribers() {
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    let calls = Calls::default();
    let (a, b, c) = (calls.clone(), calls.clone(), calls.clone());
    let _ = core
        .on_pre_engine_init()
        .add_lambda(move || a.push("pre init"));
    let _ = core
        .on_post_engine_init()
        .add_lambda(move || b.push("post init"));
    let _ = core
        .on_pre_engine_shutdown()
        .add_lambda(move || c.push("pre shutdown"));
    for signal in [
        core.on_pre_engine_init(),
        core.on_post_engine_init(),
        core.on_pre_engine_shutdown(),
    ] {
        assert!(signal.is_bound() && !signal.has_fired());
        signal.broadcast_and_clear();
        assert!(!signal.is_bound() && signal.has_fired());
        signal.broadcast_and_clear(); // a second firing finds nobody
    }
    assert_eq!(calls.take(), ["pre init", "post init", "pre shutdown"]);
}

#[test]
fn c2_has_fired_is_true_from_the_start_of_the_broadcast() {
    let _game = GameThreadScope::enter();
    let seen = Rc::new(Cell::new(false));
    let sink = Rc::clone(&seen);
    let _ = CoreDelegates::get()
        .on_post_engine_init()
        .add_lambda(move || sink.set(CoreDelegates::get().on_post_engine_init().has_fired()));
    CoreDelegates::get()
        .on_post_engine_init()
        .broadcast_and_clear();
    assert!(seen.get());
}

#[test]
fn c2_a_late_subscription_never_runs_and_is_reported_naming_the_signal() {
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    core.on_pre_engine_init().broadcast_and_clear();
    core.on_post_engine_init().broadcast_and_clear();

    let ran = Rc::new(Cell::new(false));
    let sink = Rc::clone(&ran);
    let late_line = line!() + 3;
    let (handle, report) = capture_tracing(|| {
        core.on_post_engine_init()
            .add_lambda(move || sink.set(true))
    });
    assert!(
        report.contains(&format!("tests/core_delegates.rs:{late_line}")),
        "B5: the report names the bind site: {report}"
    );

    assert!(core.on_post_engine_init().has_fired());
    assert_eq!(
        handle,
        DelegateHandle::INVALID,
        "the late subscription is not kept"
    );
    assert!(!core.on_post_engine_init().is_bound());
    core.on_post_engine_init().broadcast_and_clear();
    assert!(!ran.get(), "a late subscriber never runs");

    assert!(report.contains("WARN"), "{report}");
    assert!(
        report.contains("signal=\"CoreDelegates::on_post_engine_init\""),
        "the report names the signal: {report}"
    );
    assert!(report.contains("never run"), "{report}");
    assert!(
        report.contains("has_fired()"),
        "says how to check: {report}"
    );
    assert_eq!(report.lines().count(), 1, "{report}");
}

#[test]
fn c2_late_member_and_static_subscriptions_are_reported_too() {
    struct Service;
    let _game = GameThreadScope::enter();
    let shutdown = CoreDelegates::get().on_pre_engine_shutdown();
    shutdown.broadcast_and_clear();
    let service = Rc::new(Service);
    let ((member, stat), report) = capture_tracing(|| {
        (
            shutdown.add_member(&service, |_: &Service| {}),
            shutdown.add_static(|| {}),
        )
    });
    assert!(!member.is_valid() && !stat.is_valid());
    assert!(
        !shutdown.is_bound_to(&service),
        "the late member binding is not kept"
    );
    assert_eq!(
        report
            .matches("signal=\"CoreDelegates::on_pre_engine_shutdown\"")
            .count(),
        2,
        "{report}"
    );
}

#[test]
fn c2_a_subscription_made_while_the_signal_fires_is_late_and_reported() {
    let _game = GameThreadScope::enter();
    let calls = Calls::default();
    let sink = calls.clone();
    let _ = CoreDelegates::get()
        .on_pre_engine_init()
        .add_lambda(move || {
            sink.push("first");
            let inner = sink.clone();
            let late = CoreDelegates::get()
                .on_pre_engine_init()
                .add_lambda(move || inner.push("late"));
            assert!(!late.is_valid());
        });
    let ((), report) = capture_tracing(|| {
        CoreDelegates::get()
            .on_pre_engine_init()
            .broadcast_and_clear()
    });
    assert_eq!(calls.take(), ["first"]);
    assert!(
        report.contains("CoreDelegates::on_pre_engine_init"),
        "{report}"
    );
}

#[test]
fn c2_subscribing_in_time_reports_nothing() {
    let _game = GameThreadScope::enter();
    let ((), report) = capture_tracing(|| {
        let core = CoreDelegates::get();
        let handle = core.on_post_engine_init().add_lambda(|| {});
        assert!(handle.is_valid());
        core.on_post_engine_init().broadcast_and_clear();
    });
    assert_eq!(report, "");
}

#[test]
fn c2_a_lifecycle_subscriber_removed_before_firing_does_not_run() {
    let _game = GameThreadScope::enter();
    let signal = CoreDelegates::get().on_post_engine_init();
    let ran = Rc::new(Cell::new(false));
    let sink = Rc::clone(&ran);
    let handle = signal.add_lambda(move || sink.set(true));
    let owner = Rc::new(());
    let _ = signal.add_member(&owner, |_: &()| panic!("removed with its owner"));
    assert!(signal.is_bound_to(&owner));
    assert_eq!(signal.remove_all(&owner), 1);
    assert!(signal.remove(handle));
    assert!(!signal.remove(handle));
    signal.broadcast_and_clear();
    assert!(!ran.get());
}

#[test]
fn c2_a_panicking_lifecycle_subscriber_leaves_the_signal_fired_and_cleared() {
    let _game = GameThreadScope::enter();
    let signal = CoreDelegates::get().on_pre_engine_shutdown();
    let _ = signal.add_lambda(|| panic!("subsystem failed to stop"));
    let _ = signal.add_lambda(|| unreachable!("after the panicking subscriber"));
    let payload = panic::catch_unwind(AssertUnwindSafe(|| signal.broadcast_and_clear()))
        .expect_err("propagates");
    assert_eq!(panic_message(&*payload), "subsystem failed to stop");
    assert!(signal.has_fired());
    assert!(
        !signal.is_bound(),
        "cleared although the broadcast panicked"
    );
}

// ---------------------------------------------------------------------------------------------
// C3: the bound state of on_game_quit_requested is the branch.
// ---------------------------------------------------------------------------------------------

#[test]
fn c3_bound_quit_request_runs_the_binding_and_keeps_the_process() {
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    let ended = Rc::new(Cell::new(0));
    let sink = Rc::clone(&ended);
    let _ = core
        .on_game_quit_requested()
        .add_lambda(move || sink.set(sink.get() + 1));
    assert_eq!(core.request_game_quit(), QuitOutcome::Handled);
    assert_eq!(ended.get(), 1);
    // Not one-shot: the editor's binding ends every play session.
    assert_eq!(core.request_game_quit(), QuitOutcome::Handled);
    assert_eq!(ended.get(), 2);
}

#[test]
fn c3_unbound_quit_request_tells_the_engine_to_exit() {
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    assert_eq!(core.request_game_quit(), QuitOutcome::ExitProcess);
    let handle = core.on_game_quit_requested().add_lambda(|| {});
    assert!(core.on_game_quit_requested().remove(handle));
    assert_eq!(core.request_game_quit(), QuitOutcome::ExitProcess);
}

#[test]
fn c3_a_quit_binding_whose_editor_was_dropped_counts_as_unbound() {
    struct Editor {
        sessions_ended: Cell<u32>,
    }
    let _game = GameThreadScope::enter();
    let core = CoreDelegates::get();
    let editor = Rc::new(Editor {
        sessions_ended: Cell::new(0),
    });
    let _ = core
        .on_game_quit_requested()
        .add_member(&editor, |editor: &Editor| {
            editor.sessions_ended.set(editor.sessions_ended.get() + 1);
        });
    assert_eq!(core.request_game_quit(), QuitOutcome::Handled);
    assert_eq!(editor.sessions_ended.get(), 1);
    drop(editor);
    assert_eq!(core.request_game_quit(), QuitOutcome::ExitProcess);
}

/// Polls `future` once.
fn poll<F: std::future::Future + Unpin>(
    future: &mut F,
    waker: &std::task::Waker,
) -> std::task::Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut std::task::Context::from_waker(waker))
}

/// X5: the core delegates have `next()` too. Here rather than in `tests/coroutines.rs`, which runs
/// under Miri: the engine-wide delegates are leaked on purpose.
#[test]
fn x5_core_delegates_have_next() {
    let _game = GameThreadScope::enter();
    let waker = std::task::Waker::noop();
    let core = lumina::CoreDelegates::get();
    let mut unloaded = core.on_module_unloaded().next();
    core.on_module_unloaded().broadcast();
    assert_eq!(poll(&mut unloaded, waker), std::task::Poll::Ready(Ok(())));
    // A referenced argument arrives owned.
    let mut modified = core.on_content_file_modified().next();
    core.on_content_file_modified()
        .broadcast(Path::new("maps/e1m1.map"));
    assert_eq!(
        poll(&mut modified, waker),
        std::task::Poll::Ready(Ok((std::path::PathBuf::from("maps/e1m1.map"),)))
    );
    let mut quit = core.on_game_quit_requested().next();
    assert_eq!(poll(&mut quit, waker), std::task::Poll::Pending);
}

/// X5: every core delegate has `next()`, whatever its arguments: the settings class arrives as
/// an owned copy of the descriptor (`SettingsClass` is `Copy`: two names), the module as a
/// clone of its `ModuleInfo`, the worlds as their ids, the paths as `PathBuf`s.
#[test]
fn x5_every_core_delegate_with_arguments_has_next() {
    let _game = GameThreadScope::enter();
    let waker = std::task::Waker::noop();
    let core = lumina::CoreDelegates::get();
    let mut saved = core.on_settings_saved().next();
    let mut loaded = core.on_module_loaded().next();
    let mut travelled = core.on_world_travelled().next();
    let mut renamed = core.on_content_file_renamed().next();
    core.on_settings_saved().broadcast(&INPUT_SETTINGS);
    let arena = ModuleInfo::new("arena");
    core.on_module_loaded().broadcast(&arena);
    let (old, new) = (WorldId::new_unique(), WorldId::new_unique());
    core.on_world_travelled().broadcast(old, new);
    core.on_content_file_renamed()
        .broadcast(Path::new("a.map"), Path::new("b.map"));
    assert_eq!(
        poll(&mut saved, waker),
        std::task::Poll::Ready(Ok((INPUT_SETTINGS,)))
    );
    assert_eq!(
        poll(&mut loaded, waker),
        std::task::Poll::Ready(Ok((arena,)))
    );
    assert_eq!(
        poll(&mut travelled, waker),
        std::task::Poll::Ready(Ok((old, new)))
    );
    assert_eq!(
        poll(&mut renamed, waker),
        std::task::Poll::Ready(Ok((
            std::path::PathBuf::from("a.map"),
            std::path::PathBuf::from("b.map")
        )))
    );
}
