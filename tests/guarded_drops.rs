//! R2 and R3: user values the library holds in its own frames survive a panicking `Drop` while
//! another panic unwinds (the process does not abort; the second panic is logged), and a
//! teardown runs to its end when a `Drop` it runs panics, then resumes the first panic.
//!
//! Without the guards each R2 scenario aborts the process ("panic in a destructor during
//! cleanup"), so each runs in a child process (`support/child.rs`) and the test asserts that the
//! child exits normally. Under Miri the scenarios run in the test's own process.

#[path = "support/child.rs"]
mod child;
mod support;

use std::cell::{Cell, RefCell};
use std::mem::forget;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use child::in_child_process;
use lumina::bus::{Message, MessageBus, TagKey};
use lumina::core_delegates::CoreDelegates;
use lumina::event::{Event, EventProcessor};
use lumina::main_thread::{self, GameThreadScope, QueuedSender};
use lumina::multicast::ByReference;
use lumina::{
    Delegate, MulticastDelegate, ScriptDelegate, declare_delegate, declare_multicast_delegate,
    event_class,
};
use support::{capture_tracing, panic_message};

/// What the guard logs when it drops a panic that came while the thread was unwinding.
const GUARD_LOG: &str = "a Drop panicked while the thread was already unwinding";

/// An argument (or result) whose `Drop` panics.
#[derive(Clone)]
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("bomb dropped");
    }
}

/// A capture whose `Drop` panics with its message.
struct Loud(&'static str);

impl Drop for Loud {
    fn drop(&mut self) {
        panic!("{}", self.0);
    }
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs `f`, which must panic; the panic's message and what was logged meanwhile.
fn panics_with_log(f: impl FnOnce()) -> (String, String) {
    let (payload, log) =
        capture_tracing(|| panic::catch_unwind(AssertUnwindSafe(f)).expect_err("it panics"));
    (panic_message(&*payload), log)
}

/// Asserts that `f` panics with `message` and that the guard logged a second panic.
#[track_caller]
fn assert_guarded(message: &str, f: impl FnOnce()) {
    let (got, log) = panics_with_log(f);
    assert_eq!(got, message);
    assert!(log.contains(GUARD_LOG), "the guard logged nothing: {log:?}");
}

#[test]
fn r2_broadcast_argument_held_when_a_subscriber_panics() {
    in_child_process(
        "r2_broadcast_argument_held_when_a_subscriber_panics",
        || {
            let d: MulticastDelegate<dyn Fn(Bomb)> = MulticastDelegate::new();
            let _a = d.add_lambda(|b| {
                forget(b);
                panic!("subscriber");
            });
            let _b = d.add_lambda(forget);
            // The original argument waits for `_b` while `_a` panics.
            assert_guarded("subscriber", || d.broadcast(Bomb));
            assert!(!d.is_broadcasting());
            assert_eq!(d.len(), 2);
        },
    );
}

#[test]
fn r2_m9_a_pruned_capture_whose_drop_panics_is_dropped_after_the_loop() {
    in_child_process(
        "r2_m9_a_pruned_capture_whose_drop_panics_is_dropped_after_the_loop",
        || {
            let d: MulticastDelegate<dyn Fn(Bomb)> = MulticastDelegate::new();
            let owner = Rc::new(());
            let capture = Loud("capture dropped");
            let _member = d.add_member(&owner, move |_, b| {
                let _ = &capture;
                forget(b);
            });
            let last = Rc::new(Cell::new(0));
            let seen = Rc::clone(&last);
            let _last = d.add_lambda(move |b| {
                seen.set(seen.get() + 1);
                forget(b);
            });
            drop(owner);
            // The broadcast prunes the member on its way without running user code there: its
            // capture is dropped when the broadcast ends, after every call, while no argument
            // is held. Its panic propagates alone (no second panic for the guard to log), with
            // the list consistent.
            let (message, log) = panics_with_log(|| d.broadcast(Bomb));
            assert_eq!(message, "capture dropped");
            assert!(!log.contains(GUARD_LOG), "{log:?}");
            assert_eq!(last.get(), 1, "the last subscriber ran first");
            assert!(!d.is_broadcasting());
            assert_eq!(d.len(), 1);
        },
    );
}

declare_multicast_delegate!(OnAsk(question: &str) -> Bomb);

#[test]
fn r2_broadcast_collect_results_held_when_a_subscriber_panics() {
    in_child_process(
        "r2_broadcast_collect_results_held_when_a_subscriber_panics",
        || {
            // Two results wait (two panicking drops) when the third subscriber panics.
            let owned: MulticastDelegate<dyn Fn(u32) -> Bomb> = MulticastDelegate::new();
            let _a = owned.add_lambda(|_| Bomb);
            let _b = owned.add_lambda(|_| Bomb);
            let _c = owned.add_lambda(|_| panic!("subscriber"));
            assert_guarded("subscriber", || forget(owned.broadcast_collect(1)));

            let by_reference: MulticastDelegate<dyn Fn(&str) -> Bomb> = MulticastDelegate::new();
            let _a = ByReference::add_lambda(&by_reference, |_: &str| Bomb);
            let _b = ByReference::add_lambda(&by_reference, |_: &str| panic!("by reference"));
            assert_guarded("by reference", || {
                forget(ByReference::broadcast_collect(&by_reference, "?"));
            });

            let declared = OnAsk::new();
            let _a = declared.add_lambda(|_| Bomb);
            let _b = declared.add_lambda(|_| panic!("declared"));
            assert_guarded("declared", || forget(declared.broadcast_collect("?")));
        },
    );
}

#[event_class]
struct Fragile {
    id: u32,
}

impl Drop for Fragile {
    fn drop(&mut self) {
        panic!("event {} dropped", self.id);
    }
}

#[test]
fn r2_dispatch_event_held_when_a_handler_panics() {
    in_child_process("r2_dispatch_event_held_when_a_handler_panics", || {
        let processor = EventProcessor::new();
        let handler = Rc::new(|_: &mut dyn Event| -> bool { panic!("handler") });
        assert!(processor.register_event_handler(&handler, 0));
        assert_guarded("handler", || {
            processor.dispatch(Fragile { id: 1 });
        });
        assert!(!processor.is_broadcasting());
        assert!(processor.handle_of(&handler).is_some());
    });
}

/// A handler or owner that the test keeps alive only through `keeper`: its own code takes
/// itself out of there, so the library's strong reference for the call is the last one.
struct Doomed {
    keeper: RefCell<Option<Rc<Doomed>>>,
}

impl Doomed {
    /// A `Doomed` that keeps itself alive until [`let_go`](Self::let_go).
    fn new() -> Rc<Doomed> {
        let doomed = Rc::new(Doomed {
            keeper: RefCell::new(None),
        });
        *doomed.keeper.borrow_mut() = Some(Rc::clone(&doomed));
        doomed
    }

    /// Drops its own reference to itself (not the last one: the caller's call holds one).
    fn let_go(&self) {
        let me = self.keeper.borrow_mut().take();
        drop(me);
    }
}

impl Drop for Doomed {
    fn drop(&mut self) {
        panic!("doomed dropped");
    }
}

impl lumina::event::EventHandler for Doomed {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        self.let_go();
        panic!("handler");
    }
}

#[test]
fn r2_dispatch_handler_reference_held_when_a_handler_panics() {
    in_child_process(
        "r2_dispatch_handler_reference_held_when_a_handler_panics",
        || {
            let processor = EventProcessor::new();
            let doomed = Doomed::new();
            assert!(processor.register_event_handler(&doomed, 0));
            drop(doomed);
            assert_guarded("handler", || {
                processor.dispatch(lumina::event::KeyPressedEvent::new(
                    lumina::event::Key::W,
                    lumina::event::Modifiers::NONE,
                ));
            });
            assert!(processor.is_empty());
        },
    );
}

declare_multicast_delegate!(OnPing(n: u32));

#[test]
fn r2_member_owner_reference_held_when_the_call_panics() {
    in_child_process(
        "r2_member_owner_reference_held_when_the_call_panics",
        || {
            let member = |owner: &Doomed| {
                owner.let_go();
                panic!("member");
            };

            let multicast: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
            let _h = multicast.add_member(&Doomed::new(), move |owner, _| member(owner));
            assert_guarded("member", || multicast.broadcast(1));

            let declared = OnPing::new();
            let _h = declared.add_member(&Doomed::new(), move |owner, _| member(owner));
            assert_guarded("member", || declared.broadcast(1));

            let by_reference: MulticastDelegate<dyn Fn(&str)> = MulticastDelegate::new();
            let _h =
                ByReference::add_member(&by_reference, &Doomed::new(), move |owner, _: &str| {
                    member(owner);
                });
            assert_guarded("member", || ByReference::broadcast(&by_reference, "!"));

            let single = Delegate::<dyn Fn(u32)>::create_member(&Doomed::new(), move |owner, _| {
                member(owner);
            });
            assert_guarded("member", || single.execute(1));

            let script = ScriptDelegate::<()>::new();
            let _h = script.add_member(&Doomed::new(), move |owner, _: &()| member(owner));
            assert_guarded("member", || script.broadcast(&()));
        },
    );
}

declare_delegate!(Fuse(bomb: Bomb));

#[test]
fn r2_single_cast_execute_arguments_held_when_unbound() {
    in_child_process("r2_single_cast_execute_arguments_held_when_unbound", || {
        let generic = Delegate::<dyn Fn(Bomb)>::new();
        let (message, log) = panics_with_log(|| generic.execute(Bomb));
        assert!(message.contains("called with nothing bound"), "{message}");
        assert!(log.contains(GUARD_LOG), "{log:?}");

        let declared = Fuse::new();
        let (message, log) = panics_with_log(|| declared.execute(Bomb));
        assert!(message.contains("called with nothing bound"), "{message}");
        assert!(log.contains(GUARD_LOG), "{log:?}");
    });
}

/// An object with a delegate, reached by a queued sender.
struct Player {
    on_hit: MulticastDelegate<dyn Fn(u32)>,
}

impl Drop for Player {
    fn drop(&mut self) {
        panic!("player dropped");
    }
}

#[test]
fn r2_queued_sender_delivery_held_when_the_broadcast_panics() {
    in_child_process(
        "r2_queued_sender_delivery_held_when_the_broadcast_panics",
        || {
            let _game = GameThreadScope::enter();
            let keeper: Rc<RefCell<Option<Rc<Player>>>> = Rc::new(RefCell::new(None));
            let player = Rc::new(Player {
                on_hit: MulticastDelegate::new(),
            });
            let let_go = Rc::clone(&keeper);
            // Drops the test's last reference to the player (the delivery still holds one),
            // then panics.
            let _h = player.on_hit.add_lambda(move |_| {
                let player = let_go.borrow_mut().take();
                drop(player);
                panic!("subscriber");
            });
            let sender = QueuedSender::new(&player, |player: &Player| &player.on_hit);
            *keeper.borrow_mut() = Some(player);
            sender.send(7);
            assert_guarded("subscriber", || {
                main_thread::process_queue();
            });
            assert_eq!(main_thread::pending(), 0);
        },
    );
}

/// Subscribes to a core delegate a closure whose capture's `Drop` panics with "subscriber
/// dropped": the end of the session drops it.
fn subscribe_a_loud_drop_to_core() {
    let capture = Loud("subscriber dropped");
    let _ = CoreDelegates::get()
        .on_module_unloaded()
        .add_lambda(move || {
            let _ = &capture;
        });
}

#[test]
fn r2_game_thread_scope_ended_by_a_panic_drops_its_session_under_the_guard() {
    in_child_process(
        "r2_game_thread_scope_ended_by_a_panic_drops_its_session_under_the_guard",
        || {
            assert_guarded("test body", || {
                let _game = GameThreadScope::enter();
                subscribe_a_loud_drop_to_core();
                let bomb = Bomb;
                main_thread::enqueue(move || forget(bomb));
                panic!("test body");
            });
            // The next session starts fresh.
            let _game = GameThreadScope::enter();
            assert!(!CoreDelegates::get().on_module_unloaded().is_bound());
            assert_eq!(main_thread::process_queue(), 0);
        },
    );
}

#[test]
fn r3_game_thread_scope_end_empties_the_queue_when_a_subscriber_drop_panics() {
    let game = GameThreadScope::enter();
    subscribe_a_loud_drop_to_core();
    let ran = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&ran);
    main_thread::enqueue(move || {
        runs.fetch_add(1, Ordering::SeqCst);
    });
    let (message, _) = panics_with_log(|| drop(game));
    assert_eq!(message, "subscriber dropped");
    // The ended session's task is gone: it does not run in the next scope.
    let _next = GameThreadScope::enter();
    assert_eq!(main_thread::process_queue(), 0);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(!CoreDelegates::get().on_module_unloaded().is_bound());
}

