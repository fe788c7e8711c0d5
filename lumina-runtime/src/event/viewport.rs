//! [`InputViewportRegistry`]: routes input to game and editor viewports ahead of the editor
//! chrome, as the spec's `FInputViewportRegistry` does.
//!
//! See [`InputViewportRegistry`] for the routing rules.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};

use super::class::Event;
use super::event_type::EventCategory;
use super::events::{
    MouseButtonPressedEvent, MouseButtonReleasedEvent, MouseMovedEvent, MouseScrolledEvent,
};
use super::handler::EventHandler;
use super::input::Vec2;
use super::processor::{EventProcessor, InputLayer};
use super::typed::{EventSelector, SelfAware, TypedHandler};
use crate::drops::Guarded;
use crate::handle::DelegateHandle;
use crate::invocation::RemoveByHandle;
use crate::scoped::{ScopedBlock, ThisSubscription};
use crate::subscribe::{Options, Plain, PlainFinish, SelfAware as SelfAwareMode, Subscribe};
use crate::track;

/// A rectangle in window coordinates: `origin` is its top-left corner.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub struct Rect {
    /// Top-left corner.
    pub origin: Vec2,
    /// Width and height.
    pub size: Vec2,
}

impl Rect {
    /// A rectangle from its top-left corner and size.
    pub const fn new(x: f32, y: f32, width: f32, height: f32) -> Self {
        Rect {
            origin: Vec2::new(x, y),
            size: Vec2::new(width, height),
        }
    }

    /// Whether `point` lies inside (left and top edges included, right and bottom excluded).
    pub fn contains(&self, point: Vec2) -> bool {
        point.x >= self.origin.x
            && point.y >= self.origin.y
            && point.x < self.origin.x + self.size.x
            && point.y < self.origin.y + self.size.y
    }
}

/// Identifies a viewport in an [`InputViewportRegistry`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ViewportId(u64);

struct Viewport {
    id: ViewportId,
    rect: Rect,
    /// How many blocks it is under (X4, A2: counted, so block guards nest and drop in any
    /// order): while above 0 it keeps its place, rectangle and focus, but events routed to it
    /// pass on.
    blocks: u32,
    /// One-shot (X3): ended right before the first event routed to it reaches its handler.
    once: bool,
    handler: Weak<dyn EventHandler>,
    /// Its code may be a game module's: the module loader may know it by its id (R5).
    recorded: bool,
    /// What its handler is, for listings (V1): set where the entry is made, whichever way of
    /// adding a viewport asked for it.
    kind: HandlerKind,
}

/// What a viewport's handler is, as the registry's listing reports it (V1): whether it receives
/// its own viewport (X6) and whether it goes after one event (X3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HandlerKind {
    /// The handler receives its own viewport first (X6).
    pub(crate) self_aware: bool,
    /// The viewport is removed before its first call (X3).
    pub(crate) one_shot: bool,
}

/// One live viewport as [`InputViewportRegistry::listing`] reports it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewportListing {
    /// Its id's number.
    pub(crate) id: u64,
    /// Its rectangle.
    pub(crate) rect: Rect,
    /// Whether it is blocked (X4).
    pub(crate) muted: bool,
    /// Whether it has the focus.
    pub(crate) focused: bool,
    /// What its handler is.
    pub(crate) kind: HandlerKind,
}

/// The viewports of a registry, in a heap block of their own that stays put however the
/// registry moves: the module loader refers to it by its address to remove a game module's
/// viewports before the module's library is unmapped (R5, MB4). A viewport's handler is held
/// weakly, and its `Weak` knows the handler's type only through a vtable in the code that added
/// it: dropped after the unmapping (even with the handler long gone, its layout is read from that
/// vtable), or upgraded and called then, it would reach unmapped memory.
struct Viewports {
    list: RefCell<Vec<Viewport>>,
    /// How many calls into viewports are running: meanwhile a viewport the loader removes may be
    /// the one running, whose handler the call holds, so the loader keeps the library mapped.
    calling: Cell<usize>,
    /// How many entries the last sweep left (`sweep_if_doubled`).
    swept: Cell<usize>,
}

impl std::ops::Deref for Viewports {
    type Target = RefCell<Vec<Viewport>>;

    fn deref(&self) -> &Self::Target {
        &self.list
    }
}

