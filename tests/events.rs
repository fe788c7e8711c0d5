//! Input events: each rule E1-E5 and P1-P4 of `lumina::rules`, and the input viewport registry.

use lumina::event::*;
use lumina::event_class;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::rc::{Rc, Weak};

type Log = Rc<RefCell<Vec<&'static str>>>;

fn log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

/// A handler that logs `name` and returns `consume`.
fn recorder(log: &Log, name: &'static str, consume: bool) -> Rc<impl EventHandler> {
    let log = Rc::clone(log);
    Rc::new(move |_: &mut dyn Event| {
        log.borrow_mut().push(name);
        consume
    })
}

fn key(key: Key) -> KeyPressedEvent {
    KeyPressedEvent::new(key, Modifiers::NONE)
}

// ------------------------------------------------------------------------------------------ E1

const SPEC_VARIANTS: [&str; 29] = [
    "None",
    "KeyPressed",
    "KeyReleased",
    "KeyRepeat",
    "CharInput",
    "CharInputMods",
    "MouseButtonPressed",
    "MouseButtonReleased",
    "MouseMoved",
    "MouseScrolled",
    "MouseEntered",
    "MouseLeft",
    "WindowResize",
    "WindowClose",
    "WindowFocus",
    "WindowLostFocus",
    "WindowMoved",
    "WindowMaximized",
    "WindowMinimized",
    "WindowRestored",
    "WindowRefresh",
    "WindowContentScaleChanged",
    "FramebufferResize",
    "FileDrop",
    "JoystickConnected",
    "JoystickDisconnected",
    "AppTick",
    "AppUpdate",
    "AppRender",
];

#[test]
fn e1_event_type_has_exactly_the_spec_variants() {
    let names: Vec<&str> = EventType::ALL.iter().map(|ty| ty.name()).collect();
    assert_eq!(names, SPEC_VARIANTS);
    assert_eq!(EventType::default(), EventType::None);
}

#[test]
fn e1_display_and_from_str_round_trip_for_every_variant() {
    for ty in EventType::ALL {
        assert_eq!(ty.to_string(), ty.name());
        assert_eq!(ty.name().parse::<EventType>(), Ok(ty));
    }
}

#[test]
fn e1_from_str_rejects_an_unknown_name_and_lists_the_valid_ones() {
    let error = "KeyPresed".parse::<EventType>().unwrap_err();
    assert_eq!(error.input(), "KeyPresed");
    let message = error.to_string();
    assert!(
        message.starts_with("unknown event type `KeyPresed`"),
        "{message}"
    );
    for name in SPEC_VARIANTS {
        assert!(message.contains(name), "{message} lacks {name}");
    }
    assert!(
        "keypressed".parse::<EventType>().is_err(),
        "names are exact"
    );
}

#[test]
fn e1_categories_are_bit_flags() {
    use EventCategory as C;
    for ty in EventType::ALL {
        let name = ty.name();
        let expected = if name == "None" {
            C::NONE
        } else if name.starts_with("Key") || name.starts_with("Char") {
            C::KEYBOARD | C::INPUT
        } else if name.starts_with("Mouse") {
            C::MOUSE | C::INPUT
        } else if name.starts_with("Window") || name == "FramebufferResize" || name == "FileDrop" {
            C::WINDOW
        } else if name.starts_with("Joystick") {
            C::JOYSTICK | C::INPUT
        } else {
            assert!(name.starts_with("App"), "{name}");
            C::APPLICATION
        };
        assert_eq!(C::from(ty), expected, "{name}");
    }
    let mut set = C::KEYBOARD | C::MOUSE;
    assert!(set.contains(C::MOUSE) && !set.contains(C::MOUSE | C::WINDOW));
    assert!(!(set & (C::MOUSE | C::WINDOW)).is_empty());
    assert_eq!(set - C::KEYBOARD, C::MOUSE);
    set -= C::KEYBOARD;
    assert_eq!(set, C::MOUSE);
    set |= C::WINDOW;
    assert_eq!(set, C::MOUSE | C::WINDOW);
    assert_eq!(!C::NONE, C::all());
    assert_eq!(C::default(), C::NONE);
    assert_eq!(C::try_from(u8::from(C::all())), Ok(C::all()));
    assert!(C::try_from(0x80).is_err());
    assert_eq!(
        C::try_from(0x81).unwrap_err().to_string(),
        "bits 0x80 name no flag of EventCategory"
    );
    assert_eq!(
        format!("{:?}", C::WINDOW | C::INPUT),
        "EventCategory(WINDOW | INPUT)"
    );
    assert_eq!(format!("{:?}", C::NONE), "EventCategory(empty)");
}

// ------------------------------------------------------------------------------- E2, E3

