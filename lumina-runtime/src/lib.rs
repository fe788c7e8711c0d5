//! Runtime of [lumina](https://docs.rs/lumina-notify): the Lumina game engine's notification system.
//!
//! Game code depends on the `lumina` facade, which re-exports everything here together with the
//! macros. One module per mechanism:
//!
//! - [`handle`]: [`DelegateHandle`], the subscription ticket (rules H1, H2).
//! - [`delegate`]: single-cast [`Delegate`] (S1-S3).
//! - [`multicast`]: [`MulticastDelegate`] (M1-M12).
//! - [`sync_delegate`]: [`SyncMulticastDelegate`], a multicast delegate for any thread (TS1-TS4).
//! - [`main_thread`]: the game thread and the queue other threads reach it through (T1, Q1-Q3).
//! - [`core_delegates`]: [`CoreDelegates`], the engine-wide signals (C1-C3).
//! - [`event`]: input events, [`EventType`] and the prioritized [`EventProcessor`] (E1-E5, P1-P4).
//! - [`script_delegate`]: [`ScriptDelegate`], bindable from Rust and a managed host (SD1-SD4).
//! - [`script_generation`]: script generations a managed host unloads (SD8).
//! - [`reflect`]: reflection of payloads and components' delegate properties (SD6).
//! - `platform` (features `winit`, `gilrs`): winit windows and gilrs gamepads feed the event
//!   processor (PL1-PL3).
//! - [`module`]: game modules in dynamic libraries: load, unload, hot reload (MB1-MB6).
//! - [`ffi`]: the C ABI a managed host calls (SD5).
//! - [`bus`]: the gameplay message bus, tag-addressed messages between entities (GB1-GB9).
//!
//! Every mechanism is built on one private invocation list (subscribers in order, with handles,
//! weak owners and priorities), which implements the reentrancy contract (M1-M13) once.
//!
//! `unsafe` code is in [`ffi`], in [`bus`] (one cast of a message's payload to the type its
//! `TypeId` names, on the send path), in the invocation list's `raw` module (the unchecked reads of
//! the broadcast loops), in [`module`] (dynamic loading, and the records that let an unload reach
//! a module's subscriptions), in [`sync_delegate`]'s `hazard` module (the thread-safe delegate's
//! list versions, read through hazard slots). [`script_generation`] has none any more: a generation reaches its
//! delegates through weak references to their heap blocks (R1; every address lumina keeps is
//! listed in `lumina::addresses`). (`thread_bound` adds vacuous `unsafe impl Send` / `Sync` bounds that never hold, so
//! that sending a delegate to another thread is one error naming `main_thread::enqueue`.)

// On docs.rs (`--cfg docsrs`, nightly): each item says which cargo feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// A `pub` item no user can reach is crate-private in fact: say so, so the public API (and its
// count, issue 33) is what users see.
#![warn(unreachable_pub)]

// Lets expansions of lumina's own macros inside this crate use the same `::lumina::...` paths as
// in game code.
#[allow(unused_extern_crates)]
extern crate self as lumina;

pub mod bind_site;
pub mod bus;
pub mod core_delegates;
pub mod coroutine;
pub mod csharp;
pub mod delegate;
mod drops;
pub mod event;
pub mod ffi;
pub mod handle;
mod id_map;
pub mod inspect;
mod invocation;
pub mod main_thread;
pub mod module;
pub mod multicast;
pub mod next_broadcast;
#[cfg(any(feature = "winit", feature = "gilrs"))]
pub mod platform;
pub mod reflect;
mod runtime_copy;
pub mod scoped;
pub mod script_delegate;
pub mod script_generation;
mod steps;
pub mod subscribe;
pub mod sync_delegate;
mod thread_bound;
mod trace;
mod track;

pub use bus::{MessageBus, Tag, TagKey};
pub use core_delegates::CoreDelegates;
pub use delegate::Delegate;
pub use event::{Event, EventProcessor, EventType};
pub use handle::DelegateHandle;
pub use main_thread::QueuedSender;
pub use multicast::{MulticastDelegate, Registration};
pub use next_broadcast::{Gone, NextBroadcast};
pub use reflect::{ScriptComponent, ScriptPayload};
pub use scoped::{ScopedBlock, ScopedMute, ScopedSubscription, ThisSubscription};
pub use script_delegate::{ScriptDelegate, ScriptDelegateBase};
pub use subscribe::Subscribe;
pub use sync_delegate::{SyncMulticastDelegate, SyncRegistration, SyncThisSubscription};

