//! PL1, PL2: winit's window events become lumina events with every E3 field, dispatched through
//! the processor (and so through the viewport registry), tested without a window: whole winit
//! events where winit lets them be made, and otherwise `WindowInput`, what the events carry.
//! Every physical key maps, without a panic.
//!
//! Run with `cargo test --features winit --test platform_winit`.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::rc::Rc;

use lumina::event::*;
use lumina::platform::winit;
use lumina::platform::{
    DEFAULT_PIXELS_PER_LINE, WindowInput, WindowState, WinitInput, WinitSettings, scroll_lines,
};
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, Ime, MouseButton as WinitButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{KeyCode, ModifiersState, NativeKeyCode, PhysicalKey};

/// The Debug text of every engine event class a handler can see, to compare whole events.
fn debug(event: &dyn Event) -> String {
    macro_rules! try_each {
        ($($T:ty),* $(,)?) => {
            $(if let Some(e) = event.downcast_ref::<$T>() { return format!("{e:?}"); })*
        };
    }
    try_each!(
        KeyPressedEvent,
        KeyReleasedEvent,
        KeyRepeatEvent,
        CharInputEvent,
        CharInputModsEvent,
        MouseButtonPressedEvent,
        MouseButtonReleasedEvent,
        MouseMovedEvent,
        MouseScrolledEvent,
        MouseEnteredEvent,
        MouseLeftEvent,
        WindowResizeEvent,
        WindowCloseEvent,
        WindowFocusEvent,
        WindowLostFocusEvent,
        WindowMovedEvent,
        WindowMaximizedEvent,
        WindowMinimizedEvent,
        WindowRestoredEvent,
        WindowRefreshEvent,
        WindowContentScaleChangedEvent,
        FramebufferResizeEvent,
        FileDropEvent,
    );
    format!("unexpected {}", event.name())
}

/// A processor with a handler at the default layer that records every event and consumes none.
struct Recorder {
    processor: EventProcessor,
    log: Rc<RefCell<Vec<String>>>,
    _handler: Rc<dyn EventHandler>,
}

impl Recorder {
    fn new() -> Recorder {
        let processor = EventProcessor::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&log);
        let handler: Rc<dyn EventHandler> = Rc::new(move |event: &mut dyn Event| {
            sink.borrow_mut().push(debug(event));
            false
        });
        assert!(processor.register_dyn_event_handler(&handler, InputLayer::Default));
        Recorder {
            processor,
            log,
            _handler: handler,
        }
    }

    /// The events recorded since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }
}

fn d<E: std::fmt::Debug>(event: E) -> String {
    format!("{event:?}")
}

fn code(code: KeyCode) -> PhysicalKey {
    PhysicalKey::Code(code)
}

/// What winit's `KeyboardInput` carries, as a [`WindowInput`] (a `KeyEvent` cannot be made
/// outside winit): a press typing `text`.
fn press(key: impl Into<PhysicalKey>, text: Option<&str>) -> WindowInput<'_> {
    WindowInput::Key {
        key: key.into(),
        state: ElementState::Pressed,
        repeat: false,
        text,
    }
}

/// An auto-repeat of a held key, typing `text` again.
fn repeat(key: impl Into<PhysicalKey>, text: Option<&str>) -> WindowInput<'_> {
    WindowInput::Key {
        key: key.into(),
        state: ElementState::Pressed,
        repeat: true,
        text,
    }
}

/// A key going up.
fn release(key: impl Into<PhysicalKey>) -> WindowInput<'static> {
    WindowInput::Key {
        key: key.into(),
        state: ElementState::Released,
        repeat: false,
        text: None,
    }
}