impl Viewport {
    /// Whether the viewport still exists: not removed, its handler alive. A viewport whose
    /// handler was dropped is gone, whether or not its entry was swept yet.
    fn alive(&self) -> bool {
        self.handler.strong_count() > 0
    }
}

impl Viewports {
    /// The index of the entry `id` (entries are in id order: ids only grow), by a binary
    /// search: O(log n) (N4). Its viewport may be gone (see [`Viewport::alive`]).
    fn index_of(list: &[Viewport], id: ViewportId) -> Option<usize> {
        crate::steps::search(list.len());
        list.binary_search_by_key(&id, |viewport| viewport.id).ok()
    }

    /// Ends the viewport at `index` in place (its entry stays, gone, until the next sweep):
    /// forgets its module record, drops its weak handler (no user code: a `Weak`). O(1).
    fn end(list: &mut [Viewport], index: usize) {
        let viewport = &mut list[index];
        if viewport.recorded {
            track::forget(std::iter::once(viewport.id.0));
            viewport.recorded = false;
        }
        viewport.handler = Weak::<InputViewportRegistry>::new();
    }

    /// Before an add: once the list has doubled since the last sweep, drops every gone entry
    /// (forgetting their records) and gives back memory when under a quarter is used. O(n)
    /// every n adds: O(1) amortized (N4), and the memory of dropped viewports is reclaimed.
    fn sweep_if_doubled(&self, list: &mut Vec<Viewport>) {
        if list.len() < 2 * self.swept.get().max(8) {
            return;
        }
        crate::steps::add(list.len());
        if track::recording() {
            forget_recorded(list.iter().filter(|viewport| !viewport.alive()));
        }
        list.retain(Viewport::alive);
        if list.capacity() > 4 * list.len().max(4) {
            list.shrink_to(2 * list.len().max(4));
        }
        self.swept.set(list.len());
    }
}

impl Drop for Viewports {
    /// Forgets the module records of its viewports (their address is this block's).
    fn drop(&mut self) {
        if track::recording() {
            forget_recorded(self.list.get_mut().iter());
        }
    }
}

/// Forgets the module records of `viewports` that may have one (they are being removed).
fn forget_recorded<'a>(viewports: impl IntoIterator<Item = &'a Viewport>) {
    let mut recorded = viewports
        .into_iter()
        .filter(|viewport| viewport.recorded)
        .map(|viewport| viewport.id.0)
        .peekable();
    if recorded.peek().is_some() {
        track::forget(recorded);
    }
}

/// The module loader's access to a viewport's record (R5).
// SAFETY: `Viewports`'s `Drop` forgets its records, and every removal of a viewport forgets the
// record of the removed one (`forget_recorded`).
unsafe impl track::ModuleRecorded for Viewports {
    /// Nothing: the removal drops the viewport's entry itself, a `Weak` whose drop runs no user
    /// code, so the block outlives it.
    type Taken = ();

    /// Whether a call into a viewport runs.
    fn busy(&self) -> bool {
        self.calling.get() > 0 || self.list.try_borrow_mut().is_err()
    }

    /// Removes the viewport (ends its entry: the sweep drops it).
    fn take_recorded(&self, handle: DelegateHandle) -> (bool, ()) {
        let mut list = self.list.borrow_mut();
        match Self::index_of(&list, ViewportId(handle.id())) {
            Some(index) if list[index].recorded || list[index].alive() => {
                Self::end(&mut list, index);
                (true, ())
            }
            _ => (false, ()),
        }
    }
}

/// A viewport added by [`InputViewportRegistry::add_viewport_handler`]: owns its typed handler
/// (the registry holds it weakly) and so removes the viewport when dropped.
#[must_use = "dropping the subscription removes the viewport at once; keep it"]
pub struct ViewportSubscription {
    id: ViewportId,
    handler: Rc<dyn EventHandler>,
}

impl ViewportSubscription {
    /// The viewport's id, for [`focus`](InputViewportRegistry::focus),
    /// [`set_rect`](InputViewportRegistry::set_rect) and
    /// [`remove`](InputViewportRegistry::remove).
    pub fn id(&self) -> ViewportId {
        self.id
    }

    /// The handler, as the registry holds it (weakly).
    pub fn handler(&self) -> &Rc<dyn EventHandler> {
        &self.handler
    }
}

