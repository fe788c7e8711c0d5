//! [`Subscribe`]: the one builder shape for a subscription with options (rule A1).
//!
//! A plain subscription reads as it always did: `delegate.add_lambda(f)`. A subscription with
//! options starts with `subscribe()`, takes the options one method each, and finishes with the
//! verb for the callable's kind:
//!
//! ```
//! use lumina::MulticastDelegate;
//! use std::cell::RefCell;
//! use std::rc::Rc;
//!
//! let on_saved: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
//! let log = Rc::new(RefCell::new(Vec::new()));
//! let (first, last) = (Rc::clone(&log), Rc::clone(&log));
//! let _ = on_saved.add_lambda(move |slot| last.borrow_mut().push(("plain", slot)));
//! let _ = on_saved
//!     .subscribe()
//!     .priority(10)
//!     .once()
//!     .add_lambda(move |slot| first.borrow_mut().push(("first, once", slot)));
//! on_saved.broadcast(1);
//! on_saved.broadcast(2);
//! assert_eq!(*log.borrow(), [("first, once", 1), ("plain", 1), ("plain", 2)]);
//! ```
//!
//! The builder is the delegate's address and three small options on the stack; every method is
//! `#[inline]`, and a finish costs what the plain form costs (the same one insertion, no further
//! allocation), plus one flag write for [`muted`](Subscribe::muted).

use std::fmt;
use std::marker::PhantomData;

/// The mode of a builder whose callable is called with the delegate's arguments only (the
/// default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {}

/// The mode of a builder after [`self_aware`](Subscribe::self_aware): the callable receives its
/// own subscription ([`ThisSubscription`](crate::ThisSubscription)) before the delegate's
/// arguments (X6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelfAware {}

mod sealed {
    /// Keeps the builder's mode markers unimplementable outside the crate.
    pub trait Sealed {}
    impl Sealed for super::Plain {}
    impl Sealed for super::SelfAware {}
}

/// Not public API; used by the builder: the bound of the finishes whose callable is a plain
/// function pointer (`add_static`, `add_method`), which cannot take the subscription that
/// [`self_aware`](Subscribe::self_aware) passes, so that finishing such a builder with them is
/// one error in our words (A1).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a self-aware subscription cannot be made from a plain function pointer",
    label = "`add_static` and `add_method` take a `fn` that cannot receive its own subscription",
    note = "finish a `.self_aware()` builder with `add_lambda`, `add_member` or `add_shared`, whose callable takes its own subscription first; or drop `.self_aware()`"
)]
pub trait TakesPlainFunction: sealed::Sealed {}

impl TakesPlainFunction for Plain {}

/// Not public API; used by the builder: the bound of [`self_aware`](Subscribe::self_aware), so
/// that saying it twice is one error in our words.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this subscription is self-aware already",
    label = "`.self_aware()` is said once",
    note = "remove the second `.self_aware()`"
)]
pub trait NotSelfAware: sealed::Sealed {}

impl NotSelfAware for Plain {}

/// Not public API; used by the builder: the bound of the finishes whose callable does not
/// receive its own subscription (a thread-safe delegate's `add_queued`, which runs later on the
/// game thread, and `add_boxed`; the processor's `register_event_handler`, whose handler is an
/// `EventHandler` object), so that one after `.self_aware()` is one error in our words (A1).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this finish does not combine with `.self_aware()`",
    label = "this finish takes a callable that does not receive its own subscription",
    note = "finish a `.self_aware()` builder with `add_lambda`, `add_member` or `add_handler`, whose callable takes its own subscription first; or drop `.self_aware()`"
)]
pub trait PlainFinish: sealed::Sealed {}

impl PlainFinish for Plain {}

/// Not public API; used by the builder: the targets whose subscriptions a removal key can name
/// (game-thread delegates: their lists index subscriptions by owner), so that `.key()` on any
/// other is one error in our words (A1).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`.key()` does not apply here: `{Self}` has no removal by key",
    label = "a removal key names subscriptions of a game-thread delegate, a lifecycle signal or a script delegate",
    note = "remove this subscription by the handle its finish returns, or through a scoped guard"
)]
pub trait TakesKey {}