#[test]
fn pl1_keys_carry_modifiers_repeat_and_text() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;

    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::SHIFT));
    input.dispatch(p, press(KeyCode::KeyA, Some("A")));
    assert_eq!(
        r.take(),
        [
            d(KeyPressedEvent::new(Key::A, Modifiers::SHIFT)),
            d(CharInputEvent::new('A')),
            d(CharInputModsEvent::new('A', Modifiers::SHIFT)),
        ]
    );

    // Two auto-repeats: a repeated press and a KeyRepeat counting them, and the text again.
    input.dispatch(p, repeat(KeyCode::KeyA, Some("A")));
    input.dispatch(p, repeat(KeyCode::KeyA, Some("A")));
    let shift = Modifiers::SHIFT;
    assert_eq!(
        r.take(),
        [
            d(KeyPressedEvent::new(Key::A, shift).repeated()),
            d(KeyRepeatEvent::new(Key::A, shift, 1)),
            d(CharInputEvent::new('A')),
            d(CharInputModsEvent::new('A', shift)),
            d(KeyPressedEvent::new(Key::A, shift).repeated()),
            d(KeyRepeatEvent::new(Key::A, shift, 2)),
            d(CharInputEvent::new('A')),
            d(CharInputModsEvent::new('A', shift)),
        ]
    );
    input.dispatch(p, release(KeyCode::KeyA));
    assert_eq!(r.take(), [d(KeyReleasedEvent::new(Key::A, shift))]);
    // A new press starts counting again.
    input.dispatch(p, press(KeyCode::KeyA, None));
    input.dispatch(p, repeat(KeyCode::KeyA, None));
    assert_eq!(r.take()[2], d(KeyRepeatEvent::new(Key::A, shift, 1)));

    // Control held: control characters are no text; printable text only with its modifiers.
    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::CONTROL));
    let ctrl = Modifiers::CONTROL;
    input.dispatch(p, press(KeyCode::KeyS, Some("\u{13}")));
    input.dispatch(p, press(KeyCode::KeyS, Some("s")));
    assert_eq!(
        r.take(),
        [
            d(KeyPressedEvent::new(Key::S, ctrl)),
            d(KeyPressedEvent::new(Key::S, ctrl)),
            d(CharInputModsEvent::new('s', ctrl)),
        ]
    );
    input.dispatch(p, press(KeyCode::Enter, Some("\r")));
    assert_eq!(r.take(), [d(KeyPressedEvent::new(Key::Enter, ctrl))]);

    // Lock keys toggle their lock state, which survives modifier changes.
    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::empty()));
    input.dispatch(p, press(KeyCode::CapsLock, None));
    input.dispatch(p, release(KeyCode::CapsLock));
    input.dispatch(
        p,
        WindowInput::ModifiersChanged(ModifiersState::ALT | ModifiersState::SUPER),
    );
    assert_eq!(
        input.state().modifiers,
        Modifiers::CAPS_LOCK | Modifiers::ALT | Modifiers::SUPER
    );
    input.dispatch(p, press(KeyCode::NumLock, None));
    input.dispatch(p, press(KeyCode::CapsLock, None));
    input.dispatch(p, press(KeyCode::KeyQ, None));
    let log = r.take();
    assert_eq!(
        log.last().unwrap(),
        &d(KeyPressedEvent::new(
            Key::Q,
            Modifiers::NUM_LOCK | Modifiers::ALT | Modifiers::SUPER
        ))
    );

    // An unidentified key is Unknown, and still an event.
    let native = PhysicalKey::Unidentified(NativeKeyCode::Xkb(0x1234));
    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::empty()));
    input.dispatch(p, press(native, None));
    assert_eq!(
        r.take(),
        [d(KeyPressedEvent::new(Key::Unknown, Modifiers::NUM_LOCK))]
    );
}

#[test]
fn pl1_text_from_the_input_method_becomes_char_events() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    input.window_event(
        &r.processor,
        &WindowEvent::ModifiersChanged(ModifiersState::SHIFT.into()),
    );
    let commit = WindowEvent::Ime(Ime::Commit("é€\n".to_owned()));
    assert!(!input.window_event(&r.processor, &commit));
    assert_eq!(
        r.take(),
        [
            d(CharInputEvent::new('é')),
            d(CharInputModsEvent::new('é', Modifiers::SHIFT)),
            d(CharInputEvent::new('€')),
            d(CharInputModsEvent::new('€', Modifiers::SHIFT)),
        ]
    );
    // A preedit is not text yet.
    let preedit = WindowEvent::Ime(Ime::Preedit("e".to_owned(), None));
    input.window_event(&r.processor, &preedit);
    assert!(r.take().is_empty());
}

