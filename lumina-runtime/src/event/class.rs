//! The event object: [`EventClass`] (what `#[event_class]` implements on a struct),
//! [`Envelope`] (an event with its handled flag) and [`Event`] (the object handlers receive,
//! `&mut dyn Event`), rules E2, E4, E5.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::{Deref, DerefMut};

use super::event_type::{EventCategory, EventType};

/// The static side of an event: implemented on a plain struct by `#[event_class]` (a game's own
/// event, rule B6) or `#[event_class(Variant)]` (an input or window event, rule E2).
///
/// The struct stays exactly as written (struct literals, constructors, derives all work): the
/// handled flag is not a field of it but of the [`Envelope`] the processor puts it in while it is
/// dispatched, which is what makes it an [`Event`].
///
/// Event classes are told apart by their Rust type ([`TypeId`]), never by their [`EventType`]
/// alone: a game's own class with `#[event_class(KeyPressed)]` is not a
/// [`KeyPressedEvent`](super::KeyPressedEvent), and can never be mistaken for one (rule E5).
///
/// ```
/// use lumina::event::{EventClass, EventType};
/// use lumina::event_class;
///
/// /// A game's own event: declared with a bare `#[event_class]`, its type is `None`.
/// #[event_class]
/// struct PlayerDied {
///     player: u32,
/// }
///
/// assert_eq!(PlayerDied::static_type(), EventType::None);
/// assert_eq!(PlayerDied::CLASS_NAME, "PlayerDied");
/// let died = PlayerDied { player: 1 };
/// assert_eq!(died.name(), "None");
/// assert_eq!(died.player, 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event class",
    label = "not an event class",
    note = "put `#[lumina::event_class]` on the struct `{Self}` (a game's own event), or \
            `#[lumina::event_class(KeyPressed)]` naming the event type of an input or window event"
)]
pub trait EventClass: Any {
    /// The event type of every value of this class.
    const EVENT_TYPE: EventType;
    /// The name of the struct, e.g. `"KeyPressedEvent"`.
    const CLASS_NAME: &'static str;

    /// The event type of this class, without a value (`GetStaticType` of the original).
    fn static_type() -> EventType
    where
        Self: Sized,
    {
        Self::EVENT_TYPE
    }

    /// The event type of this value (`GetEventType`).
    fn event_type(&self) -> EventType {
        Self::EVENT_TYPE
    }

    /// The event type's name, e.g. `"KeyPressed"` (`GetName`).
    fn name(&self) -> &'static str {
        Self::EVENT_TYPE.name()
    }
}

/// An event class value together with its handled flag: what the processor dispatches, built on
/// the stack. `&mut Envelope<E>` coerces to `&mut dyn Event`.
///
/// Dereferences to the event, so its fields read and write through it (`&*envelope` is the
/// event itself); its handled flag is [`Event`]'s `is_handled` / `set_handled`.
///
/// ```
/// use lumina::event::{Envelope, Event, Key, KeyPressedEvent, Modifiers};
///
/// let mut envelope = Envelope::new(KeyPressedEvent::new(Key::Space, Modifiers::NONE));
/// assert_eq!(envelope.key, Key::Space);
/// let event: &mut dyn Event = &mut envelope;
/// assert!(!event.is_handled());
/// event.set_handled(true);
/// assert!(envelope.is_handled());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope<E> {
    handled: bool,
    event: E,
}

impl<E: EventClass> Envelope<E> {
    /// Wraps `event`, not yet handled.
    pub const fn new(event: E) -> Self {
        Envelope {
            handled: false,
            event,
        }
    }

    /// Unwraps the event, dropping the flag.
    pub fn into_inner(self) -> E {
        self.event
    }
}

impl<E> Deref for Envelope<E> {
    type Target = E;
    fn deref(&self) -> &E {
        &self.event
    }
}

impl<E> DerefMut for Envelope<E> {
    fn deref_mut(&mut self) -> &mut E {
        &mut self.event
    }
}

mod sealed {
    pub trait Sealed {}
    impl<E: super::EventClass> Sealed for super::Envelope<E> {}
}

