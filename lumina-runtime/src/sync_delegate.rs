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
//!   current list (without a lock: `arc-swap`'s load) and walks it with no lock held. So a subscriber may add, remove, clear and broadcast (this delegate or
//!   another) from inside its call on any thread, and two threads that broadcast each other's
//!   delegates from their subscribers (the crossed case) never deadlock. Concurrent broadcasts
//!   run in parallel; a broadcast never allocates. Subscribers added during a broadcast are not
//!   called by it (M2): it walks the list it began with.
//! - **Costs.** `broadcast`: O(n) in the subscribers, and no lock. `add_*`, `remove`, `block`:
//!   O(n) (the new list is a copy, sorted by priority); `clear`: O(n).
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

use std::any::Any;
use std::fmt;
use std::panic::Location;

#[cfg(loom)]
use loom::sync::{
    Arc, Mutex,
    atomic::{AtomicU32, Ordering},
};
#[cfg(not(loom))]
use std::sync::{
    Arc, Mutex, PoisonError,
    atomic::{AtomicU32, Ordering},
};

use crate::bind_site::{OwnerState, Subscription};
use crate::drops::{Guarded, drop_user};
use crate::handle::DelegateHandle;
use crate::subscribe::{Options, Plain, PlainFinish, SelfAware, Subscribe, TakesPlainFunction};
use crate::track::{self, Origin, Sweep};

/// The entry was removed: no call of it starts any more.
const REMOVED: u32 = 1 << 31;
/// A one-shot entry whose call was claimed by a broadcast.
const CLAIMED: u32 = 1 << 30;
/// The block count's bits (a subscription's blocks nest, A2).
const BLOCKS: u32 = CLAIMED - 1;

/// One subscription, shared by every list version that holds it.
struct Entry<F: ?Sized> {
    id: u64,
    priority: i32,
    once: bool,
    site: u32,
    /// [`REMOVED`], [`CLAIMED`] and the block count.
    state: AtomicU32,
    /// A queued subscription's (TS4) flag, shared with the tasks its calls queued: cleared by
    /// the removal, so a task that runs after it calls nothing (TS2).
    queued: Option<Arc<AtomicU32>>,
    /// Whose it is, for a game module's unload (TS5).
    origin: Origin,
    /// A member binding's owner, held weakly (M9): its state in the listing; an entry whose
    /// owner was dropped is never called (the callable upgrades it) and goes at the next change.
    owner: Option<std::sync::Weak<dyn Any + Send + Sync>>,
    callable: Box<F>,
}

impl<F: ?Sized> Entry<F> {
    /// Whether this is a member binding whose owner was dropped (M9).
    fn owner_dropped(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|owner| owner.strong_count() == 0)
    }

    /// Marks the entry removed (under the list's lock); whether this call did.
    fn mark_removed(&self) -> bool {
        if let Some(queued) = &self.queued {
            queued.store(0, Ordering::Release);
        }
        self.state.fetch_or(REMOVED, Ordering::AcqRel) & REMOVED == 0
    }

    /// Whether a call of this entry may start now; for a one-shot entry, claims it (only one
    /// broadcast, on any thread, wins the claim).
    #[inline(always)]
    fn start(&self) -> bool {
        let state = self.state.load(Ordering::Acquire);
        if state != 0 {
            return false;
        }
        !self.once
            || self
                .state
                .compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }
}

/// One version of the list, in call order (priority descending, then subscription order).
type List<F> = Arc<Vec<Arc<Entry<F>>>>;

