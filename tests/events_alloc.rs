//! P2: dispatch allocates nothing. Its own test binary, because it installs a counting global
//! allocator (`support/counting_alloc.rs`, counting per thread, so the test harness's threads do
//! not disturb the count).

use lumina::event::{
    Event, EventHandler, EventProcessor, InputLayer, InputViewportRegistry, Key, KeyPressedEvent,
    Modifiers, MouseButton, MouseButtonPressedEvent, MouseMovedEvent, Rect, Vec2,
};
use std::rc::Rc;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

/// Allocations made on this thread while `f` runs.
fn allocations_during(f: impl FnOnce()) -> u64 {
    counting_alloc::allocations(f)
}

/// `rounds` rounds of four dispatches (W, Q, a mouse move, a click); how many were consumed.
fn dispatch_rounds(processor: &EventProcessor, rounds: usize) -> usize {
    let mut consumed = 0;
    for round in 0..rounds {
        let position = Vec2::new((round % 600) as f32, 10.0);
        consumed += usize::from(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
        consumed += usize::from(processor.dispatch(KeyPressedEvent::new(Key::Q, Modifiers::NONE)));
        consumed +=
            usize::from(processor.dispatch(MouseMovedEvent::new(position, Vec2::new(1.0, 0.0))));
        consumed += usize::from(processor.dispatch(MouseButtonPressedEvent::new(
            MouseButton::Left,
            Modifiers::NONE,
            position,
        )));
    }
    consumed
}

#[test]
fn p2_dispatch_allocates_nothing() {
    // The counter itself must see allocations, or a zero below would prove nothing.
    assert_eq!(allocations_during(|| drop(Box::new(1u64))), 1);

    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let game_view = Rc::new(|event: &mut dyn Event| {
        event
            .downcast_ref::<KeyPressedEvent>()
            .is_some_and(|key| key.key == Key::W)
    });
    registry.add_viewport(&game_view, Rect::new(0.0, 0.0, 640.0, 480.0));

    // Handlers at every layer, some passing, one re-dispatching (nested dispatch), one marking
    // events handled, and one dropped without unregistering (pruned on the first dispatch).
    let mut handlers = Vec::new();
    for i in 0..16 {
        let handler = Rc::new(move |event: &mut dyn Event| {
            if i == 15 && event.is::<MouseMovedEvent>() {
                event.set_handled(true);
            }
            false
        });
        assert!(processor.register_event_handler(&handler, (i % 4) * 250 - 100));
        handlers.push(handler);
    }
    let nested = {
        let processor = Rc::downgrade(&processor);
        Rc::new(move |event: &mut dyn Event| {
            if event.is::<MouseButtonPressedEvent>() {
                return processor.upgrade().is_some_and(|processor| {
                    processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE))
                });
            }
            false
        })
    };
    assert!(processor.register_event_handler(&nested, InputLayer::EditorChrome));
    let dropped = Rc::new(|_: &mut dyn Event| true);
    assert!(processor.register_event_handler(&dropped, InputLayer::Viewport));
    drop(dropped);

    let run = |rounds: usize| dispatch_rounds(&processor, rounds);
    // Warm-up: prunes the dropped handler (a compaction that only shrinks, never allocates).
    run(1);

    let mut consumed = 0;
    let allocations = allocations_during(|| consumed = run(1000));
    println!(
        "allocations in 4000 dispatches (18 handlers, nested dispatch, viewport routing): {allocations}"
    );
    assert_eq!(allocations, 0);
    assert_eq!(
        consumed, 3000,
        "W, mouse moves and clicks are consumed; Q is not"
    );
}