/// A dispatched event, as handlers receive it: `&mut dyn Event` (the `FEvent&` of the original).
///
/// Implemented only by [`Envelope`]; declare event classes with
/// `#[event_class]`. Ask what it is with [`is`](#method.is), get at
/// its fields with [`downcast_ref`](#method.downcast_ref) / [`downcast_mut`](#method.downcast_mut),
/// and mark it consumed with [`set_handled`](Event::set_handled) (rule E4).
///
/// ```
/// use lumina::event::{Envelope, Event, Key, KeyPressedEvent, Modifiers, MouseMovedEvent};
///
/// fn on_event(event: &mut dyn Event) -> bool {
///     if let Some(key) = event.downcast_mut::<KeyPressedEvent>() {
///         key.repeat = false;
///         return true; // consumed
///     }
///     false
/// }
///
/// let mut key = Envelope::new(KeyPressedEvent::new(Key::W, Modifiers::SHIFT));
/// let event: &mut dyn Event = &mut key;
/// assert!(event.is::<KeyPressedEvent>());
/// assert!(!event.is::<MouseMovedEvent>());
/// assert!(on_event(event));
/// ```
pub trait Event: sealed::Sealed + 'static {
    /// The event type (`GetEventType`).
    fn event_type(&self) -> EventType;

    /// The event type's name, e.g. `"KeyPressed"` (`GetName`).
    fn name(&self) -> &'static str {
        self.event_type().name()
    }

    /// The struct's name, e.g. `"KeyPressedEvent"`: tells custom game events apart in logs.
    fn class_name(&self) -> &'static str;

    /// The categories of the event type.
    fn categories(&self) -> EventCategory {
        EventCategory::from(self.event_type())
    }

    /// Whether the event type is in any of `categories`.
    fn is_in_category(&self, categories: EventCategory) -> bool {
        !(self.categories() & categories).is_empty()
    }

    /// Whether a handler consumed the event or marked it handled (`IsHandled`).
    fn is_handled(&self) -> bool;

    /// Marks the event handled (`SetHandled`): the processor stops dispatching it after the
    /// current handler returns, as if the handler had returned `true`.
    fn set_handled(&mut self, handled: bool);

    /// The [`TypeId`] of the event class inside. Not public API; [`is`](#method.is) uses it.
    #[doc(hidden)]
    fn class_type_id(&self) -> TypeId;

    /// The event class value. Not public API; the downcasts use it.
    #[doc(hidden)]
    fn class_any(&self) -> &dyn Any;

    /// The event class value, mutably. Not public API; the downcasts use it.
    #[doc(hidden)]
    fn class_any_mut(&mut self) -> &mut dyn Any;
}

impl<E: EventClass> Event for Envelope<E> {
    fn event_type(&self) -> EventType {
        self.event.event_type()
    }

    fn class_name(&self) -> &'static str {
        E::CLASS_NAME
    }

    fn is_handled(&self) -> bool {
        self.handled
    }

    fn set_handled(&mut self, handled: bool) {
        self.handled = handled;
    }

    fn class_type_id(&self) -> TypeId {
        TypeId::of::<E>()
    }

    fn class_any(&self) -> &dyn Any {
        &self.event
    }

    fn class_any_mut(&mut self) -> &mut dyn Any {
        &mut self.event
    }
}

impl dyn Event {
    /// Whether the event is of class `T` (`IsA<T>`). Compares Rust types, not event types, so
    /// two classes with the same [`EventType`] are never confused (rule E5).
    pub fn is<T: EventClass>(&self) -> bool {
        self.class_type_id() == TypeId::of::<T>()
    }

    /// The event as a `T`, or `None` if it is of another class (`As<T>`, without the crash).
    pub fn downcast_ref<T: EventClass>(&self) -> Option<&T> {
        self.class_any().downcast_ref::<T>()
    }

    /// The event as a mutable `T`, or `None` if it is of another class.
    pub fn downcast_mut<T: EventClass>(&mut self) -> Option<&mut T> {
        self.class_any_mut().downcast_mut::<T>()
    }
}

impl fmt::Debug for dyn Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.class_name())
            .field("event_type", &self.event_type())
            .field("handled", &self.is_handled())
            .finish_non_exhaustive()
    }
}