/// What a delegate shares with its guards.
struct Shared<F: ?Sized> {
    /// The current version. Replaced, never changed in place, by every change. A broadcast
    /// loads it without a lock: `arc-swap`'s load borrows the current `Arc` through a slot of the
    /// calling thread (no write to a shared cache line in the common case), which is what keeps
    /// a broadcast to one subscriber within a few nanoseconds of the game-thread delegate's.
    #[cfg(not(loom))]
    list: arc_swap::ArcSwap<Vec<Arc<Entry<F>>>>,
    /// Under loom, the same protocol with the list behind a mutex (loom checks every
    /// interleaving of it; `arc-swap` is not instrumented for loom).
    #[cfg(loom)]
    list: Mutex<List<F>>,
    /// Serializes changes, so that no copy-on-write loses another's update. Never held while
    /// user code runs (a replaced list's callables are dropped after it is released).
    #[cfg(not(loom))]
    writer: Mutex<()>,
    /// Whether the module loader knows this delegate (TS5): registered, weakly, with the
    /// first subscription made while a module is loaded. Not part of the protocol (std's).
    swept: std::sync::atomic::AtomicBool,
}

impl<F: ?Sized> Shared<F> {
    fn new() -> Self {
        Shared {
            #[cfg(not(loom))]
            list: arc_swap::ArcSwap::from_pointee(Vec::new()),
            #[cfg(loom)]
            list: Mutex::new(Arc::new(Vec::new())),
            #[cfg(not(loom))]
            writer: Mutex::new(()),
            swept: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The current list, for a broadcast or a listing.
    #[cfg(not(loom))]
    #[inline(always)]
    fn snapshot(&self) -> arc_swap::Guard<List<F>> {
        self.list.load()
    }

    /// The current list, for a broadcast or a listing.
    #[cfg(loom)]
    #[inline(always)]
    fn snapshot(&self) -> List<F> {
        Arc::clone(&self.list.lock().unwrap())
    }

    /// Runs `f` on the current list with changes held off (it must run no user code).
    fn read<R>(&self, f: impl FnOnce(&[Arc<Entry<F>>]) -> R) -> R {
        #[cfg(not(loom))]
        {
            let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            f(&self.list.load())
        }
        #[cfg(loom)]
        {
            f(&self.list.lock().unwrap())
        }
    }

    /// Replaces the list with `change(current)`; the old version is dropped after the lock is
    /// released (its last reference may drop callables: user code).
    fn update(&self, change: impl FnOnce(&[Arc<Entry<F>>]) -> Vec<Arc<Entry<F>>>) {
        #[cfg(not(loom))]
        let old = {
            // Poisoning cannot happen (no user code runs under the lock); if it did, the list
            // is consistent anyway.
            let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let new = Arc::new(change(&self.list.load()));
            self.list.swap(new)
        };
        #[cfg(loom)]
        let old = {
            let mut current = self.list.lock().unwrap();
            let new = Arc::new(change(&current));
            std::mem::replace(&mut *current, new)
        };
        // Its last reference drops the removed callables: user code, guarded if this change is
        // made from a `Drop` while the thread unwinds (R2).
        drop_user(old);
    }

    /// Runs `f` on the live entry `id`, under the list's lock (no user code); whether there
    /// was one. O(n).
    fn with_entry(&self, id: u64, f: impl FnOnce(&Entry<F>)) -> bool {
        self.read(|list| match list.iter().find(|entry| entry.id == id) {
            Some(entry) => {
                f(entry);
                true
            }
            None => false,
        })
    }

    /// Blocks `id` once more (counted); whether it is present.
    fn block(&self, id: u64) -> bool {
        self.with_entry(id, |entry| {
            entry.state.fetch_add(1, Ordering::AcqRel);
        })
    }

    /// Undoes one block of `id`; whether it is present and was blocked.
    fn unblock(&self, id: u64) -> bool {
        let mut undone = false;
        let found = self.with_entry(id, |entry| {
            undone = entry
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                    (state & BLOCKS != 0).then(|| state - 1)
                })
                .is_ok();
        });
        found && undone
    }

    /// Whether `id` is present.
    fn contains(&self, id: u64) -> bool {
        self.with_entry(id, |_| ())
    }

    /// Marks `id` removed and takes it out of the list; whether it was there.
    fn remove(&self, id: u64) -> bool {
        self.remove_where(|entry| entry.id == id) > 0
    }

