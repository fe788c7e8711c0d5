//! [`EventProcessor`]: the prioritized handler chain input and window events run through
//! (rules P1-P4).

use std::any::Any;
use std::fmt;
use std::rc::{Rc, Weak};

use super::class::{Envelope, Event, EventClass};
use super::handler::{AnyEventHandler, EventHandler};
use super::typed::{EventSelector, EventSubscription, SelfAware, TypedHandler};
use crate::drops::{Guarded, drop_user};
use crate::handle::DelegateHandle;
use crate::invocation::{InvocationList, WeakShared};
use crate::scoped::{ScopedBlock, ThisSubscription};
use crate::subscribe::{Plain, PlainFinish, SelfAware as SelfAwareMode, Subscribe};

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
/// M1-M7, and the delegates' later forms apply to handlers too, through the same builder
/// ([`subscribe`](Self::subscribe), A1): one-shot handlers (`.once()`, X3), muting by handle or
/// guard ([`block`](Self::block), [`block_scoped`](Self::block_scoped), or `.muted()`, X4), and
/// handlers that receive their own registration (`.self_aware()`, X6). Not `Send`: it belongs
/// to the game thread.
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
    /// Each handler held weakly (P3), with its value's address (no offset computed per call).
    handlers: InvocationList<WeakShared<dyn EventHandler>>,
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

impl crate::subscribe::TakesPriority for EventProcessor {}

impl EventProcessor {
    /// A processor with no handlers. Allocates nothing.
    pub const fn new() -> Self {
        EventProcessor {
            handlers: InvocationList::new(),
        }
    }