#[test]
fn pl1_mouse_buttons_moves_scrolls_enter_and_leave() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    let at = |x: f64, y: f64| PhysicalPosition::new(x, y);

    // Entering reports its position with the first move; the first delta is zero.
    input.dispatch(p, WindowInput::CursorEntered);
    assert!(r.take().is_empty());
    input.dispatch(p, WindowInput::CursorMoved(at(10.0, 20.0)));
    input.dispatch(p, WindowInput::CursorMoved(at(15.0, 18.0)));
    assert_eq!(
        r.take(),
        [
            d(MouseEnteredEvent::new(Vec2::new(10.0, 20.0))),
            d(MouseMovedEvent::new(
                Vec2::new(10.0, 20.0),
                Vec2::new(0.0, 0.0)
            )),
            d(MouseMovedEvent::new(
                Vec2::new(15.0, 18.0),
                Vec2::new(5.0, -2.0)
            )),
        ]
    );

    // Buttons at the cursor, with the modifiers.
    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::CONTROL));
    let here = Vec2::new(15.0, 18.0);
    let ctrl = Modifiers::CONTROL;
    for (winit_button, button) in [
        (WinitButton::Left, MouseButton::Left),
        (WinitButton::Right, MouseButton::Right),
        (WinitButton::Middle, MouseButton::Middle),
        (WinitButton::Back, MouseButton::Back),
        (WinitButton::Forward, MouseButton::Forward),
        (WinitButton::Other(7), MouseButton::Other(7)),
        (WinitButton::Other(9000), MouseButton::Other(255)),
    ] {
        input.dispatch(
            p,
            WindowInput::MouseButton {
                state: ElementState::Pressed,
                button: winit_button,
            },
        );
        input.dispatch(
            p,
            WindowInput::MouseButton {
                state: ElementState::Released,
                button: winit_button,
            },
        );
        assert_eq!(
            r.take(),
            [
                d(MouseButtonPressedEvent::new(button, ctrl, here)),
                d(MouseButtonReleasedEvent::new(button, ctrl, here)),
            ]
        );
    }

    // Scrolls on both axes: wheel lines as they are, touchpad pixels per line; x positive to
    // the right (winit's is the other way round), y positive away from the user.
    input.dispatch(
        p,
        WindowInput::MouseWheel(MouseScrollDelta::LineDelta(1.0, 2.0)),
    );
    input.dispatch(
        p,
        WindowInput::MouseWheel(MouseScrollDelta::LineDelta(0.0, -1.0)),
    );
    let pixels = WindowInput::MouseWheel(MouseScrollDelta::PixelDelta(at(-40.0, -60.0)));
    assert_eq!(input.settings, WinitSettings::default());
    assert_eq!(input.settings.pixels_per_line, DEFAULT_PIXELS_PER_LINE);
    input.dispatch(p, pixels);
    // The setting applies from the next scroll on.
    input.settings.pixels_per_line = 10.0;
    input.dispatch(p, pixels);
    assert_eq!(
        r.take(),
        [
            d(MouseScrolledEvent::new(Vec2::new(-1.0, 2.0), here)),
            d(MouseScrolledEvent::new(Vec2::new(0.0, -1.0), here)),
            d(MouseScrolledEvent::new(Vec2::new(2.0, -3.0), here)),
            d(MouseScrolledEvent::new(Vec2::new(4.0, -6.0), here)),
        ]
    );
    assert_eq!(
        scroll_lines(MouseScrollDelta::PixelDelta(at(0.0, 50.0)), 10.0),
        Vec2::new(0.0, 5.0)
    );

    // Leaving, then coming back: entered again, and no delta across the absence.
    input.dispatch(p, WindowInput::CursorLeft);
    assert!(!input.state().cursor_inside);
    input.dispatch(p, WindowInput::CursorMoved(at(300.0, 200.0)));
    assert_eq!(
        r.take(),
        [
            d(MouseLeftEvent),
            d(MouseEnteredEvent::new(Vec2::new(300.0, 200.0))),
            d(MouseMovedEvent::new(
                Vec2::new(300.0, 200.0),
                Vec2::default()
            )),
        ]
    );
}