    /// Marks every entry `hit` selects removed and takes them out of the list; how many this
    /// call removed. O(n).
    fn remove_where(&self, mut hit: impl FnMut(&Entry<F>) -> bool) -> usize {
        let mut removed = 0;
        self.update(|entries| {
            entries
                .iter()
                .filter(|entry| {
                    let hit = hit(entry);
                    // Under the lock: one removal wins, and after this no call starts (TS2).
                    if hit && entry.mark_removed() {
                        removed += 1;
                    }
                    !hit
                })
                .cloned()
                .collect()
        });
        removed
    }
}

/// TS5: a game module's unload removes the module's subscriptions (on the unloading thread; no
/// user code runs under the list's lock, the removed callables drop after it).
impl<F: ?Sized + Send + Sync> Sweep for Shared<F> {
    fn sweep(&self, module: u64) -> usize {
        self.remove_where(|entry| entry.origin.is_of(module))
    }
}

/// What a guard or a self-aware subscriber does to its subscription, type-erased (the
/// delegate's signature is not part of their types).
trait Control: Send + Sync {
    fn remove(&self, id: u64) -> bool;
    fn block(&self, id: u64) -> bool;
    fn unblock(&self, id: u64) -> bool;
    fn contains(&self, id: u64) -> bool;
}

impl<F: ?Sized + Send + Sync> Control for Shared<F> {
    fn remove(&self, id: u64) -> bool {
        Shared::remove(self, id)
    }

    fn block(&self, id: u64) -> bool {
        Shared::block(self, id)
    }

    fn unblock(&self, id: u64) -> bool {
        Shared::unblock(self, id)
    }

    fn contains(&self, id: u64) -> bool {
        Shared::contains(self, id)
    }
}

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

impl<F: ?Sized + 'static> Default for SyncMulticastDelegate<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: ?Sized + 'static> fmt::Debug for SyncMulticastDelegate<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncMulticastDelegate")
            .field("len", &self.len())
            .field("subscriptions", &self.subscriptions())
            .finish()
    }
}

impl<F: ?Sized + 'static> SyncMulticastDelegate<F> {
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

    /// Adds an entry made by `make` from its own subscription, with `options`: the building
    /// block of every finish. O(n) (the new list is a copy, sorted by priority), and entries
    /// whose owner was dropped go with the copy (M9).
    #[track_caller]
    fn insert(
        &self,
        options: Options<'_>,
        making: Making,
        make: impl FnOnce(SyncThisSubscription) -> Box<F>,
    ) -> DelegateHandle
    where
        F: Send + Sync,
    {
        let handle = DelegateHandle::new_unique();
        let control: std::sync::Arc<dyn Control> = self.shared.clone();
        let callable = make(SyncThisSubscription {
            handle,
            shared: std::sync::Arc::downgrade(&control),
        });
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
    pub fn scoped_block(&self, handle: DelegateHandle) -> SyncScopedBlock<'_, F> {
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
                self_aware: false,
            })
            .collect()
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

    /// Not public API; used by `broadcast` and by the expansion of
    /// `declare_multicast_delegate!(sync ...)`: calls `call` with every subscriber whose call
    /// starts and the arguments, which it keeps under a guard while subscribers run and drops
    /// afterwards (R2). `call` clones the arguments for the subscriber (the expansion spans each
    /// clone at the parameter's type, so a parameter that is not `Clone` is one error there).
    #[doc(hidden)]
    #[inline(always)]
    pub fn broadcast_with<Args>(&self, args: Args, call: impl FnMut(&F, &Args)) {
        self.broadcast_traced(args, call, crate::trace::broadcast::<F>);
    }

    /// Not public API; used by the expansion of `declare_multicast_delegate!(sync ...)`:
    /// [`broadcast_with`](Self::broadcast_with) whose trace span (V2) is named by `D`, the
    /// declared delegate's type (zero-sized without the feature `trace`).
    #[doc(hidden)]
    #[inline(always)]
    pub fn broadcast_declared<D: ?Sized, Args>(
        &self,
        _declared: std::marker::PhantomData<D>,
        args: Args,
        call: impl FnMut(&F, &Args),
    ) {
        self.broadcast_traced(args, call, crate::trace::broadcast_declared::<D>);
    }

    /// [`broadcast_with`](Self::broadcast_with) whose trace span `span` makes.
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