    /// A registration with options (A1), the same builder as every delegate's: `.priority(p)`
    /// (an [`InputLayer`] or any `i32`; 0 without it), `.once()` (X3: unregistered right before
    /// its first call for an event it selects), `.muted()` (starts blocked, X4) and
    /// `.self_aware()` (X6: the closure receives its own registration first), in any
    /// combination, finished by [`add_handler`](Subscribe::add_handler) or
    /// [`register_event_handler`](Subscribe::register_event_handler). The plain forms are this
    /// builder with the priority only.
    ///
    /// ```
    /// use lumina::event::{EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers, category};
    ///
    /// let processor = EventProcessor::new();
    /// // The first key only, above the game's handlers.
    /// let first = processor
    ///     .subscribe()
    ///     .priority(InputLayer::Viewport)
    ///     .once()
    ///     .add_handler::<KeyPressedEvent>(|_| true);
    /// // Every event until Escape, then steps aside for good.
    /// let modal = processor.subscribe().self_aware().add_handler::<category::All>(|this, event| {
    ///     if event.downcast_ref::<KeyPressedEvent>().is_some_and(|key| key.key == Key::Escape) {
    ///         this.remove();
    ///     }
    ///     true
    /// });
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::Escape, Modifiers::NONE)));
    /// assert!(!processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// # drop((first, modal));
    /// ```
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'_, Self> {
        Subscribe::new(self)
    }

    /// Registers `handler` at `priority` (an [`InputLayer`] or any `i32`; higher runs first,
    /// equal priorities in registration order). Holds it weakly: dropping the last `Rc`
    /// unregisters it (P3).
    ///
    /// `handler` is any [`EventHandler`] behind an `Rc`, its own type or already
    /// `Rc<dyn EventHandler>` ([`AnyEventHandler`]).
    ///
    /// Returns `false`, changing nothing, if `handler` is already registered (P1): unregister it
    /// first to change its priority. For a guard that unregisters it when dropped, take its
    /// [`handle_of`](Self::handle_of) to [`scoped`](Self::scoped).
    ///
    /// Cost: O(log n) amortized (N4): a lookup by the handler, then an add that, outside a
    /// dispatch, first removes the registrations of handlers already dropped once the table of
    /// handlers has doubled since the last such sweep (a processor that never dispatches stays
    /// bounded).
    #[must_use = "`false` means the handler was already registered and its priority did not change"]
    #[track_caller]
    pub fn register_event_handler<H: ?Sized + AnyEventHandler>(
        &self,
        handler: &Rc<H>,
        priority: impl Into<i32>,
    ) -> bool {
        self.register_handle(&H::to_dyn(handler), priority.into())
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
            self_aware: false,
        };
        Some(self.handlers.insert_spec(spec, WeakShared::new(weak)))
    }

    /// Blocks `handle` if the builder said `.muted()` (X4).
    fn mute_if(&self, muted: bool, handle: DelegateHandle) {
        if muted {
            self.handlers.set_blocked(handle, true);
        }
    }

    /// A guard that unregisters the handler registered as `handle` when dropped (B1), as every
    /// delegate's `scoped`: with [`handle_of`](Self::handle_of), a registration that lasts as
    /// long as a scope. Dropping it after the handler was unregistered does nothing.
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
    /// assert!(processor.register_event_handler(&handler, InputLayer::Viewport));
    /// let guard = processor.scoped(processor.handle_of(&handler).expect("registered"));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// drop(guard);
    /// assert_eq!(processor.handle_of(&handler), None); // unregistered
    /// ```
    pub fn scoped(&self, handle: DelegateHandle) -> crate::scoped::ScopedSubscription {
        crate::scoped::ScopedSubscription::new(handle, self.handlers.weak_remover())
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
            crate::scoped::ScopedSubscription::new(handle, self.handlers.weak_remover()),
            handler,
        )
    }

    /// Registers `handler` with its own registration (X6), through the invocation list's
    /// `insert_with`: the handler is made first (so the processor can hold it weakly, P3, with
    /// itself as owner), and handed its `ThisSubscription` before it can be reached.
    #[track_caller]
    fn register_self_aware(
        &self,
        priority: i32,
        handler: impl Fn(&ThisSubscription, &mut dyn Event) -> bool + 'static,
    ) -> EventSubscription {
        let aware = Rc::new(SelfAware::new(handler));
        let handler: Rc<dyn EventHandler> = Rc::clone(&aware) as Rc<dyn EventHandler>;
        let weak = Rc::downgrade(&handler);
        let owner: Weak<dyn Any> = weak.clone();
        let spec = crate::invocation::Spec {
            priority,
            owner: Some(owner),
            self_aware: true,
            ..crate::invocation::Spec::default()
        };
        let handle = self.handlers.insert_with(spec, |handle, list| {
            aware.bind(ThisSubscription::new(handle, list));
            WeakShared::new(weak)
        });
        EventSubscription::new(
            crate::scoped::ScopedSubscription::new(handle, self.handlers.weak_remover()),
            handler,
        )
    }

    /// The handle of `handler`'s registration, for [`block`](Self::block),
    /// [`set_priority`](Self::set_priority), [`block_scoped`](Self::block_scoped) and
    /// [`scoped`](Self::scoped); `None` if it is not registered (or dropped), so
    /// `handle_of(&handler).is_some()` tells whether it is registered. A typed handler's is
    /// [`EventSubscription::handle`]. O(log n): a lookup by the handler (N4).
    pub fn handle_of<H: ?Sized>(&self, handler: &Rc<H>) -> Option<DelegateHandle> {
        self.handlers.handle_of_owner(handler)
    }

    /// Blocks the handler registered as `handle` (X4): it keeps its place, priority and
    /// registration ([`handle_of`](Self::handle_of), [`len`](Self::len)), but
    /// dispatches pass it by until [`unblock`](Self::unblock). During a dispatch this applies
    /// to the handlers not yet reached (as P4's unregistering). `false`, changing nothing, for
    /// an invalid, foreign or unregistered handle. Counted (A2): it runs again after as many
    /// `unblock`s ([`block_scoped`](Self::block_scoped) is the guard form).
    ///
    /// ```
    /// use lumina::event::{EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
    ///
    /// let processor = EventProcessor::new();
    /// let jump = processor.add_handler::<KeyPressedEvent>(InputLayer::Viewport, |_| true);
    /// assert!(processor.block(jump.handle()));
    /// assert!(!processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// assert_eq!(processor.len(), 1); // still registered
    /// assert!(processor.unblock(jump.handle()));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// ```
    pub fn block(&self, handle: DelegateHandle) -> bool {
        self.handlers.set_blocked(handle, true)
    }

    /// Lifts one block of the handler registered as `handle` (X4, A2: blocks are counted); once
    /// none is left, dispatches reach it again, the running one too if it has not passed its
    /// place yet. `false` for an invalid, foreign or unregistered handle, and for one that is
    /// not blocked.
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        self.handlers.set_blocked(handle, false)
    }

    /// Whether the handler registered as `handle` is registered and blocked (X4).
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.handlers.is_blocked(handle)
    }

    /// Blocks the handler registered as `handle` while the returned guard lives (X4; the
    /// processor's form of boost's `shared_connection_block`): it adds one block and lifts that
    /// one when dropped (counted, A2: guards nest and drop in any order). See [`ScopedBlock`].
    ///
    /// ```
    /// use lumina::event::{EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
    ///
    /// let processor = EventProcessor::new();
    /// let jump = processor.add_handler::<KeyPressedEvent>(InputLayer::Viewport, |_| true);
    /// {
    ///     let _paused = processor.block_scoped(jump.handle());
    ///     assert!(!processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// }
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
    /// ```
    pub fn block_scoped(&self, handle: DelegateHandle) -> ScopedBlock {
        ScopedBlock::new(handle, self.handlers.weak_remover())
    }

    /// Mutes the whole processor while the returned guard lives (A2): no dispatch reaches a handler meanwhile (each returns `false`); subscribers keep
    /// their place, blocks and handles, and one-shots are not used up. Counted: guards nest and
    /// drop in any order. See [`ScopedMute`](crate::ScopedMute). O(1).
    pub fn mute(&self) -> crate::scoped::ScopedMute {
        crate::scoped::ScopedMute::new(self.handlers.mute())
    }

    /// Whether a [`mute`](Self::mute) guard of this processor lives. O(1).
    pub fn is_muted(&self) -> bool {
        self.handlers.is_muted()
    }

    /// Moves the handler registered as `handle` to `priority`, among that priority's handlers
    /// in registration order (as if registered with it, P1). During a dispatch, the running
    /// dispatches keep their order and the move happens when the outermost one ends. `false`
    /// for an invalid, foreign or unregistered handle.
    pub fn set_priority(&self, handle: DelegateHandle, priority: impl Into<i32>) -> bool {
        self.handlers.set_priority(handle, priority.into())
    }

    /// Unregisters `handler`; `false` if it was not registered. During a dispatch, a handler
    /// unregistered before it is reached does not run (P4). O(log n), also during a
    /// dispatch: a lookup by the handler (N4).
    pub fn unregister_event_handler<H: ?Sized>(&self, handler: &Rc<H>) -> bool {
        self.handlers.remove_owner(handler) > 0
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

    /// Whether a dispatch is running on this processor: the question every delegate's
    /// `is_broadcasting` answers (a dispatch is the processor's broadcast, the walk over its
    /// handlers running now).
    pub fn is_broadcasting(&self) -> bool {
        self.handlers.is_broadcasting()
    }

    /// Dispatches `event` (`Dispatch<TEvent>(Args...)`) and returns whether a handler consumed
    /// it. `event` is an event class value, wrapped in an [`Envelope`] on the stack (no heap
    /// allocation, P2), or an event already in one ([`Dispatchable`]: `&mut Envelope<E>`, or the
    /// `&mut dyn Event` a handler received, to forward it), whose handled flag it then reads and
    /// sets.
    ///
    /// Runs the handlers in priority order until one returns `true` or leaves the event handled
    /// (P2); then the event is marked handled and this returns `true`. An event that arrives
    /// already handled is not dispatched and this returns `true`.
    ///
    /// A panic in a handler propagates to the caller after the processor is left consistent
    /// (P4): every handler stays registered and the next dispatch works normally.
    ///
    /// ```
    /// use lumina::event::{Envelope, Event, EventProcessor, Key, KeyPressedEvent, Modifiers};
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let handler = Rc::new(|event: &mut dyn Event| event.is::<KeyPressedEvent>());
    /// assert!(processor.register_event_handler(&handler, 0));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    ///
    /// let mut envelope = Envelope::new(KeyPressedEvent::new(Key::Q, Modifiers::NONE));
    /// assert!(processor.dispatch(&mut envelope));
    /// assert!(envelope.is_handled());
    /// let forwarded: &mut dyn Event = &mut envelope;
    /// assert!(processor.dispatch(forwarded), "already handled: not dispatched again");
    /// ```
    #[inline]
    pub fn dispatch(&self, event: impl Dispatchable) -> bool {
        event.dispatch_on(self)
    }

    /// [`dispatch`](Self::dispatch) of an event class value.
    fn dispatch_value<E: EventClass>(&self, event: E) -> bool {
        // Guarded while handlers run: if one panics, the event is dropped under the guard, so
        // an event whose `Drop` panics too does not abort the process (R2). Free otherwise.
        let _span = crate::trace::dispatch::<E>();
        let mut envelope = Guarded::new(Envelope::new(event));
        let consumed = self.run(&mut *envelope, |envelope| envelope);
        // The dispatch may itself run while the thread unwinds (from a `Drop` during a panic):
        // the event's `Drop` is then guarded too (R2).
        drop_user(envelope.into_inner());
        consumed
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
        let consumed = if std::thread::panicking() {
            self.run_while_unwinding(event, as_dyn)
        } else {
            self.run_loop::<false, Ev>(event, as_dyn)
        };
        if consumed {
            event.set_handled(true);
        }
        consumed
    }

    /// [`run`](Self::run)'s loop for a dispatch made while the thread unwinds (from a `Drop`
    /// during a panic): out of line, as it is rare.
    #[cold]
    #[inline(never)]
    fn run_while_unwinding<Ev: Event + ?Sized>(
        &self,
        event: &mut Ev,
        as_dyn: impl Fn(&mut Ev) -> &mut dyn Event,
    ) -> bool {
        self.run_loop::<true, Ev>(event, as_dyn)
    }

    /// The loop of [`run`](Self::run); `UNWINDING` as in `Lent::hold`.
    #[inline(always)]
    fn run_loop<const UNWINDING: bool, Ev: Event + ?Sized>(
        &self,
        event: &mut Ev,
        as_dyn: impl Fn(&mut Ev) -> &mut dyn Event,
    ) -> bool {
        // Each entry's owner is its handler: the upgrade both checks that it is alive and keeps
        // it alive for its call. A dead one is pruned by the list (P3).
        self.handlers
            .dispatch_until(WeakShared::upgrade, |handler| {
                // The strong reference may be the handler's last (unregistered and dropped during
                // its call): dropped under the guard if the call unwinds, or after it returns
                // while the thread unwinds (R2).
                handler.hold::<UNWINDING, _>(|handler| handler.on_event(as_dyn(event)))
                    || event.is_handled()
            })
    }
}