/// Checks an event through `dyn Event`; returns its event type and name as seen there.
type DynCheck = Box<dyn FnOnce() -> (EventType, &'static str)>;

/// Every built-in class, its event type as a value, and the same through `dyn Event`.
fn every_builtin_event() -> Vec<(EventType, DynCheck)> {
    fn entry<E: EventClass>(event: E) -> (EventType, DynCheck) {
        let static_type = E::static_type();
        assert_eq!(event.event_type(), static_type);
        assert_eq!(event.name(), static_type.name());
        (
            static_type,
            Box::new(move || {
                let mut envelope = Envelope::new(event);
                let dynamic: &mut dyn Event = &mut envelope;
                assert!(dynamic.is::<E>());
                (dynamic.event_type(), dynamic.name())
            }),
        )
    }
    let p = Vec2::new(1.0, 2.0);
    vec![
        entry(KeyPressedEvent::new(Key::A, Modifiers::SHIFT)),
        entry(KeyReleasedEvent::new(Key::A, Modifiers::NONE)),
        entry(KeyRepeatEvent::new(Key::A, Modifiers::NONE, 3)),
        entry(CharInputEvent::new('é')),
        entry(CharInputModsEvent::new('é', Modifiers::ALT)),
        entry(MouseButtonPressedEvent::new(
            MouseButton::Left,
            Modifiers::NONE,
            p,
        )),
        entry(MouseButtonReleasedEvent::new(
            MouseButton::Right,
            Modifiers::NONE,
            p,
        )),
        entry(MouseMovedEvent::new(p, Vec2::new(0.5, -0.5))),
        entry(MouseScrolledEvent::new(Vec2::new(1.0, -3.0), p)),
        entry(MouseEnteredEvent::new(p)),
        entry(MouseLeftEvent),
        entry(WindowResizeEvent::new(UVec2::new(1280, 720))),
        entry(WindowCloseEvent),
        entry(WindowFocusEvent),
        entry(WindowLostFocusEvent),
        entry(WindowMovedEvent::new(IVec2::new(-10, 20))),
        entry(WindowMaximizedEvent),
        entry(WindowMinimizedEvent),
        entry(WindowRestoredEvent),
        entry(WindowRefreshEvent),
        entry(WindowContentScaleChangedEvent::new(Vec2::new(1.5, 1.5))),
        entry(FramebufferResizeEvent::new(UVec2::new(2560, 1440))),
        entry(FileDropEvent::new(vec![PathBuf::from("a.png")], p)),
        entry(JoystickConnectedEvent::new(0)),
        entry(JoystickDisconnectedEvent::new(0)),
        entry(AppTickEvent::new(1.0 / 60.0)),
        entry(AppUpdateEvent::new(0.016)),
        entry(AppRenderEvent),
    ]
}

#[test]
fn e2_e3_every_engine_event_type_but_none_has_exactly_one_builtin_class() {
    let events = every_builtin_event();
    let mut covered: Vec<EventType> = events.iter().map(|(ty, _)| *ty).collect();
    covered.sort();
    let expected: Vec<EventType> = EventType::ALL[1..].to_vec();
    assert_eq!(covered, expected);
    for (ty, check) in events {
        assert_eq!(check(), (ty, ty.name()));
    }
}

#[test]
fn e2_static_type_event_type_and_name_come_from_the_attribute() {
    assert_eq!(KeyPressedEvent::static_type(), EventType::KeyPressed);
    assert_eq!(KeyPressedEvent::CLASS_NAME, "KeyPressedEvent");
    let event = MouseScrolledEvent::new(Vec2::new(0.0, 1.0), Vec2::default());
    assert_eq!(event.event_type(), EventType::MouseScrolled);
    assert_eq!(event.name(), "MouseScrolled");
}

/// A user's struct, with its derives and literal construction untouched by the attribute.
#[lumina::event_class(WindowResize)]
#[derive(Clone, Debug, Default, PartialEq)]
struct EditorPanelResized {
    panel: u32,
    width: f32,
}

#[lumina::event_class(None)]
struct UnitGameEvent;

#[event_class(AppTick)]
struct TupleGameEvent(u64);

#[test]
fn e2_the_struct_keeps_its_literals_derives_and_shape() {
    let event = EditorPanelResized {
        panel: 3,
        width: 250.0,
    };
    assert_eq!(event.clone(), event);
    assert_eq!(EditorPanelResized::default().panel, 0);
    assert_eq!(EditorPanelResized::static_type(), EventType::WindowResize);
    assert_eq!(EditorPanelResized::CLASS_NAME, "EditorPanelResized");
    assert_eq!(UnitGameEvent.event_type(), EventType::None);
    assert_eq!(TupleGameEvent(7).0, 7);
    assert_eq!(TupleGameEvent::static_type(), EventType::AppTick);
}

#[test]
fn e3_events_carry_the_fields_a_user_needs() {
    let press = KeyPressedEvent::new(Key::W, Modifiers::CONTROL | Modifiers::SHIFT);
    assert_eq!((press.key, press.repeat), (Key::W, false));
    assert!(press.modifiers.contains(Modifiers::CONTROL));
    assert!(
        KeyPressedEvent {
            repeat: true,
            ..press.clone()
        }
        .repeat
    );
    assert_eq!(
        KeyRepeatEvent::new(Key::S, Modifiers::NONE, 4).repeat_count,
        4
    );
    assert_eq!(CharInputModsEvent::new('ß', Modifiers::ALT).code_point, 'ß');
    let click =
        MouseButtonPressedEvent::new(MouseButton::Middle, Modifiers::NONE, Vec2::new(3.0, 4.0));
    assert_eq!(
        (click.button, click.position),
        (MouseButton::Middle, Vec2::new(3.0, 4.0))
    );
    let moved = MouseMovedEvent::new(Vec2::new(10.0, 10.0), Vec2::new(-2.0, 1.0));
    assert_eq!(moved.delta, Vec2::new(-2.0, 1.0));
    let scrolled = MouseScrolledEvent::new(Vec2::new(0.5, -1.0), Vec2::new(7.0, 8.0));
    assert_eq!(
        (scrolled.offset.x, scrolled.offset.y),
        (0.5, -1.0),
        "both axes"
    );
    assert_eq!(
        WindowResizeEvent::new(UVec2::new(800, 600)).size,
        UVec2::new(800, 600)
    );
    assert_eq!(
        WindowMovedEvent::new(IVec2::new(-5, 5)).position,
        IVec2::new(-5, 5)
    );
    assert_eq!(
        WindowContentScaleChangedEvent::new(Vec2::new(2.0, 2.0))
            .scale
            .y,
        2.0
    );
    assert_eq!(FramebufferResizeEvent::new(UVec2::new(1, 2)).size.y, 2);
    let drop = FileDropEvent::new(vec!["a.txt".into(), "b.txt".into()], Vec2::new(1.0, 1.0));
    assert_eq!(drop.paths.len(), 2);
    assert_eq!(JoystickConnectedEvent::new(3).joystick_id, 3);
    assert_eq!(AppUpdateEvent::new(0.25).delta_time, 0.25);
}

#[test]
fn e3_keys_buttons_and_modifiers_cover_a_real_keyboard_and_mouse() {
    // Letters, digits, F1-F25, the keypad, navigation, locks, both sides of every modifier.
    assert!(Key::ALL.len() >= 120, "{}", Key::ALL.len());
    let mut codes: Vec<i32> = Key::ALL.iter().map(|key| key.code()).collect();
    for key in Key::ALL {
        assert_eq!(Key::from(key.code()), *key, "{key}");
    }
    codes.dedup();
    assert_eq!(
        codes.len(),
        Key::ALL.len(),
        "codes are unique and ascending"
    );
    for name in [
        "A",
        "Z",
        "Digit0",
        "F25",
        "Keypad9",
        "KeypadEnter",
        "Escape",
        "PrintScreen",
        "RightSuper",
        "Menu",
    ] {
        assert!(Key::ALL.iter().any(|key| key.name() == name), "{name}");
    }
    assert_eq!(Key::from(9999), Key::Unknown);
    assert_eq!(Modifiers::from(Key::RightControl), Modifiers::CONTROL);
    assert_eq!(Modifiers::from(Key::A), Modifiers::NONE);
    let modifier_keys = Key::ALL
        .iter()
        .filter(|&&key| !Modifiers::from(key).is_empty());
    assert_eq!(modifier_keys.count(), 8);
    for index in 0..=u8::MAX {
        assert_eq!(u8::from(MouseButton::from(index)), index);
    }
    assert_eq!(u8::from(Modifiers::all()).count_ones(), 6);
}

// ------------------------------------------------------------------------------------------ E4

#[test]
fn e4_is_and_downcasts_identify_the_class() {
    let mut envelope = Envelope::new(key(Key::Q));
    let event: &mut dyn Event = &mut envelope;
    assert!(event.is::<KeyPressedEvent>());
    assert!(!event.is::<KeyReleasedEvent>());
    assert_eq!(
        event.downcast_ref::<KeyPressedEvent>().map(|k| k.key),
        Some(Key::Q)
    );
    assert!(event.downcast_ref::<MouseMovedEvent>().is_none());
    assert!(event.downcast_mut::<KeyReleasedEvent>().is_none());
    event.downcast_mut::<KeyPressedEvent>().unwrap().key = Key::E;
    assert_eq!(envelope.key, Key::E);
    assert_eq!(
        format!("{:?}", &envelope as &dyn Event).split(' ').next(),
        Some("KeyPressedEvent")
    );
}

#[test]
fn e4_a_handler_changing_the_event_is_seen_by_later_handlers() {
    let processor = EventProcessor::new();
    let remap = Rc::new(|event: &mut dyn Event| {
        if let Some(key) = event.downcast_mut::<KeyPressedEvent>() {
            key.key = Key::Up;
        }
        false
    });
    let seen = Rc::new(Cell::new(Key::Unknown));
    let sink = Rc::clone(&seen);
    let reader = Rc::new(move |event: &mut dyn Event| {
        sink.set(event.downcast_ref::<KeyPressedEvent>().unwrap().key);
        false
    });
    assert!(processor.register_event_handler(&remap, 10));
    assert!(processor.register_event_handler(&reader, 0));
    processor.dispatch(key(Key::W));
    assert_eq!(seen.get(), Key::Up);
}

#[test]
fn e4_is_handled_and_set_handled_carry_consumption_on_the_event() {
    let mut envelope = Envelope::new(WindowCloseEvent);
    let event: &mut dyn Event = &mut envelope;
    assert!(!event.is_handled());
    event.set_handled(true);
    assert!(event.is_handled());
    event.set_handled(false);
    assert!(!envelope.is_handled());
    let processor = EventProcessor::new();
    let consumer = Rc::new(|_: &mut dyn Event| true);
    assert!(processor.register_event_handler(&consumer, 0));
    let mut envelope = Envelope::new(WindowCloseEvent);
    assert!(processor.dispatch(&mut envelope));
    assert!(
        envelope.is_handled(),
        "a handler returning true marks the event handled"
    );
}

// ------------------------------------------------------------------------------------------ E5

mod game {
    use lumina::event_class;

    /// Same name and same event type as the engine's class, declared by a game.
    #[event_class(KeyPressed)]
    pub struct KeyPressedEvent {
        pub chord: &'static str,
    }

    /// B6: a game's own event class, declared bare.
    #[event_class]
    pub struct PlayerDied {
        pub player: u32,
    }

    /// The bare form spelled out stays valid.
    #[lumina::event_class(None)]
    pub struct PlayerRespawned {
        pub player: u32,
    }
}

#[test]
fn b6_a_bare_event_class_is_a_game_event_of_type_none() {
    assert_eq!(game::PlayerDied::static_type(), EventType::None);
    assert_eq!(game::PlayerDied::CLASS_NAME, "PlayerDied");
    assert_eq!(game::PlayerRespawned::static_type(), EventType::None);
    let respawned = game::PlayerRespawned { player: 4 };
    assert_eq!(respawned.event_type(), EventType::None);
    let mut died = Envelope::new(game::PlayerDied {
        player: respawned.player,
    });
    let event: &mut dyn Event = &mut died;
    assert_eq!(event.name(), "None");
    assert!(event.is::<game::PlayerDied>());
    assert!(!event.is::<game::PlayerRespawned>(), "told apart by type");
    assert_eq!(event.downcast_ref::<game::PlayerDied>().unwrap().player, 4);
}

#[test]
fn e5_a_game_class_never_collides_with_a_builtin_one() {
    let mut game_key = Envelope::new(game::KeyPressedEvent { chord: "ctrl+k" });
    let event: &mut dyn Event = &mut game_key;
    assert_eq!(event.event_type(), EventType::KeyPressed, "same event type");
    assert!(event.is::<game::KeyPressedEvent>());
    assert!(
        !event.is::<KeyPressedEvent>(),
        "classes are told apart by type"
    );
    assert!(event.downcast_ref::<KeyPressedEvent>().is_none());
    assert_eq!(
        event.downcast_ref::<game::KeyPressedEvent>().unwrap().chord,
        "ctrl+k"
    );

    let mut engine_key = Envelope::new(key(Key::K));
    let event: &mut dyn Event = &mut engine_key;
    assert!(!event.is::<game::KeyPressedEvent>());
}

#[test]
fn e5_game_events_go_through_the_processor_like_input() {
    let processor = EventProcessor::new();
    let deaths = Rc::new(Cell::new(0));
    let sink = Rc::clone(&deaths);
    let hud =
        Rc::new(
            move |event: &mut dyn Event| match event.downcast_ref::<game::PlayerDied>() {
                Some(died) => {
                    sink.set(sink.get() + died.player);
                    true
                }
                None => false,
            },
        );
    assert!(processor.register_event_handler(&hud, InputLayer::Default));
    assert!(processor.dispatch(game::PlayerDied { player: 2 }));
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(deaths.get(), 2);
}

// ------------------------------------------------------------------------------------------ P1

#[test]
fn p1_input_layers_have_the_spec_priorities() {
    assert_eq!(InputLayer::Viewport.priority(), 1000);
    assert_eq!(i32::from(InputLayer::EditorChrome), 500);
    assert_eq!(i32::from(InputLayer::Default), 0);
}

#[test]
fn p1_higher_priority_runs_first_and_ties_run_in_registration_order() {
    let processor = EventProcessor::new();
    let log = log();
    let default_a = recorder(&log, "default-a", false);
    let chrome = recorder(&log, "chrome", false);
    let default_b = recorder(&log, "default-b", false);
    let viewport = recorder(&log, "viewport", false);
    let below = recorder(&log, "below", false);
    let top = recorder(&log, "top", false);
    assert!(processor.register_event_handler(&default_a, InputLayer::Default));
    assert!(processor.register_event_handler(&chrome, InputLayer::EditorChrome));
    assert!(processor.register_event_handler(&default_b, InputLayer::Default));
    assert!(processor.register_event_handler(&viewport, InputLayer::Viewport));
    assert!(processor.register_event_handler(&below, -7));
    assert!(processor.register_event_handler(&top, i32::MAX));
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(
        *log.borrow(),
        [
            "top",
            "viewport",
            "chrome",
            "default-a",
            "default-b",
            "below"
        ]
    );
}

#[test]
fn p1_a_duplicate_registration_is_refused() {
    let processor = EventProcessor::new();
    let log = log();
    let handler = recorder(&log, "once", false);
    assert!(processor.register_event_handler(&handler, 0));
    assert!(
        !processor.register_event_handler(&handler, 100),
        "same handler, other priority"
    );
    let as_dyn: Rc<dyn EventHandler> = handler.clone();
    assert!(
        !processor.register_event_handler(&as_dyn, 0),
        "same handler as dyn"
    );
    assert_eq!(processor.len(), 1);
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["once"]);
    assert!(processor.unregister_event_handler(&handler));
    assert!(!processor.unregister_event_handler(&handler));
    assert!(
        processor.register_event_handler(&handler, 5),
        "registers again once unregistered"
    );
}

