//! [`EventHandler`]: what an [`EventProcessor`](super::EventProcessor) calls. Its own module,
//! below both the processor and the typed handlers that implement it (N3: no import circle).

use std::any::Any;

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