impl<M> Subscribe<'_, EventProcessor, M> {
    /// Finishes by registering `handler` with the options:
    /// [`register_event_handler`](EventProcessor::register_event_handler) (P1: `false`, changing
    /// nothing, if it is registered already). A one-shot is unregistered right before its first
    /// call; a muted one starts blocked. Not after `.self_aware()`: an [`EventHandler`] does not
    /// receive its registration (register a closure with `add_handler`).
    #[must_use = "`false` means the handler was already registered and nothing changed"]
    #[track_caller]
    pub fn register_event_handler<H: ?Sized + AnyEventHandler>(self, handler: &Rc<H>) -> bool
    where
        M: PlainFinish,
    {
        let (processor, options) = self.parts();
        match processor.register_spec(&H::to_dyn(handler), options.priority, options.once) {
            Some(handle) => {
                processor.mute_if(options.muted, handle);
                true
            }
            None => false,
        }
    }
}

impl Subscribe<'_, EventProcessor, Plain> {
    /// Finishes with a closure for one event class or category (X1):
    /// [`add_handler`](EventProcessor::add_handler) with the options. A one-shot is unregistered
    /// right before it is called for an event it selects (others pass it by and leave it
    /// registered); a muted one starts blocked.
    #[track_caller]
    pub fn add_handler<S: EventSelector>(
        self,
        handler: impl for<'a> Fn(S::View<'a>) -> bool + 'static,
    ) -> EventSubscription {
        let (processor, options) = self.parts();
        let subscription = if options.once {
            // One-shot on the selected events only: the handler unregisters itself (through its
            // own registration, X6) right before the closure runs, which is what `Spec::once`
            // does for a handler that takes every event.
            processor.register_self_aware(
                options.priority,
                super::typed::select_self_aware::<S>(move |this, view| {
                    this.remove();
                    handler(view)
                }),
            )
        } else {
            processor.add_handler::<S>(options.priority, handler)
        };
        processor.mute_if(options.muted, subscription.handle());
        subscription
    }
}