// ------------------------------------------------------------------------------------------ P2

#[test]
fn p2_dispatch_stops_at_the_first_handler_that_returns_true() {
    let processor = EventProcessor::new();
    let log = log();
    let first = recorder(&log, "first", false);
    let consumer = recorder(&log, "consumer", true);
    let after = recorder(&log, "after", false);
    assert!(processor.register_event_handler(&first, 3));
    assert!(processor.register_event_handler(&consumer, 2));
    assert!(processor.register_event_handler(&after, 1));
    assert!(processor.dispatch(key(Key::A)));
    assert_eq!(*log.borrow(), ["first", "consumer"]);
}

#[test]
fn p2_dispatch_stops_when_a_handler_leaves_the_event_handled() {
    let processor = EventProcessor::new();
    let log = log();
    let marker = {
        let log = Rc::clone(&log);
        Rc::new(move |event: &mut dyn Event| {
            log.borrow_mut().push("marker");
            event.set_handled(true);
            false
        })
    };
    let after = recorder(&log, "after", false);
    assert!(processor.register_event_handler(&marker, 1));
    assert!(processor.register_event_handler(&after, 0));
    assert!(processor.dispatch(key(Key::A)));
    assert_eq!(*log.borrow(), ["marker"]);
}

#[test]
fn p2_dispatch_returns_false_when_nobody_consumes() {
    let processor = EventProcessor::new();
    assert!(!processor.dispatch(key(Key::A)), "no handlers");
    let log = log();
    let a = recorder(&log, "a", false);
    let b = recorder(&log, "b", false);
    assert!(processor.register_event_handler(&a, 0));
    assert!(processor.register_event_handler(&b, 0));
    let mut envelope = Envelope::new(key(Key::A));
    assert!(!processor.dispatch(&mut envelope));
    assert!(!envelope.is_handled());
    assert_eq!(*log.borrow(), ["a", "b"]);
}

