//! Typed handlers (rule X1): a closure for one event class (`&mut KeyPressedEvent`) or one
//! category ([`KeyboardEvent`], [`MouseEvent`], ...), with no downcast in game code.
//!
//! A typed handler is an ordinary [`EventHandler`] (a [`TypedHandler`] adapter that does the
//! downcast once, in the library), registered in the processor's one invocation list: the chain's
//! rules P1-P4 are exactly those of every other handler, and dispatch stays allocation-free.
//!
//! - [`EventSelector`] says what a typed handler receives: every event class selects itself
//!   (`&mut E`), and the category markers in [`category`] select the events of one category as an
//!   enum of their classes.
//! - [`EventProcessor::add_handler`](super::EventProcessor::add_handler) registers a closure and
//!   returns an [`EventSubscription`], the guard that keeps it registered.
//! - [`InputViewportRegistry::add_viewport_handler`](super::InputViewportRegistry::add_viewport_handler)
//!   does the same for a viewport.

use std::any::TypeId;
use std::cell::OnceCell;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use super::class::{Event, EventClass};
use super::events::*;
use super::handler::EventHandler;
use crate::drops::Guarded;
use crate::handle::DelegateHandle;
use crate::scoped::{ScopedSubscription, ThisSubscription};

/// What a typed handler receives: an event class `E` (the handler gets `&mut E`) or a category
/// marker of [`category`] (the handler gets that category's enum, such as [`KeyboardEvent`]).
///
/// Events of other classes pass the handler by: it is not called, and the chain goes on as if it
/// had returned `false`. Classes are told apart by their Rust type (rule E5): a game's own class
/// declared `#[event_class(KeyPressed)]` is not selected by `KeyPressedEvent` nor by
/// [`category::Keyboard`].
///
/// ```
/// use lumina::event::{category, EventProcessor, Key, KeyPressedEvent, KeyboardEvent, Modifiers};
///
/// let processor = EventProcessor::new();
/// let _typed = processor.add_handler::<KeyPressedEvent>(0, |key| key.key == Key::W);
/// let _keys = processor.add_handler::<category::Keyboard>(0, |event| {
///     matches!(event, KeyboardEvent::Released(_))
/// });
/// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither an event class nor an event category",
    label = "not an event class or category",
    note = "name an event class (`#[lumina::event_class]` struct, e.g. `KeyPressedEvent`) or a \
            category marker of `lumina::event::category` (e.g. `category::Keyboard`)"
)]
pub trait EventSelector: 'static {
    /// What the handler receives for a selected event.
    type View<'a>;

    /// The event as this selector's view, or `None` when it is not selected.
    fn select(event: &mut dyn Event) -> Option<Self::View<'_>>;
}

#[diagnostic::do_not_recommend]
impl<E: EventClass> EventSelector for E {
    type View<'a> = &'a mut E;

    #[inline]
    fn select(event: &mut dyn Event) -> Option<&mut E> {
        event.downcast_mut::<E>()
    }
}

