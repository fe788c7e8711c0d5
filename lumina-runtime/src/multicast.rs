//! [`MulticastDelegate`]: an invocation list of callbacks with handles (rules M1-M12).
//!
//! Game code usually declares a named type with
//! [`declare_multicast_delegate!`](lumina_macros::declare_multicast_delegate); the generic type is for
//! quick use with owned argument types, e.g. `MulticastDelegate<dyn Fn(u32, f32)>`.

use std::any::Any;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::drops::Guarded;
use crate::handle::DelegateHandle;
use crate::invocation::{InvocationList, Shared};
use crate::scoped::{ScopedBlock, ThisSubscription};
use crate::subscribe::{Options, Plain, SelfAware, Subscribe, TakesPlainFunction};

mod by_reference;
mod registration;
pub use by_reference::ByReference;
pub use registration::{OwnerBroadcasts, OwnerClears, Registration};

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
    list: InvocationList<Shared<F>>,
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
        self.subscribe().add_shared(callable)
    }

    /// Adds a callable bound to `owner`, held weakly: it never runs after `owner` is dropped, stops
    /// counting in [`len`](Self::len), and is pruned (M9). The building block of `add_member`.
    ///
    /// Cost: O(log n) amortized (N4), the sweep included: an add with an owner, outside a
    /// broadcast, first removes the subscriptions whose owner died once the owners table has
    /// doubled since the last sweep (their callables are dropped there, M9, M13).
    #[track_caller]
    pub fn add_shared_member<T: Any>(&self, owner: &Rc<T>, callable: Rc<F>) -> DelegateHandle {
        self.subscribe().add_shared_member(owner, callable)
    }

    /// Removes the subscription of `handle`; `false` (and no change) for an invalid, foreign or
    /// already removed handle (H2). During a broadcast, a removed subscriber not yet reached does
    /// not run (M3).
    ///
    /// Cost: O(log n) amortized, whatever the number of priorities or of subscribers added
    /// during the running broadcast: a binary search by handle, and a compaction once removed
    /// subscribers are half the list (N4).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.list.remove(handle)
    }

    /// Removes every member binding of `owner`; returns how many were removed (M9).
    ///
    /// Cost: O(k log n) for the owner's own k bindings, through the list's index by owner; the
    /// other subscribers are not looked at (N4).
    pub fn remove_all<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        self.list.remove_owner(owner)
    }

    /// Whether a live member binding of `owner` exists (M9).
    ///
    /// Cost: O(k log n) for the owner's own k bindings; O(1) for an object with none (N4).
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.list.is_bound_to(owner)
    }

    /// Removes every subscriber (M6). During a broadcast nothing further runs in it; subscribers
    /// added after the clear run from the next broadcast on.
    pub fn clear(&self) {
        self.list.clear();
    }

    /// Whether a live subscriber exists (M8).
    ///
    /// Cost: O(1) while a subscriber without owner is present, however many were removed;
    /// otherwise a walk that stops at the first live subscriber (N4).
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

    /// Not public API; used by expansions: what `remove_static` (`owner` `None`) and
    /// `remove_method` (generic and declared) expand to (X7): removes the subscriptions made
    /// from the function at address `key`, by `add_static`, or by `add_method` on `owner`.
    #[doc(hidden)]
    pub fn remove_keyed<T: ?Sized>(&self, key: usize, owner: Option<&Rc<T>>) -> usize {
        self.list
            .remove_keyed(key, owner.map(|owner| Rc::as_ptr(owner).cast::<()>()))
    }

    /// Adds a block to the subscription of `handle` (X4): it keeps its place, priority and
    /// handle and still counts in [`len`](Self::len), but broadcasts skip it until as many
    /// [`unblock`](Self::unblock)s: blocks are counted (A2), so several systems can block the
    /// same subscription independently ([`block_scoped`](Self::block_scoped) is the guard
    /// form). During a broadcast this applies to the subscribers not yet reached (as M3).
    /// `false` (and no change) for an invalid, foreign or removed handle.
    ///
    /// Cost: O(log n), whatever the number of priorities (a binary search by handle, N4).
    pub fn block(&self, handle: DelegateHandle) -> bool {
        self.list.set_blocked(handle, true)
    }

    /// Lifts one block of the subscription of `handle` (X4, A2); once none is left, broadcasts
    /// that reach it run it again, including the running one if it was present when that one
    /// started and is not reached yet. `false` for an invalid, foreign or removed handle, and
    /// for one that is not blocked.
    ///
    /// Cost: O(log n), as [`block`](Self::block).
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        self.list.set_blocked(handle, false)
    }

    /// Whether the subscription of `handle` is present and blocked (X4).
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.list.is_blocked(handle)
    }

    /// Blocks the subscription of `handle` while the returned guard lives (X4; boost's
    /// `shared_connection_block`); see [`ScopedBlock`].
    pub fn block_scoped(&self, handle: DelegateHandle) -> ScopedBlock {
        ScopedBlock::new(handle, self.list.weak_remover())
    }

    /// Mutes the whole delegate while the returned guard lives (A2; sigslot's signal blocking,
    /// Qt's `blockSignals`): no broadcast calls anyone meanwhile, subscribers keep their place,
    /// blocks and handles, and one-shots are not used up. Counted: guards nest and drop in any
    /// order. See [`ScopedMute`](crate::ScopedMute). O(1); a broadcast pays one test for it.
    pub fn mute(&self) -> crate::scoped::ScopedMute {
        crate::scoped::ScopedMute::new(self.list.mute())
    }

    /// Whether a [`mute`](Self::mute) guard of this delegate lives. O(1).
    pub fn is_muted(&self) -> bool {
        self.list.is_muted()
    }

    /// Moves the subscription of `handle` to `priority`, placed among that priority's
    /// subscribers in the order they were added (as if it had been added with it). Outside a
    /// broadcast it moves at once; during one, the running broadcasts keep their order and the
    /// move happens when the outermost ends (M2). `false` for an invalid, foreign or removed
    /// handle.
    ///
    /// Cost (N4): O(log n). Outside a broadcast the subscription waits in a deferred list (no
    /// shift of the list) that the next broadcast merges in place, O(n + m) shared by the m
    /// deferred; during one, the moves are applied together when the outermost ends,
    /// O(n + k log k) for k moves, with no allocation at that end (M12).
    pub fn set_priority(&self, handle: DelegateHandle, priority: i32) -> bool {
        self.list.set_priority(handle, priority)
    }

    /// A subscription with options (A1): priority, one-shot, self-aware, muted, one method each,
    /// then the finish for the callable's kind (`add_lambda`, `add_static`, `add_member`,
    /// `add_shared`, `add_shared_member`, `add_method`), which returns the handle. See
    /// [`Subscribe`].
    ///
    /// Cost: nothing until the finish, which costs what the plain form costs (N4).
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// let on_spawn: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    /// let calls = Rc::new(Cell::new(0));
    /// let sink = Rc::clone(&calls);
    /// let handle = on_spawn.subscribe().once().add_lambda(move |_| sink.set(sink.get() + 1));
    /// on_spawn.broadcast(1);
    /// on_spawn.broadcast(2);
    /// assert_eq!(calls.get(), 1);
    /// assert!(!on_spawn.remove(handle)); // it ran: the handle names nothing now
    /// ```
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'_, Self> {
        Subscribe::new(self)
    }

    /// What every finish of the builder does: one insertion with the options, then the mute.
    #[track_caller]
    #[inline]
    fn insert_built(
        &self,
        options: Options<'_>,
        owner: Option<Weak<dyn Any>>,
        key: Option<usize>,
        callable: Rc<F>,
    ) -> DelegateHandle {
        let handle = self
            .list
            .insert_spec(options.spec(owner, key), Shared::new(callable));
        if options.muted {
            self.list.set_blocked(handle, true);
        }
        handle
    }

    /// [`insert_built`](Self::insert_built) for a callable `make` builds from its own
    /// subscription (X6); `make` runs once, inside this call, before the subscription can run.
    #[track_caller]
    #[inline]
    fn insert_built_self_aware(
        &self,
        options: Options<'_>,
        owner: Option<Weak<dyn Any>>,
        make: impl FnOnce(ThisSubscription) -> Rc<F>,
    ) -> DelegateHandle {
        let handle = self
            .list
            .insert_with(options.spec_self_aware(owner), |handle, list| {
                Shared::new(make(ThisSubscription::new(handle, list)))
            });
        if options.muted {
            self.list.set_blocked(handle, true);
        }
        handle
    }

    /// A bind-only view of this delegate, to hand out to code that may subscribe and unsubscribe
    /// but must not broadcast or clear (B2). See [`Registration`].
    #[must_use]
    pub fn registration(&self) -> Registration<'_, F> {
        Registration::new(self)
    }

    /// Turns `handle` (a subscription of this delegate) into a guard that unsubscribes when it is
    /// dropped (B1); see [`ScopedSubscription`](crate::ScopedSubscription).
    pub fn scoped(&self, handle: DelegateHandle) -> crate::scoped::ScopedSubscription {
        crate::scoped::ScopedSubscription::new(handle, self.list.weak_remover())
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
    pub(crate) fn list(&self) -> &InvocationList<Shared<F>> {
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
        call: impl FnMut(&Shared<F>, A) -> R,
    ) -> Vec<R> {
        self.collect_traced(args, call, crate::trace::broadcast::<Shared<F>>)
    }

    /// [`collect_with`](Self::collect_with) whose trace span (V2) `span` makes: a declared
    /// delegate's names the declared type.
    #[inline]
    pub(crate) fn collect_traced<A: Clone, R>(
        &self,
        args: A,
        mut call: impl FnMut(&Shared<F>, A) -> R,
        span: impl FnOnce() -> crate::trace::Span,
    ) -> Vec<R> {
        let mut results: Vec<Guarded<R>> = Vec::new();
        self.list.broadcast_traced(
            args,
            |f, args| results.push(Guarded::new(call(f, args))),
            span,
        );
        // `Guarded<R>` has the layout of `R`: collected in place, without a new allocation.
        results.into_iter().map(Guarded::into_inner).collect()
    }
}