#[test]
fn r3_game_thread_scope_end_drops_every_queued_task_when_their_drops_panic() {
    in_child_process(
        "r3_game_thread_scope_end_drops_every_queued_task_when_their_drops_panic",
        || {
            let dropped = Arc::new(AtomicUsize::new(0));
            let game = GameThreadScope::enter();
            for message in ["first task dropped", "second task dropped"] {
                let loud = Loud(message);
                let counted = Counted(Arc::clone(&dropped));
                main_thread::enqueue(move || {
                    let _ = (&loud, &counted);
                });
            }
            let counted = Counted(Arc::clone(&dropped));
            main_thread::enqueue(move || {
                let _ = &counted;
            });
            let (message, _) = panics_with_log(|| drop(game));
            assert_eq!(message, "first task dropped");
            assert_eq!(dropped.load(Ordering::SeqCst), 3, "every task was dropped");
            let _next = GameThreadScope::enter();
            assert_eq!(main_thread::process_queue(), 0);
        },
    );
}

#[test]
fn r2_viewport_reference_held_when_the_viewport_panics() {
    in_child_process(
        "r2_viewport_reference_held_when_the_viewport_panics",
        || {
            use lumina::event::{InputViewportRegistry, Key, KeyPressedEvent, Modifiers, Rect};
            let processor = EventProcessor::new();
            let registry = Rc::new(InputViewportRegistry::new());
            assert!(registry.register(&processor));
            let doomed = Doomed::new();
            let id = registry.add_viewport(&doomed, Rect::new(0.0, 0.0, 100.0, 100.0));
            assert!(registry.focus(id));
            drop(doomed);
            // The registry's strong reference to the focused viewport is its last one once the
            // viewport lets go of itself in its call.
            assert_guarded("handler", || {
                processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE));
            });
            assert!(!processor.is_broadcasting());
        },
    );
}

#[test]
fn r2_script_delegate_nested_merging_pass_holds_its_listener_under_the_guard() {
    in_child_process(
        "r2_script_delegate_nested_merging_pass_holds_its_listener_under_the_guard",
        || {
            use std::cell::Cell;
            let d = Rc::new(ScriptDelegate::<()>::new());
            let nested = Rc::new(Cell::new(false));
            let weak = Rc::downgrade(&d);
            let in_nested = Rc::clone(&nested);
            // Adds a listener (it waits in the pending list), then broadcasts again: the nested
            // broadcast merges the pending one in, calling clones of the listeners.
            let _a = d.add_lambda(move |()| {
                if !in_nested.replace(true) {
                    let d = weak.upgrade().expect("alive");
                    let _c = d.add_lambda(|()| {});
                    d.broadcast(&());
                }
            });
            let handle = Rc::new(Cell::new(None));
            let own = Rc::clone(&handle);
            let weak = Rc::downgrade(&d);
            let capture = Loud("listener dropped");
            let b = d.add_lambda(move |()| {
                let _ = &capture;
                if let Some(handle) = own.take() {
                    // Removed in its call: the nested pass's clone is its last reference.
                    weak.upgrade().expect("alive").remove(handle);
                    panic!("listener");
                }
            });
            handle.set(Some(b));
            assert_guarded("listener", || d.broadcast(&()));
            assert!(!d.is_broadcasting());
        },
    );
}

/// Runs its closure when dropped: library calls made from a `Drop` that runs while a panic
/// unwinds.
struct WhileUnwinding<F: FnMut()>(F);

impl<F: FnMut()> Drop for WhileUnwinding<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Runs `during` from a `Drop` while the panic "outer" unwinds; asserts that "outer" is what
/// propagates and that the guard logged each of `expected_logs` second panics.
#[track_caller]
fn while_unwinding(expected_logs: usize, during: impl FnMut()) {
    let (got, log) = panics_with_log(|| {
        let _on_unwind = WhileUnwinding(during);
        panic!("outer");
    });
    assert_eq!(got, "outer");
    assert_eq!(log.matches(GUARD_LOG).count(), expected_logs, "{log:?}");
}

/// R2 also holds after a call that returns normally: a call made from a `Drop` that runs while
/// another panic unwinds, whose callee or owner let go of itself, drops the library's last
/// reference under the guard (found by the bus's model: a one-shot listener dropped after its
/// call, in a send made from a payload's `Drop` during an unwind).
#[test]
fn r2_the_last_reference_a_normal_call_held_is_guarded_while_the_thread_unwinds() {
    in_child_process(
        "r2_the_last_reference_a_normal_call_held_is_guarded_while_the_thread_unwinds",
        || {
            // The processor's dispatch, through the handler's address beside its `Weak`.
            /// A handler kept alive only by itself until it is called: it lets go of itself
            /// then and returns normally; its `Drop` panics.
            struct Leaves(RefCell<Option<Rc<Leaves>>>);
            impl lumina::event::EventHandler for Leaves {
                fn on_event(&self, _: &mut dyn Event) -> bool {
                    let me = self.0.borrow_mut().take();
                    drop(me);
                    false
                }
            }
            impl Drop for Leaves {
                fn drop(&mut self) {
                    panic!("leaves dropped");
                }
            }
            while_unwinding(1, || {
                let leaves = Rc::new(Leaves(RefCell::new(None)));
                *leaves.0.borrow_mut() = Some(Rc::clone(&leaves));
                let processor = EventProcessor::new();
                assert!(processor.register_event_handler(&leaves, 0));
                drop(leaves);
                processor.dispatch(lumina::event::KeyPressedEvent::new(
                    lumina::event::Key::W,
                    lumina::event::Modifiers::NONE,
                ));
            });

            // A member binding whose owner lets go of itself: multicast, declared, single-cast.
            let member = |owner: &Doomed| owner.let_go();
            while_unwinding(3, || {
                let multicast: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
                let _h = multicast.add_member(&Doomed::new(), move |owner, _| member(owner));
                multicast.broadcast(1);
                let declared = OnPing::new();
                let _h = declared.add_member(&Doomed::new(), move |owner, _| member(owner));
                declared.broadcast(1);
                let single =
                    Delegate::<dyn Fn(u32)>::create_member(&Doomed::new(), move |owner, _| {
                        member(owner);
                    });
                single.execute(1);
            });
        },
    );
}