#[test]
fn p2_an_event_that_arrives_handled_is_not_dispatched() {
    let processor = EventProcessor::new();
    let log = log();
    let a = recorder(&log, "a", false);
    assert!(processor.register_event_handler(&a, 0));
    let mut envelope = Envelope::new(key(Key::A));
    envelope.set_handled(true);
    assert!(processor.dispatch(&mut envelope));
    assert!(log.borrow().is_empty());
}

// ------------------------------------------------------------------------------------------ P3

#[test]
fn p3_a_dropped_handler_is_never_called_and_is_pruned() {
    let processor = EventProcessor::new();
    let log = log();
    let doomed = recorder(&log, "doomed", true);
    let survivor = recorder(&log, "survivor", false);
    assert!(processor.register_event_handler(&doomed, 1));
    assert!(processor.register_event_handler(&survivor, 0));
    let weak = Rc::downgrade(&doomed);
    drop(doomed);
    assert!(
        weak.upgrade().is_none(),
        "the processor does not keep handlers alive"
    );
    assert_eq!(processor.len(), 1);
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(*log.borrow(), ["survivor"]);
}

#[test]
fn p3_a_handler_dropped_by_an_earlier_handler_during_dispatch_does_not_run() {
    let processor = EventProcessor::new();
    let log = log();
    let victim: Rc<RefCell<Option<Rc<dyn EventHandler>>>> = Rc::new(RefCell::new(None));
    let killer = {
        let victim = Rc::clone(&victim);
        let log = Rc::clone(&log);
        Rc::new(move |_: &mut dyn Event| {
            log.borrow_mut().push("killer");
            victim.borrow_mut().take();
            false
        })
    };
    let target: Rc<dyn EventHandler> = recorder(&log, "victim", true);
    assert!(processor.register_event_handler(&killer, 1));
    assert!(processor.register_event_handler(&target, 0));
    *victim.borrow_mut() = Some(target);
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(*log.borrow(), ["killer"]);
    assert_eq!(processor.len(), 1);
}

