//! P2: dispatch allocates nothing. Its own test binary, because it installs a counting global
//! allocator (counting only on the thread that asks, so the test harness's threads do not
//! disturb the count).

use lumina::event::{
    Event, EventProcessor, InputLayer, InputViewportRegistry, Key, KeyPressedEvent, Modifiers,
    MouseButton, MouseButtonPressedEvent, MouseMovedEvent, Rect, Vec2,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // `const` initialisation: reading it never allocates, so the allocator may use it.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the only addition is a counter bump, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn count() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Allocations made on this thread while `f` runs.
fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|counting| counting.set(true));
    f();
    COUNTING.with(|counting| counting.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn p2_dispatch_allocates_nothing() {
    // The counter itself must see allocations, or a zero below would prove nothing.
    assert_eq!(allocations_during(|| drop(Box::new(1u64))), 1);

    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    registry.register(&processor);
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
        processor.register_event_handler(&handler, (i % 4) * 250 - 100);
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
    processor.register_event_handler(&nested, InputLayer::EditorChrome);
    let dropped = Rc::new(|_: &mut dyn Event| true);
    processor.register_event_handler(&dropped, InputLayer::Viewport);
    drop(dropped);

    let run = |rounds: usize| {
        let mut consumed = 0;
        for round in 0..rounds {
            let position = Vec2::new((round % 600) as f32, 10.0);
            consumed +=
                usize::from(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
            consumed +=
                usize::from(processor.dispatch(KeyPressedEvent::new(Key::Q, Modifiers::NONE)));
            consumed += usize::from(
                processor.dispatch(MouseMovedEvent::new(position, Vec2::new(1.0, 0.0))),
            );
            consumed += usize::from(processor.dispatch(MouseButtonPressedEvent::new(
                MouseButton::Left,
                Modifiers::NONE,
                position,
            )));
        }
        consumed
    };
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
