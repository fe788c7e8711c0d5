//! [`ScopedSubscription`]: a subscription that ends when its guard is dropped (rule B1).

use std::fmt;
use std::rc::Weak;

use crate::handle::DelegateHandle;
use crate::invocation::RemoveByHandle;

/// A subscription that ends when this guard is dropped (rule B1): sigslot's and EnTT's
/// `scoped_connection`, boost's `scoped_connection`.
///
/// Made by `scoped` on a multicast delegate (declared or generic) or a script delegate (native
/// listeners) or an [`EventProcessor`](crate::EventProcessor).
/// Dropping it removes the subscription like `remove(handle)`: during a broadcast, a subscriber
/// not yet reached does not run (M3), and one that is running finishes (M4). A guard that outlives
/// its delegate does nothing: it holds the delegate's state weakly. [`into_handle`] turns it back
/// into a plain handle that keeps the subscription.
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let total = Rc::new(Cell::new(0));
/// {
///     let sink = Rc::clone(&total);
///     let _guard = on_damage.scoped(on_damage.add_lambda(move |amount| sink.set(sink.get() + amount)));
///     on_damage.broadcast(5);
/// } // the guard drops: unsubscribed
/// on_damage.broadcast(7);
/// assert_eq!(total.get(), 5);
/// assert!(!on_damage.is_bound());
/// ```
///
/// [`into_handle`]: ScopedSubscription::into_handle
#[must_use = "dropping a scoped subscription unsubscribes at once; keep it, or call `into_handle`"]
pub struct ScopedSubscription {
    handle: DelegateHandle,
    list: Option<Weak<dyn RemoveByHandle>>,
}

impl ScopedSubscription {
    pub(crate) fn new(handle: DelegateHandle, list: Option<Weak<dyn RemoveByHandle>>) -> Self {
        ScopedSubscription { handle, list }
    }

    /// The subscription's handle (still owned by this guard).
    pub fn handle(&self) -> DelegateHandle {
        self.handle
    }

    /// Ends the guard without unsubscribing: the subscription stays, and the returned handle
    /// removes it.
    #[must_use = "the handle is the only way left to remove the subscription"]
    pub fn into_handle(mut self) -> DelegateHandle {
        self.list = None;
        self.handle
    }

    /// Unsubscribes now, as [`ThisSubscription::remove`] does from inside a subscriber; `false`
    /// if the subscription was already gone (removed, cleared, its delegate dropped).
    pub fn remove(mut self) -> bool {
        self.remove_now()
    }

    fn remove_now(&mut self) -> bool {
        let Some(list) = self.list.take().and_then(|list| list.upgrade()) else {
            return false;
        };
        list.remove_handle(self.handle)
    }
}

impl Drop for ScopedSubscription {
    fn drop(&mut self) {
        self.remove_now();
    }
}

impl fmt::Debug for ScopedSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedSubscription")
            .field("handle", &self.handle)
            .field(
                "delegate_alive",
                &self
                    .list
                    .as_ref()
                    .is_some_and(|list| list.strong_count() > 0),
            )
            .finish()
    }
}

/// What a self-aware subscriber receives as its first argument (X6): its own subscription,
/// which it cannot capture otherwise (the handle is returned after the add). Through it the
/// subscriber removes, blocks or re-prioritizes itself; boost's extended slots receive their
/// `connection` the same way.
///
/// It holds its list weakly: once the delegate is dropped every operation returns `false`. The
/// usual rules apply to what it does during a broadcast: a subscriber that removes itself
/// finishes its call (M4), blocking applies to the broadcasts that reach it later (X4), and a
/// new priority takes effect once the outermost broadcast ends (M2).
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let on_tick: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let seen = Rc::new(Cell::new(0));
/// let sink = Rc::clone(&seen);
/// // Listens until the third tick, then unsubscribes itself.
/// let _ = on_tick.subscribe().self_aware().add_lambda(move |this, tick| {
///     sink.set(tick);
///     if tick == 3 {
///         this.remove();
///     }
/// });
/// for tick in 1..=5 {
///     on_tick.broadcast(tick);
/// }
/// assert_eq!(seen.get(), 3);
/// assert!(!on_tick.is_bound());
/// ```
#[derive(Clone)]
pub struct ThisSubscription {
    handle: DelegateHandle,
    list: Weak<dyn RemoveByHandle>,
}

impl ThisSubscription {
    pub(crate) fn new(handle: DelegateHandle, list: Weak<dyn RemoveByHandle>) -> Self {
        ThisSubscription { handle, list }
    }

    /// The subscription's handle (what the `add_*` call returned).
    pub fn handle(&self) -> DelegateHandle {
        self.handle
    }

    /// Unsubscribes; `false` if already gone. Called from its own call, the call finishes (M4).
    pub fn remove(&self) -> bool {
        self.list
            .upgrade()
            .is_some_and(|list| list.remove_handle(self.handle))
    }

    /// Blocks this subscription (X4): skipped by broadcasts until unblocked, keeping its place.
    pub fn block(&self) -> bool {
        self.list
            .upgrade()
            .is_some_and(|list| list.set_blocked_handle(self.handle, true))
    }

    /// Unblocks this subscription (X4).
    pub fn unblock(&self) -> bool {
        self.list
            .upgrade()
            .is_some_and(|list| list.set_blocked_handle(self.handle, false))
    }