#[test]
fn pl1_window_events_resize_move_focus_close_refresh_and_drop() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    for event in [
        WindowEvent::Resized(PhysicalSize::new(800, 600)),
        WindowEvent::Moved(PhysicalPosition::new(-20, 35)),
        WindowEvent::Focused(true),
        WindowEvent::Focused(false),
        WindowEvent::CloseRequested,
        WindowEvent::RedrawRequested,
        // No lumina counterpart: nothing dispatched.
        WindowEvent::Occluded(true),
        WindowEvent::HoveredFile(PathBuf::from("/tmp/level.map")),
        WindowEvent::Destroyed,
    ] {
        input.window_event(p, &event);
    }
    assert_eq!(
        r.take(),
        [
            d(WindowResizeEvent::new(UVec2::new(800, 600))),
            d(FramebufferResizeEvent::new(UVec2::new(800, 600))),
            d(WindowMovedEvent::new(IVec2::new(-20, 35))),
            d(WindowFocusEvent),
            d(WindowLostFocusEvent),
            d(WindowCloseEvent),
            d(WindowRefreshEvent),
        ]
    );

    // Dropped files arrive where the cursor is.
    input.dispatch(
        p,
        WindowInput::CursorMoved(PhysicalPosition::new(64.0, 48.0)),
    );
    r.take();
    let dropped = WindowEvent::DroppedFile(PathBuf::from("/tmp/level.map"));
    input.window_event(p, &dropped);
    assert_eq!(
        r.take(),
        [d(FileDropEvent::new(
            vec![PathBuf::from("/tmp/level.map")],
            Vec2::new(64.0, 48.0)
        ))]
    );
}

#[test]
fn pl1_content_scale_gives_logical_positions_and_pixel_framebuffers() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    input.dispatch(p, WindowInput::ScaleFactorChanged(2.0));
    input.dispatch(p, WindowInput::Resized(PhysicalSize::new(1600, 1200)));
    input.dispatch(p, WindowInput::Moved(PhysicalPosition::new(100, 40)));
    input.dispatch(
        p,
        WindowInput::CursorMoved(PhysicalPosition::new(100.0, 50.0)),
    );
    input.window_event(p, &WindowEvent::DroppedFile(PathBuf::from("a.png")));
    assert_eq!(
        r.take(),
        [
            d(WindowContentScaleChangedEvent::new(Vec2::new(2.0, 2.0))),
            d(WindowResizeEvent::new(UVec2::new(800, 600))),
            d(FramebufferResizeEvent::new(UVec2::new(1600, 1200))),
            d(WindowMovedEvent::new(IVec2::new(50, 20))),
            d(MouseEnteredEvent::new(Vec2::new(50.0, 25.0))),
            d(MouseMovedEvent::new(Vec2::new(50.0, 25.0), Vec2::default())),
            d(FileDropEvent::new(
                vec![PathBuf::from("a.png")],
                Vec2::new(50.0, 25.0)
            )),
        ]
    );
    assert_eq!(input.state().scale_factor, 2.0);
}

#[test]
fn pl1_minimize_maximize_and_restore_are_reported_on_change() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    // (minimized, maximized) as the window reports them, and what each change dispatches.
    let steps: [((bool, bool), &[String]); 8] = [
        ((false, false), &[]),
        ((false, true), &[d(WindowMaximizedEvent)]),
        ((false, true), &[]),
        // Minimized while maximized: restoring gives the maximized window back.
        ((true, true), &[d(WindowMinimizedEvent)]),
        ((false, true), &[d(WindowRestoredEvent)]),
        ((false, false), &[d(WindowRestoredEvent)]),
        ((true, false), &[d(WindowMinimizedEvent)]),
        // Restored straight to maximized.
        (
            (false, true),
            &[d(WindowRestoredEvent), d(WindowMaximizedEvent)],
        ),
    ];
    for ((minimized, maximized), expected) in steps {
        input.dispatch(
            p,
            WindowInput::State {
                minimized: Some(minimized),
                maximized,
            },
        );
        assert_eq!(r.take(), expected, "at ({minimized}, {maximized})");
        assert_eq!(input.state().minimized, minimized);
    }
    assert!(input.state().maximized);
}

#[test]
fn pl1_a_window_that_cannot_tell_whether_it_is_minimized_keeps_the_last_state() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    let unknown = |maximized| WindowInput::State {
        minimized: None,
        maximized,
    };
    // Not minimized: the maximized state is still reported.
    input.dispatch(p, unknown(true));
    assert_eq!(r.take(), [d(WindowMaximizedEvent)]);
    input.dispatch(
        p,
        WindowInput::State {
            minimized: Some(true),
            maximized: true,
        },
    );
    assert_eq!(r.take(), [d(WindowMinimizedEvent)]);
    // Minimized, as far as anyone knows: nothing changes, nothing is reported.
    input.dispatch(p, unknown(false));
    assert!(r.take().is_empty());
    assert!(input.state().minimized);
    assert!(input.state().maximized);
}

