//! Gamepads through gilrs: connect and disconnect become joystick events (rule PL3).

use gilrs::{EventType, Gilrs};

use crate::event::{EventProcessor, JoystickConnectedEvent, JoystickDisconnectedEvent};

/// Owns a [`Gilrs`] and feeds its gamepad connects and disconnects to an [`EventProcessor`]
/// (rule PL3). Call [`poll`](Self::poll) once per frame.
///
/// The gilrs context stays the game's: `as_ref()` and `as_mut()` give it (to read a gamepad's
/// buttons and axes, rumble, mappings), and `GamepadInput::from(gilrs)` wraps one made
/// elsewhere (e.g. with `GilrsBuilder`'s settings).
///
/// ```no_run
/// use lumina::event::EventProcessor;
/// use lumina::platform::GamepadInput;
/// use lumina::platform::gilrs::Gilrs;
///
/// let processor = EventProcessor::new();
/// let mut gamepads = GamepadInput::new().expect("the gamepad mappings load");
/// // Once per frame: connects and disconnects become joystick events.
/// let dispatched = gamepads.poll(&processor);
/// // Buttons and axes are gilrs's.
/// let context: &Gilrs = gamepads.as_ref();
/// let connected = context.gamepads().count();
/// # let _ = (dispatched, connected);
/// ```
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

impl From<Gilrs> for GamepadInput {
    /// Wraps a `Gilrs` made elsewhere (e.g. with `GilrsBuilder`'s settings).
    fn from(gilrs: Gilrs) -> Self {
        GamepadInput { gilrs }
    }
}

impl AsRef<Gilrs> for GamepadInput {
    /// The gilrs context, e.g. to read the state of a gamepad.
    fn as_ref(&self) -> &Gilrs {
        &self.gilrs
    }
}

impl AsMut<Gilrs> for GamepadInput {
    /// The gilrs context, mutably (rumble, mappings, ...). Events taken from it here are not
    /// seen by [`poll`](GamepadInput::poll).
    fn as_mut(&mut self) -> &mut Gilrs {
        &mut self.gilrs
    }
}

impl GamepadInput {
    /// Opens the platform's gamepads. On a platform gilrs does not support, gilrs gives a
    /// context that reports no gamepad, and that is what this returns; other failures (e.g. a
    /// mapping database that does not parse) are errors. The error is boxed: gilrs's is large.
    pub fn new() -> Result<Self, Box<gilrs::Error>> {
        match Gilrs::new() {
            Ok(gilrs) | Err(gilrs::Error::NotImplemented(gilrs)) => Ok(Self::from(gilrs)),
            Err(error) => Err(Box::new(error)),
        }
    }

    /// Drains gilrs's pending events and dispatches the connects and disconnects (as
    /// [`dispatch`](Self::dispatch) does); returns how many lumina events were dispatched.
    pub fn poll(&mut self, processor: &EventProcessor) -> usize {
        let mut dispatched = 0;
        while let Some(event) = self.gilrs.next_event() {
            if Self::dispatch(processor, usize::from(event.id), &event.event).is_some() {
                dispatched += 1;
            }
        }
        dispatched
    }

    /// Dispatches the lumina event of one gilrs event of the gamepad with id `gamepad` (gilrs's
    /// `GamepadId`, as `usize::from(id)`): `Connected` becomes [`JoystickConnectedEvent`] and
    /// `Disconnected` [`JoystickDisconnectedEvent`], with the id (saturated at `u32::MAX`). For
    /// events read from gilrs by the game itself, or made without a device (a test, a replay).
    ///
    /// Returns `None` for the events lumina has no class for (buttons, axes, dropped events,
    /// force feedback), `Some(consumed)` otherwise.
    ///
    /// ```
    /// use lumina::event::{Event, EventProcessor, InputLayer, JoystickConnectedEvent};
    /// use lumina::platform::GamepadInput;
    /// use lumina::platform::gilrs::EventType;
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let handler = Rc::new(|event: &mut dyn Event| {
    ///     event.downcast_ref::<JoystickConnectedEvent>().is_some_and(|c| c.joystick_id == 2)
    /// });
    /// processor.register_event_handler(&handler, InputLayer::Default);
    /// assert_eq!(GamepadInput::dispatch(&processor, 2, &EventType::Connected), Some(true));
    /// assert_eq!(GamepadInput::dispatch(&processor, 2, &EventType::Dropped), None);
    /// ```
    pub fn dispatch(processor: &EventProcessor, gamepad: usize, event: &EventType) -> Option<bool> {
        let joystick_id = u32::try_from(gamepad).unwrap_or(u32::MAX);
        match event {
            EventType::Connected => {
                Some(processor.dispatch(JoystickConnectedEvent::new(joystick_id)))
            }
            EventType::Disconnected => {
                Some(processor.dispatch(JoystickDisconnectedEvent::new(joystick_id)))
            }
            _ => None,
        }
    }
}