/// Declares one category marker, its enum of classes, and its selector.
macro_rules! categories {
    ($(
        $(#[$doc:meta])*
        $Marker:ident => $(#[$view_doc:meta])* $View:ident {
            $( $(#[$variant_doc:meta])* $Variant:ident($Class:ty), )*
        }
    )*) => {
        /// The category markers of typed handlers: `add_handler::<category::Keyboard>(..)`
        /// receives every keyboard event as a [`KeyboardEvent`](super::KeyboardEvent), and so on.
        pub mod category {
            $(
                $(#[$doc])*
                #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
                pub struct $Marker;
            )*

            /// Every event, as `&mut dyn Event`: `add_handler::<category::All>(..)` takes what
            /// an [`EventHandler`](super::EventHandler) takes, as a closure.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
            pub struct All;
        }

        impl EventSelector for category::All {
            type View<'a> = &'a mut dyn Event;

            #[inline]
            fn select(event: &mut dyn Event) -> Option<&mut dyn Event> {
                Some(event)
            }
        }

        $(
            $(#[$view_doc])*
            #[derive(Debug, PartialEq)]
            pub enum $View<'a> {
                $( $(#[$variant_doc])* $Variant(&'a mut $Class), )*
            }

            impl EventSelector for category::$Marker {
                type View<'a> = $View<'a>;

                #[inline]
                fn select(event: &mut dyn Event) -> Option<$View<'_>> {
                    // One dynamic call for the class, then one downcast of the class it is.
                    let class = event.class_type_id();
                    $(
                        if class == TypeId::of::<$Class>() {
                            return event.downcast_mut::<$Class>().map($View::$Variant);
                        }
                    )*
                    None
                }
            }
        )*
    };
}

categories! {
    /// Keyboard events: presses, releases, repeats and typed characters.
    Keyboard =>
    /// A keyboard event, as a [`category::Keyboard`] handler receives it.
    KeyboardEvent {
        /// [`KeyPressedEvent`].
        Pressed(KeyPressedEvent),
        /// [`KeyReleasedEvent`].
        Released(KeyReleasedEvent),
        /// [`KeyRepeatEvent`].
        Repeat(KeyRepeatEvent),
        /// [`CharInputEvent`].
        Char(CharInputEvent),
        /// [`CharInputModsEvent`].
        CharMods(CharInputModsEvent),
    }
    /// Mouse events: buttons, motion, scrolling, entering and leaving the window.
    Mouse =>
    /// A mouse event, as a [`category::Mouse`] handler receives it.
    MouseEvent {
        /// [`MouseButtonPressedEvent`].
        ButtonPressed(MouseButtonPressedEvent),
        /// [`MouseButtonReleasedEvent`].
        ButtonReleased(MouseButtonReleasedEvent),
        /// [`MouseMovedEvent`].
        Moved(MouseMovedEvent),
        /// [`MouseScrolledEvent`].
        Scrolled(MouseScrolledEvent),
        /// [`MouseEnteredEvent`].
        Entered(MouseEnteredEvent),
        /// [`MouseLeftEvent`].
        Left(MouseLeftEvent),
    }
    /// Window events: size, focus, position, state, content scale, dropped files.
    Window =>
    /// A window event, as a [`category::Window`] handler receives it.
    WindowEvent {
        /// [`WindowResizeEvent`].
        Resize(WindowResizeEvent),
        /// [`WindowCloseEvent`].
        Close(WindowCloseEvent),
        /// [`WindowFocusEvent`].
        Focus(WindowFocusEvent),
        /// [`WindowLostFocusEvent`].
        LostFocus(WindowLostFocusEvent),
        /// [`WindowMovedEvent`].
        Moved(WindowMovedEvent),
        /// [`WindowMaximizedEvent`].
        Maximized(WindowMaximizedEvent),
        /// [`WindowMinimizedEvent`].
        Minimized(WindowMinimizedEvent),
        /// [`WindowRestoredEvent`].
        Restored(WindowRestoredEvent),
        /// [`WindowRefreshEvent`].
        Refresh(WindowRefreshEvent),
        /// [`WindowContentScaleChangedEvent`].
        ContentScaleChanged(WindowContentScaleChangedEvent),
        /// [`FramebufferResizeEvent`].
        FramebufferResize(FramebufferResizeEvent),
        /// [`FileDropEvent`].
        FileDrop(FileDropEvent),
    }
    /// Joystick events: connection and disconnection.
    Joystick =>
    /// A joystick event, as a [`category::Joystick`] handler receives it.
    JoystickEvent {
        /// [`JoystickConnectedEvent`].
        Connected(JoystickConnectedEvent),
        /// [`JoystickDisconnectedEvent`].
        Disconnected(JoystickDisconnectedEvent),
    }
    /// Application ticks: tick, update, render.
    Application =>
    /// An application event, as a [`category::Application`] handler receives it.
    AppEvent {
        /// [`AppTickEvent`].
        Tick(AppTickEvent),
        /// [`AppUpdateEvent`].
        Update(AppUpdateEvent),
        /// [`AppRenderEvent`].
        Render(AppRenderEvent),
    }
}

/// A closure over one event class or category, as an [`EventHandler`]: it downcasts (or, for a
/// category, matches the class) and calls the closure with the typed view; other events pass it
/// by. What [`EventProcessor::add_handler`](super::EventProcessor::add_handler) registers; make
/// one yourself to hold a typed handler in an `Rc` and register it weakly (P3) like any handler.
///
/// ```
/// use lumina::event::{EventProcessor, Key, KeyPressedEvent, Modifiers, TypedHandler};
/// use std::rc::Rc;
///
/// let processor = EventProcessor::new();
/// let jump = Rc::new(TypedHandler::<KeyPressedEvent, _>::new(|key| key.key == Key::Space));
/// assert!(processor.register_event_handler(&jump, 0));
/// assert!(processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
/// drop(jump); // held weakly: gone
/// assert!(!processor.dispatch(KeyPressedEvent::new(Key::Space, Modifiers::NONE)));
/// ```
pub struct TypedHandler<S, F> {
    handler: F,
    selector: PhantomData<fn() -> S>,
}

impl<S: EventSelector, F> TypedHandler<S, F>
where
    F: for<'a> Fn(S::View<'a>) -> bool + 'static,
{
    /// Wraps `handler`: it returns `true` to consume the event.
    pub const fn new(handler: F) -> Self {
        TypedHandler {
            handler,
            selector: PhantomData,
        }
    }
}

impl<S, F> fmt::Debug for TypedHandler<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedHandler")
            .field("selects", &std::any::type_name::<S>())
            .finish_non_exhaustive()
    }
}

impl<S: EventSelector, F> EventHandler for TypedHandler<S, F>
where
    F: for<'a> Fn(S::View<'a>) -> bool + 'static,
{
    #[inline]
    fn on_event(&self, event: &mut dyn Event) -> bool {
        match S::select(event) {
            Some(view) => (self.handler)(view),
            None => false,
        }
    }
}

/// A handler that receives its own registration first (X6): what
/// a `.self_aware()` builder of the [`EventProcessor`](super::EventProcessor) and the viewport
/// forms register. Its [`ThisSubscription`] is set once, by the
/// registration, before the handler can be reached; until then (never observable) it passes
/// every event by.
pub(super) struct SelfAware<F> {
    this: OnceCell<ThisSubscription>,
    handler: F,
}

impl<F: Fn(&ThisSubscription, &mut dyn Event) -> bool + 'static> SelfAware<F> {
    pub(super) fn new(handler: F) -> Self {
        SelfAware {
            this: OnceCell::new(),
            handler,
        }
    }

    /// Gives the handler its registration; called once, by the registration itself.
    pub(super) fn bind(&self, this: ThisSubscription) {
        let _ = self.this.set(this);
    }
}