#[test]
fn pl1_a_winit_event_becomes_its_window_input_or_comes_back() {
    let path = PathBuf::from("/tmp/level.map");
    let pairs = [
        (
            WindowEvent::ModifiersChanged(ModifiersState::ALT.into()),
            WindowInput::ModifiersChanged(ModifiersState::ALT),
        ),
        (
            WindowEvent::Ime(Ime::Commit("é".to_owned())),
            WindowInput::Text("é"),
        ),
        (
            WindowEvent::Resized(PhysicalSize::new(3, 4)),
            WindowInput::Resized(PhysicalSize::new(3, 4)),
        ),
        (
            WindowEvent::Moved(PhysicalPosition::new(-1, 2)),
            WindowInput::Moved(PhysicalPosition::new(-1, 2)),
        ),
        (WindowEvent::Focused(false), WindowInput::Focused(false)),
        (WindowEvent::CloseRequested, WindowInput::CloseRequested),
        (WindowEvent::RedrawRequested, WindowInput::RedrawRequested),
        (
            WindowEvent::DroppedFile(path.clone()),
            WindowInput::DroppedFile(&path),
        ),
    ];
    for (event, expected) in &pairs {
        assert_eq!(WindowInput::try_from(event), Ok(*expected), "{event:?}");
    }
    // What lumina has no counterpart for comes back as it went in.
    for event in [
        WindowEvent::Occluded(true),
        WindowEvent::HoveredFile(path.clone()),
        WindowEvent::HoveredFileCancelled,
        WindowEvent::Ime(Ime::Preedit("e".to_owned(), None)),
        WindowEvent::Destroyed,
    ] {
        let back = WindowInput::try_from(&event).expect_err("no lumina counterpart");
        assert!(std::ptr::eq(back, &event), "{event:?}");
    }
}

#[test]
fn pl1_state_set_by_hand_reports_nothing_and_what_follows_is_translated_against_it() {
    let r = Recorder::new();
    let mut input = WinitInput::new();
    let p = &r.processor;
    assert_eq!(input.state(), WindowState::default());
    let state = WindowState {
        modifiers: Modifiers::CAPS_LOCK,
        cursor_position: Vec2::new(10.0, 10.0),
        cursor_inside: true,
        scale_factor: 2.0,
        ..input.state()
    };
    input.set_state(state);
    assert!(r.take().is_empty());
    assert_eq!(input.state(), state);
    // The move's delta starts at the position set, both in logical units of the scale set.
    input.dispatch(
        p,
        WindowInput::CursorMoved(PhysicalPosition::new(40.0, 30.0)),
    );
    input.dispatch(p, WindowInput::Resized(PhysicalSize::new(200, 100)));
    // The lock state set is kept across a change of the held modifiers.
    input.dispatch(p, WindowInput::ModifiersChanged(ModifiersState::SHIFT));
    input.dispatch(p, press(KeyCode::KeyE, None));
    assert_eq!(
        r.take(),
        [
            d(MouseMovedEvent::new(
                Vec2::new(20.0, 15.0),
                Vec2::new(10.0, 5.0)
            )),
            d(WindowResizeEvent::new(UVec2::new(100, 50))),
            d(FramebufferResizeEvent::new(UVec2::new(200, 100))),
            d(KeyPressedEvent::new(
                Key::E,
                Modifiers::SHIFT | Modifiers::CAPS_LOCK
            )),
        ]
    );
    assert_eq!(input.state().cursor_position, Vec2::new(20.0, 15.0));
}