#[test]
fn x1_typed_dispatch_allocates_nothing() {
    use lumina::event::{KeyboardEvent, MouseEvent, category};
    assert_eq!(allocations_during(|| drop(Box::new(1u64))), 1);

    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let view = registry
        .add_viewport_handler::<category::Mouse>(Rect::new(0.0, 0.0, 640.0, 480.0), |event| {
            matches!(event, MouseEvent::ButtonPressed(_))
        });
    let mut guards = Vec::new();
    for i in 0..8 {
        guards.push(processor.add_handler::<KeyPressedEvent>(i * 100, |key| key.key == Key::W));
        guards.push(
            processor.add_handler::<category::Keyboard>(i * 100 - 50, move |event| {
                matches!(event, KeyboardEvent::Released(_)) && i == 0
            }),
        );
    }
    // A typed handler dispatching re-entrantly.
    let nested = Rc::downgrade(&processor);
    guards.push(
        processor.add_handler::<MouseMovedEvent>(2000, move |moved| {
            moved.position.x < 1.0
                && nested.upgrade().is_some_and(|processor| {
                    processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE))
                })
        }),
    );
    // One dropped before any dispatch: pruned on the first.
    drop(processor.add_handler::<KeyPressedEvent>(5000, |_| true));

    let run = |rounds: usize| dispatch_rounds(&processor, rounds);
    run(1);
    let mut consumed = 0;
    let allocations = allocations_during(|| consumed = run(1000));
    println!("allocations in 4000 dispatches to 18 typed handlers: {allocations}");
    assert_eq!(allocations, 0);
    // W and clicks are consumed; the mouse move at x = 0 re-dispatches a consumed W.
    assert_eq!(consumed, 2000 + 2);
    drop(view);
}

#[test]
fn x4_x6_muted_and_self_aware_dispatch_allocates_nothing() {
    assert_eq!(allocations_during(|| drop(Box::new(1u64))), 1);
    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let muted_view = registry
        .subscribe()
        .self_aware()
        .add_viewport_handler::<MouseButtonPressedEvent>(
            Rect::new(0.0, 0.0, 640.0, 480.0),
            |this, _| this.block(),
        );
    let mut guards = Vec::new();
    // Self-aware handlers that mute and unmute each other mid-dispatch: the Q handler mutes
    // itself on Q; the chrome handler unmutes it on the next event, and consumes a mouse move
    // that found it muted.
    let q = processor
        .subscribe()
        .priority(100)
        .self_aware()
        .add_handler::<KeyPressedEvent>(|this, key| {
            if key.key == Key::Q {
                this.block();
            }
            false
        });
    let q_handle = q.handle();
    let weak = Rc::downgrade(&processor);
    guards.push(q);
    guards.push(
        processor
            .subscribe()
            .priority(InputLayer::EditorChrome)
            .self_aware()
            .add_handler::<lumina::event::category::All>(move |this, event| {
                let processor = weak.upgrade().expect("alive");
                let was_muted = processor.is_blocked(q_handle);
                processor.unblock(q_handle);
                assert!(!this.is_blocked());
                event.is::<MouseMovedEvent>() && was_muted
            }),
    );
    for i in 0..8 {
        let guard = processor.add_handler::<KeyPressedEvent>(i * 10, |key| key.key == Key::W);
        if i % 2 == 0 {
            assert!(processor.block(guard.handle()));
        }
        guards.push(guard);
    }
    let run = |rounds: usize| dispatch_rounds(&processor, rounds);
    run(1);
    let mut consumed = 0;
    let allocations = allocations_during(|| {
        consumed = run(1000);
        let _scoped = processor.block_scoped(q_handle);
    });
    println!("allocations in 4000 dispatches with muted and self-aware handlers: {allocations}");
    assert_eq!(allocations, 0);
    // Each round: W consumed by an unmuted W handler, Q mutes its handler, the move finds it
    // muted (consumed), the click goes to the viewport that muted itself (passed on).
    assert_eq!(consumed, 2000);
    drop(muted_view);
}

