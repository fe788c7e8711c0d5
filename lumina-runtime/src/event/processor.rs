//! [`EventProcessor`]: the prioritized handler chain input and window events run through
//! (rules P1-P4).

use std::any::Any;
use std::fmt;
use std::rc::{Rc, Weak};

use super::class::{Envelope, Event, EventClass};
use super::handler::EventHandler;
use super::typed::{EventSelector, EventSubscription, TypedHandler};
use crate::handle::DelegateHandle;
use crate::invocation::{Guarded, InvocationList};

/// The standard priorities of handlers (`EInputLayer`): higher layers see events first.
///
/// Any `i32` is a valid priority too; a layer converts into its number with `i32::from`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(i32)]
pub enum InputLayer {
    /// Everything else: 0.
    Default = 0,
    /// The development tool UI: 500.
    EditorChrome = 500,
    /// Game and editor viewports, registered by the
    /// [`InputViewportRegistry`](super::InputViewportRegistry): 1000.
    Viewport = 1000,
}

impl InputLayer {
    /// The layer's priority.
    pub const fn priority(self) -> i32 {
        self as i32
    }
}

impl From<InputLayer> for i32 {
    fn from(layer: InputLayer) -> i32 {
        layer.priority()
    }
}

/// The prioritized handler chain (`FEventProcessor`).
///
/// - P1: [`register_event_handler`](Self::register_event_handler) takes a priority; higher runs
///   first, equal priorities run in registration order. Registering a handler twice is refused.
/// - P2: [`dispatch`](Self::dispatch) puts the event on the stack (no heap allocation) and runs
///   handlers in order until one returns `true` or marks the event handled; it returns whether the
///   event was consumed.
/// - P3: handlers are held weakly. One dropped without unregistering is never called again and is
///   pruned (the original holds raw pointers and dispatches into freed memory).
/// - P4: handlers may register, unregister and dispatch from inside a dispatch (a handler
///   registered during a dispatch runs from the next one; one unregistered before it is reached
///   does not run), and a panicking handler leaves the processor consistent.
///
/// Built on the same invocation list as multicast delegates, so these rules are the delegates'
/// M1-M7. Not `Send`: it belongs to the game thread.
///
/// ```
/// use lumina::event::{Event, EventHandler, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
/// use std::rc::Rc;
///
/// struct Viewport;
/// impl EventHandler for Viewport {
///     fn on_event(&self, event: &mut dyn Event) -> bool {
///         event.downcast_ref::<KeyPressedEvent>().is_some_and(|key| key.key == Key::W)
///     }
/// }
///
/// let processor = EventProcessor::new();
/// let viewport = Rc::new(Viewport);
/// assert!(processor.register_event_handler(&viewport, InputLayer::Viewport));
/// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
/// assert!(!processor.dispatch(KeyPressedEvent::new(Key::Q, Modifiers::NONE)));
/// assert!(processor.unregister_event_handler(&viewport));
/// ```
#[derive(Default)]
pub struct EventProcessor {
    handlers: InvocationList<Weak<dyn EventHandler>>,
}

impl fmt::Debug for EventProcessor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventProcessor")
            .field("handlers", &self.len())
            .field("dispatching", &self.handlers.is_broadcasting())
            .field("subscriptions", &self.subscriptions())
            .finish()
    }
}

impl EventProcessor {
    /// A processor with no handlers. Allocates nothing.
    pub const fn new() -> Self {
        EventProcessor {
            handlers: InvocationList::new(),
        }
    }

    /// Registers `handler` at `priority` (an [`InputLayer`] or any `i32`; higher runs first,
    /// equal priorities in registration order). Holds it weakly: dropping the last `Rc`
    /// unregisters it (P3).
    ///
    /// Returns `false`, changing nothing, if `handler` is already registered (P1): unregister it
    /// first to change its priority.
    #[must_use = "`false` means the handler was already registered and its priority did not change"]
    #[track_caller]
    pub fn register_event_handler<H: EventHandler>(
        &self,
        handler: &Rc<H>,
        priority: impl Into<i32>,
    ) -> bool {
        let handler: Rc<dyn EventHandler> = Rc::<H>::clone(handler);
        self.register_dyn_event_handler(&handler, priority)
    }

    /// [`register_event_handler`](Self::register_event_handler) for a handler already behind
    /// `Rc<dyn EventHandler>`.
    #[must_use = "`false` means the handler was already registered and its priority did not change"]
    #[track_caller]
    pub fn register_dyn_event_handler(
        &self,
        handler: &Rc<dyn EventHandler>,
        priority: impl Into<i32>,
    ) -> bool {
        self.register_handle(handler, priority.into()).is_some()
    }