#[test]
fn pl1_translated_input_goes_through_the_viewport_registry_first() {
    let processor = EventProcessor::new();
    let registry = Rc::new(InputViewportRegistry::new());
    assert!(registry.register(&processor));
    let taken = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&taken);
    let viewport = Rc::new(move |event: &mut dyn Event| {
        let mine = event.is::<KeyPressedEvent>() || event.is::<MouseButtonPressedEvent>();
        if mine {
            sink.borrow_mut().push(format!("viewport {}", event.name()));
        }
        mine
    });
    let id = registry.add_viewport(&viewport, Rect::new(100.0, 0.0, 200.0, 100.0));
    let sink = Rc::clone(&taken);
    let chrome = Rc::new(move |event: &mut dyn Event| {
        sink.borrow_mut().push(format!("chrome {}", event.name()));
        true
    });
    assert!(processor.register_event_handler(&chrome, InputLayer::EditorChrome));

    let mut input = WinitInput::new();
    let key = code(KeyCode::KeyW);
    // Not focused: the key goes to the chrome.
    assert!(input.dispatch(&processor, press(key, None)));
    // A click inside the viewport focuses it; from then on it takes the keys first.
    input.dispatch(
        &processor,
        WindowInput::CursorMoved(PhysicalPosition::new(150.0, 50.0)),
    );
    assert!(input.dispatch(
        &processor,
        WindowInput::MouseButton {
            state: ElementState::Pressed,
            button: WinitButton::Left
        }
    ));
    assert_eq!(registry.focused(), Some(id));
    assert!(input.dispatch(&processor, press(key, Some("w"))));
    assert_eq!(
        *taken.borrow(),
        [
            "chrome KeyPressed",
            "chrome MouseEntered",
            "chrome MouseMoved",
            "viewport MouseButtonPressed",
            "viewport KeyPressed",
            "chrome CharInput",
            "chrome CharInputMods",
        ]
    );
}