/// The weak owner every member finish holds (M9).
fn weak_owner<T: Any>(owner: &Rc<T>) -> Option<Weak<dyn Any>> {
    Some(Rc::downgrade(owner) as Weak<dyn Any>)
}

/// A removal key names its subscriptions (`.key(&rc)`, then `remove_all(&rc)`).
impl<F: ?Sized + 'static> crate::subscribe::TakesKey for MulticastDelegate<F> {}
impl<F: ?Sized + 'static> crate::subscribe::TakesPriority for MulticastDelegate<F> {}

impl<F: ?Sized + 'static> Subscribe<'_, MulticastDelegate<F>, Plain> {
    /// Finishes with an already shared callable: [`MulticastDelegate::add_shared`] with the
    /// options. Cost: as `add_shared` (N4).
    #[track_caller]
    #[inline]
    pub fn add_shared(self, callable: Rc<F>) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built(options, None, None, callable)
    }

    /// Finishes with an already shared callable bound to `owner`, held weakly (M9):
    /// [`MulticastDelegate::add_shared_member`] with the options. Cost: as `add_shared_member`.
    #[track_caller]
    #[inline]
    pub fn add_shared_member<T: Any>(self, owner: &Rc<T>, callable: Rc<F>) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built(options, weak_owner(owner), None, callable)
    }
}

