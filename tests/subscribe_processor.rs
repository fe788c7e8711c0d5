//! Rule A1 on the event processor: the builder's options (priority, one-shot, muted,
//! self-aware) in every combination with every finish (`add_handler` for a class, a category and
//! `category::All`; `register_event_handler` for an `Rc` handler), each checked against what the
//! options say: where the handler runs among the others, how often, which events use up a
//! one-shot, whether it runs while muted, and that a self-aware one receives its own
//! registration. `.self_aware()` with `register_event_handler` is a compile error:
//! `ui-tests/subscribe/`.

use lumina::DelegateHandle;
use lumina::event::{
    Event, EventHandler, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers,
    MouseMovedEvent, Vec2, category,
};
use std::any::Any;
use std::rc::Rc;

#[path = "support/call_log.rs"]
mod call_log;
use call_log::{log, taken};

fn key() -> KeyPressedEvent {
    KeyPressedEvent::new(Key::W, Modifiers::NONE)
}

fn mouse() -> MouseMovedEvent {
    MouseMovedEvent::new(Vec2::new(1.0, 1.0), Vec2::new(1.0, 0.0))
}

/// An `Rc` handler that logs every event and consumes none.
struct Subject;

impl EventHandler for Subject {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        log("subject");
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Finish {
    Class,
    Category,
    All,
    Registered,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    finish: Finish,
    high: bool,
    once: bool,
    muted: bool,
    aware: bool,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for finish in [
        Finish::Class,
        Finish::Category,
        Finish::All,
        Finish::Registered,
    ] {
        for bits in 0..16u8 {
            let case = Case {
                finish,
                high: bits & 1 != 0,
                once: bits & 2 != 0,
                muted: bits & 4 != 0,
                aware: bits & 8 != 0,
            };
            // An `EventHandler` does not receive its registration (a compile error).
            if !(case.aware && finish == Finish::Registered) {
                cases.push(case);
            }
        }
    }
    cases
}

/// What a case keeps alive (the typed subscription, or the registered handler) and its handle.
fn subscribe(processor: &EventProcessor, case: Case) -> (Box<dyn Any>, DelegateHandle) {
    let mut builder = processor.subscribe();
    if case.high {
        builder = builder.priority(InputLayer::Viewport);
    }
    if case.once {
        builder = builder.once();
    }
    if case.muted {
        builder = builder.muted();
    }
    let aware = builder.self_aware();
    let seen = |this: &lumina::ThisSubscription| call_log::see(this.handle());
    let typed = match (case.finish, case.aware) {
        (Finish::Registered, _) => {
            let handler = Rc::new(Subject);
            assert!(builder.register_event_handler(&handler));
            assert!(
                !processor.subscribe().register_event_handler(&handler),
                "P1: registered already"
            );
            let handle = processor.handle_of(&handler).expect("registered");
            return (Box::new(handler), handle);
        }
        (Finish::Class, false) => builder.add_handler::<KeyPressedEvent>(|_| {
            log("subject");
            false
        }),
        (Finish::Category, false) => builder.add_handler::<category::Keyboard>(|_| {
            log("subject");
            false
        }),
        (Finish::All, false) => builder.add_handler::<category::All>(|_| {
            log("subject");
            false
        }),
        (Finish::Class, true) => aware.add_handler::<KeyPressedEvent>(move |this, _| {
            seen(this);
            log("subject");
            false
        }),
        (Finish::Category, true) => aware.add_handler::<category::Keyboard>(move |this, _| {
            seen(this);
            log("subject");
            false
        }),
        (Finish::All, true) => aware.add_handler::<category::All>(move |this, _| {
            seen(this);
            log("subject");
            false
        }),
    };
    let handle = typed.handle();
    (Box::new(typed), handle)
}

#[test]
fn a1_every_combination_on_the_event_processor() {
    for case in cases() {
        let processor = EventProcessor::new();
        let _reference = processor.add_handler::<category::All>(InputLayer::EditorChrome, |_| {
            log("reference");
            false
        });
        call_log::forget_seen();
        let (_kept, handle) = subscribe(&processor, case);
        assert_eq!(processor.len(), 2, "{case:?}");
        assert_eq!(processor.is_blocked(handle), case.muted, "{case:?}");

        // A mouse event: only an every-event handler selects it (and uses up its one-shot).
        processor.dispatch(mouse());
        let selects_mouse = matches!(case.finish, Finish::All | Finish::Registered);
        let mut expected = vec!["reference"];
        if selects_mouse && !case.muted {
            expected.insert(usize::from(!case.high), "subject");
        }
        assert_eq!(taken(), expected, "mouse: {case:?}");
        if case.muted {
            assert!(processor.unblock(handle), "{case:?}");
            assert!(!processor.is_blocked(handle), "{case:?}");
        }
        let used_up = case.once && selects_mouse && !case.muted;

        // Two keys: every finish selects them; a one-shot runs for the first only.
        for round in 0..2 {
            processor.dispatch(key());
            let mut expected = vec!["reference"];
            let runs = !(used_up || (case.once && round == 1));
            if runs {
                expected.insert(usize::from(!case.high), "subject");
            }
            assert_eq!(taken(), expected, "key {round}: {case:?}");
        }
        let present = !case.once;
        assert_eq!(processor.len(), 1 + usize::from(present), "{case:?}");
        if case.aware {
            assert_eq!(call_log::seen(), Some(handle), "{case:?}");
        }
    }
}
