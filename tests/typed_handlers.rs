//! X1: typed input handlers, for one event class or one category, in the processor's one chain
//! (P1-P4 unchanged) and through the viewport registry.

use lumina::event::{
    Event, EventProcessor, EventSubscription, InputLayer, InputViewportRegistry, Key,
    KeyPressedEvent, KeyReleasedEvent, KeyboardEvent, Modifiers, MouseButton,
    MouseButtonPressedEvent, MouseEvent, MouseMovedEvent, Rect, TypedHandler, Vec2, WindowEvent,
    WindowResizeEvent, category,
};
use lumina::event_class;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

fn press(key: Key) -> KeyPressedEvent {
    KeyPressedEvent::new(key, Modifiers::NONE)
}

/// A game's own class with the engine's `KeyPressed` type: not a `KeyPressedEvent` (E5).
#[event_class(KeyPressed)]
struct FakeKey;

#[test]
fn x1_class_handler_gets_the_typed_event_with_no_annotation() {
    let processor = EventProcessor::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&seen);
    let _jump = processor.add_handler::<KeyPressedEvent>(0, move |key| {
        sink.borrow_mut().push(key.key);
        key.repeat = true; // the handler gets the event itself, mutably
        key.key == Key::Space
    });
    assert!(processor.dispatch(press(Key::Space)));
    assert!(!processor.dispatch(press(Key::W)));
    // Other classes pass it by, as if it returned `false`.
    assert!(!processor.dispatch(KeyReleasedEvent::new(Key::Space, Modifiers::NONE)));
    assert!(!processor.dispatch(FakeKey));
    assert_eq!(*seen.borrow(), [Key::Space, Key::W]);
}

#[test]
fn x1_category_handler_sees_its_category_only() {
    let processor = EventProcessor::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (keys, mice, windows) = (Rc::clone(&seen), Rc::clone(&seen), Rc::clone(&seen));
    let _keys = processor.add_handler::<category::Keyboard>(0, move |event| {
        keys.borrow_mut().push(match event {
            KeyboardEvent::Pressed(key) => format!("pressed {}", key.key),
            KeyboardEvent::Released(key) => format!("released {}", key.key),
            other => format!("{other:?}"),
        });
        false
    });
    let _mice = processor.add_handler::<category::Mouse>(0, move |event| {
        if let MouseEvent::Moved(moved) = event {
            mice.borrow_mut()
                .push(format!("moved {}", moved.position.x));
        }
        false
    });
    let _windows = processor.add_handler::<category::Window>(0, move |event| {
        if let WindowEvent::Resize(resize) = event {
            windows
                .borrow_mut()
                .push(format!("resized {}", resize.size.x));
        }
        false
    });
    processor.dispatch(press(Key::W));
    processor.dispatch(KeyReleasedEvent::new(Key::W, Modifiers::NONE));
    processor.dispatch(MouseMovedEvent::new(
        Vec2::new(3.0, 4.0),
        Vec2::new(1.0, 0.0),
    ));
    processor.dispatch(WindowResizeEvent::new(lumina::event::UVec2::new(640, 480)));
    processor.dispatch(FakeKey); // keyboard type, but not a keyboard class: nobody sees it
    assert_eq!(
        *seen.borrow(),
        ["pressed W", "released W", "moved 3", "resized 640"]
    );
}

#[test]
fn x1_typed_and_plain_handlers_share_one_chain() {
    let processor = EventProcessor::new();
    let order = Rc::new(RefCell::new(Vec::new()));
    let log = |name: &'static str, consume: bool| {
        let order = Rc::clone(&order);
        move || {
            order.borrow_mut().push(name);
            consume
        }
    };
    let (a, b, c, d) = (
        log("typed 0 first", false),
        log("plain 0 second", false),
        log("category 0 third", false),
        log("typed 500", false),
    );
    let _a = processor.add_handler::<KeyPressedEvent>(0, move |_| a());
    let plain = Rc::new(move |_: &mut dyn Event| b());
    assert!(processor.register_event_handler(&plain, 0));
    let _c = processor.add_handler::<category::Keyboard>(0, move |_| c());
    let _d = processor.add_handler::<KeyPressedEvent>(InputLayer::EditorChrome, move |_| d());
    assert!(!processor.dispatch(press(Key::A)));
    // P1: priority first, then registration order across both kinds.
    assert_eq!(
        *order.borrow(),
        [
            "typed 500",
            "typed 0 first",
            "plain 0 second",
            "category 0 third"
        ]
    );
    assert_eq!(processor.len(), 4);

    // P2: a typed handler that consumes stops the chain, plain handlers included.
    order.borrow_mut().clear();
    let e = log("consumer", true);
    let _e = processor.add_handler::<KeyPressedEvent>(InputLayer::Viewport, move |_| e());
    assert!(processor.dispatch(press(Key::A)));
    assert_eq!(*order.borrow(), ["consumer"]);
}

#[test]
fn x1_dropping_the_subscription_or_the_typed_handler_unregisters_it() {
    let processor = EventProcessor::new();
    let calls = Rc::new(Cell::new(0));
    let counter = Rc::clone(&calls);
    let guard = processor.add_handler::<KeyPressedEvent>(0, move |_| {
        counter.set(counter.get() + 1);
        true
    });
    assert!(processor.handle_of(guard.handler()).is_some());
    assert!(processor.dispatch(press(Key::A)));
    drop(guard);
    assert!(!processor.dispatch(press(Key::A)));
    assert!(processor.is_empty());
    assert_eq!(calls.get(), 1);

    let guard = processor.add_handler::<KeyPressedEvent>(0, |_| true);
    assert!(guard.remove());
    assert!(processor.is_empty());

    // P3: a TypedHandler registered weakly is gone with its last `Rc`.
    let weak = Rc::new(TypedHandler::<KeyPressedEvent, _>::new(|_| true));
    assert!(processor.register_event_handler(&weak, 0));
    assert!(
        !processor.register_event_handler(&weak, 5),
        "P1: no duplicates"
    );
    assert!(processor.dispatch(press(Key::A)));
    drop(weak);
    assert!(!processor.dispatch(press(Key::A)));
    assert!(processor.is_empty());
}