/// Removes a subscription of a [`SyncMulticastDelegate`] when dropped, on any thread.
pub struct SyncScopedSubscription {
    shared: std::sync::Weak<dyn Control>,
    handle: DelegateHandle,
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
/// [`scoped_block`](SyncMulticastDelegate::scoped_block)).
pub struct SyncScopedBlock<'a, F: ?Sized + 'static> {
    delegate: &'a SyncMulticastDelegate<F>,
    handle: DelegateHandle,
}

impl<F: ?Sized + 'static> fmt::Debug for SyncScopedBlock<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncScopedBlock")
            .field(&self.handle)
            .finish()
    }
}

impl<F: ?Sized + 'static> Drop for SyncScopedBlock<'_, F> {
    fn drop(&mut self) {
        if self.handle.is_valid() {
            self.delegate.unblock(self.handle);
        }
    }
}

/// What a finish adds to the builder's options for [`SyncMulticastDelegate::insert`].
#[derive(Default)]
struct Making {
    /// A queued subscription's (TS4) flag.
    queued: Option<Arc<AtomicU32>>,
    /// A member binding's owner (M9).
    owner: Option<std::sync::Weak<dyn Any + Send + Sync>>,
}

/// A self-aware subscriber's own subscription (X6), passed to its every call on any thread: it
/// can remove or block itself. Made by [`self_aware`](crate::Subscribe::self_aware) on a
/// [`SyncMulticastDelegate`]'s builder; `Send + Sync`, and it does not keep the delegate alive.
pub struct SyncThisSubscription {
    handle: DelegateHandle,
    shared: std::sync::Weak<dyn Control>,
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
pub struct SyncRegistration<'a, F: ?Sized + 'static>(&'a SyncMulticastDelegate<F>);

impl<F: ?Sized + 'static> Clone for SyncRegistration<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: ?Sized + 'static> Copy for SyncRegistration<'_, F> {}

impl<F: ?Sized + 'static> fmt::Debug for SyncRegistration<'_, F> {
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
        delegate.insert(options, Making::default(), |_| callable)
    }
}

macro_rules! impl_sync_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: 'static),*> SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync> {
            /// Adds a closure; returns its handle. With options (priority, one-shot, muted,
            /// self-aware) through [`subscribe`](Self::subscribe). O(n).
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                self.subscribe().add_lambda(f)
            }

            /// Adds a plain function. O(n).
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*)) -> DelegateHandle {
                self.subscribe().add_static(f)
            }

            /// Adds a method of `owner`, held weakly (M9): once the owner is dropped it is not
            /// called, the listing shows it [`Dropped`](OwnerState::Dropped), and it goes at the
            /// delegate's next change. O(n).
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                &self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                self.subscribe().add_member(owner, method)
            }

            /// A queued subscription (TS4, Qt's queued connection): each broadcast, from any
            /// thread, clones its arguments into a task that calls `f` on the game thread at the
            /// next [`process_queue`](crate::main_thread::process_queue). Removed before that
            /// drain, the subscription's queued calls do not run (TS2). `f` need only be `Send`.
            #[track_caller]
            pub fn add_queued(&self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
            {
                self.subscribe().add_queued(f)
            }

            /// Calls every subscriber present when the broadcast starts, in priority order,
            /// each with its own clone of the arguments. From any thread, also from inside a
            /// subscriber; never allocates (a one-shot's removal aside); holds no lock while
            /// a subscriber runs (TS3).
            pub fn broadcast(&self, $($arg: $Arg),*)
            where
                $($Arg: Clone,)*
            {
                self.broadcast_with(($($arg,)*), |f, ($($arg,)*)| f($($arg.clone()),*));
            }
        }

        impl<'a, $($Arg: 'static),*> SyncRegistration<'a, dyn Fn($($Arg),*) + Send + Sync> {
            /// [`SyncMulticastDelegate::add_lambda`].
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                self.0.add_lambda(f)
            }

            /// [`SyncMulticastDelegate::add_static`].
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*)) -> DelegateHandle {
                self.0.add_static(f)
            }

            /// [`SyncMulticastDelegate::add_member`].
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                &self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                self.0.add_member(owner, method)
            }

            /// [`SyncMulticastDelegate::add_queued`].
            #[track_caller]
            pub fn add_queued(&self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
            {
                self.0.add_queued(f)
            }
        }

        impl<$($Arg: 'static),*> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, Plain> {
            /// Finishes with a closure: [`add_lambda`](SyncMulticastDelegate#method.add_lambda)
            /// with the options. O(n).
            #[track_caller]
            pub fn add_lambda(self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                let (delegate, options) = self.parts();
                delegate.insert(options, Making::default(), |_| Box::new(f))
            }

            /// Finishes with a method of `owner`, held weakly (M9):
            /// [`add_member`](SyncMulticastDelegate#method.add_member) with the options.
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                let weak = std::sync::Arc::downgrade(owner);
                let probe: std::sync::Weak<dyn Any + Send + Sync> = weak.clone();
                let making = Making { owner: Some(probe), ..Making::default() };
                delegate.insert(options, making, |_| Box::new(move |$($arg: $Arg),*| {
                    if let Some(owner) = weak.upgrade() {
                        method(&owner, $($arg),*);
                    }
                }))
            }

        }

        impl<$($Arg: 'static,)* M> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, M> {
            /// Finishes with a queued subscription (TS4):
            /// [`add_queued`](SyncMulticastDelegate#method.add_queued) with the options (a
            /// one-shot queues one call; a muted one queues nothing until unblocked).
            #[track_caller]
            pub fn add_queued(self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
                M: PlainFinish,
            {
                let (delegate, options) = self.parts();
                let f = std::sync::Arc::new(std::sync::Mutex::new(f));
                let live = Arc::new(AtomicU32::new(1));
                let making = Making { queued: Some(Arc::clone(&live)), ..Making::default() };
                delegate.insert(options, making, |_| Box::new(move |$($arg: $Arg),*| {
                    let f = std::sync::Arc::clone(&f);
                    let live = Arc::clone(&live);
                    crate::main_thread::enqueue(move || {
                        if live.load(Ordering::Acquire) != 0 {
                            let f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            f($($arg),*);
                        }
                    });
                }))
            }

            /// Finishes with a plain function:
            /// [`add_static`](SyncMulticastDelegate#method.add_static) with the options. Not
            /// after `.self_aware()` (a `fn` cannot take its subscription).
            #[track_caller]
            pub fn add_static(self, f: fn($($Arg),*)) -> DelegateHandle
            where
                M: TakesPlainFunction,
            {
                let (delegate, options) = self.parts();
                delegate.insert(options, Making::default(), |_| Box::new(f))
            }
        }

        impl<$($Arg: 'static),*> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, SelfAware> {
            /// Finishes with a closure that receives its own subscription first (X6).
            #[track_caller]
            pub fn add_lambda(
                self,
                f: impl Fn(&SyncThisSubscription, $($Arg),*) + Send + Sync + 'static,
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                delegate.insert(options, Making::default(), |this| Box::new(move |$($arg: $Arg),*| f(&this, $($arg),*)))
            }

            /// Finishes with a method of `owner` (held weakly, M9) that receives its own
            /// subscription after the owner (X6).
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, &SyncThisSubscription, $($Arg),*),
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                let weak = std::sync::Arc::downgrade(owner);
                let probe: std::sync::Weak<dyn Any + Send + Sync> = weak.clone();
                let making = Making { owner: Some(probe), ..Making::default() };
                delegate.insert(options, making, |this| Box::new(move |$($arg: $Arg),*| {
                    if let Some(owner) = weak.upgrade() {
                        method(&owner, &this, $($arg),*);
                    }
                }))
            }
        }
    };
}