/// Not public API; used by the builder: the targets whose subscriptions have a priority (every
/// one but the viewports, which are routed by rectangle and focus), so that `.priority()` on a
/// viewport is one error in our words (A1).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`.priority()` does not apply here: `{Self}` has no priorities",
    label = "viewports are chosen by focus and rectangle, not by priority",
    note = "remove `.priority(..)`; a later viewport is on top of earlier ones where they overlap"
)]
pub trait TakesPriority {}

/// A removal key, type-erased: an `Rc` the subscription is held by, weakly.
pub(crate) trait ErasedKey {
    fn weak(&self) -> std::rc::Weak<dyn std::any::Any>;
}

impl<T: std::any::Any> ErasedKey for std::rc::Rc<T> {
    fn weak(&self) -> std::rc::Weak<dyn std::any::Any> {
        let weak: std::rc::Weak<T> = std::rc::Rc::downgrade(self);
        weak
    }
}

/// The options a builder carries to its finish.
#[derive(Clone, Copy, Default)]
pub(crate) struct Options<'a> {
    /// The removal key (`.key(&rc)`): the subscription's owner for `remove_all` and
    /// `is_bound_to`, held weakly (M9).
    pub(crate) key: Option<&'a dyn ErasedKey>,
    /// Higher runs first; 0 is the plain forms' priority (B3).
    pub(crate) priority: i32,
    /// Removed right before its first call starts (X3).
    pub(crate) once: bool,
    /// Starts blocked (X4): present, counted, skipped by broadcasts until unblocked.
    pub(crate) muted: bool,
}

impl fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("priority", &self.priority)
            .field("once", &self.once)
            .field("muted", &self.muted)
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

impl Options<'_> {
    /// The insertion these options describe, for `owner` (member bindings) and `key` (made from
    /// a plain function, X7). A removal key (`.key(&rc)`) is the owner when given.
    #[inline]
    pub(crate) fn spec(
        self,
        owner: Option<std::rc::Weak<dyn std::any::Any>>,
        key: Option<usize>,
    ) -> crate::invocation::Spec {
        crate::invocation::Spec {
            priority: self.priority,
            once: self.once,
            key,
            owner: match self.key {
                Some(removal) => Some(removal.weak()),
                None => owner,
            },
            self_aware: false,
        }
    }

    /// [`spec`](Self::spec) for a self-aware subscription (X6), recorded as such for listings.
    #[inline]
    pub(crate) fn spec_self_aware(
        self,
        owner: Option<std::rc::Weak<dyn std::any::Any>>,
    ) -> crate::invocation::Spec {
        crate::invocation::Spec {
            self_aware: true,
            ..self.spec(owner, None)
        }
    }
}

/// A subscription being made: the target (a delegate) and the options so far, in mode `M`
/// ([`Plain`] or [`SelfAware`]). Made by the target's `subscribe()`; finished by the target's
/// verb for the callable's kind (`add_lambda`, `add_static`, `add_member`, `add_shared`,
/// `add_method`, ...), which returns what the plain form returns. Any option combines with any
/// other; a finish that cannot take a self-aware callable does not compile.
///
/// Cost: building is free (a few words on the stack, no allocation); the finish costs what the
/// plain form costs, plus one flag write when [`muted`](Self::muted) (N4).
#[must_use = "a subscription is made only by a finish such as `add_lambda`: nothing is subscribed yet"]
pub struct Subscribe<'a, D: ?Sized, M = Plain> {
    target: &'a D,
    options: Options<'a>,
    mode: PhantomData<fn() -> M>,
}

impl<D: ?Sized, M> Clone for Subscribe<'_, D, M> {
    fn clone(&self) -> Self {
        *self
    }
}

/// A builder is a few words: copy it to make several subscriptions with the same options.
impl<D: ?Sized, M> Copy for Subscribe<'_, D, M> {}