impl Subscribe<'_, EventProcessor, SelfAwareMode> {
    /// Finishes with a closure for one event class or category that receives its own
    /// registration first (X1 with X6): a [`ThisSubscription`] through which it unregisters,
    /// blocks or re-prioritizes itself. `add_handler::<category::All>` takes every event as
    /// `&mut dyn Event`.
    #[track_caller]
    pub fn add_handler<S: EventSelector>(
        self,
        handler: impl for<'a> Fn(&ThisSubscription, S::View<'a>) -> bool + 'static,
    ) -> EventSubscription {
        let (processor, options) = self.parts();
        let once = options.once;
        let subscription = processor.register_self_aware(
            options.priority,
            super::typed::select_self_aware::<S>(move |this, view| {
                if once {
                    this.remove();
                }
                handler(this, view)
            }),
        );
        processor.mute_if(options.muted, subscription.handle());
        subscription
    }
}

/// What [`EventProcessor::dispatch`] takes: an event class value (put in an [`Envelope`] on the
/// stack), an `&mut Envelope<E>` the caller keeps (to read its handled flag after), or an
/// `&mut dyn Event` (a handler forwarding the event it received). Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event class",
    label = "not an event class",
    note = "put `#[lumina::event_class]` on the struct `{Self}` (a game's own event), or \
            `#[lumina::event_class(KeyPressed)]` naming the event type of an input or window \
            event; `dispatch` also takes an `&mut Envelope<E>` or an `&mut dyn Event`"
)]
pub trait Dispatchable: sealed::Sealed {
    /// Dispatches `self` on `processor`. Not public API; [`EventProcessor::dispatch`] calls it.
    #[doc(hidden)]
    fn dispatch_on(self, processor: &EventProcessor) -> bool;
}

mod sealed {
    use super::{Envelope, Event, EventClass};

    pub trait Sealed {}
    impl<E: EventClass> Sealed for E {}
    impl<E: EventClass> Sealed for &mut Envelope<E> {}
    impl Sealed for &mut dyn Event {}
}

impl<E: EventClass> Dispatchable for E {
    #[inline]
    fn dispatch_on(self, processor: &EventProcessor) -> bool {
        processor.dispatch_value(self)
    }
}

impl<E: EventClass> Dispatchable for &mut Envelope<E> {
    #[inline]
    fn dispatch_on(self, processor: &EventProcessor) -> bool {
        processor.run(self, |envelope| envelope)
    }
}

impl Dispatchable for &mut dyn Event {
    #[inline]
    fn dispatch_on(self, processor: &EventProcessor) -> bool {
        processor.run(self, |event| event)
    }
}
