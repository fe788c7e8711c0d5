//! The guards, the self-aware subscriber's own subscription and the bind-only view of a
//! [`SyncMulticastDelegate`].

use std::any::Any;
use std::fmt;

#[cfg(loom)]
use loom::sync::{Arc, atomic::AtomicU32};
#[cfg(not(loom))]
use std::sync::{Arc, atomic::AtomicU32};

use super::SyncMulticastDelegate;
use super::list::Control;
use crate::bind_site::Subscription;
use crate::handle::DelegateHandle;
use crate::subscribe::{PlainFinish, Subscribe};

/// Removes a subscription of a [`SyncMulticastDelegate`] when dropped, on any thread.
pub struct SyncScopedSubscription {
    pub(super) shared: std::sync::Weak<dyn Control>,
    pub(super) handle: DelegateHandle,
}

impl SyncScopedSubscription {
    /// The subscription's handle.
    pub fn handle(&self) -> DelegateHandle {
        self.handle
    }
}

impl fmt::Debug for SyncScopedSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncScopedSubscription")
            .field(&self.handle)
            .finish()
    }
}

impl Drop for SyncScopedSubscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.remove(self.handle.id());
        }
    }
}

/// Blocks a subscription of a [`SyncMulticastDelegate`] until dropped (see
/// [`block_scoped`](SyncMulticastDelegate::block_scoped)).
pub struct SyncScopedBlock<'a, F: ?Sized + Send + Sync + 'static> {
    pub(super) delegate: &'a SyncMulticastDelegate<F>,
    pub(super) handle: DelegateHandle,
}

impl<F: ?Sized + Send + Sync + 'static> fmt::Debug for SyncScopedBlock<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncScopedBlock")
            .field(&self.handle)
            .finish()
    }
}

impl<F: ?Sized + Send + Sync + 'static> Drop for SyncScopedBlock<'_, F> {
    fn drop(&mut self) {
        if self.handle.is_valid() {
            self.delegate.unblock(self.handle);
        }
    }
}

/// What a finish adds to the builder's options for [`SyncMulticastDelegate::insert`].
#[derive(Default)]
pub(super) struct Making {
    /// A queued subscription's (TS4) flag.
    pub(super) queued: Option<Arc<AtomicU32>>,
    /// A member binding's owner (M9).
    pub(super) owner: Option<std::sync::Weak<dyn Any + Send + Sync>>,
}

/// A self-aware subscriber's own subscription (X6), passed to its every call on any thread: it
/// can remove or block itself. Made by [`self_aware`](crate::Subscribe::self_aware) on a
/// [`SyncMulticastDelegate`]'s builder; `Send + Sync`, and it does not keep the delegate alive.
pub struct SyncThisSubscription {
    pub(super) handle: DelegateHandle,
    pub(super) shared: std::sync::Weak<dyn Control>,
}

impl SyncThisSubscription {
    /// The subscription's handle (what the finish returned).
    pub fn handle(&self) -> DelegateHandle {
        self.handle
    }

    /// Unsubscribes, as [`SyncMulticastDelegate::remove`]; `false` if already gone. From its own
    /// call, that call finishes and no other starts (TS2).
    pub fn remove(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|shared| shared.remove(self.handle.id()))
    }

    /// Blocks this subscription once more (counted, A2): skipped until every block is undone.
    pub fn block(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|shared| shared.block(self.handle.id()))
    }

    /// Undoes one [`block`](Self::block).
    pub fn unblock(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|shared| shared.unblock(self.handle.id()))
    }

    /// Whether this subscription is still present (not removed, its delegate alive).
    pub fn is_subscribed(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|shared| shared.contains(self.handle.id()))
    }
}

impl fmt::Debug for SyncThisSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncThisSubscription")
            .field("handle", &self.handle)
            .field("subscribed", &self.is_subscribed())
            .finish()
    }
}

