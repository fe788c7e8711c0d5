//! A game module that unloads or reloads itself from every place its code runs (rule R5): the
//! engine sets a plan `"<point>-<operation>"` (`engine_api::set_plan`) before loading it, where
//! the operation is `unload` or `reload` and the point is one of
//!
//! - `start-up`, `shut-down`: its entry points;
//! - `subscriber`: its tick subscriber (one of four subscriptions it has on that one delegate);
//! - `task`: a task it queued with `main_thread::enqueue` at start-up (a second one waits behind
//!   it and must not run once the module is gone);
//! - `panicking-task`: a queued task, as `task`, that panics after the call;
//! - `drop`: the `Drop` of a capture of its tick lambda, which its unload drops;
//! - `queued-drop`: the `Drop` of a capture of a queued task that its unload drops unrun;
//! - `removed-drop`: the `Drop` of a capture of a tick lambda that the engine removes itself;
//! - `coroutine`: a coroutine task it spawned on the game thread (`coroutine::spawn_local`,
//!   MB4 with X5), woken by the engine's tick (the task awaits the tick delegate's next
//!   broadcast), which then waits for the following tick, never sent while it is loaded;
//! - `coroutine-drop`: the `Drop` of a capture of such a waiting task, which its unload drops
//!   unpolled;
//!
//! the plan `viewport` adds a viewport with a typed handler of its own to the engine's viewport
//! registry, owned by the capture of a tick lambda (so its unload drops the handler, and the
//! registry is left a weak reference whose vtable is the module's);
//!
//! the plan `queued-sender` makes a `QueuedSender` for an object of its own (owned by the capture
//! of a tick lambda) and leaks a clone of it, as one kept by another thread would be: the
//! sender's entry in the game thread's registry holds its accessor and its vtables;
//!
//! the plan `single-cast` binds a closure of its own (whose capture says when it is dropped) into
//! the engine's single-cast delegate `score_query`, which the engine stores and calls, outside
//! any invocation list: the binding's callable is the module's code;
//!
//! the plan `frame-waker` polls a frame-waiting future (`coroutine::frames(1)`) once from its
//! shut-down with a waker of its own type, and drops the future: the waker stays with the
//! main-thread queue's frame waiters, and its code is the module's;
//!
//! the operation `stay` only says where it is (the engine exits with the module loaded), and
//! `subscribe` subscribes a new tick lambda from there (a `Drop` its unload runs late);
//! the plan `queued-behind` queues a task behind one of the engine's that unloads the module,
//! and the plan `engine-callback` subscribes a callable whose code is the engine's, so that the
//! subscription outlives the module while its bind site is in the module's library.
//!
//! Every line it prints starts with `module:`.

use engine_api::{engine, plan};
use lumina::module::{self, ModuleId};
use lumina::{coroutine, main_thread};

fn me() -> ModuleId {
    lumina::this_module!().expect("the module's own code knows its id")
}

/// Runs the planned operation if `point` is the planned place.
fn act(point: &str) {
    let Some((at, operation)) = plan().rsplit_once('-') else {
        return;
    };
    if at != point {
        return;
    }
    if operation == "stay" {
        println!("module: at its {point}, stays");
        return;
    }
    if operation == "subscribe" {
        // Late: its unload already removed the subscriptions it found (MB4).
        let _ = engine()
            .on_tick
            .add_lambda(|frame| println!("module: late subscriber ticks {frame} (must not)"));
        println!("module: subscribed from its {point}");
        return;
    }
    let id = me();
    let result = match operation {
        "unload" => module::unload(id).map(|info| format!("Ok({})", info.name)),
        "reload" => module::reload(id).map(|new| format!("Ok({new})")),
        other => panic!("unknown operation {other}"),
    };
    match result {
        Ok(ok) => println!("module: {operation} of {id} from its {point}: {ok}"),
        Err(error) => println!("module: {operation} of {id} from its {point}: {error}"),
    }
    // Still running, after the call: the library must still be mapped here.
    println!("module: back in its {point} after the {operation}");
}