/// A method whose owner lets go of itself, then panics (`add_method` takes a `fn`).
fn doomed_method(owner: &Doomed, _: u32) {
    owner.let_go();
    panic!("member");
}

/// Every member form holds the owner's strong reference for the call under the guard (R2):
/// once, method and self-aware bindings of a runtime delegate and of a declared one. A form
/// that held it in a temporary dropped the owner's last reference unguarded while the call
/// unwound (found by the multicast model: `add_member_once`).
#[test]
fn r2_every_member_form_holds_its_owner_under_the_guard() {
    in_child_process(
        "r2_every_member_form_holds_its_owner_under_the_guard",
        || {
            let member = |owner: &Doomed| {
                owner.let_go();
                panic!("member");
            };
            let multicast = || -> MulticastDelegate<dyn Fn(u32)> { MulticastDelegate::new() };

            let once = multicast();
            let _h = once
                .subscribe()
                .once()
                .add_member(&Doomed::new(), move |owner, _| member(owner));
            assert_guarded("member", || once.broadcast(1));
            let method = multicast();
            let _h = method.add_method(&Doomed::new(), doomed_method);
            assert_guarded("member", || method.broadcast(1));
            let aware = multicast();
            let _h = aware
                .subscribe()
                .self_aware()
                .add_member(&Doomed::new(), move |owner, _, _| member(owner));
            assert_guarded("member", || aware.broadcast(1));

            let once = OnPing::new();
            let _h = once
                .subscribe()
                .once()
                .add_member(&Doomed::new(), move |owner, _| member(owner));
            assert_guarded("member", || once.broadcast(1));
            let method = OnPing::new();
            let _h = method.add_method(&Doomed::new(), doomed_method);
            assert_guarded("member", || method.broadcast(1));
            let aware = OnPing::new();
            let _h = aware
                .subscribe()
                .self_aware()
                .add_member(&Doomed::new(), move |owner, _, _| member(owner));
            assert_guarded("member", || aware.broadcast(1));
        },
    );
}

/// R2 for library code that runs while the thread unwinds and drops a user value on its normal
/// path: the event a dispatch made from a `Drop` during a panic is dropped after the dispatch
/// returns, under the guard.
#[test]
fn r2_the_event_of_a_dispatch_made_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_the_event_of_a_dispatch_made_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(1, || {
                let processor = EventProcessor::new();
                let handler = Rc::new(|_: &mut dyn Event| -> bool { false });
                assert!(processor.register_event_handler(&handler, 0));
                assert!(!processor.dispatch(Fragile { id: 2 }));
            });
        },
    );
}

/// A bus payload that panics when dropped.
static DUD: TagKey<Bomb> = TagKey::new("GuardedDrops.Dud", false);

/// The payload of a send (and of a post delivered by `deliver_posted`) made while the thread
/// unwinds is dropped after its delivery under the guard.
#[test]
fn r2_a_bus_payload_sent_or_delivered_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_bus_payload_sent_or_delivered_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(2, || {
                let bus: MessageBus<u32> = MessageBus::new();
                let heard = Rc::new(AtomicUsize::new(0));
                let count = Rc::clone(&heard);
                let _h = bus.listen(&DUD, move |_: &Bomb, _: &Message<'_, u32>| {
                    count.fetch_add(1, Ordering::SeqCst);
                });
                bus.send(&DUD, Bomb);
                bus.post(&DUD, Bomb);
                assert_eq!(bus.deliver_posted(), 1);
                assert_eq!(heard.load(Ordering::SeqCst), 2);
            });
        },
    );
}

/// A callable removed by `remove`, and the ones `clear` removes, are dropped under the guard when
/// the removal runs while the thread unwinds.
#[test]
fn r2_callables_removed_while_the_thread_unwinds_are_dropped_under_the_guard() {
    in_child_process(
        "r2_callables_removed_while_the_thread_unwinds_are_dropped_under_the_guard",
        || {
            // One log for `remove`, one for `clear` (its second panic is dropped with the first).
            while_unwinding(2, || {
                let d: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
                let loud = Loud("removed");
                let handle = d.add_lambda(move |_| {
                    let _ = &loud;
                });
                assert!(d.remove(handle));
                for text in ["cleared 1", "cleared 2"] {
                    let loud = Loud(text);
                    let _ = d.add_lambda(move |_| {
                        let _ = &loud;
                    });
                }
                d.clear();
                assert!(!d.is_bound());
            });
        },
    );
}

/// The accessor of a queued sender, with its captures: the registry entry goes when the last
/// sender is dropped, here from a `Drop` while the thread unwinds.
#[test]
fn r2_a_queued_senders_entry_dropped_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_queued_senders_entry_dropped_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            let _game = GameThreadScope::enter();
            let player = Rc::new(Target {
                on_hit: MulticastDelegate::new(),
            });
            while_unwinding(1, || {
                let sender = QueuedSender::new(&player, loud_accessor(Loud("accessor")));
                drop(sender);
            });
            assert_eq!(main_thread::queued_targets(), 0);
        },
    );
}

/// An object with a delegate whose drop does not panic.
struct Target {
    on_hit: MulticastDelegate<dyn Fn(u32)>,
}

/// A queued sender's accessor that captures `loud`.
fn loud_accessor(loud: Loud) -> impl Fn(&Target) -> &MulticastDelegate<dyn Fn(u32)> + 'static {
    move |target| {
        let _ = &loud;
        &target.on_hit
    }
}

/// A future's value: the broadcast that resolves a `NextBroadcast` and the future's drop run
/// while the thread unwinds; the value it never handed out is dropped under the guard.
#[test]
fn r2_a_futures_value_dropped_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_futures_value_dropped_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(2, || {
                let bus: MessageBus<u32> = MessageBus::new();
                let next = bus.next(&DUD);
                // The send's payload and the future's clone of it.
                bus.send(&DUD, Bomb);
                drop(next);
            });
        },
    );
}

declare_multicast_delegate!(OnBoom(bomb: Bomb));

/// The argument of a broadcast to a delegate with no subscriber is the library's to drop: a
/// broadcast made while the thread unwinds drops it under the guard (generic and declared).
#[test]
fn r2_the_argument_of_a_broadcast_nobody_hears_while_the_thread_unwinds_is_guarded() {
    in_child_process(
        "r2_the_argument_of_a_broadcast_nobody_hears_while_the_thread_unwinds_is_guarded",
        || {
            while_unwinding(2, || {
                let generic: MulticastDelegate<dyn Fn(Bomb)> = MulticastDelegate::new();
                generic.broadcast(Bomb);
                let declared = OnBoom::new();
                declared.broadcast(Bomb);
            });
        },
    );
}

/// A single-cast delegate's callable, dropped by `unbind` called while the thread unwinds.
#[test]
fn r2_a_callable_unbound_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_callable_unbound_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(1, || {
                let loud = Loud("unbound");
                let mut single = Delegate::<dyn Fn()>::create_lambda(move || {
                    let _ = &loud;
                });
                single.unbind();
                assert!(!single.is_bound());
            });
        },
    );
}

/// A waker whose last drop panics.
struct LoudWaker;

impl std::task::Wake for LoudWaker {
    fn wake(self: Arc<Self>) {}
}

impl Drop for LoudWaker {
    fn drop(&mut self) {
        panic!("waker dropped");
    }
}

/// The waker a `NextBroadcast` kept, replaced by a poll made while the thread unwinds: the
/// future drops it under the guard.
#[test]
fn r2_a_waker_a_poll_replaces_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_waker_a_poll_replaces_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(1, || {
                let bus: MessageBus<u32> = MessageBus::new();
                let mut next = Box::pin(bus.next(&DUD));
                let loud = std::task::Waker::from(Arc::new(LoudWaker));
                let mut cx = std::task::Context::from_waker(&loud);
                assert!(next.as_mut().poll(&mut cx).is_pending());
                // The future's clone is the last one now.
                drop(loud);
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(next.as_mut().poll(&mut cx).is_pending());
            });
        },
    );
}

/// A finished `NextBroadcast` polled again from a `Drop` while the thread unwinds: the misuse
/// that panics on a normal path returns `Pending` there, so the process does not abort (R2).
#[test]
fn r2_a_finished_next_polled_again_while_the_thread_unwinds_does_not_abort() {
    in_child_process(
        "r2_a_finished_next_polled_again_while_the_thread_unwinds_does_not_abort",
        || {
            let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
            let mut next = Box::pin(on_hit.next());
            on_hit.broadcast(7);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert_eq!(
                next.as_mut().poll(&mut cx),
                std::task::Poll::Ready(Ok((7,)))
            );
            let mut next = Some(next);
            while_unwinding(0, || {
                let mut next = next.take().expect("one drop");
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(next.as_mut().poll(&mut cx).is_pending());
            });
            // Outside an unwind the misuse still panics.
            let mut again = Box::pin(on_hit.next());
            on_hit.broadcast(8);
            assert!(again.as_mut().poll(&mut cx).is_ready());
            let payload = panic::catch_unwind(AssertUnwindSafe(|| {
                let _ = again.as_mut().poll(&mut cx);
            }))
            .expect_err("a second poll panics");
            let message = panic_message(&*payload);
            assert!(message.contains("polled after it completed"), "{message}");
        },
    );
}