/// Bytes still held after `n` viewports were added to `registry` and dropped (no removal: the
/// viewports' owners just went).
fn bytes_left_by_dropped_viewports(registry: &InputViewportRegistry, n: usize) -> i64 {
    let (bytes, ()) = counting_alloc::live_bytes_in(|| {
        for _ in 0..n {
            let viewport = Rc::new(|_: &mut dyn Event| true);
            let _ = registry.add_viewport(&viewport, Rect::new(0.0, 0.0, 1.0, 1.0));
        }
    });
    bytes
}

#[test]
fn n4_dropped_viewports_do_not_keep_their_memory() {
    // A dropped viewport's entry (and the handler's block its weak reference keeps) goes at
    // the sweep of a later add, once the list has doubled: memory stays bounded by the live
    // viewports, not by how many were ever added.
    let registry = InputViewportRegistry::new();
    let kept = Rc::new(|_: &mut dyn Event| true);
    let _id = registry.add_viewport(&kept, Rect::new(0.0, 0.0, 1.0, 1.0));
    let small = bytes_left_by_dropped_viewports(&registry, 1_000);
    let large = bytes_left_by_dropped_viewports(&registry, 20_000);
    println!("N4 bytes left by dropped viewports: {small} after 1 000, {large} after 20 000 more");
    assert!(
        large <= 4_096,
        "{large} bytes left by 20 000 dropped viewports"
    );
    assert_eq!(registry.len(), 1);
}

/// N4, M9 (issue 32): registering a handler whose last strong reference then goes, 20 000 times
/// with no dispatch (nothing prunes on the way): the registration's sweep of dead owners (once
/// the owners table has doubled since the last one) keeps the processor bounded by its live
/// handlers. Without the sweep: 2.4 MB after 20 000.
#[test]
fn n4_handlers_of_dropped_owners_do_not_pile_up_without_a_dispatch() {
    let processor = EventProcessor::new();
    let kept = Rc::new(|_: &mut dyn Event| false);
    assert!(processor.register_event_handler(&kept, 0));
    let cycles = |n: usize| {
        counting_alloc::live_bytes_in(|| {
            for i in 0..n {
                let handler = Rc::new(|_: &mut dyn Event| false);
                let priority = i32::try_from(i % 7).expect("small");
                assert!(processor.register_event_handler(&handler, priority));
            }
        })
        .0
    };
    let small = cycles(1_000);
    let large = cycles(20_000);
    println!("N4 bytes left by dropped handlers: {small} after 1 000, {large} after 20 000 more");
    assert!(
        large <= 4_096,
        "{large} bytes left by 20 000 dropped handlers"
    );
    assert_eq!(processor.len(), 1);
}

/// N4 (issue 32): 20 000 handlers registered (at 7 priorities), then every one unregistered: the
/// processor's tables shrink once under a quarter full, so the burst gives its memory back.
#[test]
fn n4_a_burst_of_handlers_gives_its_memory_back() {
    let processor = EventProcessor::new();
    let kept = Rc::new(|_: &mut dyn Event| false);
    assert!(processor.register_event_handler(&kept, 0));
    let burst = |n: usize| {
        counting_alloc::live_bytes_in(|| {
            let handlers: Vec<Rc<dyn EventHandler>> = (0..n)
                .map(|_| Rc::new(|_: &mut dyn Event| false) as Rc<dyn EventHandler>)
                .collect();
            for (i, handler) in handlers.iter().enumerate() {
                let priority = i32::try_from(i % 7).expect("small");
                assert!(processor.register_dyn_event_handler(handler, priority));
            }
            for handler in &handlers {
                assert!(processor.unregister_event_handler(handler));
            }
        })
        .0
    };
    let small = burst(1_000);
    let large = burst(20_000);
    println!(
        "N4 bytes left by a burst of handlers: {small} after 1 000, {large} after 20 000 more"
    );
    assert!(
        large <= 4_096,
        "{large} bytes left by a burst of 20 000 handlers"
    );
    assert_eq!(processor.len(), 1);
}
