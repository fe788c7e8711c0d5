//! X3, X4 and X6 on the event processor and the viewport registry: one-shot typed handlers,
//! muting by handle and by guard (a muted handler keeps its place and priority and is skipped,
//! not removed), and handlers that receive their own registration, for plain, typed and viewport
//! handlers. Re-entrancy at every new user-code point: a handler that mutes a neighbour or itself
//! mid-dispatch, unmutes one already passed, re-prioritizes itself, or re-dispatches.

use lumina::ThisSubscription;
use lumina::event::{
    Event, EventHandler, EventProcessor, InputLayer, InputViewportRegistry, Key, KeyPressedEvent,
    KeyReleasedEvent, Modifiers, MouseButton, MouseButtonPressedEvent, Rect, Vec2, ViewportId,
};
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

fn press(key: Key) -> KeyPressedEvent {
    KeyPressedEvent::new(key, Modifiers::NONE)
}

type Log = Rc<RefCell<Vec<&'static str>>>;

/// A plain handler that logs its name and passes.
fn logger(log: &Log, name: &'static str) -> Rc<impl EventHandler> {
    let log = Rc::clone(log);
    Rc::new(move |_: &mut dyn Event| {
        log.borrow_mut().push(name);
        false
    })
}

#[test]
fn x4_processor_blocked_handler_keeps_its_place_and_priority_and_is_skipped() {
    let processor = EventProcessor::new();
    let log: Log = Rc::default();
    let (a, b, c) = (logger(&log, "a"), logger(&log, "b"), logger(&log, "c"));
    assert!(processor.register_event_handler(&a, 10));
    assert!(processor.register_event_handler(&b, 5));
    assert!(processor.register_event_handler(&c, 5));
    let b_handle = processor.handle_of(&b).expect("registered");
    assert!(processor.block(b_handle));
    assert!(processor.is_blocked(b_handle));
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["a", "c"]);
    // Still registered: counted, listed, and registering it again is refused (P1).
    assert_eq!(processor.len(), 3);
    assert!(processor.handle_of(&b).is_some());
    assert!(!processor.register_event_handler(&b, 100));
    assert_eq!(processor.subscriptions().len(), 3);
    log.borrow_mut().clear();
    assert!(processor.unblock(b_handle));
    assert!(!processor.is_blocked(b_handle));
    processor.dispatch(press(Key::A));
    assert_eq!(
        *log.borrow(),
        ["a", "b", "c"],
        "back in its place, before c"
    );
    // Unregistering a blocked handler works; its handle then blocks nothing.
    assert!(processor.block(b_handle));
    assert!(processor.unregister_event_handler(&b));
    assert!(!processor.block(b_handle));
    assert!(!processor.is_blocked(b_handle));
    assert!(!processor.unblock(b_handle));
    assert_eq!(processor.handle_of(&b), None);
}

#[test]
fn x4_processor_blocked_handler_does_not_consume() {
    let processor = EventProcessor::new();
    let consumer = processor.add_handler::<KeyPressedEvent>(InputLayer::Viewport, |_| true);
    let fallback_hits = Rc::new(Cell::new(0));
    let sink = Rc::clone(&fallback_hits);
    let _fallback = processor.add_handler::<KeyPressedEvent>(InputLayer::Default, move |_| {
        sink.set(sink.get() + 1);
        true
    });
    assert!(processor.dispatch(press(Key::A)));
    assert_eq!(fallback_hits.get(), 0);
    assert!(processor.block(consumer.handle()));
    assert!(processor.dispatch(press(Key::A)));
    assert_eq!(fallback_hits.get(), 1, "the blocked consumer is passed by");
}

#[test]
fn x4_processor_block_during_a_dispatch_applies_to_handlers_not_yet_reached() {
    let processor = Rc::new(EventProcessor::new());
    let log: Log = Rc::default();
    let (early, late) = (logger(&log, "early"), logger(&log, "late"));
    assert!(processor.register_event_handler(&early, 20));
    let (weak, sink) = (Rc::downgrade(&processor), Rc::clone(&log));
    let (early_handle, late_handle) = (Rc::new(Cell::new(None)), Rc::new(Cell::new(None)));
    let (eh, lh) = (Rc::clone(&early_handle), Rc::clone(&late_handle));
    let middle = Rc::new(move |_: &mut dyn Event| {
        sink.borrow_mut().push("middle");
        let processor = weak.upgrade().unwrap();
        // Blocking one already passed changes nothing in this dispatch; blocking one not
        // reached yet skips it now.
        assert!(processor.block(eh.get().unwrap()));
        assert!(processor.block(lh.get().unwrap()));
        false
    });
    assert!(processor.register_event_handler(&middle, 10));
    assert!(processor.register_event_handler(&late, 0));
    early_handle.set(processor.handle_of(&early));
    late_handle.set(processor.handle_of(&late));
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["early", "middle"]);
    log.borrow_mut().clear();
    processor.unblock(early_handle.get().unwrap());
    processor.unblock(late_handle.get().unwrap());
    assert!(processor.unregister_event_handler(&middle));
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["early", "late"]);
}