/// A handler whose only strong reference lives in the game's `slot`, and which empties that
/// slot from its own `on_event`: it then runs on the processor's upgrade alone.
struct SelfDropping {
    slot: Rc<RefCell<Option<Rc<SelfDropping>>>>,
    log: Log,
    alive: Rc<Cell<bool>>,
}

impl EventHandler for SelfDropping {
    fn on_event(&self, _event: &mut dyn Event) -> bool {
        self.log.borrow_mut().push("self-dropping");
        drop(self.slot.borrow_mut().take());
        // Still alive: the dispatch holds a strong reference for the call (P3).
        assert!(self.alive.get());
        self.log.borrow_mut().push("self-dropping still runs");
        false
    }
}

impl Drop for SelfDropping {
    fn drop(&mut self) {
        self.alive.set(false);
    }
}

#[test]
fn p3_a_handler_dropping_the_last_reference_to_itself_during_its_call_finishes_safely() {
    let processor = EventProcessor::new();
    let log = log();
    let alive = Rc::new(Cell::new(true));
    let slot = Rc::new(RefCell::new(None));
    let handler = Rc::new(SelfDropping {
        slot: Rc::clone(&slot),
        log: Rc::clone(&log),
        alive: Rc::clone(&alive),
    });
    assert!(processor.register_event_handler(&handler, 1));
    *slot.borrow_mut() = Some(handler);
    let after = recorder(&log, "after", false);
    assert!(processor.register_event_handler(&after, 0));
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(
        *log.borrow(),
        ["self-dropping", "self-dropping still runs", "after"]
    );
    assert!(!alive.get(), "dropped once its call is over");
    assert_eq!(processor.len(), 1);
    assert!(!processor.dispatch(key(Key::B)));
    assert_eq!(log.borrow().len(), 4, "only `after` runs again");
}

