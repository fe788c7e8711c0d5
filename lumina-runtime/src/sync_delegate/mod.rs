//! [`SyncMulticastDelegate`]: a multicast delegate that any thread may use (rules TS1-TS4).
//!
//! The game-thread [`MulticastDelegate`](crate::MulticastDelegate) is neither `Send` nor `Sync`:
//! cross-thread work goes through the main-thread queue. This one is `Send + Sync`; its
//! subscribers are `Send + Sync` callables, and every operation works from any thread through
//! `&self`:
//!
//! - **Removal is final (TS2).** Once [`remove`](SyncMulticastDelegate::remove), a guard's drop
//!   or [`clear`](SyncMulticastDelegate::clear) returned on one thread, no call of that
//!   subscriber starts on any thread; calls that had already started may finish. A call starts
//!   when its broadcast reads the subscriber's state word and finds it live: one atomic load,
//!   ordered with the removal's atomic write to the same word.
//! - **No lock around user code (TS2, TS3).** The list is copy-on-write: a broadcast takes the
//!   current list without a lock (it names the version in a hazard slot of its own thread, a
//!   plain store; the writers pay for the fence, `hazard`) and walks it with no lock held. So a
//!   subscriber may add, remove, clear and broadcast (this delegate or another) from inside its
//!   call on any thread, and two threads that broadcast each other's delegates from their
//!   subscribers (the crossed case) never deadlock. Concurrent broadcasts run in parallel and
//!   write no shared cache line; a broadcast never allocates. Subscribers added during a
//!   broadcast are not called by it (M2): it walks the list it began with.
//! - **Memory.** A replaced list is freed at once if no broadcast reads it; otherwise at the end
//!   of the last broadcast that reads it (on that broadcast's thread), or at the next change of
//!   any thread-safe delegate, whichever comes first. Its last reference to a removed callable
//!   drops it then.
//! - **Costs.** `broadcast`: O(n) in the subscribers, no lock, no atomic read-modify-write (a
//!   one-shot's claim aside). `add_*`, `remove`, `clear`: O(n) (the new list is a copy, sorted
//!   by priority), plus one `membarrier` system call on Linux (a few microseconds) and a scan of
//!   the threads' hazard slots; `block`, `unblock`, `contains`: O(n) under the writers' lock;
//!   [`mute`](SyncMulticastDelegate::mute) and its guard's drop: O(1), one atomic counter, which
//!   every broadcast reads once before it takes its list (A2: a broadcast that starts while a
//!   mute is in force calls nobody; mutes are counted, their guards drop on any thread).
//! - **To the game thread (TS4).** [`add_queued`](SyncMulticastDelegate::add_queued) makes a
//!   subscription whose callable runs on the game thread at its next
//!   [`process_queue`](crate::main_thread::process_queue), with the arguments cloned at broadcast
//!   time (Qt's queued connection); removed before then, it does not run.
//!
//! Checked as concurrent code is checked (TS6): its protocol runs under `loom` (`--cfg loom`,
//! every interleaving of small models), the tests of `tests/sync_delegate.rs` under
//! ThreadSanitizer and Miri.
//!
//! - **Game modules (TS5).** A subscription made while game modules are loaded keeps its origin
//!   (its code addresses, and the module lumina was running on this thread, MB6); a module's
//!   unload removes every subscription that is the module's, on every thread-safe delegate, as
//!   `remove` does: no call of it starts afterwards on any thread. A call already running on
//!   another thread may finish: the unload does not wait for it, and need not, since an unloaded
//!   module's library stays mapped (MB6); only the explicit, `unsafe` unmapping must know that
//!   no such call runs.
//!
//! - **One way to subscribe (A1).** [`subscribe`](SyncMulticastDelegate::subscribe) takes the
//!   options (priority, one-shot, muted, self-aware) and finishes with `add_lambda`,
//!   `add_static`, `add_member`, `add_queued` or `add_boxed`, as on the game-thread delegate; a
//!   self-aware subscriber receives a [`SyncThisSubscription`]. Member bindings hold their owner
//!   weakly and the listing shows its state (M9). [`registration`](SyncMulticastDelegate::registration)
//!   is the bind-only view (B1).