/// Not public API; used by expansions of lumina's macros, which name everything through
/// `::lumina::__private` so that they work with `lumina` as the only dependency.
#[doc(hidden)]
pub mod __private {
    #[doc(hidden)]
    pub use crate::bind_site::Subscription;
    #[doc(hidden)]
    pub use crate::bus::TagKey;
    #[doc(hidden)]
    pub use crate::bus::script_tag_key;
    #[doc(hidden)]
    pub use crate::delegate::Delegate;
    /// Not public API; used by expansions of `declare_multicast_delegate!`: each finished
    /// element of a tuple they make element by element (an owned argument tuple's clone, M11;
    /// `next()`'s owned copies, X5) waits in a `Guarded` until the whole tuple is made, so a
    /// later element's panicking `Clone` drops it under the guard (R2).
    #[doc(hidden)]
    pub use crate::drops::Guarded;
    #[doc(hidden)]
    pub use crate::event::{EventClass, EventType};
    #[doc(hidden)]
    pub use crate::handle::DelegateHandle;
    #[doc(hidden)]
    pub use crate::main_thread::QueuedBroadcast;
    #[doc(hidden)]
    pub use crate::multicast::MulticastDelegate;
    #[doc(hidden)]
    pub use crate::multicast::{OwnerBroadcasts, OwnerClears};
    pub use crate::next_broadcast::{NextBroadcast, NextSender};
    #[doc(hidden)]
    pub use crate::reflect::{
        Blittable, ComponentInfo, DelegateProperty, FieldInfo, FieldType, PayloadInfo,
        PropertyFlags, PropertyInfo, RegisteredComponent, RegisteredPayload, ScriptComponent,
        ScriptPayload,
    };
    #[doc(hidden)]
    pub use crate::scoped::{ScopedBlock, ScopedMute, ScopedSubscription, ThisSubscription};
    #[doc(hidden)]
    pub use crate::subscribe::{
        NotSelfAware, Plain, PlainFinish, SelfAware, Subscribe, TakesKey, TakesPlainFunction,
    };
    #[doc(hidden)]
    pub use crate::sync_delegate::SyncMulticastDelegate;
    #[doc(hidden)]
    pub use inventory;
    #[doc(hidden)]
    pub use std::rc::Rc;