impl<F: ?Sized + 'static> Subscribe<'_, MulticastDelegate<F>, SelfAware> {
    /// Finishes with a shared callable that `make` builds from its own subscription (X6);
    /// `make` runs once, inside this call, before the subscription can run. Cost: as
    /// `add_shared` (N4).
    #[track_caller]
    #[inline]
    pub fn add_shared(self, make: impl FnOnce(ThisSubscription) -> Rc<F>) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built_self_aware(options, None, make)
    }

    /// [`add_shared`](Self::add_shared) bound to `owner`, held weakly (M9).
    #[track_caller]
    #[inline]
    pub fn add_shared_member<T: Any>(
        self,
        owner: &Rc<T>,
        make: impl FnOnce(ThisSubscription) -> Rc<F>,
    ) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built_self_aware(options, weak_owner(owner), make)
    }
}

impl<F: ?Sized + 'static, M: TakesPlainFunction> Subscribe<'_, MulticastDelegate<F>, M> {
    /// Not public API; used by expansions: what `add_static` (`owner` `None`) and
    /// `add_method` (generic and declared) expand to. Finishes with `callable`, made from the
    /// plain function or method at address `key` (a member binding of `owner`, held weakly, M9),
    /// so that [`remove_keyed`](MulticastDelegate::remove_keyed) with the same key and owner
    /// finds it: `remove_static` and `remove_method` (X7).
    #[doc(hidden)]
    #[track_caller]
    #[inline]
    pub fn add_keyed<T: Any>(
        self,
        key: usize,
        owner: Option<&Rc<T>>,
        callable: Rc<F>,
    ) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built(options, owner.and_then(weak_owner), Some(key), callable)
    }
}