impl fmt::Debug for ViewportSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewportSubscription")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Routes input to the focused or hovered viewport.
///
/// The registry is one [`EventHandler`] registered at [`InputLayer::Viewport`] (1000). It owns a
/// set of viewports (each an `EventHandler` with a rectangle in window coordinates) and routes:
///
/// - keyboard and character events to the *focused* viewport;
/// - a mouse button press to the viewport under the cursor, which becomes focused (a press
///   outside every viewport clears the focus, so the chrome gets the keys again);
/// - mouse releases to the focused viewport (a drag that ends outside it still ends in it);
/// - motion and scrolling to the viewport under the cursor.
///
/// A viewport returning `false` leaves the event to the layers below, so the editor chrome at
/// [`InputLayer::EditorChrome`] gets what the viewport leaves. Window and application events
/// are not input and pass through untouched. Viewports are held weakly, like every handler.
///
/// ```
/// use lumina::event::{
///     Event, EventProcessor, InputLayer, InputViewportRegistry, Key, KeyPressedEvent, Modifiers,
///     MouseButton, MouseButtonPressedEvent, Rect, Vec2,
/// };
/// use std::rc::Rc;
///
/// let processor = EventProcessor::new();
/// let registry = Rc::new(InputViewportRegistry::new());
/// assert!(registry.register(&processor));
///
/// let game_view = Rc::new(|event: &mut dyn Event| event.is::<KeyPressedEvent>());
/// let id = registry.add_viewport(&game_view, Rect::new(0.0, 0.0, 800.0, 600.0));
///
/// // Not focused yet: the key goes past the viewports.
/// assert!(!processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
/// // A click inside focuses it; from then on it takes the keys.
/// processor.dispatch(MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(10.0, 10.0)));
/// assert_eq!(registry.focused(), Some(id));
/// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
/// ```
pub struct InputViewportRegistry {
    viewports: Rc<Viewports>,
    focused: Cell<Option<ViewportId>>,
}

impl Default for InputViewportRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for InputViewportRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputViewportRegistry")
            .field("viewports", &self.len())
            .field("focused", &self.focused.get())
            .finish()
    }
}

impl InputViewportRegistry {
    /// An empty registry, not yet registered with a processor.
    pub fn new() -> Self {
        InputViewportRegistry {
            viewports: Rc::new(Viewports {
                list: RefCell::new(Vec::new()),
                calling: Cell::new(0),
                swept: Cell::new(0),
            }),
            focused: Cell::new(None),
        }
    }

    /// Registers the registry with `processor` at [`InputLayer::Viewport`]; `false` if it is
    /// already registered there.
    /// Its registration's bind site (B5) is this call's.
    #[must_use = "`false` means the registry was already registered with this processor"]
    #[track_caller]
    pub fn register(self: &Rc<Self>, processor: &EventProcessor) -> bool {
        processor.register_event_handler(self, InputLayer::Viewport)
    }

    /// Adds a viewport covering `rect`, held weakly: a dropped viewport is gone at once (it gets
    /// no more input, is in no count or listing, and [`remove`](Self::remove) of it returns
    /// `false`); its entry's memory goes at a later add's sweep. Later viewports are on top of
    /// earlier ones where they overlap. With options (one-shot, muted), through
    /// [`subscribe`](Self::subscribe). O(1) amortized (N4): an append, and once the list has
    /// doubled since the last sweep, a sweep of the gone entries.
    pub fn add_viewport<V: EventHandler>(&self, viewport: &Rc<V>, rect: Rect) -> ViewportId {
        let handler: Rc<dyn EventHandler> = Rc::<V>::clone(viewport);
        self.insert(&handler, rect, Options::default(), HandlerKind::default())
    }

    /// Adds the viewport `handler` with `options` (its priority means nothing here: the builder
    /// has no `priority` for viewports), listed as `kind` (V1).
    fn insert(
        &self,
        handler: &Rc<dyn EventHandler>,
        rect: Rect,
        options: Options<'_>,
        kind: HandlerKind,
    ) -> ViewportId {
        // Numbered like subscriptions, so that a viewport's id is its registration's handle
        // (`ThisSubscription`, `ScopedBlock`, X4/X6).
        let id = ViewportId(DelegateHandle::new_unique().id());
        // Its code (the vtable the coercion to `dyn EventHandler` made, in the caller's crate):
        // a game module's viewport is recorded, and removed by the module's unload (R5).
        let code = track::code_of(&**handler);
        let mut viewports = self.viewports.borrow_mut();
        // Entries of gone viewports are swept (amortized), so the list does not grow without
        // bound; the list stays in id order (the new id is the largest).
        self.viewports.sweep_if_doubled(&mut viewports);
        viewports.push(Viewport {
            id,
            rect,
            blocks: u32::from(options.muted),
            once: options.once,
            handler: Rc::downgrade(handler),
            recorded: code.is_some(),
            kind,
        });
        drop(viewports);
        if code.is_some() {
            let access = track::ListAccess::of(&self.viewports);
            let _ = track::track(access, DelegateHandle::from_id(id.0), code);
        }
        id
    }

