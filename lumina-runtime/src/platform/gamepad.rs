//! Gamepads through gilrs: connect and disconnect become joystick events (rule PL3).

use gilrs::{EventType, Gilrs};

use crate::event::{EventProcessor, JoystickConnectedEvent, JoystickDisconnectedEvent};

/// Dispatches the lumina event of one gilrs event of the gamepad with id `gamepad` (gilrs's
/// `GamepadId`, as `usize::from(id)`): `Connected` becomes [`JoystickConnectedEvent`] and
/// `Disconnected` [`JoystickDisconnectedEvent`], with the id (saturated at `u32::MAX`).
///
/// Returns `None` for the events lumina has no class for (buttons, axes, dropped events, force
/// feedback), `Some(consumed)` otherwise.
///
/// ```
/// use lumina::event::{Event, EventProcessor, InputLayer, JoystickConnectedEvent};
/// use lumina::platform::dispatch_gamepad_event;
/// use std::rc::Rc;
///
/// let processor = EventProcessor::new();
/// let handler = Rc::new(|event: &mut dyn Event| {
///     event.downcast_ref::<JoystickConnectedEvent>().is_some_and(|c| c.joystick_id == 2)
/// });
/// processor.register_event_handler(&handler, InputLayer::Default);
/// assert_eq!(dispatch_gamepad_event(&processor, 2, &gilrs::EventType::Connected), Some(true));
/// assert_eq!(dispatch_gamepad_event(&processor, 2, &gilrs::EventType::Dropped), None);
/// ```
pub fn dispatch_gamepad_event(
    processor: &EventProcessor,
    gamepad: usize,
    event: &EventType,
) -> Option<bool> {
    let joystick_id = u32::try_from(gamepad).unwrap_or(u32::MAX);
    match event {
        EventType::Connected => Some(processor.dispatch(JoystickConnectedEvent::new(joystick_id))),
        EventType::Disconnected => {
            Some(processor.dispatch(JoystickDisconnectedEvent::new(joystick_id)))
        }
        _ => None,
    }
}

/// Owns a [`Gilrs`] and feeds its gamepad connects and disconnects to an [`EventProcessor`]
/// (rule PL3). Call [`poll`](Self::poll) once per frame.
pub struct GamepadInput {
    gilrs: Gilrs,
}

impl std::fmt::Debug for GamepadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GamepadInput")
            .field("gamepads", &self.gilrs.gamepads().count())
            .finish()
    }
}

impl GamepadInput {
    /// Opens the platform's gamepads. On a platform gilrs does not support, gilrs gives a
    /// context that reports no gamepad, and that is what this returns; other failures (e.g. a
    /// mapping database that does not parse) are errors. The error is boxed: gilrs's is large.
    pub fn new() -> Result<Self, Box<gilrs::Error>> {
        match Gilrs::new() {
            Ok(gilrs) | Err(gilrs::Error::NotImplemented(gilrs)) => Ok(Self::from_gilrs(gilrs)),
            Err(error) => Err(Box::new(error)),
        }
    }

    /// Wraps a `Gilrs` made elsewhere (e.g. with `GilrsBuilder`'s settings).
    pub fn from_gilrs(gilrs: Gilrs) -> Self {
        GamepadInput { gilrs }
    }

    /// The gilrs context, e.g. to read the state of a gamepad.
    pub fn gilrs(&self) -> &Gilrs {
        &self.gilrs
    }

    /// The gilrs context, mutably (rumble, mappings, ...).
    pub fn gilrs_mut(&mut self) -> &mut Gilrs {
        &mut self.gilrs
    }

    /// Drains gilrs's pending events and dispatches the connects and disconnects; returns how
    /// many lumina events were dispatched.
    pub fn poll(&mut self, processor: &EventProcessor) -> usize {
        let mut dispatched = 0;
        while let Some(event) = self.gilrs.next_event() {
            if dispatch_gamepad_event(processor, usize::from(event.id), &event.event).is_some() {
                dispatched += 1;
            }
        }
        dispatched
    }
}