/// Every `KeyCode` of winit 0.30 (the list is checked against winit's own source below) and the
/// lumina key it must map to; `Key::Unknown` where `Key` has no such key.
fn every_key_code() -> Vec<(KeyCode, Key)> {
    use Key as L;
    use KeyCode as K;
    vec![
        (K::Backquote, L::GraveAccent),
        (K::Backslash, L::Backslash),
        (K::BracketLeft, L::LeftBracket),
        (K::BracketRight, L::RightBracket),
        (K::Comma, L::Comma),
        (K::Digit0, L::Digit0),
        (K::Digit1, L::Digit1),
        (K::Digit2, L::Digit2),
        (K::Digit3, L::Digit3),
        (K::Digit4, L::Digit4),
        (K::Digit5, L::Digit5),
        (K::Digit6, L::Digit6),
        (K::Digit7, L::Digit7),
        (K::Digit8, L::Digit8),
        (K::Digit9, L::Digit9),
        (K::Equal, L::Equal),
        (K::IntlBackslash, L::World1),
        (K::IntlRo, L::World2),
        (K::IntlYen, L::Unknown),
        (K::KeyA, L::A),
        (K::KeyB, L::B),
        (K::KeyC, L::C),
        (K::KeyD, L::D),
        (K::KeyE, L::E),
        (K::KeyF, L::F),
        (K::KeyG, L::G),
        (K::KeyH, L::H),
        (K::KeyI, L::I),
        (K::KeyJ, L::J),
        (K::KeyK, L::K),
        (K::KeyL, L::L),
        (K::KeyM, L::M),
        (K::KeyN, L::N),
        (K::KeyO, L::O),
        (K::KeyP, L::P),
        (K::KeyQ, L::Q),
        (K::KeyR, L::R),
        (K::KeyS, L::S),
        (K::KeyT, L::T),
        (K::KeyU, L::U),
        (K::KeyV, L::V),
        (K::KeyW, L::W),
        (K::KeyX, L::X),
        (K::KeyY, L::Y),
        (K::KeyZ, L::Z),
        (K::Minus, L::Minus),
        (K::Period, L::Period),
        (K::Quote, L::Apostrophe),
        (K::Semicolon, L::Semicolon),
        (K::Slash, L::Slash),
        (K::AltLeft, L::LeftAlt),
        (K::AltRight, L::RightAlt),
        (K::Backspace, L::Backspace),
        (K::CapsLock, L::CapsLock),
        (K::ContextMenu, L::Menu),
        (K::ControlLeft, L::LeftControl),
        (K::ControlRight, L::RightControl),
        (K::Enter, L::Enter),
        (K::SuperLeft, L::LeftSuper),
        (K::SuperRight, L::RightSuper),
        (K::ShiftLeft, L::LeftShift),
        (K::ShiftRight, L::RightShift),
        (K::Space, L::Space),
        (K::Tab, L::Tab),
        (K::Convert, L::Unknown),
        (K::KanaMode, L::Unknown),
        (K::Lang1, L::Unknown),
        (K::Lang2, L::Unknown),
        (K::Lang3, L::Unknown),
        (K::Lang4, L::Unknown),
        (K::Lang5, L::Unknown),
        (K::NonConvert, L::Unknown),
        (K::Delete, L::Delete),
        (K::End, L::End),
        (K::Help, L::Unknown),
        (K::Home, L::Home),
        (K::Insert, L::Insert),
        (K::PageDown, L::PageDown),
        (K::PageUp, L::PageUp),
        (K::ArrowDown, L::Down),
        (K::ArrowLeft, L::Left),
        (K::ArrowRight, L::Right),
        (K::ArrowUp, L::Up),
        (K::NumLock, L::NumLock),
        (K::Numpad0, L::Keypad0),
        (K::Numpad1, L::Keypad1),
        (K::Numpad2, L::Keypad2),
        (K::Numpad3, L::Keypad3),
        (K::Numpad4, L::Keypad4),
        (K::Numpad5, L::Keypad5),
        (K::Numpad6, L::Keypad6),
        (K::Numpad7, L::Keypad7),
        (K::Numpad8, L::Keypad8),
        (K::Numpad9, L::Keypad9),
        (K::NumpadAdd, L::KeypadAdd),
        (K::NumpadBackspace, L::Unknown),
        (K::NumpadClear, L::Unknown),
        (K::NumpadClearEntry, L::Unknown),
        (K::NumpadComma, L::Unknown),
        (K::NumpadDecimal, L::KeypadDecimal),
        (K::NumpadDivide, L::KeypadDivide),
        (K::NumpadEnter, L::KeypadEnter),
        (K::NumpadEqual, L::KeypadEqual),
        (K::NumpadHash, L::Unknown),
        (K::NumpadMemoryAdd, L::Unknown),
        (K::NumpadMemoryClear, L::Unknown),
        (K::NumpadMemoryRecall, L::Unknown),
        (K::NumpadMemoryStore, L::Unknown),
        (K::NumpadMemorySubtract, L::Unknown),
        (K::NumpadMultiply, L::KeypadMultiply),
        (K::NumpadParenLeft, L::Unknown),
        (K::NumpadParenRight, L::Unknown),
        (K::NumpadStar, L::Unknown),
        (K::NumpadSubtract, L::KeypadSubtract),
        (K::Escape, L::Escape),
        (K::Fn, L::Unknown),
        (K::FnLock, L::Unknown),
        (K::PrintScreen, L::PrintScreen),
        (K::ScrollLock, L::ScrollLock),
        (K::Pause, L::Pause),
        (K::BrowserBack, L::Unknown),
        (K::BrowserFavorites, L::Unknown),
        (K::BrowserForward, L::Unknown),
        (K::BrowserHome, L::Unknown),
        (K::BrowserRefresh, L::Unknown),
        (K::BrowserSearch, L::Unknown),
        (K::BrowserStop, L::Unknown),
        (K::Eject, L::Unknown),
        (K::LaunchApp1, L::Unknown),
        (K::LaunchApp2, L::Unknown),
        (K::LaunchMail, L::Unknown),
        (K::MediaPlayPause, L::Unknown),
        (K::MediaSelect, L::Unknown),
        (K::MediaStop, L::Unknown),
        (K::MediaTrackNext, L::Unknown),
        (K::MediaTrackPrevious, L::Unknown),
        (K::Power, L::Unknown),
        (K::Sleep, L::Unknown),
        (K::AudioVolumeDown, L::Unknown),
        (K::AudioVolumeMute, L::Unknown),
        (K::AudioVolumeUp, L::Unknown),
        (K::WakeUp, L::Unknown),
        (K::Meta, L::Unknown),
        (K::Hyper, L::Unknown),
        (K::Turbo, L::Unknown),
        (K::Abort, L::Unknown),
        (K::Resume, L::Unknown),
        (K::Suspend, L::Unknown),
        (K::Again, L::Unknown),
        (K::Copy, L::Unknown),
        (K::Cut, L::Unknown),
        (K::Find, L::Unknown),
        (K::Open, L::Unknown),
        (K::Paste, L::Unknown),
        (K::Props, L::Unknown),
        (K::Select, L::Unknown),
        (K::Undo, L::Unknown),
        (K::Hiragana, L::Unknown),
        (K::Katakana, L::Unknown),
        (K::F1, L::F1),
        (K::F2, L::F2),
        (K::F3, L::F3),
        (K::F4, L::F4),
        (K::F5, L::F5),
        (K::F6, L::F6),
        (K::F7, L::F7),
        (K::F8, L::F8),
        (K::F9, L::F9),
        (K::F10, L::F10),
        (K::F11, L::F11),
        (K::F12, L::F12),
        (K::F13, L::F13),
        (K::F14, L::F14),
        (K::F15, L::F15),
        (K::F16, L::F16),
        (K::F17, L::F17),
        (K::F18, L::F18),
        (K::F19, L::F19),
        (K::F20, L::F20),
        (K::F21, L::F21),
        (K::F22, L::F22),
        (K::F23, L::F23),
        (K::F24, L::F24),
        (K::F25, L::F25),
        (K::F26, L::Unknown),
        (K::F27, L::Unknown),
        (K::F28, L::Unknown),
        (K::F29, L::Unknown),
        (K::F30, L::Unknown),
        (K::F31, L::Unknown),
        (K::F32, L::Unknown),
        (K::F33, L::Unknown),
        (K::F34, L::Unknown),
        (K::F35, L::Unknown),
    ]
}