/// A handler aligned past the `Rc`'s counts: its value lies 64 bytes into the allocation, not
/// 16, so a dispatch that reached it at the wrong offset would read padding.
#[repr(align(64))]
struct OverAligned {
    id: u64,
    seen: Rc<Cell<u64>>,
}

impl EventHandler for OverAligned {
    fn on_event(&self, _event: &mut dyn Event) -> bool {
        self.seen.set(self.seen.get() * 1000 + self.id);
        false
    }
}

#[test]
fn p3_handlers_of_any_alignment_are_called_on_their_own_values() {
    let processor = EventProcessor::new();
    let seen = Rc::new(Cell::new(0));
    let first = Rc::new(OverAligned {
        id: 7,
        seen: Rc::clone(&seen),
    });
    let second: Rc<dyn EventHandler> = Rc::new(OverAligned {
        id: 9,
        seen: Rc::clone(&seen),
    });
    let plain = {
        let seen = Rc::clone(&seen);
        Rc::new(move |_: &mut dyn Event| {
            seen.set(seen.get() * 1000 + 5);
            false
        })
    };
    assert!(processor.register_event_handler(&first, 2));
    assert!(processor.register_event_handler(&second, 1));
    assert!(processor.register_event_handler(&plain, 0));
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(seen.get(), 7_009_005);
}

// ------------------------------------------------------------------------------------------ P4

#[test]
fn p4_a_handler_registered_during_dispatch_runs_from_the_next_dispatch() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let late = recorder(&log, "late", false);
    let registrar = {
        let processor = Rc::downgrade(&processor);
        let late = Rc::clone(&late);
        let log = Rc::clone(&log);
        Rc::new(move |_: &mut dyn Event| {
            log.borrow_mut().push("registrar");
            // Higher priority than itself: lands before the cursor, and after it too. (From the
            // second dispatch on, `late` is registered already and this is refused.)
            let _ = processor
                .upgrade()
                .unwrap()
                .register_event_handler(&late, 100);
            false
        })
    };
    assert!(processor.register_event_handler(&registrar, 0));
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["registrar"]);
    log.borrow_mut().clear();
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["late", "registrar"]);
}

#[test]
fn p4_a_handler_unregistered_during_dispatch_before_it_is_reached_does_not_run() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let target = recorder(&log, "target", false);
    let remover = {
        let processor = Rc::downgrade(&processor);
        let target = Rc::clone(&target);
        let log = Rc::clone(&log);
        Rc::new(move |_: &mut dyn Event| {
            log.borrow_mut().push("remover");
            assert!(
                processor
                    .upgrade()
                    .unwrap()
                    .unregister_event_handler(&target)
            );
            false
        })
    };
    assert!(processor.register_event_handler(&remover, 1));
    assert!(processor.register_event_handler(&target, 0));
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["remover"]);
    assert_eq!(processor.len(), 1);
}

#[test]
fn p4_a_handler_unregistering_itself_finishes_and_later_handlers_run() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let this: Rc<RefCell<Weak<dyn EventHandler>>> =
        Rc::new(RefCell::new(Weak::<fn(&mut dyn Event) -> bool>::new()));
    let once: Rc<dyn EventHandler> = {
        let processor = Rc::downgrade(&processor);
        let this = Rc::clone(&this);
        let log = Rc::clone(&log);
        Rc::new(move |_: &mut dyn Event| {
            let me = this.borrow().upgrade().unwrap();
            assert!(processor.upgrade().unwrap().unregister_event_handler(&me));
            log.borrow_mut().push("once");
            false
        })
    };
    *this.borrow_mut() = Rc::downgrade(&once);
    let after = recorder(&log, "after", false);
    assert!(processor.register_event_handler(&once, 1));
    assert!(processor.register_event_handler(&after, 0));
    processor.dispatch(key(Key::A));
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["once", "after", "after"]);
}

