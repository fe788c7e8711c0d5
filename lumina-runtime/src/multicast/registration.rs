//! [`Registration`]: the bind-only view of a [`MulticastDelegate`] (rule B2).

use std::any::Any;
use std::fmt;
use std::rc::Rc;

use super::MulticastDelegate;
use crate::handle::DelegateHandle;
use crate::scoped::{ScopedBlock, ScopedSubscription};
use crate::subscribe::Subscribe;

mod sealed {
    /// Keeps the markers below unimplementable outside the crate.
    pub trait Sealed {}
}

/// Not public API. Never implemented: the bound of a view's `broadcast` methods, so calling one
/// is one error in our words (X2).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a registration view cannot broadcast: only the delegate's owner fires it",
    label = "a registration view only subscribes and unsubscribes",
    note = "broadcast from the type that owns the delegate (a view is handed out so that nobody else can)"
)]
pub trait OwnerBroadcasts: sealed::Sealed {}

/// Not public API. Never implemented: the bound of a view's `clear`, as [`OwnerBroadcasts`].
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a registration view cannot clear: only the delegate's owner clears it",
    label = "a registration view only subscribes and unsubscribes",
    note = "remove your own subscriptions with `remove`, `remove_all` or a `scoped` guard"
)]
pub trait OwnerClears: sealed::Sealed {}

/// A bind-only view of a [`MulticastDelegate`]: it subscribes and unsubscribes, but cannot
/// broadcast or clear, so only the delegate's owner fires it (B2; UE 5.5's
/// `TMulticastDelegateRegistration`).
///
/// The owner keeps the delegate private and hands out
/// [`registration()`](MulticastDelegate::registration); the view borrows the delegate and has no
/// way back to it. It is `Copy`. Delegates declared with
/// [`declare_multicast_delegate!`](lumina_macros::declare_multicast_delegate) get their own
/// view type, `<Name>Registration`, with the same methods in the declared signature.
///
/// ```
/// use lumina::multicast::Registration;
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// #[derive(Default)]
/// pub struct Player {
///     health: Cell<u32>,
///     on_health_changed: MulticastDelegate<dyn Fn(u32)>,
/// }
///
/// impl Player {
///     /// Anyone may listen...
///     pub fn on_health_changed(&self) -> Registration<'_, dyn Fn(u32)> {
///         self.on_health_changed.registration()
///     }
///
///     /// ...but only the player says when its health changed.
///     pub fn take_damage(&self, amount: u32) {
///         self.health.set(self.health.get().saturating_sub(amount));
///         self.on_health_changed.broadcast(self.health.get());
///     }
/// }
///
/// let player = Player::default();
/// player.health.set(100);
/// let seen = Rc::new(Cell::new(0));
/// let sink = Rc::clone(&seen);
/// let handle = player.on_health_changed().add_lambda(move |health| sink.set(health));
/// player.take_damage(30);
/// assert_eq!(seen.get(), 70);
/// assert!(player.on_health_changed().remove(handle));
/// assert!(!player.on_health_changed().is_bound());
/// // player.on_health_changed().broadcast(0); // error: no method named `broadcast`
/// ```
pub struct Registration<'a, F: ?Sized + 'static> {
    delegate: &'a MulticastDelegate<F>,
}

impl<F: ?Sized + 'static> Clone for Registration<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: ?Sized + 'static> Copy for Registration<'_, F> {}

impl<F: ?Sized + 'static> fmt::Debug for Registration<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("len", &self.len())
            .finish()
    }
}