    /// Adds a viewport covering `rect` whose input goes to a typed closure (rule X1): one event
    /// class (`add_viewport_handler::<KeyPressedEvent>`) or one category
    /// (`add_viewport_handler::<category::Keyboard>`, ...); routed events of other classes pass it by
    /// (to the layers below). The returned [`ViewportSubscription`] owns the closure (the
    /// registry holds viewports weakly): dropping it removes the viewport. With options
    /// (one-shot, self-aware, muted), through [`subscribe`](Self::subscribe).
    ///
    /// ```
    /// use lumina::event::{
    ///     category, EventProcessor, InputViewportRegistry, Key, KeyPressedEvent, KeyboardEvent,
    ///     Modifiers, Rect,
    /// };
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let registry = Rc::new(InputViewportRegistry::new());
    /// assert!(registry.register(&processor));
    /// let game = registry.add_viewport_handler::<category::Keyboard>(
    ///     Rect::new(0.0, 0.0, 800.0, 600.0),
    ///     |event| matches!(event, KeyboardEvent::Pressed(key) if key.key == Key::W),
    /// );
    /// assert!(registry.focus(game.id()));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// drop(game);
    /// assert!(registry.is_empty());
    /// ```
    pub fn add_viewport_handler<S: EventSelector>(
        &self,
        rect: Rect,
        handler: impl for<'a> Fn(S::View<'a>) -> bool + 'static,
    ) -> ViewportSubscription {
        let handler: Rc<dyn EventHandler> = Rc::new(TypedHandler::<S, _>::new(handler));
        let id = self.insert(&handler, rect, Options::default(), HandlerKind::default());
        ViewportSubscription { id, handler }
    }

    /// A viewport with options (rule A1): [`once`](Subscribe::once) (removed right before the
    /// first event routed to it reaches it; for a typed handler, the first event it selects),
    /// [`self_aware`](Subscribe::self_aware) (the handler receives its own viewport as a
    /// [`ThisSubscription`]: `this.remove()` removes it, `this.block()` mutes it;
    /// `ViewportId::from(this.handle())` is its id) and [`muted`](Subscribe::muted) (starts
    /// blocked), finished by
    /// `add_viewport_handler` (a typed closure) or `add_viewport` (an [`EventHandler`]). Viewports
    /// have no priority: `.priority(..)` here does not compile. Cost: a finish costs what the
    /// plain form costs.
    ///
    /// ```
    /// use lumina::event::{
    ///     EventProcessor, InputViewportRegistry, Modifiers, MouseButton,
    ///     MouseButtonPressedEvent, Rect, Vec2,
    /// };
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let registry = Rc::new(InputViewportRegistry::new());
    /// assert!(registry.register(&processor));
    /// // A "click anywhere to continue" overlay, used up by the first click.
    /// let _overlay = registry
    ///     .subscribe()
    ///     .once()
    ///     .add_viewport_handler::<MouseButtonPressedEvent>(Rect::new(0.0, 0.0, 800.0, 600.0), |_| true);
    /// let click = MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(5.0, 5.0));
    /// assert!(processor.dispatch(click.clone()));
    /// assert!(registry.is_empty());
    /// assert!(!processor.dispatch(click));
    /// ```
    pub fn subscribe(self: &Rc<Self>) -> Subscribe<'_, Rc<Self>> {
        Subscribe::new(self)
    }

    /// Removes a viewport (and its focus); `false` if `id` is unknown or already gone: removed,
    /// or its handler dropped (a dropped viewport is gone, whether or not a sweep took its
    /// entry yet). O(log n) (N4): a binary search by id; the entry is ended in place and swept
    /// later.
    pub fn remove(&self, id: ViewportId) -> bool {
        if self.focused.get() == Some(id) {
            self.focused.set(None);
        }
        let mut viewports = self.viewports.borrow_mut();
        let Some(index) = Viewports::index_of(&viewports, id) else {
            return false;
        };
        let alive = viewports[index].alive();
        // A dropped one's record goes too (it is gone either way).
        Viewports::end(&mut viewports, index);
        alive
    }

    /// The live viewport `id`, found by a binary search: O(log n) (N4).
    fn with_live<T>(&self, id: ViewportId, visit: impl FnOnce(&mut Viewport) -> T) -> Option<T> {
        let mut viewports = self.viewports.borrow_mut();
        let index = Viewports::index_of(&viewports, id)?;
        let viewport = &mut viewports[index];
        viewport.alive().then(|| visit(viewport))
    }

    /// Moves or resizes a viewport; `false` if `id` is unknown or gone. O(log n) (N4).
    pub fn set_rect(&self, id: ViewportId, rect: Rect) -> bool {
        self.with_live(id, |viewport| viewport.rect = rect)
            .is_some()
    }

    /// Gives a viewport the keyboard focus; `false` (focus unchanged) if `id` is unknown or its
    /// viewport was dropped. O(log n) (N4).
    pub fn focus(&self, id: ViewportId) -> bool {
        let alive = self.with_live(id, |_| ()).is_some();
        if alive {
            self.focused.set(Some(id));
        }
        alive
    }

    /// Takes the focus away from every viewport: keys go to the layers below.
    pub fn clear_focus(&self) {
        self.focused.set(None);
    }

    /// The focused viewport, if it is still alive. O(log n) (N4).
    pub fn focused(&self) -> Option<ViewportId> {
        let id = self.focused.get()?;
        self.handler(id).map(|_| id)
    }

    /// The topmost live viewport containing `point`. O(n) in the viewports above it (a walk
    /// from the top).
    pub fn viewport_at(&self, point: Vec2) -> Option<ViewportId> {
        self.viewports
            .borrow()
            .iter()
            .rev()
            .find(|viewport| viewport.handler.strong_count() > 0 && viewport.rect.contains(point))
            .map(|viewport| viewport.id)
    }

    /// How many live viewports there are (dropped ones are gone). O(n): a count.
    pub fn len(&self) -> usize {
        self.viewports
            .borrow()
            .iter()
            .filter(|viewport| viewport.handler.strong_count() > 0)
            .count()
    }

    /// `true` when no live viewport exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live viewports in the order added, topmost last: `(id number, rectangle, muted,
    /// focused)`, for the [inspector](crate::inspect). O(n), allocates.
    pub(crate) fn listing(&self) -> Vec<ViewportListing> {
        let focused = self.focused.get();
        self.viewports
            .borrow()
            .iter()
            .filter(|viewport| viewport.handler.strong_count() > 0)
            .map(|viewport| ViewportListing {
                id: viewport.id.0,
                rect: viewport.rect,
                muted: viewport.blocks > 0,
                focused: focused == Some(viewport.id),
                kind: viewport.kind,
            })
            .collect()
    }

    /// The handler of the viewport `id`, if it lives. O(log n) (N4).
    fn handler(&self, id: ViewportId) -> Option<Rc<dyn EventHandler>> {
        let viewports = self.viewports.borrow();
        let index = Viewports::index_of(&viewports, id)?;
        viewports[index].handler.upgrade()
    }

    /// The handler events routed to `id` go to: `None` if it is gone or blocked (X4). A one-shot
    /// viewport is ended here, right before its call (X3), so a dispatch nested in that call
    /// never reaches it again. O(log n) (N4): what a key to the focused viewport costs.
    fn unblocked_handler(&self, id: ViewportId) -> Option<Rc<dyn EventHandler>> {
        let mut viewports = self.viewports.borrow_mut();
        let index = Viewports::index_of(&viewports, id)?;
        let viewport = &viewports[index];
        if viewport.blocks > 0 {
            return None;
        }
        let handler = viewport.handler.upgrade()?;
        if viewport.once {
            if self.focused.get() == Some(id) {
                self.focused.set(None);
            }
            // The strong reference taken above keeps the handler for its one call.
            Viewports::end(&mut viewports, index);
        }
        Some(handler)
    }

    /// Blocks (mutes) the viewport `id` (X4): it keeps its rectangle, its place among
    /// overlapping viewports and the focus, but the events routed to it pass on to the layers
    /// below as if it had returned `false`, until as many [`unblock`](Self::unblock)s (blocks are
    /// counted, A2). A viewport blocked while its own call runs finishes that call. `false` if
    /// there is no such live viewport. O(log n) (N4).
    ///
    /// ```
    /// use lumina::event::{
    ///     EventProcessor, InputViewportRegistry, Key, KeyPressedEvent, Modifiers, MouseButton,
    ///     MouseButtonPressedEvent, Rect, Vec2,
    /// };
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let registry = Rc::new(InputViewportRegistry::new());
    /// assert!(registry.register(&processor));
    /// let game = registry.add_viewport_handler::<KeyPressedEvent>(Rect::new(0.0, 0.0, 800.0, 600.0), |_| true);
    /// processor.dispatch(MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(1.0, 1.0)));
    /// assert!(registry.block(game.id()));
    /// assert!(!processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// assert!(registry.unblock(game.id()));
    /// assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    /// ```
    pub fn block(&self, id: ViewportId) -> bool {
        self.set_blocked(id, true)
    }

    /// Lifts one block of the viewport `id` (X4, A2); `false` if there is no such live viewport
    /// or it is not blocked. O(log n) (N4).
    pub fn unblock(&self, id: ViewportId) -> bool {
        self.set_blocked(id, false)
    }

    /// Whether the viewport `id` is live and blocked (X4). O(log n) (N4).
    pub fn is_blocked(&self, id: ViewportId) -> bool {
        self.with_live(id, |viewport| viewport.blocks > 0)
            .unwrap_or(false)
    }

    /// Blocks the viewport `id` while the returned guard lives (X4): the same [`ScopedBlock`]
    /// delegates and the processor hand out, one counted block (A2), lifted on drop; guards
    /// nest and drop in any order. O(log n) (N4).
    pub fn block_scoped(self: &Rc<Self>, id: ViewportId) -> ScopedBlock {
        ScopedBlock::new(DelegateHandle::from_id(id.0), Some(self.weak_registry()))
    }

    /// This registry as the type-erased list a [`ThisSubscription`] or [`ScopedBlock`] holds
    /// weakly (R1: the `Rc`'s block, never the registry's place).
    fn weak_registry(self: &Rc<Self>) -> Weak<dyn RemoveByHandle> {
        Rc::downgrade(self) as Weak<dyn RemoveByHandle>
    }

    /// Adds one block (`true`) or lifts one (`false`, if any): A2's count.
    fn set_blocked(&self, id: ViewportId, blocked: bool) -> bool {
        self.with_live(id, |viewport| {
            if blocked {
                viewport.blocks = viewport.blocks.checked_add(1)?;
            } else {
                viewport.blocks = viewport.blocks.checked_sub(1)?;
            }
            Some(())
        })
        .flatten()
        .is_some()
    }

    /// Which viewport an input event goes to (`None`: not to a viewport).
    fn route(&self, event: &dyn Event) -> Option<ViewportId> {
        if let Some(press) = event.downcast_ref::<MouseButtonPressedEvent>() {
            // Click to focus: a press outside every viewport gives the keys back to the chrome.
            let target = self.viewport_at(press.position);
            self.focused.set(target);
            return target;
        }
        if event.is::<MouseButtonReleasedEvent>() {
            return self.focused();
        }
        if let Some(moved) = event.downcast_ref::<MouseMovedEvent>() {
            return self.viewport_at(moved.position);
        }
        if let Some(scrolled) = event.downcast_ref::<MouseScrolledEvent>() {
            return self.viewport_at(scrolled.position);
        }
        if event.is_in_category(EventCategory::KEYBOARD) {
            return self.focused();
        }
        None
    }
}