/// A panic payload whose `Drop` panics too.
struct LoudPayload;

impl Drop for LoudPayload {
    fn drop(&mut self) {
        panic!("payload dropped");
    }
}

/// A game module's start-up that panics with a [`LoudPayload`].
fn loud_start_up() {
    std::panic::panic_any(LoudPayload);
}

/// The engine's report sink of the test below: appends to a `String`.
unsafe extern "C" fn append_report(sink: *mut std::ffi::c_void, message: *const u8, len: usize) {
    // SAFETY: `sink` is the `String` the test passes, `message` `len` bytes of UTF-8 for the
    // call (the report's contract).
    let (sink, bytes) = unsafe {
        (
            &mut *sink.cast::<String>(),
            std::slice::from_raw_parts(message, len),
        )
    };
    sink.push_str(std::str::from_utf8(bytes).expect("UTF-8"));
}

/// A module entry point's panic payload is dropped under the guard: `run_entry` returns into the
/// engine's `extern "C"` call, where a panic of the payload's `Drop` would abort the process.
#[test]
fn r2_a_module_entry_panic_payload_whose_drop_panics_is_dropped_under_the_guard() {
    let mut text = String::new();
    let report = lumina::module::EntryReport {
        sink: (&raw mut text).cast(),
        write: append_report,
    };
    // SAFETY: `report` is valid for the call.
    let ran = unsafe { lumina::module::run_entry(&report, loud_start_up) };
    assert!(!ran, "the start-up panicked");
    assert_eq!(text, "a panic with a non-text payload");
}

// ---- Found by the adversarial pass over the newest surfaces (coroutines, the bus, the C ABI) ----

/// A panic payload whose `Drop` panics (a `Loud` with a payload that panics again).
fn panic_with_loud_payload() -> ! {
    std::panic::panic_any(LoudPayload)
}

/// A future whose poll panics with a [`LoudPayload`] and that holds a capture whose `Drop`
/// panics.
struct PanickingTask(#[allow(dead_code)] Loud);

impl std::future::Future for PanickingTask {
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        panic_with_loud_payload()
    }
}

/// A coroutine task that panics with a payload whose `Drop` panics: the executor drops the
/// payload, and then the task, under the guard; the task is gone afterwards. Without it, the
/// payload's panic unwound `poll_task` while it held the task plainly, and its capture's `Drop`
/// aborted the process. Those panics are the task's (X5): reported, and the drain returns.
#[test]
fn r2_a_coroutine_whose_panic_payload_panics_when_dropped_is_dropped_under_the_guard() {
    in_child_process(
        "r2_a_coroutine_whose_panic_payload_panics_when_dropped_is_dropped_under_the_guard",
        || {
            let _game = GameThreadScope::enter();
            let task = lumina::coroutine::spawn_local(PanickingTask(Loud("task dropped")));
            let (ran, log) = capture_tracing(main_thread::process_queue);
            assert_eq!(ran, 1);
            assert!(log.contains("payload dropped"), "{log}");
            assert_eq!(lumina::coroutine::task_count(), 0, "the task was dropped");
            assert_eq!(task.status(), lumina::coroutine::TaskStatus::Panicked);
        },
    );
}

/// A waker whose `wake` panics with a [`LoudPayload`].
struct PayloadWaker;

impl std::task::Wake for PayloadWaker {
    fn wake(self: Arc<Self>) {
        panic_with_loud_payload();
    }
}

/// Frame waiters: one whose `wake` panics with a payload whose `Drop` panics, then one whose
/// `Drop` panics. Every waiter is still woken (and dropped under the guard); the first panic
/// propagates. Without it, the payload's panic unwound the wake loop, which dropped the
/// waiters not yet woken plainly: an abort.
#[test]
fn r2_frame_waiters_after_one_whose_panic_payload_panics_are_woken_and_guarded() {
    in_child_process(
        "r2_frame_waiters_after_one_whose_panic_payload_panics_are_woken_and_guarded",
        || {
            let _game = GameThreadScope::enter();
            main_thread::wake_next_frame(std::task::Waker::from(Arc::new(PayloadWaker)));
            main_thread::wake_next_frame(std::task::Waker::from(Arc::new(LoudWaker)));
            let (got, _) = panics_with_log(|| {
                main_thread::process_queue();
            });
            assert_eq!(got, "payload dropped");
        },
    );
}

/// Two retained tags under one parent.
static KEPT_A: TagKey<Bomb> = TagKey::new("GuardedDrops.Kept.A", true);
static KEPT_B: TagKey<Bomb> = TagKey::new("GuardedDrops.Kept.B", true);

/// A partial listener hears two retained messages at once and clears both meanwhile: the
/// replay's clones are their last references. The first one's `Drop` panics after its replay;
/// the second one, not replayed yet, is dropped under the guard while that panic unwinds.
/// Without it, the replay's list of clones was dropped plainly: an abort.
#[test]
fn r2_the_retained_messages_a_replay_holds_are_dropped_under_the_guard() {
    in_child_process(
        "r2_the_retained_messages_a_replay_holds_are_dropped_under_the_guard",
        || {
            let bus = Rc::new(MessageBus::<u32>::new());
            bus.send(&KEPT_A, Bomb);
            bus.send(&KEPT_B, Bomb);
            let weak = Rc::downgrade(&bus);
            let parent = KEPT_A.tag().parent().expect("a parent tag");
            assert_guarded("bomb dropped", || {
                let _ = bus
                    .subscribe()
                    .partial()
                    .listen(parent, move |_: &Message<'_, u32>| {
                        if let Some(bus) = weak.upgrade() {
                            bus.clear_retained(&KEPT_A);
                            bus.clear_retained(&KEPT_B);
                        }
                    });
            });
        },
    );
}

/// A retained tag of plain numbers.
static KEPT_NUMBER: TagKey<u32> = TagKey::new("GuardedDrops.KeptNumber", true);

/// A one-shot listener hears a retained message at once: it removes itself before its code
/// runs, so the reference the listen holds for the replay is its last. Its code panics: that
/// reference (with a capture whose `Drop` panics) is dropped under the guard. Without it, the
/// listen dropped it plainly while the panic unwound: an abort.
#[test]
fn r2_the_listener_a_replay_holds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_the_listener_a_replay_holds_is_dropped_under_the_guard",
        || {
            let bus = MessageBus::<u32>::new();
            bus.send(&KEPT_NUMBER, 1);
            let loud = Loud("listener dropped");
            assert_guarded("listener", || {
                let _ = bus.subscribe().once().listen(
                    &KEPT_NUMBER,
                    move |_: &u32, _: &Message<'_, u32>| {
                        let _ = &loud;
                        panic!("listener");
                    },
                );
            });
            assert!(bus.subscriptions().is_empty());
        },
    );
}

/// Two tags of the bus-clear test below.
static CLEARED_A: TagKey<u32> = TagKey::new("GuardedDrops.Cleared.A", false);
static CLEARED_B: TagKey<u32> = TagKey::new("GuardedDrops.Cleared.B", false);

/// R3: a bus's `clear` clears every channel even when a listener's `Drop` panics, then resumes
/// that panic. Without it, the first panicking channel stopped the clear: the other channels'
/// listeners stayed, and went on hearing.
#[test]
fn r3_a_bus_clear_clears_every_channel_when_a_listener_drop_panics() {
    let bus: MessageBus<u32> = MessageBus::new();
    let heard = Rc::new(AtomicUsize::new(0));
    for key in [&CLEARED_A, &CLEARED_B] {
        let loud = Loud("listener dropped");
        let count = Rc::clone(&heard);
        let _ = bus.listen(key, move |_: &u32, _: &Message<'_, u32>| {
            let _ = &loud;
            count.fetch_add(1, Ordering::SeqCst);
        });
    }
    let loud = Loud("listener dropped");
    let _ = bus
        .subscribe()
        .entity(7)
        .listen(&CLEARED_A, move |_: &u32, _: &Message<'_, u32>| {
            let _ = &loud;
        });
    let (got, _) = panics_with_log(|| bus.clear());
    assert_eq!(got, "listener dropped");
    assert!(bus.subscriptions().is_empty(), "R3: a clear still clears");
    bus.send(&CLEARED_A, 1);
    bus.send(&CLEARED_B, 1);
    assert_eq!(heard.load(Ordering::SeqCst), 0);
}

/// A payload scripts send.
#[lumina::script_delegate]
#[derive(Clone, Copy)]
struct Shot {
    power: u32,
}

lumina::gameplay_tags! {
    mod script_tags {
        GuardedDrops.Script {
            #[script]
            Shot: Shot,
        },
    }
}