#[test]
fn p4_nested_dispatch_works() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let translator = {
        let processor = Rc::downgrade(&processor);
        let log = Rc::clone(&log);
        Rc::new(move |event: &mut dyn Event| {
            if let Some(press) = event.downcast_ref::<KeyPressedEvent>() {
                log.borrow_mut().push("translator");
                let text = CharInputEvent::new(press.key.name().chars().next().unwrap());
                return processor.upgrade().unwrap().dispatch(text);
            }
            false
        })
    };
    let text_field = {
        let log = Rc::clone(&log);
        Rc::new(move |event: &mut dyn Event| {
            log.borrow_mut().push(event.name());
            event.is::<CharInputEvent>()
        })
    };
    assert!(processor.register_event_handler(&translator, 1));
    assert!(processor.register_event_handler(&text_field, 0));
    assert!(processor.dispatch(key(Key::H)));
    assert_eq!(*log.borrow(), ["translator", "CharInput"]);
    assert!(!processor.is_broadcasting());
}

#[test]
fn p4_a_panicking_handler_leaves_the_processor_consistent() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let removed_before_panic = recorder(&log, "removed", false);
    let bomb = {
        let processor = Rc::downgrade(&processor);
        let removed = Rc::clone(&removed_before_panic);
        Rc::new(move |event: &mut dyn Event| {
            if event.is::<WindowCloseEvent>() {
                processor
                    .upgrade()
                    .unwrap()
                    .unregister_event_handler(&removed);
                panic!("handler failed");
            }
            false
        })
    };
    let after = recorder(&log, "after", false);
    assert!(processor.register_event_handler(&bomb, 2));
    assert!(processor.register_event_handler(&removed_before_panic, 1));
    assert!(processor.register_event_handler(&after, 0));
    let result = catch_unwind(AssertUnwindSafe(|| processor.dispatch(WindowCloseEvent)));
    assert!(result.is_err(), "the panic reaches the dispatcher");
    assert!(!processor.is_broadcasting(), "lock released");
    assert!(log.borrow().is_empty());
    assert_eq!(
        processor.len(),
        2,
        "bomb and after stay; the removal was applied"
    );
    assert!(!processor.dispatch(key(Key::A)));
    assert_eq!(*log.borrow(), ["after"]);
}

#[test]
fn p4_clear_during_dispatch_stops_it_and_later_registrations_run_next_time() {
    let processor = Rc::new(EventProcessor::new());
    let log = log();
    let late = recorder(&log, "late", false);
    let clearer = {
        let processor = Rc::downgrade(&processor);
        let late = Rc::clone(&late);
        let log = Rc::clone(&log);
        Rc::new(move |_: &mut dyn Event| {
            log.borrow_mut().push("clearer");
            let processor = processor.upgrade().unwrap();
            processor.clear();
            assert!(processor.register_event_handler(&late, 0));
            false
        })
    };
    let skipped = recorder(&log, "skipped", false);
    assert!(processor.register_event_handler(&clearer, 1));
    assert!(processor.register_event_handler(&skipped, 0));
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["clearer"]);
    log.borrow_mut().clear();
    processor.dispatch(key(Key::A));
    assert_eq!(*log.borrow(), ["late"]);
    assert_eq!(processor.len(), 1);
    processor.clear();
    assert!(processor.is_empty());
}

// ----------------------------------------------------------------------- viewport registry

struct Setup {
    processor: EventProcessor,
    registry: Rc<InputViewportRegistry>,
    log: Log,
    chrome: Rc<dyn EventHandler>,
}

fn setup() -> Setup {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    assert!(!registry.register(&processor), "once");
    let log = log();
    let chrome: Rc<dyn EventHandler> = recorder(&log, "chrome", true);
    assert!(processor.register_event_handler(&chrome, InputLayer::EditorChrome));
    Setup {
        processor,
        registry,
        log,
        chrome,
    }
}

fn click(x: f32, y: f32) -> MouseButtonPressedEvent {
    MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(x, y))
}

#[test]
fn viewport_the_focused_viewport_takes_keys_before_the_editor_chrome() {
    let s = setup();
    let game = {
        let log = Rc::clone(&s.log);
        Rc::new(move |event: &mut dyn Event| {
            log.borrow_mut().push(event.name());
            event.is_in_category(EventCategory::KEYBOARD)
        })
    };
    let id = s
        .registry
        .add_viewport(&game, Rect::new(0.0, 0.0, 100.0, 100.0));
    assert!(s.processor.dispatch(key(Key::W)));
    assert_eq!(
        *s.log.borrow(),
        ["chrome"],
        "nothing focused: the chrome gets the key"
    );
    s.log.borrow_mut().clear();

    s.processor.dispatch(click(50.0, 50.0));
    assert_eq!(s.registry.focused(), Some(id));
    assert_eq!(
        *s.log.borrow(),
        ["MouseButtonPressed", "chrome"],
        "the viewport left the click"
    );
    s.log.borrow_mut().clear();

    assert!(s.processor.dispatch(key(Key::W)));
    assert_eq!(
        *s.log.borrow(),
        ["KeyPressed"],
        "the focused viewport consumed the key"
    );
    let _ = &s.chrome;
}