/// The viewports' finishes of the subscription builder (rule A1): options first
/// ([`InputViewportRegistry::subscribe`]), then one of these.
impl<M> Subscribe<'_, Rc<InputViewportRegistry>, M> {
    /// Finishes by adding `viewport` (an [`EventHandler`] object, held weakly) covering `rect`,
    /// with the options: [`add_viewport`](InputViewportRegistry::add_viewport). A one-shot is
    /// removed right before the first event routed to it; a muted one starts blocked. Not after
    /// `.self_aware()`: an [`EventHandler`] does not receive its registration (add a closure
    /// with `add_viewport_handler`). O(1) amortized (N4).
    pub fn add_viewport<V: EventHandler>(self, viewport: &Rc<V>, rect: Rect) -> ViewportId
    where
        M: PlainFinish,
    {
        let (registry, options) = self.parts();
        let handler: Rc<dyn EventHandler> = Rc::<V>::clone(viewport);
        let kind = HandlerKind {
            self_aware: false,
            one_shot: options.once,
        };
        registry.insert(&handler, rect, options, kind)
    }
}

impl Subscribe<'_, Rc<InputViewportRegistry>, Plain> {
    /// Finishes with a typed closure for one event class or category (X1):
    /// [`add_viewport_handler`](InputViewportRegistry::add_viewport_handler) with the options.
    /// A one-shot is removed right before the first event it selects reaches it (events of
    /// other classes routed to it pass it by and leave it); a muted one starts blocked. O(1)
    /// amortized (N4).
    pub fn add_viewport_handler<S: EventSelector>(
        self,
        rect: Rect,
        handler: impl for<'a> Fn(S::View<'a>) -> bool + 'static,
    ) -> ViewportSubscription {
        let (registry, options) = self.parts();
        if options.once {
            // One-shot on the selected events only: the viewport removes itself through its
            // own registration (X6) right before the closure runs. Listed as one-shot: its
            // closure does not receive the viewport.
            let kind = HandlerKind {
                self_aware: false,
                one_shot: true,
            };
            let remove_first = move |this: &ThisSubscription, view: S::View<'_>| {
                this.remove();
                handler(view)
            };
            return registry.insert_self_aware::<S>(rect, remove_first, options, kind);
        }
        let handler: Rc<dyn EventHandler> = Rc::new(TypedHandler::<S, _>::new(handler));
        let id = registry.insert(&handler, rect, options, HandlerKind::default());
        ViewportSubscription { id, handler }
    }
}