/// SD5 with R2: a script's send through the C ABI reaches a Rust listener that panics with a
/// payload whose `Drop` panics. The call returns `Panicked` and the payload is dropped under the
/// guard. Without it, the C ABI's guard dropped the payload plainly and its panic unwound out of
/// the `extern "C"` function: an abort.
#[test]
fn r2_sd5_a_panic_payload_caught_at_the_c_abi_is_dropped_under_the_guard() {
    in_child_process(
        "r2_sd5_a_panic_payload_caught_at_the_c_abi_is_dropped_under_the_guard",
        || {
            use lumina::ffi::{LuminaPayloadInfo, LuminaStatus, lumina_bus_send};
            let bus: MessageBus = MessageBus::new();
            let _ = bus.listen(&script_tags::GUARDED_DROPS_SCRIPT_SHOT, |_: &Shot, _| {
                panic_with_loud_payload();
            });
            let mut layout = std::mem::MaybeUninit::<LuminaPayloadInfo>::uninit();
            let name = "Shot";
            // SAFETY: a live name; a local out pointer, read only after `Ok`.
            let layout = unsafe {
                assert_eq!(
                    lumina::ffi::lumina_reflect_find_payload(
                        name.as_ptr(),
                        name.len(),
                        layout.as_mut_ptr()
                    ),
                    LuminaStatus::Ok
                );
                layout.assume_init()
            };
            let tag = "GuardedDrops.Script.Shot";
            let shot = Shot { power: 3 };
            // SAFETY: a live bus, tag name, payload and layout.
            let status = unsafe {
                lumina_bus_send(
                    &bus,
                    tag.as_ptr(),
                    tag.len(),
                    0,
                    0,
                    std::ptr::from_ref(&shot).cast(),
                    size_of::<Shot>(),
                    &layout,
                )
            };
            assert_eq!(status, LuminaStatus::Panicked);
        },
    );
}

/// Runs `body` on a thread of its own and waits for it: its thread-locals are destroyed when it
/// exits, where a panic cannot propagate (it aborts the process).
fn on_a_thread_that_exits(body: impl FnOnce() + Send + 'static) {
    std::thread::spawn(body)
        .join()
        .expect("the thread ends normally");
}

/// R2 at a thread's exit: coroutine tasks still alive when their game thread exits are dropped
/// under the guard with the thread-local that holds them, a panic of a `Drop` logged. Without
/// it, the thread-local's destructor panicked: an abort ("thread local panicked on drop"). The
/// thread is designated for good: a scope's end would drop the tasks first.
#[test]
fn r2_coroutine_tasks_left_at_their_threads_exit_are_dropped_under_the_guard() {
    in_child_process(
        "r2_coroutine_tasks_left_at_their_threads_exit_are_dropped_under_the_guard",
        || {
            on_a_thread_that_exits(|| {
                main_thread::designate_game_thread();
                for text in ["task 1 dropped", "task 2 dropped"] {
                    let loud = Loud(text);
                    let _ = lumina::coroutine::spawn_local(async move {
                        let _ = &loud;
                    });
                }
            });
        },
    );
}

/// R2 at a thread's exit: the frame waiters a game thread leaves (designated for good, it never
/// ends a session) are dropped under the guard. Without it: an abort.
#[test]
fn r2_frame_waiters_left_at_their_threads_exit_are_dropped_under_the_guard() {
    in_child_process(
        "r2_frame_waiters_left_at_their_threads_exit_are_dropped_under_the_guard",
        || {
            on_a_thread_that_exits(|| {
                main_thread::designate_game_thread();
                main_thread::wake_next_frame(std::task::Waker::from(Arc::new(LoudWaker)));
                main_thread::wake_next_frame(std::task::Waker::from(Arc::new(LoudWaker)));
            });
        },
    );
}

/// R2 at a thread's exit: the registry entry of a queued sender that outlives its game thread
/// (held by another thread) is dropped with the game thread's thread-local, under the guard.
/// Without it, its accessor's capture panicked in the thread-local's destructor: an abort.
#[test]
fn r2_queued_senders_outliving_their_game_thread_are_dropped_under_the_guard() {
    in_child_process(
        "r2_queued_senders_outliving_their_game_thread_are_dropped_under_the_guard",
        || {
            let (keep, kept) = std::sync::mpsc::channel();
            on_a_thread_that_exits(move || {
                let _game = GameThreadScope::enter();
                let player = Rc::new(Target {
                    on_hit: MulticastDelegate::new(),
                });
                for text in ["accessor 1", "accessor 2"] {
                    let sender = QueuedSender::new(&player, loud_accessor(Loud(text)));
                    keep.send(sender).expect("the test keeps it");
                }
            });
            drop(kept);
        },
    );
}

/// The bus's entity relation is user code called through a clone of it (so it may replace
/// itself). One that replaces itself and then panics leaves that clone its last reference: the
/// bus drops it under the guard. Without it, the clone was dropped plainly while the panic
/// unwound, and a capture whose `Drop` panics aborted.
#[test]
fn r2_an_entity_relation_that_replaces_itself_and_panics_is_dropped_under_the_guard() {
    in_child_process(
        "r2_an_entity_relation_that_replaces_itself_and_panics_is_dropped_under_the_guard",
        || {
            let bus = Rc::new(MessageBus::<u32>::new());
            // An entity channel, so that addressed messages bubble.
            let _ = bus
                .subscribe()
                .entity(9)
                .listen(&CLEARED_A, |_: &u32, _: &Message<'_, u32>| {});
            let weak = Rc::downgrade(&bus);
            let loud = Loud("relation dropped");
            bus.set_entity_parents(move |_| {
                let _ = &loud;
                if let Some(bus) = weak.upgrade() {
                    bus.set_entity_parents(|_| None);
                }
                panic!("relation");
            });
            assert_guarded("relation", || bus.send_to(&CLEARED_A, 1, 5));
        },
    );
}

/// R3: a game-thread session's end drops the coroutine tasks it leaves, every one of them even
/// when their `Drop`s panic, then resumes the first panic; the next session starts with no task.
/// (Before, the next session's first spawn dropped them, in that session.)
#[test]
fn r3_a_sessions_end_drops_every_task_when_their_drops_panic() {
    in_child_process(
        "r3_a_sessions_end_drops_every_task_when_their_drops_panic",
        || {
            let ended = GameThreadScope::enter();
            let handles: Vec<_> = ["task 1 dropped", "task 2 dropped"]
                .into_iter()
                .map(|text| {
                    let loud = Loud(text);
                    lumina::coroutine::spawn_local(async move {
                        let _ = &loud;
                    })
                })
                .collect();
            let (got, _) = panics_with_log(|| drop(ended));
            assert!(got.starts_with("task "), "{got}");
            for handle in &handles {
                assert_eq!(handle.status(), lumina::coroutine::TaskStatus::Abandoned);
            }
            let _game = GameThreadScope::enter();
            assert_eq!(lumina::coroutine::task_count(), 0);
        },
    );
}

/// Queued senders' registry entries whose objects died are pruned together: each is dropped on
/// its own. Without it they were dropped as one `Vec`, whose drop went on dropping the others
/// while the first accessor's panic unwound: the second aborted the process.
#[test]
fn r2_dead_queued_sender_entries_pruned_together_are_dropped_one_at_a_time() {
    in_child_process(
        "r2_dead_queued_sender_entries_pruned_together_are_dropped_one_at_a_time",
        || {
            let _game = GameThreadScope::enter();
            let mut senders = Vec::new();
            let mut objects = Vec::new();
            for text in ["accessor 1", "accessor 2"] {
                let object = Rc::new(Target {
                    on_hit: MulticastDelegate::new(),
                });
                senders.push(QueuedSender::new(&object, loud_accessor(Loud(text))));
                objects.push(object);
            }
            drop(objects);
            let (got, _) = panics_with_log(|| {
                let _ = main_thread::queued_targets();
            });
            assert!(got.starts_with("accessor "), "{got}");
            assert_eq!(main_thread::queued_targets(), 0);
            drop(senders);
        },
    );
}

/// A retained tag whose message panics when dropped.
static KEPT_BOMB: TagKey<Bomb> = TagKey::new("GuardedDrops.KeptBomb", true);

/// A bus dropped with a channel whose listener's capture and retained message both panic when
/// dropped: the channel drops each under the guard. Without it, the channel's list resumed the
/// listener's panic and the retained message was dropped while it unwound: an abort.
#[test]
fn r2_a_channel_drops_its_listeners_and_retained_message_each_under_the_guard() {
    in_child_process(
        "r2_a_channel_drops_its_listeners_and_retained_message_each_under_the_guard",
        || {
            let bus: MessageBus<u32> = MessageBus::new();
            bus.send(&KEPT_BOMB, Bomb);
            let loud = Loud("listener dropped");
            let _ = bus.listen(&KEPT_BOMB, move |_: &Bomb, _: &Message<'_, u32>| {
                let _ = &loud;
            });
            let (got, _) = panics_with_log(|| drop(bus));
            assert_eq!(got, "listener dropped");
        },
    );
}

/// An argument whose `Clone` panics when `.0` is true; its `Drop` does not panic.
struct Sharp(bool);

impl Clone for Sharp {
    fn clone(&self) -> Self {
        assert!(!self.0, "argument clone");
        Sharp(false)
    }
}

/// Asserts that `f` panics with `message` and that the guard logged exactly `logs` second
/// panics.
#[track_caller]
fn assert_guarded_times(message: &str, logs: usize, f: impl FnOnce()) {
    let (got, log) = panics_with_log(f);
    assert_eq!(got, message);
    assert_eq!(log.matches(GUARD_LOG).count(), logs, "{log:?}");
}

/// A subscriber that counts its calls and forgets its arguments (a `Bomb`'s drop panics).
fn forgetting<A, B, R: Default>(calls: &Rc<Cell<u32>>) -> impl Fn(A, B) -> R + 'static {
    let calls = Rc::clone(calls);
    move |a, b| {
        calls.set(calls.get() + 1);
        forget((a, b));
        R::default()
    }
}