#[test]
fn viewport_the_chrome_gets_what_the_viewport_leaves_and_a_click_outside_unfocuses() {
    let s = setup();
    let game = Rc::new(|event: &mut dyn Event| {
        event
            .downcast_ref::<KeyPressedEvent>()
            .is_some_and(|k| k.key == Key::W)
    });
    let id = s
        .registry
        .add_viewport(&game, Rect::new(0.0, 0.0, 100.0, 100.0));
    assert!(s.registry.focus(id));
    assert!(s.processor.dispatch(key(Key::W)));
    assert!(s.log.borrow().is_empty());
    assert!(s.processor.dispatch(key(Key::F5)));
    assert_eq!(*s.log.borrow(), ["chrome"], "left by the viewport");
    s.processor.dispatch(click(500.0, 500.0));
    assert_eq!(s.registry.focused(), None);
    s.log.borrow_mut().clear();
    s.processor.dispatch(key(Key::W));
    assert_eq!(*s.log.borrow(), ["chrome"]);
}

#[test]
fn viewport_mouse_goes_to_the_topmost_viewport_under_the_cursor() {
    let s = setup();
    let hits = Rc::new(RefCell::new(Vec::new()));
    let make = |name: &'static str| {
        let hits = Rc::clone(&hits);
        Rc::new(move |event: &mut dyn Event| {
            hits.borrow_mut().push((name, event.name()));
            true
        })
    };
    let (scene, preview) = (make("scene"), make("preview"));
    let scene_id = s
        .registry
        .add_viewport(&scene, Rect::new(0.0, 0.0, 200.0, 200.0));
    let preview_id = s
        .registry
        .add_viewport(&preview, Rect::new(150.0, 150.0, 100.0, 100.0));
    assert_eq!(
        s.registry.viewport_at(Vec2::new(160.0, 160.0)),
        Some(preview_id)
    );
    assert_eq!(
        s.registry.viewport_at(Vec2::new(10.0, 10.0)),
        Some(scene_id)
    );
    s.processor.dispatch(MouseMovedEvent::new(
        Vec2::new(160.0, 160.0),
        Vec2::default(),
    ));
    s.processor.dispatch(MouseScrolledEvent::new(
        Vec2::new(0.0, 1.0),
        Vec2::new(10.0, 10.0),
    ));
    s.processor.dispatch(click(10.0, 10.0));
    s.processor.dispatch(MouseButtonReleasedEvent::new(
        MouseButton::Left,
        Modifiers::NONE,
        Vec2::new(180.0, 180.0),
    ));
    assert_eq!(
        *hits.borrow(),
        [
            ("preview", "MouseMoved"),
            ("scene", "MouseScrolled"),
            ("scene", "MouseButtonPressed"),
            ("scene", "MouseButtonReleased"),
        ],
        "the release goes to the focused viewport where the drag started"
    );
    assert!(
        s.registry
            .set_rect(preview_id, Rect::new(0.0, 0.0, 1.0, 1.0))
    );
    assert_eq!(
        s.registry.viewport_at(Vec2::new(160.0, 160.0)),
        Some(scene_id)
    );
}

#[test]
fn viewport_window_events_pass_through_and_dropped_viewports_get_nothing() {
    let s = setup();
    let game = Rc::new(|_: &mut dyn Event| true);
    let id = s
        .registry
        .add_viewport(&game, Rect::new(0.0, 0.0, 100.0, 100.0));
    s.registry.focus(id);
    assert!(
        s.processor
            .dispatch(WindowResizeEvent::new(UVec2::new(1, 1)))
    );
    assert_eq!(
        *s.log.borrow(),
        ["chrome"],
        "window events are not routed to viewports"
    );
    drop(game);
    assert_eq!(s.registry.focused(), None);
    assert!(s.registry.is_empty());
    assert!(!s.registry.focus(id));
    s.log.borrow_mut().clear();
    s.processor.dispatch(key(Key::W));
    assert_eq!(*s.log.borrow(), ["chrome"]);
    // A dropped viewport is gone (N4): nothing is left to remove.
    assert!(!s.registry.remove(id));
}

#[test]
fn a_dropped_viewport_is_gone_whether_or_not_its_entry_was_swept() {
    // N4: entries of dropped viewports are swept once the list has doubled (amortized), not on
    // every add; until then the viewport is gone all the same: no count, no listing, no input,
    // and `remove` of it is `false`.
    let s = setup();
    let old = Rc::new(|_: &mut dyn Event| true);
    let old_id = s
        .registry
        .add_viewport(&old, Rect::new(0.0, 0.0, 10.0, 10.0));
    drop(old);
    let new = Rc::new(|_: &mut dyn Event| true);
    let new_id = s
        .registry
        .add_viewport(&new, Rect::new(0.0, 0.0, 10.0, 10.0));
    assert_ne!(old_id, new_id);
    assert_eq!(s.registry.len(), 1);
    assert!(!s.registry.set_rect(old_id, Rect::new(0.0, 0.0, 1.0, 1.0)));
    assert!(!s.registry.focus(old_id));
    assert!(!s.registry.remove(old_id), "dropped: gone");
    assert_eq!(s.registry.viewport_at(Vec2::new(1.0, 1.0)), Some(new_id));
    assert!(s.registry.remove(new_id));
    assert!(!s.registry.remove(new_id));
    assert!(s.registry.is_empty());
}
