//! [`MulticastDelegate`]: an invocation list of callbacks with handles (rules M1-M12).
//!
//! Game code usually declares a named type with
//! [`declare_multicast_delegate!`](lumina_macros::declare_multicast_delegate); the generic type is for
//! quick use with owned argument types, e.g. `MulticastDelegate<dyn Fn(u32, f32)>`.

use std::any::Any;
use std::fmt;
use std::rc::Rc;

use crate::handle::DelegateHandle;
use crate::invocation::{Guarded, InvocationList};

mod by_reference;
mod registration;
pub use by_reference::ByReference;
pub use registration::Registration;

/// A multicast delegate: any number of subscribers, called in the order they were added.
///
/// `F` is the signature as a trait object, `dyn Fn(Args..) -> R`. With owned argument types the
/// generic type has the full API (`add_lambda`, `add_static`, `add_member`, `broadcast`,
/// `broadcast_collect`, ...); for signatures with reference arguments, and to give the delegate
/// a real name, use [`declare_multicast_delegate!`](lumina_macros::declare_multicast_delegate), whose
/// types wrap this one.
///
/// The reentrancy contract (rules M1-M7) holds: subscribers may add, remove, clear and
/// broadcast again from inside a broadcast. All methods take `&self` (M10). A delegate is neither
/// `Send` nor `Sync`: it belongs to the thread that made it (see
/// `main_thread::enqueue` to signal across threads).
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let total = Rc::new(Cell::new(0));
/// let sink = Rc::clone(&total);
/// let handle = on_damage.add_lambda(move |amount| sink.set(sink.get() + amount));
/// on_damage.broadcast(7);
/// on_damage.broadcast(3);
/// assert_eq!(total.get(), 10);
/// assert!(on_damage.remove(handle));
/// assert!(!on_damage.is_bound());
/// ```
pub struct MulticastDelegate<F: ?Sized + 'static> {
    list: InvocationList<Rc<F>>,
}

impl<F: ?Sized + 'static> Default for MulticastDelegate<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: ?Sized + 'static> fmt::Debug for MulticastDelegate<F> {
    /// The live count and every subscription with its handle, bind site and owner state (B5).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MulticastDelegate")
            .field("len", &self.len())
            .field("subscriptions", &self.subscriptions())
            .finish()
    }
}

impl<F: ?Sized + 'static> MulticastDelegate<F> {
    /// An empty delegate. Allocates nothing (M12).
    pub const fn new() -> Self {
        MulticastDelegate {
            list: InvocationList::new(),
        }
    }

    /// Adds an already shared callable; the building block of every `add_*` method.
    #[track_caller]
    pub fn add_shared(&self, callable: Rc<F>) -> DelegateHandle {
        self.add_shared_with_priority(0, callable)
    }

    /// Adds a callable bound to `owner`, held weakly: it never runs after `owner` is dropped, stops
    /// counting in [`len`](Self::len), and is pruned (M9). The building block of `add_member`.
    #[track_caller]
    pub fn add_shared_member<T: Any>(&self, owner: &Rc<T>, callable: Rc<F>) -> DelegateHandle {
        self.add_shared_member_with_priority(0, owner, callable)
    }

    /// Removes the subscription of `handle`; `false` (and no change) for an invalid, foreign or
    /// already removed handle (H2). During a broadcast, a removed subscriber not yet reached does
    /// not run (M3).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.list.remove(handle)
    }

    /// Removes every member binding of `owner`; returns how many were removed (M9).
    pub fn remove_all<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        self.list.remove_owner(owner)
    }

    /// Whether a live member binding of `owner` exists (M9).
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.list.is_bound_to(owner)
    }

    /// Removes every subscriber (M6). During a broadcast nothing further runs in it; subscribers
    /// added after the clear run from the next broadcast on.
    pub fn clear(&self) {
        self.list.clear();
    }

    /// Whether a live subscriber exists (M8).
    pub fn is_bound(&self) -> bool {
        self.list.is_bound()
    }

    /// How many live subscribers there are (M8).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// `true` when no live subscriber exists.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Adds an already shared callable that runs before every subscriber of a lower
    /// `priority`: higher priorities run first, equal ones in the order added (M1). `add_shared`
    /// is priority 0. Added during a broadcast, it does not run in that broadcast, wherever it
    /// lands (M2).
    #[track_caller]
    pub fn add_shared_with_priority(&self, priority: i32, callable: Rc<F>) -> DelegateHandle {
        self.list.insert(priority, None, callable)
    }

    /// [`add_shared_member`](Self::add_shared_member) with a priority, ordered like
    /// [`add_shared_with_priority`](Self::add_shared_with_priority) (B3).
    #[track_caller]
    pub fn add_shared_member_with_priority<T: Any>(
        &self,
        priority: i32,
        owner: &Rc<T>,
        callable: Rc<F>,
    ) -> DelegateHandle {
        let owner: std::rc::Weak<dyn Any> = Rc::downgrade(owner) as std::rc::Weak<dyn Any>;
        self.list.insert(priority, Some(owner), callable)
    }

    /// A bind-only view of this delegate, to hand out to code that may subscribe and unsubscribe
    /// but must not broadcast or clear (B2). See [`Registration`].
    #[must_use]
    pub fn registration(&self) -> Registration<'_, F> {
        Registration::new(self)
    }

    /// Turns `handle` (a subscription of this delegate) into a guard that unsubscribes when it is
    /// dropped (B1); see [`ScopedSubscription`](crate::ScopedSubscription).
    pub fn scoped(&self, handle: DelegateHandle) -> crate::ScopedSubscription {
        crate::ScopedSubscription::new(handle, self.list.weak_remover())
    }

    /// Every subscription present, in the order they run, with where it was made and whether
    /// its owner lives (B5). Allocates: for diagnostics (`Debug` shows the same list).
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    ///
    /// let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    /// let handle = on_score.add_lambda(|_| {});
    /// let listed = on_score.subscriptions();
    /// assert_eq!(listed[0].handle, handle);
    /// println!("subscribed at {}", listed[0].bind_site.expect("recorded"));
    /// ```
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        self.list.subscriptions()
    }

    /// Whether a broadcast of this delegate is running (on this thread's stack).
    pub fn is_broadcasting(&self) -> bool {
        self.list.is_broadcasting()
    }

    /// The invocation list behind this delegate.
    pub(crate) fn list(&self) -> &InvocationList<Rc<F>> {
        &self.list
    }

    /// Broadcasts `args` (cloned as for `broadcast`, M11) and returns what each `call` gave, in
    /// call order: every `broadcast_collect` (generic, by reference, declared) is this. The
    /// results gathered so far are user values in this frame while later subscribers run: each
    /// is guarded, so if a subscriber panics and a result's `Drop` panics too, the process does
    /// not abort (R2).
    pub(crate) fn collect_with<A: Clone, R>(
        &self,
        args: A,
        mut call: impl FnMut(&Rc<F>, A) -> R,
    ) -> Vec<R> {
        let mut results: Vec<Guarded<R>> = Vec::new();
        self.list
            .broadcast_with(args, |f, args| results.push(Guarded::new(call(f, args))));
        // `Guarded<R>` has the layout of `R`: collected in place, without a new allocation.
        results.into_iter().map(Guarded::into_inner).collect()
    }
}