use std::fmt;
use std::panic::Location;

/// The protocol's shared-memory primitives: loom's under `--cfg loom` (the model checker sees
/// every access), std's otherwise; what the module's files name instead of choosing each time.
mod sync {
    #[cfg(loom)]
    pub(super) use loom::sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    };
    #[cfg(not(loom))]
    pub(super) use std::sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    };
}

use sync::{Arc, AtomicU32, Ordering};

use crate::bind_site::{OwnerState, Subscription};
use crate::drops::{Guarded, drop_user};
use crate::handle::DelegateHandle;
use crate::subscribe::{Options, Subscribe};
use crate::track::{self, Origin, Sweep};
use handles::Making;
use list::{BLOCKS, CLAIMED, Control, Entry, Shared};

mod arity;
mod handles;
mod hazard;
mod list;

pub use handles::{
    SyncRegistration, SyncScopedBlock, SyncScopedMute, SyncScopedSubscription, SyncThisSubscription,
};

/// A multicast delegate for any thread: see the [module documentation](self).
///
/// `F` is the signature as a trait object, `dyn Fn(Args..) + Send + Sync`.
///
/// ```
/// use lumina::SyncMulticastDelegate;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let on_loaded: Arc<SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>> = Arc::default();
/// let total = Arc::new(AtomicU32::new(0));
/// let sink = Arc::clone(&total);
/// let handle = on_loaded.add_lambda(move |bytes| {
///     sink.fetch_add(bytes, Ordering::Relaxed);
/// });
/// let worker = {
///     let on_loaded = Arc::clone(&on_loaded);
///     std::thread::spawn(move || on_loaded.broadcast(7))
/// };
/// worker.join().unwrap();
/// on_loaded.broadcast(3);
/// assert_eq!(total.load(Ordering::Relaxed), 10);
/// assert!(on_loaded.remove(handle));
/// assert!(!on_loaded.is_bound());
/// ```
pub struct SyncMulticastDelegate<F: ?Sized + 'static> {
    /// Shared with the guards (a std `Arc` also under loom: ownership, not the protocol).
    shared: std::sync::Arc<Shared<F>>,
}

impl<F: ?Sized + 'static> crate::subscribe::TakesPriority for SyncMulticastDelegate<F> {}

impl<F: ?Sized + Send + Sync + 'static> Default for SyncMulticastDelegate<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: ?Sized + Send + Sync + 'static> fmt::Debug for SyncMulticastDelegate<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncMulticastDelegate")
            .field("len", &self.len())
            .field("subscriptions", &self.subscriptions())
            .finish()
    }
}

