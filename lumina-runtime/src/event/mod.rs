//! Input events: event classes, [`EventType`], and the prioritized [`EventProcessor`]
//! (rules E1-E5, P1-P4; the spec's "Input events").
//!
//! - [`EventType`] and [`EventCategory`] (E1): the kinds of input and window events.
//! - [`EventClass`] (E2): what `#[event_class(Variant)]` implements on
//!   a plain struct; one class per engine event type is provided here (E3), and games declare
//!   their own (E5).
//! - [`Event`] (E4): the dispatched event as handlers see it, `&mut dyn Event`, with
//!   `is::<T>()`, `downcast_ref` / `downcast_mut`, `is_handled` / `set_handled`. The handled
//!   flag lives in the [`Envelope`] around the event, so event structs stay plain data.
//! - [`EventProcessor`], [`EventHandler`], [`InputLayer`] (P1-P4): the prioritized chain.
//! - [`EventProcessor::add_handler`] (X1): typed handlers, for one class (`&mut KeyPressedEvent`)
//!   or one [`category`] ([`KeyboardEvent`], ...), with no downcast in game code.
//! - [`InputViewportRegistry`]: routes input to the focused viewport before the editor chrome.
//!
//! ```
//! use lumina::event::{
//!     Event, EventProcessor, InputLayer, Key, KeyPressedEvent, KeyReleasedEvent, Modifiers,
//! };
//! use std::rc::Rc;
//!
//! let processor = EventProcessor::new();
//! let chrome = Rc::new(|event: &mut dyn Event| {
//!     if let Some(key) = event.downcast_ref::<KeyPressedEvent>() {
//!         println!("chrome got {}", key.key);
//!         return true;
//!     }
//!     false
//! });
//! assert!(processor.register_event_handler(&chrome, InputLayer::EditorChrome));
//! assert!(processor.dispatch(KeyPressedEvent::new(Key::F5, Modifiers::NONE)));
//! assert!(!processor.dispatch(KeyReleasedEvent::new(Key::F5, Modifiers::NONE)));
//! ```

mod bits;
mod class;
mod event_type;
mod events;
mod handler;
mod input;
mod processor;
mod typed;
mod viewport;

pub use bits::UnknownFlagsError;
pub use class::{Envelope, Event, EventClass};
pub use event_type::{EventCategory, EventType, ParseEventTypeError};
pub use events::*;
pub use handler::{AnyEventHandler, EventHandler};
pub use input::{IVec2, Key, Modifiers, MouseButton, UVec2, Vec2};
pub use processor::{Dispatchable, EventProcessor, InputLayer};
pub use typed::{
    AppEvent, EventSelector, EventSubscription, JoystickEvent, KeyboardEvent, MouseEvent,
    TypedHandler, WindowEvent, category,
};
pub use viewport::{InputViewportRegistry, Rect, ViewportId, ViewportSubscription};