    /// Registers `handler` for one event only (X3): it is unregistered right before it is
    /// called, so a dispatch nested in its call (or a later one) never reaches it again,
    /// whether or not it consumes the event. Otherwise as
    /// [`register_event_handler`](Self::register_event_handler): `false` if it is registered
    /// already.
    ///
    /// ```
    /// use lumina::event::{Event, EventHandler, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// #[derive(Default)]
    /// struct FirstKey(Cell<u32>);
    /// impl EventHandler for FirstKey {
    ///     fn on_event(&self, _: &mut dyn Event) -> bool {
    ///         self.0.set(self.0.get() + 1);
    ///         false
    ///     }
    /// }
    ///
    /// let processor = EventProcessor::new();
    /// let handler = Rc::new(FirstKey::default());
    /// assert!(processor.register_event_handler_once(&handler, InputLayer::Default));
    /// processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE));
    /// processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE));
    /// assert_eq!(handler.0.get(), 1);
    /// assert!(!processor.is_registered(&handler));
    /// ```
    #[must_use = "`false` means the handler was already registered"]
    #[track_caller]
    pub fn register_event_handler_once<H: EventHandler>(
        &self,
        handler: &Rc<H>,
        priority: impl Into<i32>,
    ) -> bool {
        let handler: Rc<dyn EventHandler> = Rc::<H>::clone(handler);
        self.register_spec(&handler, priority.into(), true)
            .is_some()
    }

    /// Registers `handler`; its handle, or `None` if it is registered already.
    #[track_caller]
    fn register_handle(
        &self,
        handler: &Rc<dyn EventHandler>,
        priority: i32,
    ) -> Option<DelegateHandle> {
        self.register_spec(handler, priority, false)
    }

    /// [`register_handle`](Self::register_handle), one-shot if `once` (X3).
    #[track_caller]
    fn register_spec(
        &self,
        handler: &Rc<dyn EventHandler>,
        priority: i32,
        once: bool,
    ) -> Option<DelegateHandle> {
        if self.handlers.is_bound_to(handler) {
            return None;
        }
        let weak = Rc::downgrade(handler);
        let owner: Weak<dyn Any> = weak.clone();
        let spec = crate::invocation::Spec {
            priority,
            owner: Some(owner),
            once,
            key: None,
        };
        Some(self.handlers.insert_spec(spec, weak))
    }

    /// Registers `handler` like [`register_event_handler`](Self::register_event_handler) and
    /// returns a guard that unregisters it when dropped (B1); `None` (nothing registered) if it
    /// is registered already.
    ///
    /// ```
    /// use lumina::event::{Event, EventHandler, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
    /// use std::rc::Rc;
    ///
    /// struct Consumer;
    /// impl EventHandler for Consumer {
    ///     fn on_event(&self, _: &mut dyn Event) -> bool {
    ///         true
    ///     }
    /// }
    ///
    /// let processor = EventProcessor::new();
    /// let handler = Rc::new(Consumer);
    /// let guard = processor.register_scoped(&handler, InputLayer::Viewport).expect("new");
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// drop(guard);
    /// assert!(!processor.is_registered(&handler));
    /// ```
    #[track_caller]
    pub fn register_scoped<H: EventHandler>(
        &self,
        handler: &Rc<H>,
        priority: impl Into<i32>,
    ) -> Option<crate::ScopedSubscription> {
        let handler: Rc<dyn EventHandler> = Rc::<H>::clone(handler);
        let handle = self.register_handle(&handler, priority.into())?;
        Some(crate::ScopedSubscription::new(
            handle,
            self.handlers.weak_remover(),
        ))
    }