#[test]
fn x1_typed_handler_may_register_unregister_and_dispatch_reentrantly() {
    let processor = Rc::new(EventProcessor::new());
    let order = Rc::new(RefCell::new(Vec::<String>::new()));
    let own: Rc<RefCell<Option<EventSubscription>>> = Rc::new(RefCell::new(None));
    let victim: Rc<RefCell<Option<EventSubscription>>> = Rc::new(RefCell::new(None));
    let added: Rc<RefCell<Vec<EventSubscription>>> = Rc::new(RefCell::new(Vec::new()));

    let guard = {
        let (processor_weak, order, own, victim, added) = (
            Rc::downgrade(&processor),
            Rc::clone(&order),
            Rc::clone(&own),
            Rc::clone(&victim),
            Rc::clone(&added),
        );
        processor.add_handler::<KeyPressedEvent>(10, move |key| {
            order.borrow_mut().push(format!("first {}", key.key));
            if key.key != Key::A {
                return false; // the nested dispatch below
            }
            let processor = processor_weak.upgrade().unwrap();
            // Registers: runs from the next dispatch (M2), also in the nested one below.
            let log = Rc::clone(&order);
            added
                .borrow_mut()
                .push(processor.add_handler::<KeyPressedEvent>(10, move |key| {
                    log.borrow_mut().push(format!("added {}", key.key));
                    false
                }));
            // Unregisters a handler not yet reached: it does not run (M3).
            drop(victim.borrow_mut().take());
            // Dispatches re-entrantly.
            processor.dispatch(press(Key::B));
            // Unregisters itself: this call finishes (M4), it never runs again.
            drop(own.borrow_mut().take());
            key.key = Key::Z;
            order.borrow_mut().push("first done".into());
            false
        })
    };
    *own.borrow_mut() = Some(guard);
    let log = Rc::clone(&order);
    *victim.borrow_mut() = Some(processor.add_handler::<KeyPressedEvent>(0, move |key| {
        log.borrow_mut().push(format!("victim {}", key.key));
        false
    }));
    let log = Rc::clone(&order);
    let _last = processor.add_handler::<category::Keyboard>(-1, move |event| {
        if let KeyboardEvent::Pressed(key) = event {
            log.borrow_mut().push(format!("last {}", key.key));
        }
        false
    });

    assert!(!processor.dispatch(press(Key::A)));
    assert_eq!(
        *order.borrow(),
        [
            "first A",
            "first B",
            "added B",
            "last B",
            "first done",
            "last Z"
        ]
    );
    order.borrow_mut().clear();
    assert!(!processor.dispatch(press(Key::C)));
    assert_eq!(*order.borrow(), ["added C", "last C"]);
    assert_eq!(processor.len(), 2);
}

#[test]
fn x1_a_panicking_typed_handler_leaves_the_chain_consistent() {
    let processor = EventProcessor::new();
    let calls = Rc::new(Cell::new(0));
    let counter = Rc::clone(&calls);
    let _panics = processor.add_handler::<KeyPressedEvent>(5, |key| {
        assert_ne!(key.key, Key::Escape, "typed handler panics");
        false
    });
    let _after = processor.add_handler::<category::Keyboard>(0, move |_| {
        counter.set(counter.get() + 1);
        true
    });
    let result = catch_unwind(AssertUnwindSafe(|| processor.dispatch(press(Key::Escape))));
    assert!(result.is_err());
    assert!(!processor.is_broadcasting());
    assert_eq!(processor.len(), 2);
    assert!(processor.dispatch(press(Key::A)));
    assert_eq!(calls.get(), 1);
}

#[test]
fn x1_viewport_handlers_are_typed_too() {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let clicks = Rc::new(Cell::new(0));
    let counter = Rc::clone(&clicks);
    let game = registry.add_viewport_handler::<category::Mouse>(
        Rect::new(0.0, 0.0, 100.0, 100.0),
        move |event| {
            if let MouseEvent::ButtonPressed(press) = event {
                counter.set(counter.get() + 1);
                return press.button == MouseButton::Left;
            }
            false
        },
    );
    let keys = registry
        .add_viewport_handler::<KeyPressedEvent>(Rect::new(200.0, 0.0, 100.0, 100.0), |key| {
            key.key == Key::W
        });
    let click = |x: f32| {
        processor.dispatch(MouseButtonPressedEvent::new(
            MouseButton::Left,
            Modifiers::NONE,
            Vec2::new(x, 10.0),
        ))
    };
    assert!(click(10.0));
    assert_eq!(registry.focused(), Some(game.id()));
    // Focused, but a key is not a mouse event: passed by, to the layers below.
    assert!(!processor.dispatch(press(Key::W)));
    assert!(!click(250.0), "the key viewport passes clicks by");
    assert_eq!(registry.focused(), Some(keys.id()));
    assert!(processor.dispatch(press(Key::W)));
    assert_eq!(clicks.get(), 1);
    drop(game);
    assert_eq!(registry.len(), 1);
    assert!(!click(10.0));
    assert_eq!(clicks.get(), 1);
}