impl_sync_arity!();
impl_sync_arity!(a: A);
impl_sync_arity!(a: A, b: B);
impl_sync_arity!(a: A, b: B, c: C);
impl_sync_arity!(a: A, b: B, c: C, d: D);

/// The protocol under loom (TS6): every interleaving of small models. Run with
/// `RUSTFLAGS="--cfg loom" cargo test -p lumina-notify-runtime --lib --release sync_delegate::loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::SyncMulticastDelegate;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicU32, Ordering};
    use loom::thread;

    type D = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

    /// Two threads add at once: neither add is lost (copy-on-write under the lock).
    #[test]
    fn ts3_concurrent_adds_are_both_kept() {
        loom::model(|| {
            let delegate = Arc::new(D::new());
            let calls = Arc::new(AtomicU32::new(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let delegate = Arc::clone(&delegate);
                    let calls = Arc::clone(&calls);
                    thread::spawn(move || {
                        let _ = delegate.add_lambda(move |_| {
                            calls.fetch_add(1, Ordering::Relaxed);
                        });
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            delegate.broadcast(1);
            assert_eq!(calls.load(Ordering::Relaxed), 2);
        });
    }

    /// Two broadcasts race for a one-shot subscriber: exactly one calls it, and it is gone.
    #[test]
    fn x3_ts2_a_one_shot_runs_once_across_threads() {
        loom::model(|| {
            let delegate = Arc::new(D::new());
            let calls = Arc::new(AtomicU32::new(0));
            let counter = Arc::clone(&calls);
            let _ = delegate.subscribe().once().add_lambda(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
            });
            let other = {
                let delegate = Arc::clone(&delegate);
                thread::spawn(move || delegate.broadcast(1))
            };
            delegate.broadcast(2);
            other.join().unwrap();
            assert_eq!(calls.load(Ordering::Relaxed), 1);
            assert!(delegate.is_empty());
        });
    }

    /// A removal racing a broadcast: the racing broadcast calls the subscriber at most once
    /// (a call it started before the removal may finish), and a broadcast that starts after the
    /// removal returned never calls it (TS2).
    #[test]
    fn ts2_a_call_never_starts_after_the_removal_returned() {
        loom::model(|| {
            let delegate = Arc::new(D::new());
            // Calls by value: 1 from the racing broadcast, 2 from the one after the removal.
            let calls = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
            let counter = Arc::clone(&calls);
            let handle = delegate.add_lambda(move |value| {
                counter[value as usize - 1].fetch_add(1, Ordering::Relaxed);
            });
            let broadcaster = {
                let delegate = Arc::clone(&delegate);
                thread::spawn(move || delegate.broadcast(1))
            };
            assert!(delegate.remove(handle));
            delegate.broadcast(2);
            broadcaster.join().unwrap();
            assert_eq!(calls[1].load(Ordering::Relaxed), 0);
            assert!(calls[0].load(Ordering::Relaxed) <= 1);
        });
    }

    /// A clear racing an add: afterwards the list and what a broadcast calls agree.
    #[test]
    fn ts2_clear_racing_an_add_leaves_a_consistent_list() {
        loom::model(|| {
            let delegate = Arc::new(D::new());
            let calls = Arc::new(AtomicU32::new(0));
            let adder = {
                let delegate = Arc::clone(&delegate);
                let calls = Arc::clone(&calls);
                thread::spawn(move || {
                    let _ = delegate.add_lambda(move |_| {
                        calls.fetch_add(1, Ordering::Relaxed);
                    });
                })
            };
            delegate.clear();
            adder.join().unwrap();
            let len = delegate.len();
            delegate.broadcast(1);
            assert_eq!(calls.load(Ordering::Relaxed) as usize, len);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod module_tests {
    use super::SyncMulticastDelegate;
    use crate::track::{self, Running, add_range, code_of, remove_range};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

    fn counter(calls: &Arc<AtomicU32>) -> Box<dyn Fn(u32) + Send + Sync> {
        let calls = Arc::clone(calls);
        Box::new(move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
        })
    }

    /// TS5: a module's subscriptions, by their code or made while the module ran on another
    /// thread (MB6), go at its unload; the engine's stay; no call of them starts afterwards on
    /// any thread.
    #[test]
    fn ts5_a_modules_subscriptions_to_a_thread_safe_delegate_go_at_its_unload() {
        const FAKE: u64 = u64::MAX - 135;
        // Some module must be loaded for origins to be taken; a range no code word falls in (the
        // values of tests running in parallel are not the fake module's).
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        let delegate = Arc::new(OnValue::new());
        let (module_calls, engine_calls, ran_calls) =
            (Arc::default(), Arc::default(), Arc::default());
        // The module's own closure: its vtable is attributed to the fake module's library.
        let theirs = {
            let calls: &Arc<AtomicU32> = &module_calls;
            let calls = Arc::clone(calls);
            Box::new(move |value: u32| {
                calls.fetch_add(value, Ordering::SeqCst);
            }) as Box<dyn Fn(u32) + Send + Sync>
        };
        let vtable = code_of(&*theirs).expect("a module is loaded").vtable();
        add_range(FAKE, vtable, vtable + 1);
        let _ = delegate.add_boxed(theirs);
        let _ = delegate.add_boxed(counter(&engine_calls));
        // Engine-typed code subscribed on a worker while the module's code runs there.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _frame = track::enter(FAKE, Running::Task);
                let _ = delegate
                    .subscribe()
                    .priority(1)
                    .add_boxed(counter(&ran_calls));
            });
        });
        assert_eq!(delegate.len(), 3);
        let swept = track::sweep(FAKE);
        remove_range(FAKE);
        assert_eq!(
            swept, 2,
            "the module's closure and what it subscribed while it ran"
        );
        assert_eq!(delegate.len(), 1);
        let worker = {
            let delegate = Arc::clone(&delegate);
            std::thread::spawn(move || delegate.broadcast(1))
        };
        worker.join().unwrap();
        delegate.broadcast(1);
        assert_eq!(module_calls.load(Ordering::SeqCst), 0);
        assert_eq!(ran_calls.load(Ordering::SeqCst), 0);
        assert_eq!(engine_calls.load(Ordering::SeqCst), 2);
    }
}

#[cfg(all(test, not(loom)))]
mod module_reentry_tests {
    use super::SyncMulticastDelegate;
    use crate::track::{self, add_range, code_of, remove_range};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

    /// Re-enters the delegate from its `Drop`: adds a subscriber and clears.
    struct Reenter(Arc<OnValue>, Arc<AtomicU32>);

    impl Drop for Reenter {
        fn drop(&mut self) {
            let calls = Arc::clone(&self.1);
            let _ = self.0.add_boxed(Box::new(move |_| {
                calls.fetch_add(1, Ordering::SeqCst);
            }));
        }
    }

    /// M13, TS5: the unload's sweep drops a module's callable after the list's lock is
    /// released, so its capture's `Drop` may subscribe to the same delegate (no deadlock, no
    /// lost subscription).
    #[test]
    fn m13_ts5_a_swept_captures_drop_may_reenter_the_delegate() {
        const FAKE: u64 = u64::MAX - 136;
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        let delegate = Arc::new(OnValue::new());
        let added_calls = Arc::new(AtomicU32::new(0));
        let reenter = Reenter(Arc::clone(&delegate), Arc::clone(&added_calls));
        let theirs = Box::new(move |_: u32| {
            let _keep = &reenter;
        }) as Box<dyn Fn(u32) + Send + Sync>;
        let vtable = code_of(&*theirs).expect("a module is loaded").vtable();
        add_range(FAKE, vtable, vtable + 1);
        let _ = delegate.add_boxed(theirs);
        let swept = track::sweep(FAKE);
        remove_range(FAKE);
        assert_eq!(swept, 1);
        assert_eq!(delegate.len(), 1, "the subscriber the Drop added stays");
        delegate.broadcast(1);
        assert_eq!(added_calls.load(Ordering::SeqCst), 1);
    }
}