/// The typed finishes of the builder of `MulticastDelegate<dyn Fn(A..) -> R>` (A1).
macro_rules! impl_subscribe_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: Clone + 'static,)* R: 'static> Subscribe<'_, MulticastDelegate<dyn Fn($($Arg),*) -> R>, Plain> {
            /// Finishes with a closure: [`add_lambda`](MulticastDelegate#method.add_lambda)
            /// with the options. Cost: as `add_lambda` (N4).
            #[track_caller]
            #[inline]
            pub fn add_lambda(self, f: impl Fn($($Arg),*) -> R + 'static) -> DelegateHandle {
                self.add_shared(Rc::new(f))
            }

            /// Finishes with a method of `owner`, held weakly (M9):
            /// [`add_member`](MulticastDelegate#method.add_member) with the options.
            #[track_caller]
            #[inline]
            pub fn add_member<T: Any>(
                self,
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                let weak = Rc::downgrade(owner);
                self.add_shared_member(
                    owner,
                    Rc::new(move |$($arg: $Arg),*| crate::__private::call_member(&weak, ($($arg,)*), |owner, ($($arg,)*)| method(owner, $($arg),*))),
                )
            }
        }

        impl<$($Arg: Clone + 'static,)* R: 'static> Subscribe<'_, MulticastDelegate<dyn Fn($($Arg),*) -> R>, SelfAware> {
            /// Finishes with a closure that receives its own subscription first (X6).
            #[track_caller]
            #[inline]
            pub fn add_lambda(
                self,
                f: impl Fn(&ThisSubscription, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                self.add_shared(|this| Rc::new(move |$($arg: $Arg),*| f(&this, $($arg),*)))
            }

            /// Finishes with a method of `owner` (held weakly, M9) that receives its own
            /// subscription after the owner (X6).
            #[track_caller]
            #[inline]
            pub fn add_member<T: Any>(
                self,
                owner: &Rc<T>,
                method: impl Fn(&T, &ThisSubscription, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                let weak = Rc::downgrade(owner);
                self.add_shared_member(owner, |this| {
                    Rc::new(move |$($arg: $Arg),*| {
                        crate::__private::call_member(&weak, ($($arg,)*), |owner, ($($arg,)*)| {
                            method(owner, &this, $($arg),*)
                        })
                    })
                })
            }
        }

        impl<$($Arg: Clone + 'static,)* R: 'static, M> Subscribe<'_, MulticastDelegate<dyn Fn($($Arg),*) -> R>, M> {
            /// Finishes with a plain function, which
            /// [`remove_static`](MulticastDelegate#method.remove_static) finds (X7):
            /// [`add_static`](MulticastDelegate#method.add_static) with the options. Not after
            /// `.self_aware()`: a `fn` cannot receive its subscription.
            #[track_caller]
            #[inline]
            pub fn add_static(self, f: fn($($Arg),*) -> R) -> DelegateHandle
            where
                M: TakesPlainFunction,
            {
                self.add_keyed((f as *const ()).addr(), None::<&Rc<()>>, Rc::new(f))
            }

            /// Finishes with `method` of `owner` (held weakly, M9), which
            /// [`remove_method`](MulticastDelegate#method.remove_method) finds (X7):
            /// [`add_method`](MulticastDelegate#method.add_method) with the options. Not after
            /// `.self_aware()`.
            #[track_caller]
            #[inline]
            pub fn add_method<T: Any>(self, owner: &Rc<T>, method: fn(&T, $($Arg),*) -> R) -> DelegateHandle
            where
                M: TakesPlainFunction,
            {
                let weak = Rc::downgrade(owner);
                let callable: Rc<dyn Fn($($Arg),*) -> R> = Rc::new(move |$($arg: $Arg),*| {
                    crate::__private::call_member(&weak, ($($arg,)*), |owner, ($($arg,)*)| {
                        method(owner, $($arg),*)
                    })
                });
                self.add_keyed((method as *const ()).addr(), Some(owner), callable)
            }
        }
    };
}

