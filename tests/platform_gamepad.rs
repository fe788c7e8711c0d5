//! PL3: gilrs gamepad connects and disconnects become JoystickConnected / JoystickDisconnected
//! with the gamepad's id; gilrs's other events dispatch nothing.
//!
//! Run with `cargo test --features gilrs --test platform_gamepad`.

use std::cell::RefCell;
use std::rc::Rc;

use lumina::event::{
    Event, EventProcessor, EventType, InputLayer, JoystickConnectedEvent, JoystickDisconnectedEvent,
};
use lumina::platform::{GamepadInput, gilrs};

/// What the recording handler saw: (type, joystick id) per event.
type Log = Rc<RefCell<Vec<(EventType, u32)>>>;

/// A processor whose only handler records (type, id) of the joystick events and consumes those
/// of the gamepad `consume`.
fn recorder(consume: u32) -> (EventProcessor, Log, impl Sized) {
    let processor = EventProcessor::new();
    let log = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&log);
    let handler = Rc::new(move |event: &mut dyn Event| {
        let id = if let Some(e) = event.downcast_ref::<JoystickConnectedEvent>() {
            e.joystick_id
        } else if let Some(e) = event.downcast_ref::<JoystickDisconnectedEvent>() {
            e.joystick_id
        } else {
            panic!("unexpected {}", event.name());
        };
        sink.borrow_mut().push((event.event_type(), id));
        id == consume
    });
    assert!(processor.register_event_handler(&handler, InputLayer::Default));
    (processor, log, handler)
}

#[test]
fn pl3_gamepad_connect_and_disconnect_become_joystick_events_with_the_id() {
    let (processor, log, _handler) = recorder(7);
    let connected = gilrs::EventType::Connected;
    let disconnected = gilrs::EventType::Disconnected;
    assert_eq!(
        GamepadInput::dispatch(&processor, 0, &connected),
        Some(false)
    );
    assert_eq!(
        GamepadInput::dispatch(&processor, 7, &connected),
        Some(true)
    );
    assert_eq!(
        GamepadInput::dispatch(&processor, 7, &disconnected),
        Some(true)
    );
    assert_eq!(
        GamepadInput::dispatch(&processor, 0, &disconnected),
        Some(false)
    );
    // An id past u32 saturates instead of wrapping onto another gamepad's.
    let huge = usize::try_from(u64::from(u32::MAX) + 5).unwrap_or(usize::MAX);
    GamepadInput::dispatch(&processor, huge, &connected);
    assert_eq!(
        *log.borrow(),
        [
            (EventType::JoystickConnected, 0),
            (EventType::JoystickConnected, 7),
            (EventType::JoystickDisconnected, 7),
            (EventType::JoystickDisconnected, 0),
            (EventType::JoystickConnected, u32::MAX),
        ]
    );
}

#[test]
fn pl3_other_gamepad_events_dispatch_nothing() {
    let (processor, log, _handler) = recorder(0);
    // The gilrs events that can be made outside gilrs (buttons and axes carry a code only gilrs
    // makes): none is a joystick event.
    for event in [
        gilrs::EventType::Dropped,
        gilrs::EventType::ForceFeedbackEffectCompleted,
    ] {
        assert_eq!(GamepadInput::dispatch(&processor, 3, &event), None);
    }
    assert!(log.borrow().is_empty());
}

#[test]
fn pl3_polling_dispatches_one_event_per_connect_or_disconnect() {
    let (processor, log, _handler) = recorder(u32::MAX);
    // A machine without gamepads (CI) reports none, as does gilrs on a platform it does not
    // support. Whatever is connected, poll counts what it dispatched.
    let mut input = GamepadInput::new().unwrap_or_else(|e| panic!("gilrs failed to start: {e}"));
    let dispatched = input.poll(&processor);
    assert_eq!(dispatched, log.borrow().len());
    assert_eq!(input.poll(&processor), 0, "a second poll has nothing new");
    assert!(format!("{input:?}").starts_with("GamepadInput"));
}

#[test]
fn pl3_the_gilrs_context_is_wrapped_and_reached_through_the_standard_traits() {
    let (processor, log, _handler) = recorder(u32::MAX);
    // A context made with gilrs's own builder (as `GamepadInput::new` does, a platform gilrs
    // does not support gives one that reports no gamepad).
    let gilrs = match gilrs::GilrsBuilder::new().set_update_state(false).build() {
        Ok(gilrs) | Err(gilrs::Error::NotImplemented(gilrs)) => gilrs,
        Err(e) => panic!("gilrs failed to start: {e}"),
    };
    let connected = gilrs.gamepads().count();
    let mut input = GamepadInput::from(gilrs);
    let context: &gilrs::Gilrs = input.as_ref();
    assert_eq!(context.gamepads().count(), connected);
    assert_eq!(
        format!("{input:?}"),
        format!("GamepadInput {{ gamepads: {connected} }}")
    );
    // Shared and mutable access reach the one context the input polls.
    let shared: *const gilrs::Gilrs = input.as_ref();
    let unique: *mut gilrs::Gilrs = input.as_mut();
    assert!(std::ptr::eq(shared, unique));
    assert_eq!(input.poll(&processor), log.borrow().len());
}