#[test]
fn x4_processor_unblock_during_a_dispatch_reaches_a_handler_not_yet_passed() {
    let processor = Rc::new(EventProcessor::new());
    let log: Log = Rc::default();
    let late = logger(&log, "late");
    let weak = Rc::downgrade(&processor);
    let late_handle = Rc::new(Cell::new(None));
    let lh = Rc::clone(&late_handle);
    let first = processor
        .subscribe()
        .priority(10)
        .self_aware()
        .add_handler::<lumina::event::category::All>(move |_, _| {
            weak.upgrade().unwrap().unblock(lh.get().unwrap());
            false
        });
    assert!(processor.register_event_handler(&late, 0));
    late_handle.set(processor.handle_of(&late));
    assert!(processor.block(late_handle.get().unwrap()));
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["late"]);
    drop(first);
}

#[test]
fn x4_processor_muting_from_inside_a_muted_neighbour_and_itself() {
    // A handler mutes itself and its neighbour, in its own call; both stay registered, and a
    // nested dispatch from inside the call already skips them.
    let processor = Rc::new(EventProcessor::new());
    let log: Log = Rc::default();
    let neighbour = logger(&log, "neighbour");
    assert!(processor.register_event_handler(&neighbour, 0));
    let neighbour_handle = processor.handle_of(&neighbour).unwrap();
    let (weak, sink) = (Rc::downgrade(&processor), Rc::clone(&log));
    let muter = processor
        .subscribe()
        .priority(10)
        .self_aware()
        .add_handler::<lumina::event::category::All>(move |this, _| {
            sink.borrow_mut().push("muter");
            let processor = weak.upgrade().unwrap();
            assert!(this.block());
            assert!(this.is_blocked());
            assert!(processor.block(neighbour_handle));
            // Blocking twice is two blocks (A2: counted).
            assert!(processor.block(neighbour_handle));
            // Nested: both muted already.
            assert!(!processor.dispatch(press(Key::B)));
            false
        });
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["muter"]);
    assert_eq!(processor.len(), 2);
    assert!(processor.is_blocked(muter.handle()));
    // One unblock lifts one of the two blocks; the second lifts the last.
    assert!(processor.unblock(neighbour_handle));
    assert!(processor.is_blocked(neighbour_handle));
    log.borrow_mut().clear();
    processor.dispatch(press(Key::A));
    assert!(log.borrow().is_empty());
    assert!(processor.unblock(neighbour_handle));
    assert!(!processor.unblock(neighbour_handle), "nothing left to lift");
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["neighbour"]);
}

#[test]
fn x4_processor_block_scoped_unblocks_on_drop_and_nests() {
    let processor = EventProcessor::new();
    let hits = Rc::new(Cell::new(0));
    let sink = Rc::clone(&hits);
    let handler = processor.add_handler::<KeyPressedEvent>(0, move |_| {
        sink.set(sink.get() + 1);
        false
    });
    {
        let outer = processor.block_scoped(handler.handle());
        {
            let _inner = processor.block_scoped(handler.handle());
            processor.dispatch(press(Key::A));
        }
        // The inner guard lifted its own block only: the outer one still holds (A2).
        processor.dispatch(press(Key::A));
        assert!(processor.is_blocked(handler.handle()));
        assert_eq!(outer.handle(), handler.handle());
    }
    processor.dispatch(press(Key::A));
    assert_eq!(hits.get(), 1);
    // A guard that outlives its processor, or whose handler is gone, is harmless.
    let handle = handler.handle();
    let guard = processor.block_scoped(handle);
    drop(handler);
    drop(guard);
    let late = {
        let processor = EventProcessor::new();
        let typed = processor.add_handler::<KeyPressedEvent>(0, |_| true);
        let guard = processor.block_scoped(typed.handle());
        drop(processor);
        (guard, typed)
    };
    drop(late);
}

#[test]
fn x4_processor_blocked_weak_handler_dropped_is_still_pruned() {
    let processor = EventProcessor::new();
    let log: Log = Rc::default();
    let handler = logger(&log, "h");
    assert!(processor.register_event_handler(&handler, 0));
    assert!(processor.block(processor.handle_of(&handler).unwrap()));
    drop(handler);
    assert_eq!(
        processor.len(),
        0,
        "P3: a dropped handler is gone, blocked or not"
    );
    processor.dispatch(press(Key::A));
    assert!(log.borrow().is_empty());
}