impl<F: Fn(&ThisSubscription, &mut dyn Event) -> bool + 'static> EventHandler for SelfAware<F> {
    #[inline]
    fn on_event(&self, event: &mut dyn Event) -> bool {
        self.this
            .get()
            .is_some_and(|this| (self.handler)(this, event))
    }
}

/// `handler` on one event class or category `S`, receiving its registration first: the
/// untyped self-aware form of a typed handler (X1 with X6). Other events pass it by.
pub(super) fn select_self_aware<S: EventSelector>(
    handler: impl for<'a> Fn(&ThisSubscription, S::View<'a>) -> bool + 'static,
) -> impl Fn(&ThisSubscription, &mut dyn Event) -> bool + 'static {
    move |this, event| match S::select(event) {
        Some(view) => handler(this, view),
        None => false,
    }
}

/// A typed handler registered with [`EventProcessor::add_handler`](super::EventProcessor::add_handler):
/// it owns the handler (the processor holds it weakly, P3) and unregisters it when dropped.
///
/// Dropping it from inside the handler's own call is fine: the call finishes (the dispatch holds
/// the handler meanwhile, P4), and the handler never runs again. Keep it in a named binding
/// (`let _jump = ...`; `let _ = ...` drops it at once). To keep the handler registered for as long
/// as the processor lives, `std::mem::forget` the subscription (the handler is leaked, its `Drop`
/// never runs; [`clear`](super::EventProcessor::clear) still unregisters it).
#[must_use = "dropping the subscription unregisters the handler at once: keep it in a named \
              binding (`let _guard = ...`), not `let _ = ...`"]
pub struct EventSubscription {
    // Declared first so it drops first: unregister, then release the handler.
    scoped: Option<ScopedSubscription>,
    /// The user's handler: guarded, so a subscription dropped while the thread unwinds drops it
    /// under the guard (R2).
    handler: Guarded<Rc<dyn EventHandler>>,
}

impl EventSubscription {
    pub(super) fn new(scoped: ScopedSubscription, handler: Rc<dyn EventHandler>) -> Self {
        EventSubscription {
            scoped: Some(scoped),
            handler: Guarded::new(handler),
        }
    }

    /// The registration's handle.
    pub fn handle(&self) -> DelegateHandle {
        self.scoped
            .as_ref()
            .map_or(DelegateHandle::default(), ScopedSubscription::handle)
    }

    /// The handler, as the processor holds it (weakly): for
    /// [`handle_of`](super::EventProcessor::handle_of) and
    /// [`unregister_event_handler`](super::EventProcessor::unregister_event_handler).
    pub fn handler(&self) -> &Rc<dyn EventHandler> {
        &self.handler
    }

    /// Unregisters now, as [`ScopedSubscription::remove`]; `false` if it was already
    /// unregistered (or the processor dropped).
    pub fn remove(mut self) -> bool {
        self.scoped.take().is_some_and(ScopedSubscription::remove)
    }
}

impl fmt::Debug for EventSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSubscription")
            .field("handle", &self.handle())
            .field("registered", &self.scoped.is_some())
            .finish()
    }
}