    /// Registers a closure for one event class or category (rule X1): `add_handler::<KeyPressedEvent>`
    /// calls it with `&mut KeyPressedEvent`, `add_handler::<category::Keyboard>` with a
    /// [`KeyboardEvent`](super::KeyboardEvent); it returns `true` to consume the event. Other
    /// events pass it by, as if it returned `false`.
    ///
    /// The closure is a [`TypedHandler`] in the same chain as every other handler: `priority`
    /// orders it (higher first, equal priorities in registration order, P1), consumption stops
    /// the chain (P2), and registering, unregistering and dispatching from inside it follow P4.
    /// The returned [`EventSubscription`] owns it (the processor holds it weakly, P3) and
    /// unregisters it when dropped.
    ///
    /// ```
    /// use lumina::event::{
    ///     category, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers, MouseEvent,
    ///     MouseMovedEvent, Vec2,
    /// };
    ///
    /// let processor = EventProcessor::new();
    /// let jump = processor.add_handler::<KeyPressedEvent>(InputLayer::Viewport, |key| {
    ///     key.key == Key::Space
    /// });
    /// let hover = processor.add_handler::<category::Mouse>(InputLayer::Default, |event| {
    ///     matches!(event, MouseEvent::Moved(moved) if moved.position.x > 100.0)
    /// });
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// assert!(processor.dispatch(MouseMovedEvent::new(Vec2::new(200.0, 0.0), Vec2::new(1.0, 0.0))));
    /// drop(jump);
    /// assert!(!processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// # drop(hover);
    /// ```
    #[track_caller]
    pub fn add_handler<S: EventSelector>(
        &self,
        priority: impl Into<i32>,
        handler: impl for<'a> Fn(S::View<'a>) -> bool + 'static,
    ) -> EventSubscription {
        let handler: Rc<dyn EventHandler> = Rc::new(TypedHandler::<S, _>::new(handler));
        let handle = self
            .register_handle(&handler, priority.into())
            .expect("a new handler is never registered yet");
        EventSubscription::new(
            crate::ScopedSubscription::new(handle, self.handlers.weak_remover()),
            handler,
        )
    }

    /// Unregisters `handler`; `false` if it was not registered. During a dispatch, a handler
    /// unregistered before it is reached does not run (P4).
    pub fn unregister_event_handler<H: ?Sized>(&self, handler: &Rc<H>) -> bool {
        self.handlers.remove_owner(handler) > 0
    }

    /// Whether `handler` is registered (and alive).
    pub fn is_registered<H: ?Sized>(&self, handler: &Rc<H>) -> bool {
        self.handlers.is_bound_to(handler)
    }

    /// Unregisters every handler. During a dispatch, no further handler runs in it.
    pub fn clear(&self) {
        self.handlers.clear();
    }

    /// How many live handlers are registered (dropped ones do not count).
    pub fn len(&self) -> usize {
        self.handlers.len()
    }

    /// `true` when no live handler is registered.
    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }

    /// Every registration present, in dispatch order, with where it was made and whether its
    /// handler lives (B5).
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        self.handlers.subscriptions()
    }

    /// Whether a dispatch is running on this processor.
    pub fn is_dispatching(&self) -> bool {
        self.handlers.is_broadcasting()
    }

    /// Dispatches `event` (`Dispatch<TEvent>(Args...)`): wraps it in an [`Envelope`] on the stack
    /// (no heap allocation, P2) and runs [`dispatch_event`](Self::dispatch_event). Returns whether
    /// a handler consumed it.
    pub fn dispatch<E: EventClass>(&self, event: E) -> bool {
        // Guarded while handlers run: if one panics, the event is dropped under the guard, so
        // an event whose `Drop` panics too does not abort the process (R2). Free otherwise.
        let mut envelope = Guarded::new(Envelope::new(event));
        let consumed = self.run(&mut *envelope, |envelope| envelope);
        drop(envelope.into_inner());
        consumed
    }

    /// Runs the handlers on `event` in priority order until one returns `true` or leaves the
    /// event handled (P2); then the event is marked handled and this returns `true`. An event
    /// that arrives already handled is not dispatched and this returns `true`.
    ///
    /// A panic in a handler propagates to the caller after the processor is left consistent
    /// (P4): every handler stays registered and the next dispatch works normally.
    pub fn dispatch_event(&self, event: &mut dyn Event) -> bool {
        self.run(event, |event| event)
    }

    /// The dispatch loop. Generic over the event's type so that [`dispatch`](Self::dispatch)
    /// reads its envelope's handled flag without a dynamic call per handler; `as_dyn` hands the
    /// event to handlers. Each handler runs on the strong reference its upgrade gives, which is
    /// also its liveness check (see `InvocationList::dispatch_until`).
    #[inline(always)]
    fn run<Ev: Event + ?Sized>(
        &self,
        event: &mut Ev,
        as_dyn: impl Fn(&mut Ev) -> &mut dyn Event,
    ) -> bool {
        if event.is_handled() {
            return true;
        }
        // Each entry's owner is its handler: the upgrade both checks that it is alive and keeps
        // it alive for its call. A dead one is pruned by the list (P3).
        let consumed = self.handlers.dispatch_until(Weak::upgrade, |handler| {
            // The strong reference may be the handler's last (unregistered and dropped during
            // its call): dropped under the guard if the call unwinds (R2).
            Guarded::hold(handler, |handler| handler.on_event(as_dyn(event))) || event.is_handled()
        });
        if consumed {
            event.set_handled(true);
        }
        consumed
    }
}
