//! Rule A1 on the viewport registry: the builder's options (one-shot, muted, self-aware) in
//! every combination with every finish (`add_viewport_handler` for a class; `add_viewport` for
//! an `Rc` handler), each checked against what the options say: how often the viewport is
//! reached, which events use up a one-shot, whether it is reached while muted, and that a
//! self-aware one receives its own viewport. And A2 on viewports: blocks are counted, so block
//! guards nest and drop in any order. `.priority(..)` on a viewport builder and `.self_aware()`
//! with `add_viewport` are compile errors: `ui-tests/subscribe/`.

use lumina::event::{
    Event, EventHandler, EventProcessor, InputViewportRegistry, Key, KeyPressedEvent, Modifiers,
    MouseButton, MouseButtonPressedEvent, Rect, Vec2, ViewportId,
};
use std::rc::Rc;

#[path = "support/call_log.rs"]
mod call_log;
use call_log::{log, taken};

fn key() -> KeyPressedEvent {
    KeyPressedEvent::new(Key::W, Modifiers::NONE)
}

fn click() -> MouseButtonPressedEvent {
    MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(5.0, 5.0))
}

const AREA: Rect = Rect::new(0.0, 0.0, 100.0, 100.0);

/// An `Rc` viewport that logs every event routed to it and consumes none.
struct Subject;

impl EventHandler for Subject {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        log("subject");
        false
    }
}

#[derive(Debug, Clone, Copy)]
struct Case {
    /// `add_viewport` of an `Rc` handler (else a typed handler for key presses).
    object: bool,
    once: bool,
    muted: bool,
    aware: bool,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for object in [false, true] {
        for bits in 0..8u8 {
            let case = Case {
                object,
                once: bits & 1 != 0,
                muted: bits & 2 != 0,
                aware: bits & 4 != 0,
            };
            // `.self_aware()` with `add_viewport` does not compile (a ui case).
            if !(object && case.aware) {
                cases.push(case);
            }
        }
    }
    cases
}

/// What the case's finish returns: the viewport's id, and what keeps its handler alive.
fn subscribe(
    registry: &Rc<InputViewportRegistry>,
    case: Case,
) -> (ViewportId, Box<dyn std::any::Any>) {
    let builder = registry.subscribe();
    let builder = if case.once { builder.once() } else { builder };
    let builder = if case.muted { builder.muted() } else { builder };
    if case.object {
        let subject = Rc::new(Subject);
        (builder.add_viewport(&subject, AREA), Box::new(subject))
    } else if case.aware {
        let subscription = builder
            .self_aware()
            .add_viewport_handler::<KeyPressedEvent>(AREA, |this, _| {
                call_log::see(this.handle());
                log("subject");
                false
            });
        (subscription.id(), Box::new(subscription))
    } else {
        let subscription = builder.add_viewport_handler::<KeyPressedEvent>(AREA, |_| {
            log("subject");
            false
        });
        (subscription.id(), Box::new(subscription))
    }
}

fn check(case: Case) {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let (id, _keep) = subscribe(&registry, case);
    call_log::forget_seen();
    assert_eq!(
        registry.is_blocked(id),
        case.muted,
        "{case:?}: starts muted"
    );
    assert!(registry.focus(id));
    taken();

    // A muted viewport is skipped, and a one-shot is not used up while muted.
    if case.muted {
        processor.dispatch(key());
        assert_eq!(taken(), Vec::<&str>::new(), "{case:?}: muted");
        assert!(registry.unblock(id), "{case:?}");
        assert!(
            !registry.is_empty(),
            "{case:?}: a muted one-shot is not used up"
        );
    }
    // An event the typed handler does not select passes it by without using it up; an object
    // viewport takes every routed event.
    processor.dispatch(click());
    let clicked = taken();
    if case.object {
        assert_eq!(
            clicked,
            ["subject"],
            "{case:?}: an object viewport takes the click"
        );
    } else {
        assert!(clicked.is_empty(), "{case:?}: not its class");
    }
    let used_up = case.once && case.object;
    assert_eq!(
        registry.is_empty(),
        used_up,
        "{case:?}: used up by the click"
    );
    if !used_up {
        assert!(registry.focus(id), "{case:?}");
    }
    processor.dispatch(key());
    processor.dispatch(key());
    let keys = taken();
    let expected = match (used_up, case.once) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => 2,
    };
    assert_eq!(keys.len(), expected, "{case:?}: keys reaching it");
    assert_eq!(
        registry.is_empty(),
        case.once,
        "{case:?}: a one-shot is gone after its call"
    );
    if case.aware {
        assert_eq!(
            call_log::seen().map(ViewportId::from),
            Some(id),
            "{case:?}: a self-aware handler receives its own viewport"
        );
    }
}

#[test]
fn a1_every_combination_on_viewports() {
    let cases = cases();
    assert_eq!(cases.len(), 12);
    for case in cases {
        check(case);
    }
}

#[test]
fn a1_a_one_shot_viewport_is_removed_before_its_call_so_a_nested_dispatch_misses_it() {
    let processor = Rc::new(EventProcessor::new());
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let nested = Rc::clone(&processor);
    let overlay = registry
        .subscribe()
        .once()
        .add_viewport_handler::<KeyPressedEvent>(AREA, move |_| {
            log("overlay");
            // Reached at most once: the nested key finds no viewport.
            assert!(!nested.dispatch(key()));
            true
        });
    assert!(registry.focus(overlay.id()));
    assert!(processor.dispatch(key()));
    assert_eq!(taken(), ["overlay"]);
    assert!(registry.is_empty());
    assert_eq!(registry.focused(), None);
}

#[test]
fn a2_viewport_blocks_are_counted_and_guards_drop_in_any_order() {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let view = registry.add_viewport_handler::<KeyPressedEvent>(AREA, |_| {
        log("view");
        true
    });
    assert!(registry.focus(view.id()));
    let first = registry.block_scoped(view.id());
    let second = registry.block_scoped(view.id());
    assert!(registry.block(view.id()));
    assert!(!processor.dispatch(key()));
    // The first guard goes first: the others still hold.
    drop(first);
    assert!(registry.is_blocked(view.id()));
    assert!(registry.unblock(view.id()));
    assert!(registry.is_blocked(view.id()));
    assert!(!processor.dispatch(key()));
    drop(second);
    assert!(!registry.is_blocked(view.id()));
    assert!(!registry.unblock(view.id()), "nothing to lift");
    assert!(processor.dispatch(key()));
    assert_eq!(taken(), ["view"]);
}