/// The delegate after a broadcast whose argument clone panicked (M7): nothing ran, the list is
/// whole, and the next broadcast (`broadcast`, whose clone does not panic) reaches every
/// subscriber.
#[track_caller]
fn assert_consistent(calls: &Rc<Cell<u32>>, len: usize, broadcast: impl Fn()) {
    assert_eq!(calls.get(), 0, "no subscriber ran");
    assert_eq!(len, 2);
    broadcast();
    assert_eq!(calls.get(), 2);
    calls.set(0);
}

/// M11 clones an owned argument tuple for every subscriber but the last, element by element.
/// When the clone of a later element panics, the clones of the earlier ones are made: they are
/// dropped under the guard (with the original arguments), so an earlier element whose `Drop`
/// panics too does not abort the process (R2), and the delegate stays usable (M7). Without the
/// guard, the std tuple's `Clone` dropped the finished clone plainly while unwinding: an abort.
/// Every form of the generic delegate's broadcast goes through that clone.
#[test]
fn r2_m11_a_generic_argument_clone_panicking_part_way_drops_the_finished_elements_guarded() {
    in_child_process(
        "r2_m11_a_generic_argument_clone_panicking_part_way_drops_the_finished_elements_guarded",
        || {
            let d: MulticastDelegate<dyn Fn(Bomb, Sharp) -> u32> = MulticastDelegate::new();
            let calls = Rc::new(Cell::new(0));
            let _a = d.add_lambda(forgetting(&calls));
            let _b = d.add_lambda(forgetting(&calls));
            let again = || d.broadcast(Bomb, Sharp(false));
            // The clone of `Bomb` (made) and the original `Bomb`: two panicking drops.
            assert_guarded_times("argument clone", 2, || d.broadcast(Bomb, Sharp(true)));
            assert_consistent(&calls, d.len(), again);
            assert!(!d.is_broadcasting());
            assert_guarded_times("argument clone", 2, || {
                forget(d.broadcast_collect(Bomb, Sharp(true)));
            });
            assert_consistent(&calls, d.len(), again);
            assert!(!d.is_broadcasting());
            assert_guarded_times("argument clone", 2, || {
                d.broadcast_fold(Bomb, Sharp(true), 0, |sum, one| {
                    std::ops::ControlFlow::Continue(sum + one)
                });
            });
            assert_consistent(&calls, d.len(), again);
            assert!(!d.is_broadcasting());
            assert_guarded_times("argument clone", 2, || {
                d.broadcast_until(Bomb, Sharp(true), |_| {
                    std::ops::ControlFlow::<()>::Continue(())
                });
            });
            assert_consistent(&calls, d.len(), again);
            assert!(!d.is_broadcasting());
            // A future of the next broadcast is a subscriber like the others: its arguments
            // are the broadcast's clone.
            let next = d.next();
            assert_guarded_times("argument clone", 2, || d.broadcast(Bomb, Sharp(true)));
            assert_eq!(d.len(), 3, "the future's subscription did not fire");
            drop(next);
            assert_consistent(&calls, d.len(), again);
            assert!(!d.is_broadcasting());
        },
    );
}

declare_multicast_delegate!(OnPair(bomb: Bomb, sharp: Sharp));
declare_multicast_delegate!(OnPairAsk(bomb: Bomb, sharp: Sharp) -> u32);

/// [`r2_m11_a_generic_argument_clone_panicking_part_way_drops_the_finished_elements_guarded`]
/// for declared delegates, whose expansion writes the element-wise clone: `broadcast`,
/// `broadcast_collect`, `broadcast_fold` and `broadcast_until`.
#[test]
fn r2_m11_a_declared_argument_clone_panicking_part_way_drops_the_finished_elements_guarded() {
    in_child_process(
        "r2_m11_a_declared_argument_clone_panicking_part_way_drops_the_finished_elements_guarded",
        || {
            let calls = Rc::new(Cell::new(0));
            let plain = OnPair::new();
            let _a = plain.add_lambda(forgetting(&calls));
            let _b = plain.add_lambda(forgetting(&calls));
            assert_guarded_times("argument clone", 2, || plain.broadcast(Bomb, Sharp(true)));
            assert_consistent(&calls, plain.len(), || {
                plain.broadcast(Bomb, Sharp(false));
            });

            let ask = OnPairAsk::new();
            let _a = ask.add_lambda(forgetting(&calls));
            let _b = ask.add_lambda(forgetting(&calls));
            let again = || forget(ask.broadcast_collect(Bomb, Sharp(false)));
            assert_guarded_times("argument clone", 2, || ask.broadcast(Bomb, Sharp(true)));
            assert_consistent(&calls, ask.len(), again);
            assert_guarded_times("argument clone", 2, || {
                forget(ask.broadcast_collect(Bomb, Sharp(true)));
            });
            assert_consistent(&calls, ask.len(), again);
            assert_guarded_times("argument clone", 2, || {
                ask.broadcast_fold(Bomb, Sharp(true), 0, |sum, one| {
                    std::ops::ControlFlow::Continue(sum + one)
                });
            });
            assert_consistent(&calls, ask.len(), again);
            assert_guarded_times("argument clone", 2, || {
                ask.broadcast_until(Bomb, Sharp(true), |_| {
                    std::ops::ControlFlow::<()>::Continue(())
                });
            });
            assert_consistent(&calls, ask.len(), again);
        },
    );
}

declare_multicast_delegate!(OnSeen(bomb: &Bomb, sharp: &Sharp, owned: Bomb));

/// A declared delegate's `next()` makes owned copies of its referenced arguments (`ToOwned`),
/// element by element, in its subscriber: when one panics, the copies already made and the
/// owned arguments it was handed are dropped under the guard (R2), not plainly while unwinding.
#[test]
fn r2_x5_a_declared_next_whose_to_owned_panics_part_way_drops_its_arguments_guarded() {
    in_child_process(
        "r2_x5_a_declared_next_whose_to_owned_panics_part_way_drops_its_arguments_guarded",
        || {
            let d = OnSeen::new();
            let next = d.next();
            let bomb = Bomb;
            // The copy of `bomb` (made) and the owned `Bomb`: two panicking drops.
            assert_guarded_times("argument clone", 2, || {
                d.broadcast(&bomb, &Sharp(true), Bomb);
            });
            // Its subscriber panicked before it fired: the future still waits, and dropping it
            // unsubscribes.
            assert!(d.is_bound());
            drop(next);
            assert!(!d.is_bound());
            // Usable afterwards (M7).
            let calls = Rc::new(Cell::new(0));
            let seen = Rc::clone(&calls);
            let _h = d.add_lambda(move |_, _, owned| {
                seen.set(seen.get() + 1);
                forget(owned);
            });
            d.broadcast(&bomb, &Sharp(false), Bomb);
            forget(bomb);
            assert_eq!(calls.get(), 1);
        },
    );
}

/// An object with a two-argument delegate, reached by a queued sender.
struct Pairs {
    generic: MulticastDelegate<dyn Fn(Bomb, Sharp)>,
    declared: OnPair,
}

/// A queued broadcast delivers through the same broadcast, so through the same element-wise
/// clone: its finished elements are dropped under the guard when a later one's clone panics,
/// on the game thread's `process_queue` (generic and declared delegates).
#[test]
fn r2_m11_a_queued_broadcasts_argument_clone_panicking_part_way_drops_them_guarded() {
    in_child_process(
        "r2_m11_a_queued_broadcasts_argument_clone_panicking_part_way_drops_them_guarded",
        || {
            let _game = GameThreadScope::enter();
            let pairs = Rc::new(Pairs {
                generic: MulticastDelegate::new(),
                declared: OnPair::new(),
            });
            let calls = Rc::new(Cell::new(0));
            for _ in 0..2 {
                let _ = pairs.generic.add_lambda(forgetting(&calls));
                let _ = pairs.declared.add_lambda(forgetting(&calls));
            }
            let generic = QueuedSender::new(&pairs, |pairs: &Pairs| &pairs.generic);
            let declared = QueuedSender::new(&pairs, |pairs: &Pairs| &pairs.declared);
            for sender in [&generic, &declared] {
                sender.send(Bomb, Sharp(true));
                assert_guarded_times("argument clone", 2, || {
                    main_thread::process_queue();
                });
                assert_eq!(main_thread::pending(), 0);
                sender.send(Bomb, Sharp(false));
                main_thread::process_queue();
                assert_eq!(calls.get(), 2, "the delegate works after the panic (M7)");
                calls.set(0);
            }
            assert_eq!((pairs.generic.len(), pairs.declared.len()), (2, 2));
        },
    );
}