    /// Whether this subscription is present and blocked.
    pub fn is_blocked(&self) -> bool {
        self.list
            .upgrade()
            .is_some_and(|list| list.is_blocked_handle(self.handle))
    }

    /// Whether this subscription is still present (not removed, its delegate alive).
    pub fn is_subscribed(&self) -> bool {
        self.list
            .upgrade()
            .is_some_and(|list| list.contains_handle(self.handle))
    }

    /// Moves this subscription to `priority` (higher runs first; among equal priorities, in the
    /// order added). During a broadcast, from the end of the outermost one on (M2).
    /// Takes any `i32`, or an [`InputLayer`](crate::event::InputLayer) for an event handler.
    pub fn set_priority(&self, priority: impl Into<i32>) -> bool {
        let priority = priority.into();
        self.list
            .upgrade()
            .is_some_and(|list| list.set_priority_handle(self.handle, priority))
    }
}

impl fmt::Debug for ThisSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThisSubscription")
            .field("handle", &self.handle)
            .field("subscribed", &self.is_subscribed())
            .finish()
    }
}

/// A subscription blocked while this guard lives (X4; boost's `shared_connection_block`): made
/// by `block_scoped` on a multicast delegate, declared delegate, registration view, script
/// delegate, the processor or the viewport registry. The subscriber keeps its place, priority and
/// handle and is skipped by broadcasts. Blocks are counted (A2): the guard adds one and lifts
/// exactly that one when dropped, so guards nest and drop in any order, and a subscription also
/// blocked by `block` (or several guards) stays blocked until every block is lifted.
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let hits = Rc::new(Cell::new(0));
/// let sink = Rc::clone(&hits);
/// let handle = on_hit.add_lambda(move |damage| sink.set(sink.get() + damage));
/// let cutscene = on_hit.block_scoped(handle);
/// let pause_menu = on_hit.block_scoped(handle);
/// drop(cutscene); // the pause menu's block still holds
/// on_hit.broadcast(10); // skipped
/// assert_eq!(on_hit.len(), 1); // still subscribed
/// drop(pause_menu);
/// on_hit.broadcast(5);
/// assert_eq!(hits.get(), 5);
/// ```
#[must_use = "dropping the guard lifts its block at once: bind it, `let _block = ...`, for as long as the subscription stays blocked"]
pub struct ScopedBlock {
    handle: DelegateHandle,
    /// The list to lift the block from, if this guard blocked the subscription.
    list: Option<Weak<dyn RemoveByHandle>>,
}

impl ScopedBlock {
    /// Adds one block to `handle`'s subscription in `list` (A2: counted).
    pub(crate) fn new(handle: DelegateHandle, list: Option<Weak<dyn RemoveByHandle>>) -> Self {
        let list = list.filter(|weak| {
            weak.upgrade()
                .is_some_and(|list| list.set_blocked_handle(handle, true))
        });
        ScopedBlock { handle, list }
    }

    /// The blocked subscription's handle.
    pub fn handle(&self) -> DelegateHandle {
        self.handle
    }
}

impl Drop for ScopedBlock {
    fn drop(&mut self) {
        if let Some(list) = self.list.take().and_then(|list| list.upgrade()) {
            list.set_blocked_handle(self.handle, false);
        }
    }
}

impl fmt::Debug for ScopedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedBlock")
            .field("handle", &self.handle)
            .field("blocked_here", &self.list.is_some())
            .finish()
    }
}

/// A whole delegate muted while this guard lives (A2; sigslot's signal blocking, Qt's
/// `QSignalBlocker`): made by `mute` on a multicast delegate, declared delegate, lifecycle
/// signal, script delegate or the event processor. No broadcast (or dispatch) of it calls
/// anyone meanwhile: subscribers keep their place, blocks and handles, one-shots are not used
/// up, and subscriptions made meanwhile wait too. Mutes are counted: guards nest and drop in
/// any order. A broadcast already running when the guard is made finishes.
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let on_footstep: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
/// let heard = Rc::new(Cell::new(0));
/// let ear = Rc::clone(&heard);
/// let _ = on_footstep.add_lambda(move |_| ear.set(ear.get() + 1));
/// {
///     let _loading = on_footstep.mute();
///     on_footstep.broadcast(1.0); // nobody hears it
///     assert!(on_footstep.is_muted());
/// }
/// on_footstep.broadcast(1.0);
/// assert_eq!(heard.get(), 1);
/// ```
#[must_use = "dropping the guard unmutes the delegate at once: bind it, `let _muted = ...`, for as long as the delegate stays muted"]
pub struct ScopedMute {
    list: Weak<dyn RemoveByHandle>,
}

impl ScopedMute {
    /// A guard that lifts one mute of `list` (which the caller added) when dropped.
    pub(crate) fn new(list: Weak<dyn RemoveByHandle>) -> Self {
        ScopedMute { list }
    }
}

impl Drop for ScopedMute {
    fn drop(&mut self) {
        if let Some(list) = self.list.upgrade() {
            list.mute_list(false);
        }
    }
}

impl fmt::Debug for ScopedMute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedMute")
            .field("alive", &(self.list.strong_count() > 0))
            .finish()
    }
}