impl Subscribe<'_, Rc<InputViewportRegistry>, SelfAwareMode> {
    /// Finishes with a typed closure for one event class or category that receives its own
    /// viewport first (X1 with X6): a [`ThisSubscription`] whose `remove` removes the viewport
    /// and `block` mutes it; viewports have no priorities, so `set_priority` returns `false`.
    /// A one-shot is removed right before the first event it selects reaches it. O(1)
    /// amortized (N4).
    ///
    /// ```
    /// use lumina::event::{
    ///     EventProcessor, InputViewportRegistry, Modifiers, MouseButton,
    ///     MouseButtonPressedEvent, Rect, Vec2,
    /// };
    /// use std::rc::Rc;
    ///
    /// let processor = EventProcessor::new();
    /// let registry = Rc::new(InputViewportRegistry::new());
    /// assert!(registry.register(&processor));
    /// // A splash screen that goes away on the first click.
    /// let _splash = registry.subscribe().self_aware().add_viewport_handler::<MouseButtonPressedEvent>(
    ///     Rect::new(0.0, 0.0, 800.0, 600.0),
    ///     |this, _| this.remove(),
    /// );
    /// let click = MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(5.0, 5.0));
    /// assert!(processor.dispatch(click.clone()));
    /// assert!(registry.is_empty());
    /// assert!(!processor.dispatch(click));
    /// ```
    pub fn add_viewport_handler<S: EventSelector>(
        self,
        rect: Rect,
        handler: impl for<'a> Fn(&ThisSubscription, S::View<'a>) -> bool + 'static,
    ) -> ViewportSubscription {
        let (registry, options) = self.parts();
        let once = options.once;
        let kind = HandlerKind {
            self_aware: true,
            one_shot: once,
        };
        let handler = move |this: &ThisSubscription, view: S::View<'_>| {
            if once {
                this.remove();
            }
            handler(this, view)
        };
        registry.insert_self_aware::<S>(rect, handler, options, kind)
    }
}

