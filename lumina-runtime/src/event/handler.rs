//! [`EventHandler`]: what an [`EventProcessor`](super::EventProcessor) calls. Its own module,
//! below both the processor and the typed handlers that implement it (N3: no import circle).

use std::any::Any;
use std::rc::Rc;

use super::class::Event;

/// Receives events from an [`EventProcessor`](super::EventProcessor) (`IEventHandler` of the original).
///
/// Return `true` to consume the event: no handler after this one sees it. Calling
/// [`set_handled(true)`](Event::set_handled) on the event does the same.
///
/// Closures `Fn(&mut dyn Event) -> bool` are handlers too.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event handler",
    label = "not an event handler",
    note = "implement `lumina::event::EventHandler` for `{Self}` (`fn on_event(&self, event: &mut dyn Event) -> bool`), or register a closure `Fn(&mut dyn Event) -> bool`"
)]
pub trait EventHandler: Any {
    /// Handles `event`; `true` consumes it (`OnEvent`).
    fn on_event(&self, event: &mut dyn Event) -> bool;
}

impl<F: Fn(&mut dyn Event) -> bool + 'static> EventHandler for F {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        self(event)
    }
}

/// A handler the processor can hold as `Rc<dyn EventHandler>`: every [`EventHandler`] type, and
/// `dyn EventHandler` itself, so [`register_event_handler`](super::EventProcessor::register_event_handler)
/// takes `&Rc<MyHandler>` and `&Rc<dyn EventHandler>` alike. Sealed: implemented here for both.
///
/// ```
/// use lumina::event::{Event, EventHandler, EventProcessor};
/// use std::rc::Rc;
///
/// let processor = EventProcessor::new();
/// let concrete = Rc::new(|_: &mut dyn Event| true);
/// let erased: Rc<dyn EventHandler> = Rc::new(|_: &mut dyn Event| false);
/// assert!(processor.register_event_handler(&concrete, 0));
/// assert!(processor.register_event_handler(&erased, 0));
/// assert_eq!(processor.len(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event handler",
    label = "not an event handler",
    note = "implement `lumina::event::EventHandler` for `{Self}` (`fn on_event(&self, event: &mut dyn Event) -> bool`), or register a closure `Fn(&mut dyn Event) -> bool`"
)]
pub trait AnyEventHandler: EventHandler + sealed::Sealed {
    /// The same handler, as the processor holds it. Not public API; the processor uses it.
    #[doc(hidden)]
    fn to_dyn(this: &Rc<Self>) -> Rc<dyn EventHandler>;
}

mod sealed {
    pub trait Sealed {}
    impl<H: super::EventHandler> Sealed for H {}
    impl Sealed for dyn super::EventHandler {}
}

impl<H: EventHandler> AnyEventHandler for H {
    fn to_dyn(this: &Rc<Self>) -> Rc<dyn EventHandler> {
        Rc::<H>::clone(this)
    }
}

impl AnyEventHandler for dyn EventHandler {
    fn to_dyn(this: &Rc<Self>) -> Rc<dyn EventHandler> {
        Rc::clone(this)
    }
}