/// A bind-only view of a [`SyncMulticastDelegate`] (B1), from
/// [`registration`](SyncMulticastDelegate::registration): it subscribes and unsubscribes, and
/// cannot broadcast or clear. `Copy`, and `Send + Sync` as the delegate is.
///
/// ```
/// use lumina::SyncMulticastDelegate;
/// use lumina::sync_delegate::SyncRegistration;
///
/// type OnAssetLoaded = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;
///
/// pub struct Loader {
///     on_loaded: OnAssetLoaded,
/// }
///
/// impl Loader {
///     /// Others subscribe here; only the loader broadcasts.
///     pub fn on_loaded(&self) -> SyncRegistration<'_, dyn Fn(u32) + Send + Sync> {
///         self.on_loaded.registration()
///     }
/// }
///
/// let loader = Loader { on_loaded: OnAssetLoaded::new() };
/// let handle = loader.on_loaded().subscribe().priority(5).add_lambda(|id| println!("asset {id}"));
/// assert!(loader.on_loaded().contains(handle));
/// loader.on_loaded.broadcast(7);
/// assert!(loader.on_loaded().remove(handle));
/// ```
pub struct SyncRegistration<'a, F: ?Sized + 'static>(pub(super) &'a SyncMulticastDelegate<F>);

impl<F: ?Sized + 'static> Clone for SyncRegistration<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: ?Sized + 'static> Copy for SyncRegistration<'_, F> {}

impl<F: ?Sized + Send + Sync + 'static> fmt::Debug for SyncRegistration<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncRegistration").field(self.0).finish()
    }
}

impl<'a, F: ?Sized + Send + Sync + 'static> SyncRegistration<'a, F> {
    /// [`SyncMulticastDelegate::subscribe`].
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'a, SyncMulticastDelegate<F>> {
        self.0.subscribe()
    }

    /// [`SyncMulticastDelegate::add_boxed`].
    #[track_caller]
    pub fn add_boxed(&self, callable: Box<F>) -> DelegateHandle {
        self.0.add_boxed(callable)
    }

    /// [`SyncMulticastDelegate::remove`].
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.0.remove(handle)
    }

    /// [`SyncMulticastDelegate::scoped`].
    #[must_use = "the subscription ends when the guard is dropped: `let _guard = ...`, not \
                  `let _ = ...` (which ends it at once)"]
    pub fn scoped(&self, handle: DelegateHandle) -> SyncScopedSubscription {
        self.0.scoped(handle)
    }

    /// [`SyncMulticastDelegate::contains`].
    pub fn contains(&self, handle: DelegateHandle) -> bool {
        self.0.contains(handle)
    }

    /// [`SyncMulticastDelegate::len`].
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// [`SyncMulticastDelegate::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// [`SyncMulticastDelegate::subscriptions`].
    pub fn subscriptions(&self) -> Vec<Subscription> {
        self.0.subscriptions()
    }
}

impl<F: ?Sized + Send + Sync + 'static, M> Subscribe<'_, SyncMulticastDelegate<F>, M> {
    /// Finishes with an already boxed callable, and the options.
    #[track_caller]
    pub fn add_boxed(self, callable: Box<F>) -> DelegateHandle
    where
        M: PlainFinish,
    {
        let (delegate, options) = self.parts();
        delegate.insert(options, Making::default(), callable)
    }
}

/// Lifts one mute of a [`SyncMulticastDelegate`] when dropped, on any thread (see
/// [`mute`](SyncMulticastDelegate::mute)). It does not keep the delegate alive.
#[must_use = "dropping the guard unmutes the delegate at once: bind it, `let _muted = ...`, for as long as the delegate stays muted"]
pub struct SyncScopedMute {
    pub(super) shared: std::sync::Weak<dyn Control>,
}

impl fmt::Debug for SyncScopedMute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncScopedMute")
            .field("alive", &(self.shared.strong_count() > 0))
            .finish()
    }
}

impl Drop for SyncScopedMute {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.mute(false);
        }
    }
}