impl InputViewportRegistry {
    /// Adds a typed closure that receives its own viewport (X6), with `options` but its
    /// one-shot (the closure removes itself: a registry-level one-shot would be used up by
    /// events it does not select), listed as `kind` (V1).
    fn insert_self_aware<S: EventSelector>(
        self: &Rc<Self>,
        rect: Rect,
        handler: impl for<'a> Fn(&ThisSubscription, S::View<'a>) -> bool + 'static,
        options: Options<'_>,
        kind: HandlerKind,
    ) -> ViewportSubscription {
        let aware = Rc::new(SelfAware::new(super::typed::select_self_aware::<S>(
            handler,
        )));
        let erased: Rc<dyn EventHandler> = Rc::clone(&aware) as Rc<dyn EventHandler>;
        let options = Options {
            once: false,
            ..options
        };
        let id = self.insert(&erased, rect, options, kind);
        aware.bind(ThisSubscription::new(
            DelegateHandle::from_id(id.0),
            self.weak_registry(),
        ));
        ViewportSubscription { id, handler: aware }
    }
}

impl EventHandler for InputViewportRegistry {
    /// Routes `event` to one viewport; `true` if that viewport consumed it.
    fn on_event(&self, event: &mut dyn Event) -> bool {
        // No borrow is held while the viewport runs: it may add or remove viewports.
        match self.route(event).and_then(|id| self.unblocked_handler(id)) {
            // The viewport's last reference if it was removed and dropped during its call:
            // dropped under the guard if the call unwinds (R2).
            Some(viewport) => {
                // A game module's unload meanwhile keeps its library mapped (R5).
                let calling = Calling::new(&self.viewports);
                let consumed = Guarded::hold(viewport, |viewport| viewport.on_event(event));
                drop(calling);
                consumed
            }
            None => false,
        }
    }
}