/// `broadcast_fold` holds the caller's accumulator and combiner, and `broadcast_until` its
/// combiner, while subscribers run: a subscriber's panic drops them under the guard (R2), so an
/// accumulator or a combiner's capture whose `Drop` panics does not abort the process (generic
/// and declared delegates).
#[test]
fn r2_x7_a_folds_accumulator_and_combiner_are_held_when_a_subscriber_panics() {
    in_child_process(
        "r2_x7_a_folds_accumulator_and_combiner_are_held_when_a_subscriber_panics",
        || {
            let owned: MulticastDelegate<dyn Fn(u32) -> u32> = MulticastDelegate::new();
            let _a = owned.add_lambda(|x| x);
            let _b = owned.add_lambda(|_| panic!("subscriber"));
            let declared = OnAsk::new();
            let _a = declared.add_lambda(|_| Bomb);
            let _b = declared.add_lambda(|_| panic!("subscriber"));
            // The accumulator and the combiner's capture: two panicking drops.
            assert_guarded_times("subscriber", 2, || {
                let capture = Loud("combiner dropped");
                owned.broadcast_fold(1, Bomb, move |sum, _| {
                    let _ = &capture;
                    std::ops::ControlFlow::Continue(sum)
                });
            });
            assert_guarded_times("subscriber", 1, || {
                let capture = Loud("combiner dropped");
                owned.broadcast_until(1, move |_| {
                    let _ = &capture;
                    std::ops::ControlFlow::<()>::Continue(())
                });
            });
            // The first result is handed to the combiner, which forgets it.
            assert_guarded_times("subscriber", 2, || {
                let capture = Loud("combiner dropped");
                declared.broadcast_fold("?", Bomb, move |sum, result| {
                    let _ = &capture;
                    forget(result);
                    std::ops::ControlFlow::Continue(sum)
                });
            });
            assert_guarded_times("subscriber", 1, || {
                let capture = Loud("combiner dropped");
                declared.broadcast_until("?", move |result| {
                    let _ = &capture;
                    forget(result);
                    std::ops::ControlFlow::<()>::Continue(())
                });
            });
            assert_eq!((owned.len(), declared.len()), (2, 2));
            assert!(!owned.is_broadcasting());
        },
    );
}

// ---- The sweep of values the library holds outside the multicast delegates ----

// A declared single-cast delegate of two arguments whose `Drop`s panic.
declare_delegate!(Fuses(a: Bomb, b: Bomb));

/// `execute_if_bound` with nothing bound (or a member binding whose object is gone) returns
/// `None`: its arguments are then the library's to drop. Called while the thread unwinds, it
/// drops them under the guard, each on its own (generic and declared delegates, both unbound
/// forms; each logs two second panics). Without it, the unrun call dropped them plainly while
/// the panic unwound: an abort.
#[test]
fn r2_s3_the_arguments_of_an_unbound_execute_if_bound_while_the_thread_unwinds_are_guarded() {
    in_child_process(
        "r2_s3_the_arguments_of_an_unbound_execute_if_bound_while_the_thread_unwinds_are_guarded",
        || {
            while_unwinding(8, || {
                let generic = Delegate::<dyn Fn(Bomb, Bomb)>::new();
                assert!(generic.execute_if_bound(Bomb, Bomb).is_none());
                let declared = Fuses::new();
                assert!(declared.execute_if_bound(Bomb, Bomb).is_none());
                // Member bindings whose object was dropped.
                let owner = Rc::new(0_u32);
                let generic = Delegate::<dyn Fn(Bomb, Bomb)>::create_member(&owner, |_, a, b| {
                    forget((a, b));
                });
                let declared = Fuses::create_member(&owner, |_: &u32, a, b| forget((a, b)));
                drop(owner);
                assert!(generic.execute_if_bound(Bomb, Bomb).is_none());
                assert!(declared.execute_if_bound(Bomb, Bomb).is_none());
            });
        },
    );
}

/// An unbound `execute` of two arguments whose `Drop`s panic (S2): its panic drops them under
/// the guard each on its own. Held as one guarded tuple, the tuple's drop went on to the second
/// argument plainly while the first one's panic unwound: an abort (generic and declared).
#[test]
fn r2_s2_an_unbound_execute_drops_each_of_its_arguments_under_the_guard() {
    in_child_process(
        "r2_s2_an_unbound_execute_drops_each_of_its_arguments_under_the_guard",
        || {
            let generic = Delegate::<dyn Fn(Bomb, Bomb)>::new();
            let (message, log) = panics_with_log(|| generic.execute(Bomb, Bomb));
            assert!(message.contains("called with nothing bound"), "{message}");
            assert_eq!(log.matches(GUARD_LOG).count(), 2, "{log:?}");

            let declared = Fuses::new();
            let (message, log) = panics_with_log(|| declared.execute(Bomb, Bomb));
            assert!(message.contains("called with nothing bound"), "{message}");
            assert_eq!(log.matches(GUARD_LOG).count(), 2, "{log:?}");
        },
    );
}

/// A tag of numbers, sent a [`Bomb`] by name.
static REFUSES: TagKey<u32> = TagKey::new("GuardedDrops.Refuses", false);

/// A payload the bus refuses is the library's to drop: `send_tag` with a payload type other
/// than the tag's returns `WrongPayload`, and made while the thread unwinds, it drops the payload
/// under the guard. Without it, the early return dropped it plainly: an abort.
#[test]
fn r2_gb2_a_payload_send_tag_refuses_while_the_thread_unwinds_is_dropped_under_the_guard() {
    in_child_process(
        "r2_gb2_a_payload_send_tag_refuses_while_the_thread_unwinds_is_dropped_under_the_guard",
        || {
            while_unwinding(1, || {
                let bus: MessageBus<u32> = MessageBus::new();
                bus.send(&REFUSES, 1);
                let tag = lumina::bus::Tag::from(&REFUSES);
                assert!(bus.send_tag(tag, None, Bomb).is_err());
            });
        },
    );
}

/// An object with a delegate of [`Bomb`]s, reached by a queued sender.
struct Bombed {
    on_bomb: MulticastDelegate<dyn Fn(Bomb)>,
}

/// A queued send whose delegate's entry is gone by its delivery (the object died and the
/// registry pruned it): the arguments are the library's to drop, and a `process_queue` run
/// while the thread unwinds drops them under the guard. Without it, the delivery dropped them
/// plainly: an abort.
#[test]
fn r2_q_the_arguments_of_a_queued_send_whose_entry_is_gone_are_dropped_under_the_guard() {
    in_child_process(
        "r2_q_the_arguments_of_a_queued_send_whose_entry_is_gone_are_dropped_under_the_guard",
        || {
            let _game = GameThreadScope::enter();
            let object = Rc::new(Bombed {
                on_bomb: MulticastDelegate::new(),
            });
            let sender = QueuedSender::new(&object, |object: &Bombed| &object.on_bomb);
            sender.send(Bomb);
            drop(object);
            assert_eq!(main_thread::queued_targets(), 0);
            while_unwinding(1, || {
                assert_eq!(main_thread::process_queue(), 1);
            });
            drop(sender);
        },
    );
}

/// A name declared with numbers, resolved first.
static CONFLICT_FIRST: TagKey<u32> = TagKey::new("GuardedDrops.Conflict", false);
/// The same name declared with [`Bomb`]s: resolving it panics (GB2).
static CONFLICT_BOMB: TagKey<Bomb> = TagKey::new("GuardedDrops.Conflict", false);

/// Resolving a key whose name another set declared with another payload type panics (GB2)
/// inside the bus's call, which owns the caller's payload or listener meanwhile: each is dropped
/// under the guard (send, send_to, post, post_to, a poster's post, every listen form). Without
/// it, the call dropped them plainly while the conflict's panic unwound: an abort.
#[test]
fn r2_gb2_a_key_that_fails_to_resolve_drops_the_callers_payload_or_listener_guarded() {
    in_child_process(
        "r2_gb2_a_key_that_fails_to_resolve_drops_the_callers_payload_or_listener_guarded",
        || {
            let bus: MessageBus<u32> = MessageBus::new();
            bus.send(&CONFLICT_FIRST, 1);
            let conflict = |what: &str, f: &mut dyn FnMut()| {
                let (message, log) = panics_with_log(f);
                assert!(
                    message.contains("GuardedDrops.Conflict"),
                    "{what}: {message}"
                );
                assert!(
                    log.contains(GUARD_LOG),
                    "{what}: the guard logged nothing: {log:?}"
                );
            };
            conflict("send", &mut || bus.send(&CONFLICT_BOMB, Bomb));
            conflict("send_to", &mut || bus.send_to(&CONFLICT_BOMB, 3, Bomb));
            conflict("post", &mut || bus.post(&CONFLICT_BOMB, Bomb));
            conflict("post_to", &mut || bus.post_to(&CONFLICT_BOMB, 3, Bomb));
            let poster = bus.poster();
            conflict("poster", &mut || {
                let _ = poster.post(&CONFLICT_BOMB, Bomb);
            });
            conflict("poster to", &mut || {
                let _ = poster.post_to(&CONFLICT_BOMB, 3, Bomb);
            });
            let exact = || {
                let loud = Loud("listener dropped");
                move |_: &Bomb, _: &Message<'_, u32>| {
                    let _ = &loud;
                }
            };
            let partial = || {
                let loud = Loud("listener dropped");
                move |_: &Message<'_, u32>| {
                    let _ = &loud;
                }
            };
            conflict("listen", &mut || {
                let _ = bus.listen(&CONFLICT_BOMB, exact());
            });
            conflict("subscribe().priority", &mut || {
                let _ = bus.subscribe().priority(1).listen(&CONFLICT_BOMB, exact());
            });
            conflict("subscribe().entity", &mut || {
                let _ = bus.subscribe().entity(3).listen(&CONFLICT_BOMB, exact());
            });
            conflict("subscribe().once", &mut || {
                let _ = bus.subscribe().once().listen(&CONFLICT_BOMB, exact());
            });
            conflict("subscribe().once().entity", &mut || {
                let _ = bus
                    .subscribe()
                    .once()
                    .entity(3)
                    .listen(&CONFLICT_BOMB, exact());
            });
            conflict("subscribe().partial", &mut || {
                let _ = bus.subscribe().partial().listen(&CONFLICT_BOMB, partial());
            });
            conflict("subscribe().priority().partial", &mut || {
                let _ = bus
                    .subscribe()
                    .priority(1)
                    .partial()
                    .listen(&CONFLICT_BOMB, partial());
            });
            conflict("subscribe().partial().entity", &mut || {
                let _ = bus
                    .subscribe()
                    .partial()
                    .entity(3)
                    .listen(&CONFLICT_BOMB, partial());
            });
            conflict("subscribe().once().partial", &mut || {
                let _ = bus
                    .subscribe()
                    .once()
                    .partial()
                    .listen(&CONFLICT_BOMB, partial());
            });
            conflict("subscribe().once().partial().entity", &mut || {
                let _ = bus
                    .subscribe()
                    .once()
                    .partial()
                    .entity(3)
                    .listen(&CONFLICT_BOMB, partial());
            });
            assert!(bus.subscriptions().is_empty());
        },
    );
}

