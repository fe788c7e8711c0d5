//! [`ScopedSubscription`]: a subscription that ends when its guard is dropped (rule B1).

use std::fmt;
use std::rc::Weak;

use crate::handle::DelegateHandle;
use crate::invocation::RemoveByHandle;

/// A subscription that ends when this guard is dropped (rule B1): sigslot's and EnTT's
/// `scoped_connection`, boost's `scoped_connection`.
///
/// Made by `scoped` on a multicast delegate (declared or generic) or a script delegate (native
/// listeners), and by [`EventProcessor::register_scoped`](crate::EventProcessor::register_scoped).
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

    /// Unsubscribes now; `false` if the subscription was already gone (removed, cleared, its
    /// delegate dropped).
    pub fn unsubscribe(mut self) -> bool {
        self.remove()
    }

    fn remove(&mut self) -> bool {
        let Some(list) = self.list.take().and_then(|list| list.upgrade()) else {
            return false;
        };
        list.remove_handle(self.handle)
    }
}

impl Drop for ScopedSubscription {
    fn drop(&mut self) {
        self.remove();
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