/// Implements the typed API for `MulticastDelegate<dyn Fn(A..) -> R>` with owned arguments,
/// and its builder's typed finishes.
macro_rules! impl_multicast_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl_subscribe_arity!($($arg: $Arg),*);

        impl<$($Arg: Clone + 'static,)* R: 'static> MulticastDelegate<dyn Fn($($Arg),*) -> R> {
            /// Adds a closure; the returned handle removes it.
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) -> R + 'static) -> DelegateHandle {
                self.subscribe().add_lambda(f)
            }

            /// Adds a plain function; [`remove_static`](Self::remove_static) removes it by that
            /// function, and so does the returned handle.
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*) -> R) -> DelegateHandle {
                self.subscribe().add_static(f)
            }

            /// Removes every subscription made by `add_static` (any of its forms) with this
            /// function; returns how many (X7).
            ///
            /// Cost: one lookup of the function, then O(k log n) for its k subscriptions; O(1) for
            /// a function with none (N4).
            ///
            /// Identity is the function pointer's value, and only subscriptions made from a
            /// plain function take part: a closure or member binding never matches, whatever
            /// it calls or captures. Two caveats of function pointers in Rust: the same function
            /// may have two addresses (one per codegen unit or crate that instantiates it; Miri
            /// gives every reification its own), in which case nothing matches and this returns
            /// 0; and a linker that folds identical
            /// code (ICF) may give two functions with the same machine code one address, in
            /// which case both functions' subscriptions match, and both called the same code.
            ///
            /// ```
            /// use lumina::MulticastDelegate;
            ///
            /// fn log_death(cause: u32) {
            ///     println!("died of cause {cause}");
            /// }
            ///
            /// let on_died: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
            /// let _ = on_died.add_static(log_death);
            /// let _ = on_died.add_lambda(|cause| log_death(cause)); // a closure: never matched
            /// assert_eq!(on_died.remove_static(log_death), 1);
            /// assert_eq!(on_died.len(), 1);
            /// ```
            pub fn remove_static(&self, f: fn($($Arg),*) -> R) -> usize {
                self.remove_keyed((f as *const ()).addr(), None::<&Rc<()>>)
            }

            /// Adds `method` of `owner`, held weakly like [`add_member`](Self::add_member), as a
            /// plain function, so that [`remove_method`](Self::remove_method) finds it by owner
            /// and method (X7).
            ///
            /// ```
            /// use lumina::MulticastDelegate;
            /// use std::cell::Cell;
            /// use std::rc::Rc;
            ///
            /// struct Hud {
            ///     shown: Cell<u32>,
            /// }
            /// impl Hud {
            ///     fn show(&self, score: u32) {
            ///         self.shown.set(score);
            ///     }
            /// }
            ///
            /// let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
            /// let (left, right) = (Rc::new(Hud { shown: Cell::new(0) }), Rc::new(Hud { shown: Cell::new(0) }));
            /// let _ = on_score.add_method(&left, Hud::show);
            /// let _ = on_score.add_method(&right, Hud::show);
            /// assert_eq!(on_score.remove_method(&left, Hud::show), 1);
            /// on_score.broadcast(7);
            /// assert_eq!((left.shown.get(), right.shown.get()), (0, 7));
            /// ```
            ///
            /// Cost: O(log n) amortized (N4), the sweep included: an add with an owner, outside a
            /// broadcast, first removes the subscriptions whose owner died once the owners table has
            /// doubled since the last sweep (their callables are dropped there, M9, M13).
            #[track_caller]
            pub fn add_method<T: Any>(
                &self,
                owner: &Rc<T>,
                method: fn(&T, $($Arg),*) -> R,
            ) -> DelegateHandle {
                self.subscribe().add_method(owner, method)
            }

            /// Removes every subscription made by [`add_method`](Self::add_method) with this
            /// owner and this method; returns how many (X7). Identity is the owner's object and
            /// the function pointer's value, as for [`remove_static`](Self::remove_static): a
            /// binding of another object, or made by `add_member`, never matches. The weak
            /// reference each binding holds keeps its owner's address from being reused while
            /// the binding exists.
            ///
            /// Cost: O(k log n) for the owner's own k subscriptions, whatever else is bound to the
            /// same method (N4).
            pub fn remove_method<T: Any>(&self, owner: &Rc<T>, method: fn(&T, $($Arg),*) -> R) -> usize {
                self.remove_keyed((method as *const ()).addr(), Some(owner))
            }

            /// Calls subscribers in order and folds their results as they come (X7; boost's
            /// combiners): `fold(accumulator, result)` returns `Continue(next)` to go on or
            /// `Break(last)` to stop, and then no further subscriber runs. Returns the last
            /// accumulator. No `Vec`, no allocation.
            ///
            /// ```
            /// use lumina::MulticastDelegate;
            /// use std::ops::ControlFlow;
            ///
            /// // "May the player open this door?" The first listener that says no wins.
            /// let can_open: MulticastDelegate<dyn Fn(u32) -> bool> = MulticastDelegate::new();
            /// let _ = can_open.add_lambda(|_| true);
            /// let _ = can_open.add_lambda(|door| door != 7);
            /// let _ = can_open.add_lambda(|_| unreachable!("not asked once the answer is no"));
            /// let allowed = can_open.broadcast_fold(7, true, |_, yes| {
            ///     if yes { ControlFlow::Continue(true) } else { ControlFlow::Break(false) }
            /// });
            /// assert!(!allowed);
            /// ```
            #[allow(clippy::too_many_arguments)] // one per delegate argument, then the combiner
            pub fn broadcast_fold<Acc>(
                &self,
                $($arg: $Arg,)*
                init: Acc,
                fold: impl FnMut(Acc, R) -> std::ops::ControlFlow<Acc, Acc>,
            ) -> Acc {
                if std::mem::needs_drop::<($($Arg,)*)>() {
                    crate::__private::fold_traced(
                        self,
                        (($(Guarded::new($arg),)*), Clone::clone),
                        init,
                        fold,
                        |f, ($($arg,)*)| f($($arg.into_inner()),*),
                        crate::trace::broadcast::<Shared<dyn Fn($($Arg),*) -> R>>,
                    )
                } else {
                    crate::__private::fold_traced(
                        self,
                        (($($arg,)*), Clone::clone),
                        init,
                        fold,
                        |f, ($($arg,)*)| f($($arg),*),
                        crate::trace::broadcast::<Shared<dyn Fn($($Arg),*) -> R>>,
                    )
                }
            }

            /// Calls subscribers in order until `stop(result)` breaks (X7): returns the break's
            /// value, or `None` if every subscriber ran. "The first subscriber that answers
            /// wins, the rest do not run." No allocation.
            #[allow(clippy::too_many_arguments)] // one per delegate argument, then the combiner
            pub fn broadcast_until<Out>(
                &self,
                $($arg: $Arg,)*
                stop: impl FnMut(R) -> std::ops::ControlFlow<Out>,
            ) -> Option<Out> {
                if std::mem::needs_drop::<($($Arg,)*)>() {
                    crate::__private::until_traced(
                        self,
                        (($(Guarded::new($arg),)*), Clone::clone),
                        stop,
                        |f, ($($arg,)*)| f($($arg.into_inner()),*),
                        crate::trace::broadcast::<Shared<dyn Fn($($Arg),*) -> R>>,
                    )
                } else {
                    crate::__private::until_traced(
                        self,
                        (($($arg,)*), Clone::clone),
                        stop,
                        |f, ($($arg,)*)| f($($arg),*),
                        crate::trace::broadcast::<Shared<dyn Fn($($Arg),*) -> R>>,
                    )
                }
            }

            /// Adds a method of `owner`, held weakly (M9): it never runs once `owner` is dropped.
            ///
            /// Cost: O(log n) amortized (N4), the sweep included: an add with an owner, outside a
            /// broadcast, first removes the subscriptions whose owner died once the owners table has
            /// doubled since the last sweep (their callables are dropped there, M9, M13).
            #[track_caller]
            pub fn add_member<T: Any>(
                &self,
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> DelegateHandle {
                self.subscribe().add_member(owner, method)
            }

            /// Calls every subscriber present when the broadcast starts, in order, discarding
            /// results. Owned arguments are cloned at most N - 1 times (M11); never allocates (M12).
            pub fn broadcast(&self, $($arg: $Arg),*) {
                // Owned arguments with drop glue travel through the loop each in its own
                // `Guarded`, which clones into a guard of its own: a clone panicking part-way
                // drops the finished elements under the guard, and the originals held for the
                // last subscriber, dropped when an earlier one panics, drop one by one (R2: a
                // plain tuple's drop glue drops the second plainly while the first one's panic
                // unwinds). Without drop glue (`Copy` arguments, say) nothing needs a guard, and
                // a guard's own drop glue would cost the loop (callgrind: an empty broadcast 10 ->
                // 18 instructions, 247 -> 269 at N = 16): a plain tuple. `needs_drop` is a
                // constant per instantiation, so one path is compiled in. Every form does this.
                if std::mem::needs_drop::<($($Arg,)*)>() {
                    self.list.broadcast_with(($(Guarded::new($arg),)*), |f, ($($arg,)*)| {
                        f($($arg.into_inner()),*);
                    });
                } else {
                    self.list.broadcast_with(($($arg,)*), |f, ($($arg,)*)| {
                        f($($arg),*);
                    });
                }
            }

            /// The future of the next broadcast (X5): resolves with its arguments as owned values
            /// (as the broadcast clones them for each subscriber, M11; a delegate declared with
            /// reference parameters resolves with their owned values, `(u32, &str)` as
            /// `(u32, String)`: see `declare_multicast_delegate!`), or [`Gone`](crate::Gone) if
            /// the delegate is dropped or cleared first. Subscribed now (a broadcast running
            /// now does not reach it, M2); dropping it unsubscribes. For a delegate with a
            /// return type, its subscriber returns `R::default()`. See
            /// [`NextBroadcast`](crate::NextBroadcast).
            #[track_caller]
            pub fn next(&self) -> crate::next_broadcast::NextBroadcast<($($Arg,)*)>
            where
                R: Default,
            {
                crate::next_broadcast::subscribe(&self.list, |sender| {
                    let subscriber: Rc<dyn Fn($($Arg),*) -> R> = Rc::new(move |$($arg: $Arg),*| {
                        sender.send(($($arg,)*));
                        R::default()
                    });
                    crate::invocation::Shared::new(subscriber)
                })
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
                if std::mem::needs_drop::<($($Arg,)*)>() {
                    self.collect_with(($(Guarded::new($arg),)*), |f, ($($arg,)*)| {
                        f($($arg.into_inner()),*)
                    })
                } else {
                    self.collect_with(($($arg,)*), |f, ($($arg,)*)| f($($arg),*))
                }
            }
        }
    };
}

impl_multicast_arity!();

macro_rules! impl_registration_next {
    ($($Arg:ident),*) => {
        impl<'a, $($Arg: Clone + 'static,)* R: Default + 'static> Registration<'a, dyn Fn($($Arg),*) -> R> {
            /// The future of the delegate's next broadcast: see
            /// [`MulticastDelegate::next`](MulticastDelegate#method.next) (X5).
            #[track_caller]
            pub fn next(&self) -> crate::next_broadcast::NextBroadcast<($($Arg,)*)> {
                self.delegate().next()
            }
        }
    };
}

impl_registration_next!();
impl_registration_next!(A);
impl_registration_next!(A, B);
impl_registration_next!(A, B, C);
impl_registration_next!(A, B, C, D);
impl_registration_next!(A, B, C, D, E);
impl_registration_next!(A, B, C, D, E, G);
impl_multicast_arity!(a: A);
impl_multicast_arity!(a: A, b: B);
impl_multicast_arity!(a: A, b: B, c: C);
impl_multicast_arity!(a: A, b: B, c: C, d: D);
impl_multicast_arity!(a: A, b: B, c: C, d: D, e: E);
impl_multicast_arity!(a: A, b: B, c: C, d: D, e: E, g: G);