/// Operations of the game thread refused elsewhere (T1) own the caller's value while they panic:
/// `spawn_local`'s future, `wake_next_frame`'s waker, `QueuedSender::new`'s accessor. Each is
/// dropped under the guard. Without it, the refusal dropped them plainly while its panic
/// unwound: an abort.
#[test]
fn r2_t1_a_game_thread_operation_refused_elsewhere_drops_the_callers_value_guarded() {
    in_child_process(
        "r2_t1_a_game_thread_operation_refused_elsewhere_drops_the_callers_value_guarded",
        || {
            assert!(!main_thread::is_game_thread());
            let refused = |what: &str, f: &mut dyn FnMut()| {
                let (message, log) = panics_with_log(f);
                assert!(message.contains(what), "{what}: {message}");
                assert!(
                    log.contains(GUARD_LOG),
                    "{what}: the guard logged nothing: {log:?}"
                );
            };
            refused("spawn_local", &mut || {
                let loud = Loud("future dropped");
                let _ = lumina::coroutine::spawn_local(async move {
                    let _ = &loud;
                });
            });
            refused("wake_next_frame", &mut || {
                main_thread::wake_next_frame(std::task::Waker::from(Arc::new(LoudWaker)));
            });
            refused("QueuedSender::new", &mut || {
                let object = Rc::new(Target {
                    on_hit: MulticastDelegate::new(),
                });
                let _ = QueuedSender::new(&object, loud_accessor(Loud("accessor dropped")));
            });
        },
    );
}

/// A single-cast delegate and an `EventSubscription` own a user callable: dropped while the
/// thread unwinds (as locals or fields of what a panic drops), they drop it under the guard, as
/// `unbind` and a scoped subscription's removal do (generic and declared delegates). Without it,
/// their drop glue dropped it plainly: an abort.
#[test]
fn r2_a_delegate_or_event_subscription_dropped_while_the_thread_unwinds_drops_its_callable_guarded()
{
    in_child_process(
        "r2_a_delegate_or_event_subscription_dropped_while_the_thread_unwinds_drops_its_callable_guarded",
        || {
            while_unwinding(3, || {
                let loud = Loud("callable dropped");
                let _generic = Delegate::<dyn Fn()>::create_lambda(move || {
                    let _ = &loud;
                });
                let loud = Loud("declared callable dropped");
                let _declared = Fuse::create_lambda(move |bomb| {
                    forget(bomb);
                    let _ = &loud;
                });
                let processor = EventProcessor::new();
                let loud = Loud("handler dropped");
                let _subscription =
                    processor.add_handler::<lumina::event::KeyPressedEvent>(0, move |_| {
                        let _ = &loud;
                        false
                    });
            });
        },
    );
}

/// An object with a delegate of two [`Bomb`]s, reached by a queued sender.
struct BombPairs {
    on_pair: MulticastDelegate<dyn Fn(Bomb, Bomb)>,
}

/// A queued send of two arguments whose `Drop`s panic, dropped unrun with the queue at the end
/// of the game-thread session: the task holds each argument in its own guard, so the second is
/// dropped under the guard while the first one's panic unwinds (R2), and that first panic
/// propagates (R3). Captured as plain values, the task's drop went on to the second plainly while
/// the first one's panic unwound: an abort.
#[test]
fn r2_a_queued_send_dropped_unrun_drops_each_of_its_arguments_under_the_guard() {
    in_child_process(
        "r2_a_queued_send_dropped_unrun_drops_each_of_its_arguments_under_the_guard",
        || {
            let game = GameThreadScope::enter();
            let object = Rc::new(BombPairs {
                on_pair: MulticastDelegate::new(),
            });
            let sender = QueuedSender::new(&object, |object: &BombPairs| &object.on_pair);
            sender.send(Bomb, Bomb);
            assert_guarded("bomb dropped", || drop(game));
            drop(sender);
        },
    );
}

/// A subscriber that forgets its arguments and panics: it runs first, so the loop still holds
/// the original arguments for the last subscriber when the panic unwinds.
fn forgetting_then_panicking<A, B, R>() -> impl Fn(A, B) -> R + 'static {
    move |a, b| {
        forget((a, b));
        panic!("first subscriber");
    }
}

/// The original owned arguments a broadcast holds for its last subscriber, dropped by the
/// library when an earlier subscriber panics: two arguments whose `Drop` panics. Each is
/// dropped under its own guard (R2): held as one guarded tuple, the tuple's drop glue dropped
/// the second one plainly while the first one's panic unwound, which aborted the process.
#[test]
fn r2_m11_the_original_arguments_held_for_the_last_subscriber_are_dropped_one_by_one_guarded() {
    in_child_process(
        "r2_m11_the_original_arguments_held_for_the_last_subscriber_are_dropped_one_by_one_guarded",
        || {
            let generic: MulticastDelegate<dyn Fn(Bomb, Bomb) -> u32> = MulticastDelegate::new();
            let calls = Rc::new(Cell::new(0));
            let _first = generic.add_lambda(forgetting_then_panicking());
            let _last = generic.add_lambda(forgetting(&calls));
            assert_guarded_times("first subscriber", 2, || {
                generic.broadcast(Bomb, Bomb);
            });
            assert_guarded_times("first subscriber", 2, || {
                forget(generic.broadcast_collect(Bomb, Bomb));
            });
            assert_guarded_times("first subscriber", 2, || {
                generic.broadcast_fold(Bomb, Bomb, 0, |sum, one| {
                    std::ops::ControlFlow::Continue(sum + one)
                });
            });
            assert_eq!(calls.get(), 0, "the last subscriber never ran");
            assert!(!generic.is_broadcasting());
            assert_eq!(generic.len(), 2);

            let declared = OnBombs::new();
            let _first = declared.add_lambda(forgetting_then_panicking());
            let _last = declared.add_lambda(forgetting(&calls));
            assert_guarded_times("first subscriber", 2, || {
                declared.broadcast(Bomb, Bomb);
            });
            let asking = OnBombsAsk::new();
            let _first = asking.add_lambda(forgetting_then_panicking());
            let _last = asking.add_lambda(forgetting(&calls));
            assert_guarded_times("first subscriber", 2, || {
                forget(asking.broadcast_collect(Bomb, Bomb));
            });
            assert_guarded_times("first subscriber", 2, || {
                asking.broadcast_until(Bomb, Bomb, |_| std::ops::ControlFlow::<()>::Continue(()));
            });
            assert_eq!(calls.get(), 0, "the last subscriber never ran");
            assert_eq!((declared.len(), asking.len()), (2, 2));
        },
    );
}

declare_multicast_delegate!(OnBombs(a: Bomb, b: Bomb));
declare_multicast_delegate!(OnBombsAsk(a: Bomb, b: Bomb) -> u32);

/// An object whose delegate takes two [`Bomb`]s, through the broadcast (which clones them).
struct BombPairsCloned {
    on_pair: MulticastDelegate<dyn Fn(Bomb, Bomb)>,
}

/// A queued send of two such arguments, delivered while its registry entry is still there: if
/// the object is gone by then, or the accessor panics, the delivery drops the arguments itself,
/// one by one, each under its own guard (R2). Held as one tuple, the tuple's drop glue dropped
/// the second one plainly while the first one's panic unwound: an abort.
#[test]
fn r2_q_a_queued_delivery_drops_each_argument_under_its_own_guard() {
    in_child_process(
        "r2_q_a_queued_delivery_drops_each_argument_under_its_own_guard",
        || {
            let _game = GameThreadScope::enter();
            // The object is gone, its entry not yet pruned: the delivery finds no object.
            let object = Rc::new(BombPairsCloned {
                on_pair: MulticastDelegate::new(),
            });
            let sender = QueuedSender::new(&object, |object: &BombPairsCloned| &object.on_pair);
            sender.send(Bomb, Bomb);
            drop(object);
            assert_guarded_times("bomb dropped", 1, || {
                main_thread::process_queue();
            });
            drop(sender);
            // The accessor (user code) panics while the delivery holds the arguments.
            let object = Rc::new(BombPairsCloned {
                on_pair: MulticastDelegate::new(),
            });
            let sender = QueuedSender::new(
                &object,
                |_: &BombPairsCloned| -> &MulticastDelegate<dyn Fn(Bomb, Bomb)> {
                    panic!("accessor")
                },
            );
            sender.send(Bomb, Bomb);
            assert_guarded_times("accessor", 2, || {
                main_thread::process_queue();
            });
            drop(sender);
        },
    );
}