#[test]
fn x6_processor_self_aware_handler_removes_itself_and_finishes_its_call() {
    let processor = Rc::new(EventProcessor::new());
    let calls = Rc::new(Cell::new(0));
    let (sink, weak) = (Rc::clone(&calls), Rc::downgrade(&processor));
    let handle_seen = Rc::new(Cell::new(None));
    let seen = Rc::clone(&handle_seen);
    let subscription = processor
        .subscribe()
        .priority(0)
        .self_aware()
        .add_handler::<lumina::event::category::All>(move |this, event| {
            seen.set(Some(this.handle()));
            sink.set(sink.get() + 1);
            assert!(this.is_subscribed());
            assert!(this.remove());
            assert!(!this.is_subscribed());
            assert!(!this.remove(), "already removed");
            // Nested dispatch: it is gone already.
            weak.upgrade().unwrap().dispatch(press(Key::B));
            // The call goes on, with the event intact.
            event.is::<KeyPressedEvent>()
        });
    assert!(processor.dispatch(press(Key::A)));
    assert!(!processor.dispatch(press(Key::A)));
    assert_eq!(calls.get(), 1);
    assert_eq!(handle_seen.get(), Some(subscription.handle()));
    assert!(processor.is_empty());
    assert!(!subscription.remove());
}

#[test]
fn x6_processor_self_aware_set_priority_applies_after_the_outermost_dispatch() {
    let processor = EventProcessor::new();
    let log: Log = Rc::default();
    let first = logger(&log, "first");
    assert!(processor.register_event_handler(&first, 10));
    let sink = Rc::clone(&log);
    let _climber = processor
        .subscribe()
        .priority(0)
        .self_aware()
        .add_handler::<KeyPressedEvent>(move |this, _| {
            sink.borrow_mut().push("climber");
            assert!(this.set_priority(InputLayer::Viewport));
            false
        });
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["first", "climber"]);
    log.borrow_mut().clear();
    processor.dispatch(press(Key::A));
    assert_eq!(*log.borrow(), ["climber", "first"]);
}

#[test]
fn x6_typed_self_aware_handler_sees_only_its_class_and_is_a_normal_registration() {
    let processor = EventProcessor::new();
    let keys = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&keys);
    let subscription = processor
        .subscribe()
        .priority(0)
        .self_aware()
        .add_handler::<KeyPressedEvent>(move |this, key| {
            sink.borrow_mut().push(key.key);
            if key.key == Key::Escape {
                this.remove();
            }
            true
        });
    assert!(processor.handle_of(subscription.handler()).is_some());
    assert_eq!(
        processor.handle_of(subscription.handler()),
        Some(subscription.handle())
    );
    assert!(!processor.dispatch(KeyReleasedEvent::new(Key::A, Modifiers::NONE)));
    assert!(processor.dispatch(press(Key::A)));
    assert!(processor.dispatch(press(Key::Escape)));
    assert!(!processor.dispatch(press(Key::A)));
    assert_eq!(*keys.borrow(), [Key::A, Key::Escape]);
    // Unregistering by handler works like for any handler.
    let again = processor
        .subscribe()
        .priority(0)
        .self_aware()
        .add_handler::<KeyPressedEvent>(|_, _| true);
    assert!(processor.unregister_event_handler(again.handler()));
    assert!(!processor.dispatch(press(Key::A)));
}

#[test]
fn x6_self_aware_handler_that_panics_leaves_the_chain_consistent() {
    let processor = EventProcessor::new();
    let armed = Rc::new(Cell::new(true));
    let flag = Rc::clone(&armed);
    let subscription = processor
        .subscribe()
        .priority(0)
        .self_aware()
        .add_handler::<lumina::event::category::All>(move |this, _| {
            this.block();
            if flag.replace(false) {
                panic!("handler panics after muting itself");
            }
            true
        });
    let outcome = catch_unwind(AssertUnwindSafe(|| processor.dispatch(press(Key::A))));
    assert!(outcome.is_err());
    assert!(!processor.is_broadcasting());
    assert!(processor.is_blocked(subscription.handle()));
    assert!(processor.unblock(subscription.handle()));
    assert!(processor.dispatch(press(Key::A)));
}

#[test]
fn x3_typed_once_handler_is_removed_before_its_call_and_skips_other_classes() {
    let processor = Rc::new(EventProcessor::new());
    let calls = Rc::new(Cell::new(0));
    let (sink, weak) = (Rc::clone(&calls), Rc::downgrade(&processor));
    let once = processor
        .subscribe()
        .priority(0)
        .once()
        .add_handler::<KeyPressedEvent>(move |_| {
            sink.set(sink.get() + 1);
            // A nested dispatch never runs it again.
            weak.upgrade().unwrap().dispatch(press(Key::B));
            true
        });
    // Another class passes it by and leaves it registered.
    assert!(!processor.dispatch(KeyReleasedEvent::new(Key::A, Modifiers::NONE)));
    assert!(processor.handle_of(once.handler()).is_some());
    assert!(processor.dispatch(press(Key::A)));
    assert!(!processor.dispatch(press(Key::A)));
    assert_eq!(calls.get(), 1);
    assert!(processor.is_empty());
}