/// A capture that acts when dropped.
struct ActOnDrop(&'static str);

impl Drop for ActOnDrop {
    fn drop(&mut self) {
        println!("module: {} dropped", self.0);
        act(self.0);
    }
}

fn start_up() {
    println!("module: start-up of {}", me());
    if plan() == "engine-callback" {
        let _ = engine().on_tick.add_shared(engine_api::engine_callback());
        return;
    }
    let on_tick = &engine().on_tick;
    let _ = on_tick.add_lambda(|frame| {
        println!("module: tick {frame}");
        act("subscriber");
    });
    let capture = ActOnDrop("drop");
    let _ = on_tick.add_lambda(move |_| {
        let _ = &capture;
    });
    let removed = ActOnDrop("removed-drop");
    let _ = on_tick.add_lambda(move |_| {
        let _ = &removed;
    });
    let _ = on_tick.add_static(|_| {});
    if plan() == "viewport" {
        let rect = lumina::event::Rect::new(0.0, 0.0, 100.0, 100.0);
        let viewport = engine()
            .viewports
            .add_viewport_handler::<lumina::event::KeyPressedEvent>(rect, |_| {
                println!("module: viewport got a key (must not)");
                true
            });
        let _ = on_tick.add_lambda(move |_| {
            let _ = &viewport;
        });
        println!("module: added a viewport");
    }
    if plan() == "single-cast" {
        let capture = ActOnDrop("single-cast binding's capture");
        *engine().score_query.borrow_mut() =
            lumina::Delegate::<dyn Fn(u32) -> u32>::create_lambda(move |score| {
                let _ = &capture;
                score + 1
            });
        println!(
            "module: bound the score query: 41 -> {:?}",
            engine().score_query.borrow().execute_if_bound(41)
        );
    }
    if plan() == "queued-sender" {
        /// An object of the module with a delegate another thread broadcasts through a sender.
        struct Relay {
            on_note: lumina::MulticastDelegate<dyn Fn(u32)>,
        }
        let relay = std::rc::Rc::new(Relay {
            on_note: lumina::MulticastDelegate::new(),
        });
        let capture = ActOnDrop("queued sender's accessor capture");
        let sender = main_thread::QueuedSender::new(&relay, move |relay: &Relay| {
            let _ = &capture;
            &relay.on_note
        });
        std::mem::forget(sender.clone());
        let _ = on_tick.add_lambda(move |_| {
            let _ = &relay;
        });
        println!("module: made a queued sender");
    }
    if plan().starts_with("task-") {
        main_thread::enqueue(|| {
            println!("module: task runs");
            act("task");
        });
        main_thread::enqueue(|| println!("module: second task runs (must not)"));
    }
    if plan().starts_with("panicking-task-") {
        main_thread::enqueue(|| {
            println!("module: task runs");
            act("panicking-task");
            panic!("the module's task panics after asking");
        });
        main_thread::enqueue(|| println!("module: second task runs (must not)"));
    }
    if plan() == "queued-behind" {
        main_thread::enqueue(|| println!("module: task behind the engine's runs (must not)"));
    }
    if plan().starts_with("coroutine-drop-") {
        let capture = ActOnDrop("coroutine-drop");
        let _task = coroutine::spawn_local(async move {
            let _ = &capture;
            println!("module: coroutine waits for a tick");
            let _ = engine().on_tick.next().await;
            println!("module: coroutine woke (must not)");
        });
    } else if plan().starts_with("coroutine-") {
        // Subscribed now, so that the engine's first tick (before the first poll) wakes it.
        let first = engine().on_tick.next();
        let capture = ActOnDrop("coroutine capture");
        let _task = coroutine::spawn_local(async move {
            let _ = &capture;
            match first.await {
                Ok((frame,)) => println!("module: coroutine woke at tick {frame}"),
                Err(gone) => println!("module: coroutine's tick delegate {gone}"),
            }
            act("coroutine");
            let _ = engine().on_tick.next().await;
            println!("module: coroutine woke again (must not)");
        });
    }
    if plan().starts_with("queued-drop-") {
        let capture = ActOnDrop("queued-drop");
        main_thread::enqueue(move || {
            let _ = &capture;
            println!("module: task with a capture runs");
        });
    }
    act("start-up");
}

/// A waker whose code (its `Wake` impl, and so the `Waker`'s vtable) is the module's.
struct ModuleWaker;

impl std::task::Wake for ModuleWaker {
    fn wake(self: std::sync::Arc<Self>) {
        println!("module: frame waker woke (must not)");
    }
}

impl Drop for ModuleWaker {
    fn drop(&mut self) {
        println!("module: frame waker dropped");
    }
}

/// Leaves a waker of the module's with the frame waiters (the plan `frame-waker`).
fn leave_a_frame_waker() {
    let waker = std::task::Waker::from(std::sync::Arc::new(ModuleWaker));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut next = std::pin::pin!(coroutine::frames(1));
    assert!(std::future::Future::poll(next.as_mut(), &mut cx).is_pending());
    println!("module: left a frame waker");
}

fn shut_down() {
    println!("module: shut-down of {}", me());
    if plan() == "frame-waker" {
        leave_a_frame_waker();
    }
    act("shut-down");
}

lumina::game_module!(start_up, shut_down);