/// The variant names of `pub enum KeyCode` in the source of the winit this test is built
/// against, found through `cargo metadata`.
fn key_code_variants_in_winit_source() -> BTreeSet<String> {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["metadata", "--format-version", "1", "--features", "winit"])
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let json = String::from_utf8(output.stdout).expect("metadata is UTF-8");
    // The winit package's manifest path: the first "manifest_path" after its name.
    let at = json
        .find("\"name\":\"winit\",\"version\":\"0.30.")
        .expect("winit 0.30 is in the dependency graph");
    let rest = &json[at..];
    let key = "\"manifest_path\":\"";
    let start = rest.find(key).expect("winit has a manifest path") + key.len();
    let manifest = &rest[start..start + rest[start..].find('"').unwrap()];
    let source = PathBuf::from(manifest).with_file_name("src/keyboard.rs");
    let text = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    let body = &text[text
        .find("pub enum KeyCode {")
        .expect("KeyCode is declared")..];
    let body = &body[..body.find("\n}").expect("KeyCode ends")];
    body.lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.starts_with("//") && !line.starts_with("#[") && !line.is_empty())
        .map(|line| line.trim_end_matches(',').to_owned())
        .collect()
}

#[test]
fn pl2_every_winit_key_code_maps_and_the_rest_is_unknown() {
    let table = every_key_code();

    // The table names every variant of winit's KeyCode, no more, no fewer.
    let listed: BTreeSet<String> = table.iter().map(|(code, _)| format!("{code:?}")).collect();
    assert_eq!(listed.len(), table.len(), "a key code is listed twice");
    let in_source = key_code_variants_in_winit_source();
    assert_eq!(
        listed, in_source,
        "the table differs from winit's KeyCode (left: table, right: winit's source)"
    );

    for &(code, key) in &table {
        assert_eq!(Key::from(code), key, "{code:?}");
        assert_eq!(Key::from(PhysicalKey::Code(code)), key, "{code:?}");
    }

    // Every key lumina names is reachable from exactly one physical key.
    for key in Key::ALL {
        let sources: Vec<_> = table.iter().filter(|(_, k)| k == key).collect();
        assert_eq!(sources.len(), 1, "{key} comes from {sources:?}");
    }

    // Unidentified keys of every platform are Unknown, never a panic.
    let natives = [
        NativeKeyCode::Unidentified,
        NativeKeyCode::Android(0),
        NativeKeyCode::Android(u32::MAX),
        NativeKeyCode::MacOS(0),
        NativeKeyCode::MacOS(u16::MAX),
        NativeKeyCode::Windows(0),
        NativeKeyCode::Windows(u16::MAX),
    ];
    let xkb = (0..=0xFFFF).step_by(7).chain([u32::MAX]);
    for native in natives.into_iter().chain(xkb.map(NativeKeyCode::Xkb)) {
        let key = PhysicalKey::Unidentified(native);
        assert_eq!(Key::from(key), Key::Unknown, "{native:?}");
    }
}