fn click(x: f32) -> MouseButtonPressedEvent {
    MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(x, 5.0))
}

#[test]
fn x4_viewport_blocked_keeps_its_rect_and_focus_and_passes_events_on() {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let hits = Rc::new(Cell::new(0));
    let sink = Rc::clone(&hits);
    let game = registry.add_viewport_handler::<KeyPressedEvent>(
        Rect::new(0.0, 0.0, 100.0, 100.0),
        move |_| {
            sink.set(sink.get() + 1);
            true
        },
    );
    processor.dispatch(click(5.0));
    assert_eq!(registry.focused(), Some(game.id()));
    assert!(registry.block(game.id()));
    assert!(registry.is_blocked(game.id()));
    assert!(
        !processor.dispatch(press(Key::A)),
        "muted: the chrome gets the key"
    );
    assert_eq!(registry.focused(), Some(game.id()));
    assert_eq!(registry.viewport_at(Vec2::new(5.0, 5.0)), Some(game.id()));
    assert_eq!(registry.len(), 1);
    {
        let _guard = registry.block_scoped(game.id());
    }
    // The guard found it blocked: still blocked.
    assert!(registry.is_blocked(game.id()));
    assert!(registry.unblock(game.id()));
    assert!(processor.dispatch(press(Key::A)));
    {
        let _guard = registry.block_scoped(game.id());
        assert!(!processor.dispatch(press(Key::A)));
    }
    assert!(processor.dispatch(press(Key::A)));
    assert_eq!(hits.get(), 2);
    assert!(!registry.block(ViewportId::from(lumina::DelegateHandle::new_unique())));
}

#[test]
fn x6_viewport_self_aware_handler_removes_and_mutes_itself() {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let this_seen: Rc<RefCell<Option<ThisSubscription>>> = Rc::default();
    let seen = Rc::clone(&this_seen);
    let splash = registry
        .subscribe()
        .self_aware()
        .add_viewport_handler::<MouseButtonPressedEvent>(
            Rect::new(0.0, 0.0, 100.0, 100.0),
            move |this, _| {
                *seen.borrow_mut() = Some(this.clone());
                assert!(!this.set_priority(5), "viewports have no priority");
                this.remove()
            },
        );
    assert!(processor.dispatch(click(5.0)));
    let this = this_seen.borrow_mut().take().unwrap();
    assert_eq!(ViewportId::from(this.handle()), splash.id());
    assert!(!this.is_subscribed());
    assert!(registry.is_empty());
    assert!(!processor.dispatch(click(5.0)));

    let muted = registry
        .subscribe()
        .self_aware()
        .add_viewport_handler::<MouseButtonPressedEvent>(
            Rect::new(0.0, 0.0, 100.0, 100.0),
            |this, _| this.block(),
        );
    assert!(processor.dispatch(click(5.0)));
    assert!(registry.is_blocked(muted.id()));
    assert!(!processor.dispatch(click(5.0)));
    assert_eq!(registry.len(), 1);
    drop(splash);
    drop(registry);
    // The registry is gone: the handler's own subscription answers `false`, nothing dangles.
    assert!(!processor.dispatch(click(5.0)));
}

#[test]
fn x3_viewport_once_handler_is_removed_before_its_call_and_a_nested_dispatch_misses_it() {
    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let calls = Rc::new(Cell::new(0));
    let nested = Rc::new(Cell::new(None));
    let overlay = registry
        .subscribe()
        .once()
        .add_viewport_handler::<MouseButtonPressedEvent>(Rect::new(0.0, 0.0, 100.0, 100.0), {
            let (calls, nested, processor, registry) = (
                Rc::clone(&calls),
                Rc::clone(&nested),
                Rc::clone(&processor),
                Rc::clone(&registry),
            );
            move |_| {
                calls.set(calls.get() + 1);
                // Already gone while its own call runs: a nested dispatch cannot reach it.
                assert!(registry.is_empty());
                nested.set(Some(processor.dispatch(click(5.0))));
                true
            }
        });
    // Another class routed to it passes it by without using it up.
    assert!(registry.focus(overlay.id()));
    assert!(!processor.dispatch(press(Key::W)));
    assert_eq!(registry.len(), 1);
    assert!(processor.dispatch(click(5.0)));
    assert_eq!(calls.get(), 1);
    assert_eq!(nested.get(), Some(false));
    assert!(!processor.dispatch(click(5.0)));
    assert_eq!(calls.get(), 1);
    // Keeping or dropping the subscription afterwards is harmless.
    assert!(registry.is_empty());
    drop(overlay);
    assert!(registry.is_empty());
}