/// A call into a viewport, counted while it runs (also when it unwinds).
struct Calling<'a>(&'a Viewports);

impl<'a> Calling<'a> {
    fn new(viewports: &'a Viewports) -> Self {
        viewports.calling.set(viewports.calling.get() + 1);
        Calling(viewports)
    }
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        self.0.calling.set(self.0.calling.get() - 1);
    }
}

/// A viewport seen as a subscription (X4, X6): the handle is the viewport's id. What
/// [`ThisSubscription`] and [`ScopedBlock`] reach the registry through. Viewports have no
/// priorities: moving one is refused.
impl RemoveByHandle for InputViewportRegistry {
    fn remove_handle(&self, handle: DelegateHandle) -> bool {
        self.remove(ViewportId(handle.id()))
    }

    fn set_blocked_handle(&self, handle: DelegateHandle, blocked: bool) -> bool {
        self.set_blocked(ViewportId(handle.id()), blocked)
    }

    fn is_blocked_handle(&self, handle: DelegateHandle) -> bool {
        self.is_blocked(ViewportId(handle.id()))
    }

    fn set_priority_handle(&self, _: DelegateHandle, _: i32) -> bool {
        false
    }

    fn contains_handle(&self, handle: DelegateHandle) -> bool {
        self.handler(ViewportId(handle.id())).is_some()
    }
}

impl From<DelegateHandle> for ViewportId {
    /// The viewport a [`ThisSubscription`] handed to a viewport handler names.
    fn from(handle: DelegateHandle) -> Self {
        ViewportId(handle.id())
    }
}

#[cfg(test)]
mod tests {
    //! The module loader's functions for a viewport's record, called as the loader calls them
    //! (a loaded module's library cannot be had under Miri): R5.

    use super::*;
    use crate::event::{Key, KeyPressedEvent, Modifiers};

    #[test]
    fn r5_a_viewports_module_record_removes_it_and_is_busy_while_a_viewport_runs() {
        let registry = Rc::new(InputViewportRegistry::new());
        let block = track::ListAccess::of(&registry.viewports);
        let asked = Rc::new(Cell::new(None));
        let seen = Rc::clone(&asked);
        let game = registry.add_viewport_handler::<KeyPressedEvent>(
            Rect::new(0.0, 0.0, 10.0, 10.0),
            move |_| {
                // SAFETY: the registry's live block, on its thread.
                seen.set(Some(unsafe { block.busy() }));
                true
            },
        );
        assert!(registry.focus(game.id()));
        // SAFETY: as above.
        assert!(!unsafe { block.busy() }, "no viewport runs");
        assert!(
            registry.on_event(&mut crate::event::Envelope::new(KeyPressedEvent::new(
                Key::W,
                Modifiers::NONE
            )))
        );
        assert_eq!(asked.get(), Some(true), "busy while its viewport runs");
        // SAFETY: as above.
        unsafe {
            assert!(!block.remove(DelegateHandle::from_id(game.id().0 + 1)));
            assert!(block.remove(DelegateHandle::from_id(game.id().0)));
        }
        assert!(registry.is_empty());
        assert_eq!(registry.focused(), None);
        drop(game);
    }
}