impl<'a, F: ?Sized + 'static> Registration<'a, F> {
    /// The view of `delegate`; [`MulticastDelegate::registration`] is the public way to make one.
    pub(super) fn new(delegate: &'a MulticastDelegate<F>) -> Self {
        Registration { delegate }
    }

    /// The delegate viewed (for the typed methods of the parent module).
    pub(super) fn delegate(&self) -> &'a MulticastDelegate<F> {
        self.delegate
    }

    /// [`MulticastDelegate::add_shared`].
    #[track_caller]
    pub fn add_shared(&self, callable: Rc<F>) -> DelegateHandle {
        self.delegate.add_shared(callable)
    }

    /// [`MulticastDelegate::add_shared_member`].
    #[track_caller]
    pub fn add_shared_member<T: Any>(&self, owner: &Rc<T>, callable: Rc<F>) -> DelegateHandle {
        self.delegate.add_shared_member(owner, callable)
    }

    /// [`MulticastDelegate::subscribe`]: a subscription with options (A1), the same builder as
    /// the delegate's. Cost: nothing until the finish (N4).
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'a, MulticastDelegate<F>> {
        self.delegate.subscribe()
    }

    /// [`MulticastDelegate::remove`].
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.delegate.remove(handle)
    }

    /// [`MulticastDelegate::scoped`]: a guard that unsubscribes when dropped (B1, X2), so a
    /// listener given only the view keeps its subscription for a scope.
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    ///
    /// let on_died: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    /// let view = on_died.registration();
    /// {
    ///     let _guard = view.scoped(view.add_lambda(|_| {}));
    ///     assert_eq!(view.len(), 1);
    /// }
    /// assert!(view.is_empty());
    /// ```
    pub fn scoped(&self, handle: DelegateHandle) -> ScopedSubscription {
        self.delegate.scoped(handle)
    }

    /// [`MulticastDelegate::subscriptions`]: every subscription, with its bind site (X2).
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        self.delegate.subscriptions()
    }

    /// [`MulticastDelegate::block`].
    pub fn block(&self, handle: DelegateHandle) -> bool {
        self.delegate.block(handle)
    }

    /// [`MulticastDelegate::unblock`].
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        self.delegate.unblock(handle)
    }

    /// [`MulticastDelegate::is_blocked`].
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.delegate.is_blocked(handle)
    }

    /// [`MulticastDelegate::block_scoped`].
    pub fn block_scoped(&self, handle: DelegateHandle) -> ScopedBlock {
        self.delegate.block_scoped(handle)
    }

    /// [`MulticastDelegate::set_priority`].
    pub fn set_priority(&self, handle: DelegateHandle, priority: i32) -> bool {
        self.delegate.set_priority(handle, priority)
    }

    /// Not available on a view: only the delegate's owner clears it (one error, X2).
    #[doc(hidden)]
    pub fn clear(&self)
    where
        Self: OwnerClears,
    {
        unreachable!("OwnerClears is never implemented")
    }

    /// [`MulticastDelegate::remove_all`].
    pub fn remove_all<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        self.delegate.remove_all(owner)
    }

    /// [`MulticastDelegate::is_bound_to`].
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.delegate.is_bound_to(owner)
    }

    /// [`MulticastDelegate::is_bound`].
    pub fn is_bound(&self) -> bool {
        self.delegate.is_bound()
    }

    /// [`MulticastDelegate::len`].
    pub fn len(&self) -> usize {
        self.delegate.len()
    }

    /// [`MulticastDelegate::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.delegate.is_empty()
    }
}

/// The typed subscribe methods of a view of `MulticastDelegate<dyn Fn(A..) -> R>`.
macro_rules! impl_registration_arity {
    ($($Arg:ident),*) => {
        impl<$($Arg: Clone + 'static,)* R: 'static> Registration<'_, dyn Fn($($Arg),*) -> R> {
            /// [`MulticastDelegate::add_lambda`].
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) -> R + 'static) -> DelegateHandle {
                self.delegate.add_lambda(f)
            }

            /// [`MulticastDelegate::add_static`].
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*) -> R) -> DelegateHandle {
                self.delegate.add_static(f)
            }

            /// [`MulticastDelegate::add_method`].
            #[track_caller]
            pub fn add_method<T: Any>(
                &self,
                owner: &Rc<T>,
                method: fn(&T, $($Arg),*) -> R,
            ) -> DelegateHandle {
                self.delegate.add_method(owner, method)
            }

            /// [`MulticastDelegate::remove_method`].
            pub fn remove_method<T: Any>(&self, owner: &Rc<T>, method: fn(&T, $($Arg),*) -> R) -> usize {
                self.delegate.remove_method(owner, method)
            }

            /// [`MulticastDelegate::remove_static`].
            pub fn remove_static(&self, f: fn($($Arg),*) -> R) -> usize {
                self.delegate.remove_static(f)
            }

            /// Not available on a view: only the delegate's owner fires it (one error, X2).
            #[doc(hidden)]
            #[allow(unused_variables, non_snake_case)]
            pub fn broadcast(&self, $($Arg: $Arg),*)
            where
                Self: OwnerBroadcasts,
            {
                unreachable!("OwnerBroadcasts is never implemented")
            }

            /// Not available on a view: only the delegate's owner fires it (one error, X2).
            #[doc(hidden)]
            #[allow(unused_variables, non_snake_case)]
            pub fn broadcast_and_clear(&self, $($Arg: $Arg),*)
            where
                Self: OwnerBroadcasts,
            {
                unreachable!("OwnerBroadcasts is never implemented")
            }

            /// [`MulticastDelegate::add_member`].
            #[track_caller]
            pub fn add_member<T: Any>(
                &self,
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                self.delegate.add_member(owner, method)
            }

        }
    };
}

impl_registration_arity!();
impl_registration_arity!(A);
impl_registration_arity!(A, B);
impl_registration_arity!(A, B, C);
impl_registration_arity!(A, B, C, D);
impl_registration_arity!(A, B, C, D, E);
impl_registration_arity!(A, B, C, D, E, G);