impl<D: ?Sized, M> fmt::Debug for Subscribe<'_, D, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscribe")
            .field("options", &self.options)
            .field("mode", &std::any::type_name::<M>())
            .finish()
    }
}

impl<'a, D: ?Sized> Subscribe<'a, D, Plain> {
    /// A builder for `target` with no options: priority 0, every call, not muted.
    #[inline]
    pub(crate) fn new(target: &'a D) -> Self {
        Subscribe {
            target,
            options: Options::default(),
            mode: PhantomData,
        }
    }
}

impl<'a, D: ?Sized, M> Subscribe<'a, D, M> {
    /// The callable receives its own subscription first (X6:
    /// [`ThisSubscription`](crate::ThisSubscription)), so it can remove, block or re-prioritize
    /// itself: `add_lambda` then takes `Fn(&ThisSubscription, args..)` and `add_member`
    /// `Fn(&T, &ThisSubscription, args..)`. Said once. Cost: none.
    #[inline]
    pub fn self_aware(self) -> Subscribe<'a, D, SelfAware>
    where
        M: NotSelfAware,
    {
        Subscribe {
            target: self.target,
            options: self.options,
            mode: PhantomData,
        }
    }

    /// Runs before every subscriber of a lower `priority`: higher priorities run first, equal
    /// ones in the order added; the plain forms are priority 0 (B3). Any `i32`, or an
    /// [`InputLayer`](crate::event::InputLayer) for an event handler. Cost: none.
    #[inline]
    pub fn priority(mut self, priority: impl Into<i32>) -> Self
    where
        D: TakesPriority,
    {
        self.options.priority = priority.into();
        self
    }

    /// Runs at most once (X3): removed right before its call starts, so no broadcast (nested or
    /// later) runs it twice, and its handle names nothing from then on. Cost: none.
    #[inline]
    pub fn once(mut self) -> Self {
        self.options.once = true;
        self
    }

    /// Starts blocked (X4): it keeps its place and handle and counts in `len`, but broadcasts
    /// skip it until `unblock`. Cost: one flag write at the finish.
    #[inline]
    pub fn muted(mut self) -> Self {
        self.options.muted = true;
        self
    }

    /// Belongs to `key` (a removal key; Unreal's weak lambda): `remove_all(&key)` removes it with
    /// every other subscription of that key, `is_bound_to(&key)` finds it, and it never runs
    /// again once `key` is dropped (M9), as a member binding's owner works. On a member binding
    /// the key takes the object's place for `remove_all`. Held weakly. Cost: none (the owner
    /// index the member bindings use).
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use std::rc::Rc;
    ///
    /// struct Level;
    /// let on_tick: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
    /// let level = Rc::new(Level);
    /// let _ = on_tick.subscribe().key(&level).add_lambda(|dt| println!("spawner {dt}"));
    /// let _ = on_tick.subscribe().key(&level).priority(5).add_lambda(|dt| println!("ai {dt}"));
    /// let _ = on_tick.add_lambda(|dt| println!("hud {dt}"));
    /// assert!(on_tick.is_bound_to(&level));
    /// assert_eq!(on_tick.remove_all(&level), 2); // the level's, and only those
    /// assert_eq!(on_tick.len(), 1);
    /// ```
    #[inline]
    pub fn key<T: std::any::Any>(mut self, key: &'a std::rc::Rc<T>) -> Self
    where
        D: TakesKey,
    {
        self.options.key = Some(key);
        self
    }

    /// The same options and mode for another target: how a mechanism that wraps a delegate
    /// finishes through the delegate's builder.
    #[inline]
    pub(crate) fn retarget<E: ?Sized>(self, target: &'a E) -> Subscribe<'a, E, M> {
        Subscribe {
            target,
            options: self.options,
            mode: PhantomData,
        }
    }

    /// The target and the options, for the finishes.
    #[inline]
    pub(crate) fn parts(self) -> (&'a D, Options<'a>) {
        (self.target, self.options)
    }
}