/// Implements the typed API for `MulticastDelegate<dyn Fn(A..) -> R>` with owned arguments.
macro_rules! impl_multicast_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: Clone + 'static,)* R: 'static> MulticastDelegate<dyn Fn($($Arg),*) -> R> {
            /// Adds a closure; the returned handle removes it.
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) -> R + 'static) -> DelegateHandle {
                self.add_shared(Rc::new(f))
            }

            /// Adds a plain function.
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*) -> R) -> DelegateHandle {
                self.add_shared(Rc::new(f))
            }

            /// Adds a method of `owner`, held weakly (M9): it never runs once `owner` is dropped.
            #[track_caller]
            pub fn add_member<T: Any>(
                &self,
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                self.add_member_with_priority(0, owner, method)
            }

            /// [`add_lambda`](Self::add_lambda) at `priority`: higher priorities run first, equal
            /// ones in the order added; `add_lambda` is priority 0 (B3).
            #[track_caller]
            pub fn add_lambda_with_priority(
                &self,
                priority: i32,
                f: impl Fn($($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                self.add_shared_with_priority(priority, Rc::new(f))
            }

            /// [`add_static`](Self::add_static) at `priority`, ordered like
            /// [`add_lambda_with_priority`](Self::add_lambda_with_priority) (B3).
            #[track_caller]
            pub fn add_static_with_priority(
                &self,
                priority: i32,
                f: fn($($Arg),*) -> R,
            ) -> DelegateHandle {
                self.add_shared_with_priority(priority, Rc::new(f))
            }

            /// [`add_member`](Self::add_member) at `priority`, ordered like
            /// [`add_lambda_with_priority`](Self::add_lambda_with_priority) (B3).
            #[track_caller]
            pub fn add_member_with_priority<T: Any>(
                &self,
                priority: i32,
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                let weak = Rc::downgrade(owner);
                self.add_shared_member_with_priority(
                    priority,
                    owner,
                    Rc::new(move |$($arg: $Arg),*| crate::__private::call_member(&weak, ($($arg,)*), |owner, ($($arg,)*)| method(owner, $($arg),*))),
                )
            }

            /// Calls every subscriber present when the broadcast starts, in order, discarding
            /// results. Owned arguments are cloned at most N - 1 times (M11); never allocates (M12).
            pub fn broadcast(&self, $($arg: $Arg),*) {
                self.list.broadcast_with(($($arg,)*), |f, ($($arg,)*)| {
                    f($($arg),*);
                });
            }

            /// [`broadcast`](Self::broadcast), then [`clear`](Self::clear): for one-shot signals.
            /// Subscribers added during the broadcast are cleared too (M6).
            pub fn broadcast_and_clear(&self, $($arg: $Arg),*) {
                self.broadcast($($arg),*);
                self.clear();
            }

            /// Calls every subscriber like [`broadcast`](Self::broadcast) and returns their
            /// results in call order.
            pub fn broadcast_collect(&self, $($arg: $Arg),*) -> Vec<R> {
                self.collect_with(($($arg,)*), |f, ($($arg,)*)| f($($arg),*))
            }
        }
    };
}

impl_multicast_arity!();
impl_multicast_arity!(a: A);
impl_multicast_arity!(a: A, b: B);
impl_multicast_arity!(a: A, b: B, c: C);
impl_multicast_arity!(a: A, b: B, c: C, d: D);
impl_multicast_arity!(a: A, b: B, c: C, d: D, e: E);
impl_multicast_arity!(a: A, b: B, c: C, d: D, e: E, g: G);