    /// Not public API; used by expansions of `declare_multicast_delegate!`. Broadcasts `args` to
    /// every subscriber of `delegate`: `call(subscriber, args)` for each, with `args` cloned for
    /// all but the last by `clone` (M11), before each subscriber is checked (M13). `D` is the
    /// declared delegate's type, which names the broadcast's trace span (V2; zero-sized).
    #[doc(hidden)]
    #[inline]
    pub fn broadcast_with<D: ?Sized, F: ?Sized + 'static, A>(
        _declared: ::core::marker::PhantomData<D>,
        delegate: &crate::multicast::MulticastDelegate<F>,
        args: A,
        clone: impl Fn(&A) -> A + Copy,
        mut call: impl FnMut(&F, A),
    ) {
        let args = ClonedBy { value: args, clone };
        // The loop out of line (an empty broadcast tests the list before any register is
        // saved); `call` is moved in, as a closure borrowing it would need its address.
        delegate.list().broadcast_traced(
            args,
            move |subscriber, args| call(subscriber, args.value),
            crate::trace::broadcast_declared::<D>,
        );
    }

    /// [`broadcast_with`] with an early stop once `call` returns `true` (X7), its trace span
    /// (V2) made by `span`.
    #[inline]
    fn broadcast_until_with<F: ?Sized + 'static, A>(
        delegate: &crate::multicast::MulticastDelegate<F>,
        args: A,
        clone: impl Fn(&A) -> A + Copy,
        mut call: impl FnMut(&F, A) -> bool,
        span: impl FnOnce() -> crate::trace::Span,
    ) -> bool {
        let args = ClonedBy { value: args, clone };
        delegate.list().broadcast_until_traced(
            args,
            |subscriber, args| call(subscriber, args.value),
            span,
        )
    }

    /// Not public API; what `broadcast_fold` of a declared multicast delegate is (the generic
    /// delegate's is [`fold_traced`] with its own span): [`broadcast_with`] that folds each
    /// `call`'s result into the accumulator with `fold` as it comes, until `fold` breaks (X7).
    /// `D` is the declared delegate's type, which names the broadcast's trace span (V2). The
    /// caller's accumulator and `fold` (with its captures) are user values held while
    /// subscribers run: guarded, so a subscriber's panic drops them under the guard (R2). Free
    /// when nothing panics.
    #[doc(hidden)]
    #[inline]
    pub fn broadcast_fold<D: ?Sized, F: ?Sized + 'static, A, R, Acc>(
        _declared: ::core::marker::PhantomData<D>,
        delegate: &crate::multicast::MulticastDelegate<F>,
        args: A,
        clone: impl Fn(&A) -> A + Copy,
        init: Acc,
        fold: impl FnMut(Acc, R) -> std::ops::ControlFlow<Acc, Acc>,
        call: impl FnMut(&F, A) -> R,
    ) -> Acc {
        fold_traced(
            delegate,
            (args, clone),
            init,
            fold,
            call,
            crate::trace::broadcast_declared::<D>,
        )
    }

    /// [`broadcast_fold`] whose trace span `span` makes; `args` with its clone.
    #[inline]
    pub(crate) fn fold_traced<F: ?Sized + 'static, A, R, Acc>(
        delegate: &crate::multicast::MulticastDelegate<F>,
        (args, clone): (A, impl Fn(&A) -> A + Copy),
        init: Acc,
        fold: impl FnMut(Acc, R) -> std::ops::ControlFlow<Acc, Acc>,
        mut call: impl FnMut(&F, A) -> R,
        span: impl FnOnce() -> crate::trace::Span,
    ) -> Acc {
        let mut accumulator = crate::drops::Guarded::new(Some(init));
        let mut fold = crate::drops::Guarded::new(fold);
        broadcast_until_with(
            delegate,
            args,
            clone,
            |subscriber, args| fold_step(&mut accumulator, call(subscriber, args), &mut *fold),
            span,
        );
        accumulator
            .into_inner()
            .expect("the fold's accumulator is put back after each call")
    }

    /// Not public API; what `broadcast_until` of a declared multicast delegate is (the generic
    /// delegate's is [`until_traced`] with its own span): [`broadcast_with`] that hands each
    /// `call`'s result to `stop` until it breaks, and returns the break's value (X7). `D` names
    /// the trace span, as for [`broadcast_fold`]. `stop` (with its captures) and the value are
    /// user values held while subscribers run (or while the broadcast drops what it left):
    /// guarded (R2). Free when nothing panics.
    #[doc(hidden)]
    #[inline]
    pub fn broadcast_until<D: ?Sized, F: ?Sized + 'static, A, R, Out>(
        _declared: ::core::marker::PhantomData<D>,
        delegate: &crate::multicast::MulticastDelegate<F>,
        args: A,
        clone: impl Fn(&A) -> A + Copy,
        stop: impl FnMut(R) -> std::ops::ControlFlow<Out>,
        call: impl FnMut(&F, A) -> R,
    ) -> Option<Out> {
        until_traced(
            delegate,
            (args, clone),
            stop,
            call,
            crate::trace::broadcast_declared::<D>,
        )
    }

    /// [`broadcast_until`] whose trace span `span` makes; `args` with its clone.
    #[inline]
    pub(crate) fn until_traced<F: ?Sized + 'static, A, R, Out>(
        delegate: &crate::multicast::MulticastDelegate<F>,
        (args, clone): (A, impl Fn(&A) -> A + Copy),
        stop: impl FnMut(R) -> std::ops::ControlFlow<Out>,
        mut call: impl FnMut(&F, A) -> R,
        span: impl FnOnce() -> crate::trace::Span,
    ) -> Option<Out> {
        let mut found = crate::drops::Guarded::new(None);
        let mut stop = crate::drops::Guarded::new(stop);
        broadcast_until_with(
            delegate,
            args,
            clone,
            |subscriber, args| until_step(&mut found, call(subscriber, args), &mut *stop),
            span,
        );
        found.into_inner()
    }

    /// One step of a `broadcast_fold` (X7): folds `result` into the accumulator (taken out for
    /// the fold and put back after it); whether to stop.
    #[inline]
    fn fold_step<Acc, R>(
        accumulator: &mut Option<Acc>,
        result: R,
        fold: &mut impl FnMut(Acc, R) -> std::ops::ControlFlow<Acc, Acc>,
    ) -> bool {
        // `None` only while a fold runs: a fold that panicked took it along.
        let Some(current) = accumulator.take() else {
            return true;
        };
        match fold(current, result) {
            std::ops::ControlFlow::Continue(next) => {
                *accumulator = Some(next);
                false
            }
            std::ops::ControlFlow::Break(last) => {
                *accumulator = Some(last);
                true
            }
        }
    }

    /// One step of a `broadcast_until` (X7): whether `stop` broke, keeping its value in `found`.
    #[inline]
    fn until_step<Out, R>(
        found: &mut Option<Out>,
        result: R,
        stop: &mut impl FnMut(R) -> std::ops::ControlFlow<Out>,
    ) -> bool {
        match stop(result) {
            std::ops::ControlFlow::Continue(()) => false,
            std::ops::ControlFlow::Break(value) => {
                *found = Some(value);
                true
            }
        }
    }

    /// Not public API; the address of a plain function, its identity for `remove_static` (X7).
    #[doc(hidden)]
    #[inline]
    pub fn fn_address(f: *const ()) -> usize {
        f.addr()
    }

    /// Not public API; used by expansions of `declare_multicast_delegate!`: `next()` (X5)
    /// subscribes the one-shot subscriber `make` builds around the future's sender.
    #[doc(hidden)]
    #[track_caller]
    pub fn next_broadcast<F: ?Sized + 'static, T>(
        delegate: &crate::multicast::MulticastDelegate<F>,
        make: impl FnOnce(crate::next_broadcast::NextSender<T>) -> std::rc::Rc<F>,
    ) -> crate::next_broadcast::NextBroadcast<T> {
        crate::next_broadcast::subscribe(delegate.list(), |sender| {
            crate::invocation::Shared::new(make(sender))
        })
    }

    /// Not public API; used by expansions of `declare_multicast_delegate!`: `T` is `Self`. The
    /// expansion of `next()` names a parameter's referent (and its result) through a type
    /// parameter `T` bound by `Referent: Is<T>`, which infers it, so that `ToOwned` and `Default`
    /// are required where `next()` is called, and `next()` is only compiled for a caller.
    #[doc(hidden)]
    pub trait Is<T: ?Sized> {
        /// `self`, as `&T`.
        fn as_same(&self) -> &T;
        /// `value`, as `Self`.
        fn from_same(value: T) -> Self
        where
            Self: Sized,
            T: Sized;
    }

    #[doc(hidden)]
    impl<T: ?Sized> Is<T> for T {
        #[inline]
        fn as_same(&self) -> &T {
            self
        }
        #[inline]
        fn from_same(value: T) -> T
        where
            T: Sized,
        {
            value
        }
    }

    /// Not public API; used by expansions of `declare_multicast_delegate!`: `broadcast_collect`,
    /// which returns what each `call` gave, in call order (results held meanwhile are guarded,
    /// R2). `D` is the declared delegate's type, which names the trace span (V2).
    #[doc(hidden)]
    #[inline]
    pub fn broadcast_collect<D: ?Sized, F: ?Sized + 'static, A, R>(
        _declared: ::core::marker::PhantomData<D>,
        delegate: &crate::multicast::MulticastDelegate<F>,
        args: A,
        clone: impl Fn(&A) -> A + Copy,
        mut call: impl FnMut(&F, A) -> R,
    ) -> Vec<R> {
        let args = ClonedBy { value: args, clone };
        delegate.collect_traced(
            args,
            |subscriber, args| call(subscriber, args.value),
            crate::trace::broadcast_declared::<D>,
        )
    }

    /// Upgrades the weak owner of a member binding; the invocation list checks the owner is
    /// alive right before it calls the binding. Only through [`call_member`], which holds the
    /// strong reference under the guard (R2): a temporary of it dropped at the end of a
    /// statement would drop the owner's last reference unguarded if the call unwinds.
    #[inline]
    fn upgrade_owner<T>(owner: &std::rc::Weak<T>) -> std::rc::Rc<T> {
        owner
            .upgrade()
            .expect("lumina: a member binding ran after its owner was dropped")
    }

    /// Not public API; used by expansions and the member bindings of every delegate kind.
    /// Calls `call` with the upgraded owner of a member binding and `args`. The arguments are
    /// guarded until the call, and the strong reference to the owner (the last one if the owner
    /// was dropped during the call) is dropped under the guard if the call unwinds, so an owner
    /// whose `Drop` panics then does not abort the process (R2). Free when nothing panics.
    #[doc(hidden)]
    #[inline(always)]
    pub fn call_member<T, A, R>(
        owner: &std::rc::Weak<T>,
        args: A,
        call: impl FnOnce(&T, A) -> R,
    ) -> R {
        let args = crate::drops::Guarded::new(args);
        let owner = upgrade_owner(owner);
        let args = args.into_inner();
        crate::drops::Guarded::hold_rc(owner, |owner| call(owner, args))
    }

    /// Not public API; used by expansions. A multicast delegate hands an owned argument to
    /// every subscriber, cloning it for all but the last (M11). `declare_multicast_delegate!`
    /// asserts this trait on each owned parameter type, spanned at that type, so a non-`Clone`
    /// parameter is one error, in our words, on the user's token.
    #[doc(hidden)]
    #[diagnostic::on_unimplemented(
        message = "multicast delegate parameter type `{Self}` is not `Clone`: an owned parameter is cloned for every subscriber but the last",
        label = "an owned parameter is cloned for every subscriber but the last, so it must implement `Clone`",
        note = "take it by reference (`&{Self}`), share it (`Rc<{Self}>`), or implement `Clone` for it"
    )]
    pub trait CloneArg {
        /// Clones the argument for one subscriber.
        fn clone_for_subscriber(&self) -> Self;
    }

    #[doc(hidden)]
    #[diagnostic::do_not_recommend]
    impl<T: Clone> CloneArg for T {
        #[inline]
        fn clone_for_subscriber(&self) -> Self {
            self.clone()
        }
    }

    /// Not public API; used by expansions. A declared delegate's owned broadcast arguments with
    /// the closure that clones them, which the expansion writes (capturing nothing, so `K` is a
    /// zero-sized type; a generic delegate's fold and until pass `Clone::clone`): the
    /// loop, compiled out of line, still knows the clone from the type and inlines it (a
    /// function pointer here cost an indirect call per subscriber: 20 instructions per call
    /// against 12, BENCHMARKS.md). Its `Clone` impl asks only that `K` clones, which a
    /// closure's type does even when its body fails to compile, so a non-`Clone` parameter fails
    /// once, at [`clone_arg`] (spanned at the user's type), and nowhere else.
    #[doc(hidden)]
    pub struct ClonedBy<A, K> {
        /// The arguments.
        pub value: A,
        clone: K,
    }

    impl<A, K: Fn(&A) -> A + Copy> Clone for ClonedBy<A, K> {
        #[inline(always)]
        fn clone(&self) -> Self {
            ClonedBy {
                value: (self.clone)(&self.value),
                clone: self.clone,
            }
        }
    }

    /// Not public API; used by the clone closures of expansions. Clones an owned broadcast
    /// argument for one subscriber; the expansion spans this call at the parameter's type, so
    /// `T: CloneArg` fails there (M11).
    #[doc(hidden)]
    #[inline(always)]
    pub fn clone_arg<T: CloneArg>(value: &T) -> T {
        value.clone_for_subscriber()
    }

    /// Not public API; used by the expansion of `declare_multicast_delegate!(sync ...)`: every
    /// subscriber of a thread-safe delegate gets its own clone of each argument (TS1), so this
    /// trait is asserted on each parameter type, spanned at that type: a non-`Clone` parameter
    /// is one error, in our words, on the user's token.
    #[doc(hidden)]
    #[diagnostic::on_unimplemented(
        message = "thread-safe delegate parameter type `{Self}` is not `Clone`: every subscriber, on any thread, gets its own clone",
        label = "every subscriber gets its own clone of this argument, so it must implement `Clone`",
        note = "share it (`Arc<{Self}>`), or implement `Clone` for it"
    )]
    pub trait SyncCloneArg {
        /// Clones the argument for one subscriber.
        fn clone_for_subscriber(&self) -> Self;
    }

    #[doc(hidden)]
    #[diagnostic::do_not_recommend]
    impl<T: Clone> SyncCloneArg for T {
        #[inline]
        fn clone_for_subscriber(&self) -> Self {
            self.clone()
        }
    }

    /// Not public API; used by the broadcast of `declare_multicast_delegate!(sync ...)`'s
    /// expansion, spanned at the parameter's type (TS1).
    #[doc(hidden)]
    #[inline(always)]
    pub fn sync_clone_arg<T: SyncCloneArg>(value: &T) -> T {
        value.clone_for_subscriber()
    }

    /// Not public API; used by `execute_if_bound` of single-cast delegates (generic and
    /// declared): the bound callable with `args`, or `None` once `args` are dropped (S3): an
    /// unrun call's arguments are the library's to drop, under the guard while the thread
    /// unwinds (R2). `args` come as a tuple of `Guarded`s, one per argument (see
    /// [`Delegate::callable_or_panic`](crate::delegate::Delegate::callable_or_panic)).
    #[doc(hidden)]
    #[inline(always)]
    pub fn callable_if_bound<F: ?Sized + 'static, A>(
        delegate: &crate::delegate::Delegate<F>,
        args: A,
    ) -> Option<(crate::delegate::CallableRef<'_, F>, A)> {
        match delegate.callable_ref() {
            Some(callable) => Some((callable, args)),
            None => {
                crate::drops::drop_user(args);
                None
            }
        }
    }
}