impl<F: ?Sized + Send + Sync + 'static> SyncMulticastDelegate<F> {
    /// An empty delegate (allocates its shared state).
    pub fn new() -> Self {
        SyncMulticastDelegate {
            shared: std::sync::Arc::new(Shared::new()),
        }
    }

    /// A subscription with options (A1): priority, one-shot, muted, self-aware, combined in any
    /// way, then finished by `add_lambda`, `add_static`, `add_member`, `add_queued` or
    /// `add_boxed`. The plain forms are this builder with no option.
    ///
    /// ```
    /// use lumina::SyncMulticastDelegate;
    /// use std::sync::{Arc, Mutex};
    ///
    /// let on_loaded: SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> = SyncMulticastDelegate::new();
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let (first, later) = (Arc::clone(&log), Arc::clone(&log));
    /// let _ = on_loaded.add_lambda(move |id| later.lock().unwrap().push(("later", id)));
    /// let _ = on_loaded
    ///     .subscribe()
    ///     .priority(10)
    ///     .once()
    ///     .add_lambda(move |id| first.lock().unwrap().push(("first, once", id)));
    /// // A self-aware subscriber receives its own subscription first.
    /// let _ = on_loaded.subscribe().self_aware().add_lambda(|this, id| {
    ///     if id == 2 {
    ///         this.remove();
    ///     }
    /// });
    /// on_loaded.broadcast(1);
    /// on_loaded.broadcast(2);
    /// assert_eq!(*log.lock().unwrap(), [("first, once", 1), ("later", 1), ("later", 2)]);
    /// assert_eq!(on_loaded.len(), 1);
    /// ```
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'_, Self> {
        Subscribe::new(self)
    }

    /// A bind-only view (B1): it adds and removes subscriptions, and cannot broadcast or clear.
    /// Hand it out where others subscribe; keep the delegate where it fires.
    pub fn registration(&self) -> SyncRegistration<'_, F> {
        SyncRegistration(self)
    }

    /// Adds `callable` with `options`: the building block of every plain finish. O(n) (the new
    /// list is a copy, sorted by priority), and entries whose owner was dropped go with the
    /// copy (M9).
    #[track_caller]
    fn insert(&self, options: Options<'_>, making: Making, callable: Box<F>) -> DelegateHandle {
        self.insert_entry(
            options,
            making,
            DelegateHandle::new_unique(),
            false,
            callable,
        )
    }

    /// Adds an entry made by `make` from its own subscription (X6): the building block of the
    /// self-aware finishes. As [`insert`](Self::insert), plus the subscription's weak
    /// reference (only self-aware adds make one).
    #[track_caller]
    fn insert_self_aware(
        &self,
        options: Options<'_>,
        making: Making,
        make: impl FnOnce(SyncThisSubscription) -> Box<F>,
    ) -> DelegateHandle {
        let handle = DelegateHandle::new_unique();
        let control: std::sync::Arc<dyn Control> = self.shared.clone();
        let callable = make(SyncThisSubscription {
            handle,
            shared: std::sync::Arc::downgrade(&control),
        });
        self.insert_entry(options, making, handle, true, callable)
    }

    /// Adds the entry of `handle`; what [`insert`](Self::insert) and
    /// [`insert_self_aware`](Self::insert_self_aware) share.
    #[track_caller]
    fn insert_entry(
        &self,
        options: Options<'_>,
        making: Making,
        handle: DelegateHandle,
        self_aware: bool,
        callable: Box<F>,
    ) -> DelegateHandle {
        // One atomic load while no module is loaded.
        let origin = Origin::of(&*callable);
        if origin.while_loaded() && !self.shared.swept.swap(true, Ordering::AcqRel) {
            let shared: std::sync::Arc<dyn Sweep> = self.shared.clone();
            track::add_sweeper(std::sync::Arc::downgrade(&shared));
        }
        let priority = options.priority;
        let entry = Arc::new(Entry {
            id: handle.id(),
            priority,
            once: options.once,
            self_aware,
            site: crate::bind_site::intern(Location::caller()),
            state: AtomicU32::new(u32::from(options.muted)),
            queued: making.queued,
            origin,
            owner: making.owner,
            callable,
        });
        self.shared.update(move |entries| {
            let at = entries.partition_point(|other| other.priority >= priority);
            let mut entry = Some(entry);
            let mut new = Vec::with_capacity(entries.len() + 1);
            for (index, old) in entries.iter().enumerate() {
                if index == at {
                    new.extend(entry.take());
                }
                if old.owner_dropped() {
                    // Never called again (its callable upgrades the owner): it goes now (M9).
                    old.mark_removed();
                } else {
                    new.push(Arc::clone(old));
                }
            }
            new.extend(entry.take());
            new
        });
        handle
    }

    /// Adds a boxed callable (see [`add_lambda`](SyncMulticastDelegate::add_lambda)); with
    /// options through [`subscribe`](Self::subscribe). O(n).
    #[track_caller]
    pub fn add_boxed(&self, callable: Box<F>) -> DelegateHandle
    where
        F: Send + Sync,
    {
        self.subscribe().add_boxed(callable)
    }

    /// Removes the subscription of `handle`; whether it was there. Once this returns, no call
    /// of it starts on any thread (TS2); one already running may finish. Callable from inside
    /// any subscriber, its own included. O(n).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.shared.remove(handle.id())
    }

    /// Removes every subscription; as [`remove`](Self::remove) for each. O(n).
    pub fn clear(&self) {
        self.shared.update(|entries| {
            for entry in entries {
                entry.mark_removed();
            }
            Vec::new()
        });
    }

    /// Blocks the subscription of `handle` (X4, A2): it keeps its place and is skipped until
    /// every block is undone. Blocks are counted, so they nest. Whether it is subscribed. O(n).
    pub fn block(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.shared.block(handle.id())
    }

    /// Undoes one [`block`](Self::block); whether it is subscribed and was blocked. O(n).
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.shared.unblock(handle.id())
    }

    /// A guard that blocks `handle`'s subscription until it is dropped (`Send`, nests).
    #[must_use = "the block ends when the guard is dropped: `let _guard = ...`, not `let _ = ...`"]
    pub fn block_scoped(&self, handle: DelegateHandle) -> SyncScopedBlock<'_, F> {
        let blocked = self.block(handle);
        SyncScopedBlock {
            delegate: self,
            handle: if blocked {
                handle
            } else {
                DelegateHandle::INVALID
            },
        }
    }

    /// Whether `handle`'s subscription is present. O(n).
    pub fn contains(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.shared.contains(handle.id())
    }

    /// The number of subscriptions. O(1).
    pub fn len(&self) -> usize {
        self.shared.snapshot().len()
    }

    /// Whether there is no subscription. O(1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether there is a subscription (the game-thread delegate's name for `!is_empty`).
    pub fn is_bound(&self) -> bool {
        !self.is_empty()
    }

    /// Every subscription, in call order, with its bind site (B5) and its owner's state (M9).
    /// O(n).
    pub fn subscriptions(&self) -> Vec<Subscription> {
        self.shared
            .snapshot()
            .iter()
            .map(|entry| Subscription {
                handle: DelegateHandle::from_id(entry.id),
                bind_site: crate::bind_site::location(entry.site),
                owner: match &entry.owner {
                    None => OwnerState::NoOwner,
                    Some(_) if entry.owner_dropped() => OwnerState::Dropped,
                    Some(_) => OwnerState::Alive,
                },
                priority: entry.priority,
                muted: entry.state.load(Ordering::Acquire) & BLOCKS != 0,
                one_shot: entry.once,
                self_aware: entry.self_aware,
            })
            .collect()
    }

    /// Mutes the whole delegate until the guard is dropped (A2, Qt's `QSignalBlocker`): a
    /// broadcast that starts while a mute is in force, on any thread, calls nobody; one already
    /// running finishes. Mutes are counted: guards nest and may drop in any order, on any
    /// thread (the guard is `Send`). Subscribing, removing and blocking go on as usual. O(1).
    ///
    /// ```
    /// use lumina::SyncMulticastDelegate;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// let on_saved: SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> = SyncMulticastDelegate::new();
    /// let heard = Arc::new(AtomicU32::new(0));
    /// let sink = Arc::clone(&heard);
    /// let _ = on_saved.add_lambda(move |slot| {
    ///     sink.fetch_add(slot, Ordering::Relaxed);
    /// });
    /// {
    ///     let _muted = on_saved.mute();
    ///     assert!(on_saved.is_muted());
    ///     on_saved.broadcast(1); // nobody hears it
    /// }
    /// on_saved.broadcast(2);
    /// assert_eq!(heard.load(Ordering::Relaxed), 2);
    /// ```
    #[must_use = "dropping the guard unmutes the delegate at once: bind it, `let _muted = ...`, for as long as the delegate stays muted"]
    pub fn mute(&self) -> SyncScopedMute {
        self.shared.mute(true);
        let shared: std::sync::Arc<dyn Control> = self.shared.clone();
        SyncScopedMute {
            shared: std::sync::Arc::downgrade(&shared),
        }
    }

    /// Whether a [`mute`](Self::mute) is in force. O(1).
    pub fn is_muted(&self) -> bool {
        self.shared.is_muted()
    }

    /// A guard that removes `handle`'s subscription when dropped; `Send`, so a worker may own
    /// it.
    #[must_use = "the subscription ends when the guard is dropped: `let _guard = ...`, not \
                  `let _ = ...` (which ends it at once)"]
    pub fn scoped(&self, handle: DelegateHandle) -> SyncScopedSubscription
    where
        F: Send + Sync,
    {
        let shared: std::sync::Arc<dyn Control> = self.shared.clone();
        SyncScopedSubscription {
            shared: std::sync::Arc::downgrade(&shared),
            handle,
        }
    }

    /// Calls `call` on every subscriber whose call starts (live, not blocked, a one-shot
    /// claimed), in order, on the list as it was when this began; removes the one-shots it
    /// called.
    #[inline(always)]
    fn each(&self, mut call: impl FnMut(&F), span: impl FnOnce() -> crate::trace::Span) {
        // Guarded: if a subscriber panics and a change replaced the list meanwhile, this may be
        // its last reference, and the callables it drops then are user code dropped while the
        // thread unwinds (R2).
        let _span = span();
        if self.shared.is_muted() {
            return;
        }
        let list = Guarded::new(self.shared.snapshot());
        let mut once = false;
        for entry in list.iter() {
            if entry.start() {
                once |= entry.once;
                let _call = crate::trace::subscriber(entry.site);
                call(&entry.callable);
            }
        }
        if once {
            self.remove_claimed(&list);
        }
        drop_user(list.into_inner());
    }

    /// Not public API; used by the expansion of `declare_multicast_delegate!(sync ...)`, as
    /// `__private::broadcast_with` is by a game-thread declared delegate's: calls `call` with
    /// every subscriber whose call starts and the arguments, which it keeps under a guard while
    /// subscribers run and drops afterwards (R2). `call` clones the arguments for the subscriber
    /// (the expansion spans each clone at the parameter's type, so a parameter that is not
    /// `Clone` is one error there). `D` is the declared delegate's type, which names the trace
    /// span (V2; zero-sized without the feature `trace`).
    #[doc(hidden)]
    #[inline(always)]
    pub fn broadcast_with<D: ?Sized, Args>(
        &self,
        _declared: std::marker::PhantomData<D>,
        args: Args,
        call: impl FnMut(&F, &Args),
    ) {
        self.broadcast_traced(args, call, crate::trace::broadcast_declared::<D>);
    }

    /// Calls `call` with every subscriber whose call starts and the arguments, kept under a
    /// guard meanwhile (R2), in a trace span that `span` makes: `broadcast` (named by `F`) and
    /// [`broadcast_with`](Self::broadcast_with) (named by the declared type).
    #[inline(always)]
    fn broadcast_traced<Args>(
        &self,
        args: Args,
        mut call: impl FnMut(&F, &Args),
        span: impl FnOnce() -> crate::trace::Span,
    ) {
        // The originals are user values: dropped under the guard if a subscriber panics (R2).
        let args = Guarded::new(args);
        self.each(|f| call(f, &args), span);
        drop_user(args.into_inner());
    }

    /// Takes the one-shot entries of `list` that were called out of the current list.
    #[cold]
    fn remove_claimed(&self, list: &[Arc<Entry<F>>]) {
        for entry in list {
            if entry.once && entry.state.load(Ordering::Acquire) & CLAIMED != 0 {
                self.shared.remove(entry.id);
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod module_reentry_tests;
#[cfg(all(test, not(loom)))]
mod module_tests;
