//! The invocation list: the one piece of machinery behind multicast delegates, script delegates
//! and the event processor.
//!
//! An [`InvocationList`] holds subscribers (any cheaply clonable callable `C`, typically an
//! `Rc<dyn Fn(..)>`) in dispatch order, each with its [`DelegateHandle`], an optional weak owner
//! and a priority. It implements the whole reentrancy contract of DESIGN.md once:
//!
//! - M1: subscribers run in order (priority first, highest first; then the order they were added),
//!   once each per broadcast.
//! - M2: a broadcast runs only the subscribers present when it started. While any broadcast
//!   runs, the main list is frozen in shape: subscribers added go to a *pending* list, merged
//!   into the main one when the outermost broadcast ends. A [`Broadcast`] remembers
//!   [`DelegateHandle::next_id`] when it starts, so a nested broadcast runs the pending
//!   subscribers added before it started (merged in order) and skips those added after.
//! - M3/M4: removal and clearing while a broadcast runs mark the entry removed (a *tombstone*),
//!   so nothing not yet reached runs, and drop its callable at once, unless the callable is
//!   running (a broadcast loop records the entry it calls): then it stays in place until the
//!   outermost broadcast ends, so the running subscriber finishes safely. Outside a broadcast a
//!   removed callable is dropped at once.
//! - M5: the lock count nests; the list is compacted once, when the outermost broadcast ends.
//! - M7: the lock is a guard, released (and the list compacted) even when a subscriber panics.
//! - M9: an entry with a weak owner whose owner died is never returned again and is pruned.
//! - M12: beginning and walking a broadcast never allocates; removal by handle is a binary
//!   search while handles are in order (always, for lists without priorities).
//!
//! Every method takes `&self`: subscribers re-enter the list through a shared reference. The main
//! list is borrowed mutably only while no broadcast runs, and never across user code (removed
//! callables are dropped after the borrow ends); while a broadcast runs it is only read, and the
//! pending list is only borrowed briefly. So re-entrancy cannot hit a borrow panic, and
//! [`broadcast_with`](InvocationList::broadcast_with) walks the list on the strength of its lock
//! alone: no `RefCell` borrow, no clone of a subscriber, one store per call to record which one
//! runs. Beginning and ending a broadcast is one state word (lock count and "needs settling"
//! flags) read and written (see BENCHMARKS.md for what each of these bought).
//!
//! ```
//! use lumina::invocation::InvocationList;
//! use std::rc::Rc;
//!
//! let list: Rc<InvocationList<Rc<dyn Fn(&str)>>> = Rc::new(InvocationList::new());
//! let inner = Rc::clone(&list);
//! let _first = list.add(Rc::new(move |name: &str| {
//!     // Added during the broadcast: runs from the next broadcast on (M2).
//!     let _later = inner.add(Rc::new(|name: &str| println!("late {name}")));
//!     println!("first {name}");
//! }));
//! for callable in list.begin() {
//!     callable("tick");
//! }
//! assert_eq!(list.len(), 2);
//! ```

use std::any::Any;
use std::cell::{Cell, Ref, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};

use crate::handle::DelegateHandle;

/// [`Entry::state`] bit: removed (a tombstone).
const REMOVED: u8 = 1;
/// [`Entry::state`] bit: has a weak owner, whose death also ends the subscription (M9).
const OWNED: u8 = 2;
/// [`Entry::state`] bit: an enclosing broadcast loop is calling this entry's callable, while a
/// loop nested in that call has taken over [`InvocationList::running`] (see [`LoopScope`]).
const RUNNING_OUTER: u8 = 4;

/// [`InvocationList::state`] bit: tombstones or pending subscribers wait for the end of the
/// outermost broadcast (then it settles the list).
const NEEDS_SETTLE: u32 = 1;
/// [`InvocationList::state`] bit: subscribers added during a broadcast wait in `pending`.
/// Always set together with [`NEEDS_SETTLE`].
const HAS_PENDING: u32 = 2;
/// One running broadcast in [`InvocationList::state`]: the lock count is `state / LOCK_ONE`.
const LOCK_ONE: u32 = 4;

/// One subscriber.
///
/// A removed entry is a *tombstone*, waiting for compaction: its state has [`REMOVED`] and its
/// `slot` is emptied, dropping the callable at once, unless the callable is running right now
/// (a broadcast loop records it in [`InvocationList::running`] while it calls it, and a
/// [`Broadcast`] borrows the slot while it clones it): then it stays until the outermost
/// broadcast ends (M4). So an empty slot always has [`REMOVED`] set.
struct Entry<C> {
    id: u64,
    priority: i32,
    /// [`REMOVED`] | [`OWNED`] | [`RUNNING_OUTER`]: 0 for a live entry without owner that no
    /// enclosing loop is running, so the broadcast loop checks liveness with one byte compare.
    state: Cell<u8>,
    /// Read without a borrow by the broadcast loops while they record this entry as running;
    /// borrowed by a [`Broadcast`] while it clones the callable.
    slot: RefCell<Option<C>>,
    owner: Option<Weak<dyn Any>>,
}

impl<C> Entry<C> {
    fn new(id: u64, priority: i32, owner: Option<Weak<dyn Any>>, callable: C) -> Self {
        Entry {
            id,
            priority,
            state: Cell::new(if owner.is_some() { OWNED } else { 0 }),
            slot: RefCell::new(Some(callable)),
            owner,
        }
    }

    fn is_removed(&self) -> bool {
        self.state.get() & REMOVED != 0
    }

    fn mark_removed(&self) {
        self.state.set(self.state.get() | REMOVED);
    }

    /// Marks the entry removed and empties its slot.
    fn take(&mut self) -> Option<C> {
        self.mark_removed();
        self.slot.get_mut().take()
    }

    /// A clone of the callable, if there is one and `filter` accepts it.
    fn cloned_if(&self, filter: impl FnOnce(&C) -> bool) -> Option<C>
    where
        C: Clone,
    {
        self.slot
            .borrow()
            .as_ref()
            .filter(|callable| filter(callable))
            .cloned()
    }

    fn has_callable(&mut self) -> bool {
        self.slot.get_mut().is_some()
    }

    /// The dispatch-order key: higher priority first, then ascending id (= order added).
    fn key(&self) -> (i64, u64) {
        (-i64::from(self.priority), self.id)
    }

    #[inline]
    fn owner_alive(&self) -> bool {
        self.owner
            .as_ref()
            .is_none_or(|owner| owner.strong_count() > 0)
    }

    /// Not removed (the owner may have died).
    #[inline]
    fn is_present(&self) -> bool {
        !self.is_removed()
    }

    #[inline]
    fn is_live(&self) -> bool {
        match self.state.get() & !RUNNING_OUTER {
            0 => true,
            OWNED => self.owner_alive(),
            _ => false,
        }
    }

    /// Whether the entry is live. A present entry whose owner died is pruned on the way (M9):
    /// marked removed, its callable dropped unless running.
    #[inline]
    fn live_or_prune(&self, list: &InvocationList<C>) -> bool {
        match self.state.get() & !RUNNING_OUTER {
            0 => true,
            OWNED if self.owner_alive() => true,
            OWNED => {
                list.prune(self);
                false
            }
            _ => false,
        }
    }

    /// Sets or clears [`RUNNING_OUTER`], leaving the other bits.
    fn set_running_outer(&self, running: bool) {
        let state = self.state.get() & !RUNNING_OUTER;
        self.state.set(if running {
            state | RUNNING_OUTER
        } else {
            state
        });
    }

    /// The callable of a live entry, read without a `RefCell` borrow: what the broadcast and
    /// dispatch loops call.
    ///
    /// # Safety
    ///
    /// The entry must not be removed (only removed entries have an empty slot: every path that
    /// empties one, `Entry::take`, `take_unless_running` and `settle`, marks the entry removed
    /// first), and no `RefMut` of the slot may exist or be taken while the reference lives. The
    /// only ones are taken in `take_unless_running` and `settle`, released before any user code
    /// runs; `settle` and every `&mut` path need the main list borrowed mutably, which the
    /// list's lock excludes. So the caller must hold the lock (a [`Locked`] or a [`Broadcast`])
    /// and either run no user code while the reference lives, or record the entry as running
    /// (`take_unless_running` checks `is_running` first).
    #[inline(always)]
    unsafe fn live_callable(&self) -> &C {
        // SAFETY: no `RefMut` of the slot exists while this shared reference lives (contract).
        let slot = unsafe { &*self.slot.as_ptr() };
        debug_assert!(slot.is_some(), "a live entry has its callable");
        // SAFETY: the entry is not removed (contract), so its slot holds its callable.
        unsafe { slot.as_ref().unwrap_unchecked() }
    }

    /// This entry's address, as [`InvocationList::running`] records it.
    #[inline(always)]
    fn addr(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    fn is_owned_by(&self, owner: *const ()) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|weak| Weak::as_ptr(weak).cast::<()>() == owner)
    }
}

/// A reentrancy-safe, ordered list of subscribers; see the [module documentation](self).
///
/// `C` is what a subscriber is (an `Rc<dyn Fn(..)>` for delegates, a handler reference for the
/// event processor, a native-or-managed listener for script delegates). [`broadcast_with`]
/// calls subscribers through a reference; the [`Broadcast`] iterator yields clones, so `C`
/// should be cheap to clone.
///
/// [`broadcast_with`]: InvocationList::broadcast_with
pub struct InvocationList<C> {
    /// Subscribers in dispatch order. Changed in shape (pushed, inserted, compacted) only while
    /// no broadcast runs, and never across user code. Cold paths borrow it; the broadcast loop
    /// ([`InvocationList::walk`]) reads it without a borrow on the strength of the lock (see
    /// there).
    entries: RefCell<Vec<Entry<C>>>,
    /// Subscribers added while a broadcast runs, in dispatch order; merged into `entries` when
    /// the outermost broadcast ends. Never borrowed across user code.
    pending: RefCell<Vec<Entry<C>>>,
    /// The lock count (how many broadcasts are running on this list; they nest) times
    /// [`LOCK_ONE`], plus [`NEEDS_SETTLE`] and [`HAS_PENDING`]: one word, so beginning a
    /// broadcast is one load, test and store, and ending one is one load, store and compare.
    state: Cell<u32>,
    /// Removed entries of `entries` waiting for compaction.
    tombstones: Cell<usize>,
    /// Whether ids ascend along `entries` (true until an insertion lands before the end), which
    /// allows removal by binary search.
    ids_ascending: Cell<bool>,
    /// The address of the entry whose callable the innermost running broadcast loop is calling
    /// (or just called); 0 when none. A removal meanwhile leaves that callable in place (M4).
    /// Entries that enclosing loops are calling carry [`RUNNING_OUTER`] instead (see
    /// [`LoopScope`]). An address, not a pointer: it is only compared, never dereferenced.
    running: Cell<usize>,
}

/// What a broadcast loop over `entries` sets up so that removals during its calls leave the
/// running callable in place (M4), and undoes when it ends (also while unwinding).
///
/// The loop records the entry it calls in [`InvocationList::running`] (one store per call). A
/// loop nested in a call (a subscriber re-broadcasting the same list) takes `running` over, so
/// the enclosing loop's entry is marked [`RUNNING_OUTER`] for the nested loop's duration and
/// both are restored when it ends. Loops nest on one thread (the list is !Sync), so scopes end
/// innermost first.
struct LoopScope<'a, C> {
    list: &'a InvocationList<C>,
    /// What `running` held when the loop began.
    outer: usize,
    /// The enclosing loop's entry, if this scope marked it (it was not marked already).
    marked: Option<&'a Entry<C>>,
}

impl<'a, C> LoopScope<'a, C> {
    /// Begins a loop over `entries`, the main list of `list` (held by a running broadcast).
    #[inline(always)]
    fn new(list: &'a InvocationList<C>, entries: &'a [Entry<C>]) -> Self {
        let outer = list.running.get();
        let marked = if outer == 0 {
            None
        } else {
            Self::mark_outer(entries, outer)
        };
        LoopScope {
            list,
            outer,
            marked,
        }
    }

    /// Marks the entry at address `outer` (in `entries`: the main list keeps its place while
    /// any broadcast runs) as running in an enclosing loop, unless it already is.
    #[cold]
    #[inline(never)]
    fn mark_outer(entries: &'a [Entry<C>], outer: usize) -> Option<&'a Entry<C>> {
        let offset = outer.wrapping_sub(entries.as_ptr().addr());
        let entry = entries
            .get(offset / std::mem::size_of::<Entry<C>>())
            .filter(|entry| entry.addr() == outer)
            .expect("the entry a broadcast loop runs lies in the main list");
        if entry.state.get() & RUNNING_OUTER != 0 {
            return None;
        }
        entry.set_running_outer(true);
        Some(entry)
    }
}

impl<C> Drop for LoopScope<'_, C> {
    #[inline(always)]
    fn drop(&mut self) {
        self.list.running.set(self.outer);
        if let Some(entry) = self.marked {
            entry.set_running_outer(false);
        }
    }
}

// ---- module hook (MB4), see `crate::module::track`: a dropped list forgets its subscriptions
// made by game modules, and unloading a module removes them through `remove_now`.
impl<C> Drop for InvocationList<C> {
    fn drop(&mut self) {
        if crate::module::track::recording() {
            let pending = self.pending.get_mut().iter().map(|entry| entry.id);
            let ids = self.entries.get_mut().iter().map(|entry| entry.id);
            crate::module::track::forget(ids.chain(pending));
        }
    }
}

impl<C> InvocationList<C> {
    /// Removes `handle`'s subscriber like [`remove`](Self::remove) and, outside a broadcast,
    /// compacts the list at once: nothing of it (callable, weak owner) is left when the library
    /// of the game module that made it is unmapped.
    pub(crate) fn remove_now(&self, handle: DelegateHandle) -> bool {
        let removed = self.remove(handle);
        if !self.is_broadcasting() {
            self.compact();
        }
        removed
    }
}
// ---- end of module hook

impl<C> Default for InvocationList<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C> fmt::Debug for InvocationList<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvocationList")
            .field("len", &self.len())
            .field("broadcasting", &self.is_broadcasting())
            .finish()
    }
}

impl<C> InvocationList<C> {
    /// An empty list. Allocates nothing (M12).
    pub const fn new() -> Self {
        InvocationList {
            entries: RefCell::new(Vec::new()),
            pending: RefCell::new(Vec::new()),
            state: Cell::new(0),
            tombstones: Cell::new(0),
            ids_ascending: Cell::new(true),
            running: Cell::new(0),
        }
    }

    /// Counts a new tombstone in the main list; the outermost broadcast's end will settle.
    fn note_tombstone(&self) {
        self.tombstones.set(self.tombstones.get() + 1);
        self.state.set(self.state.get() | NEEDS_SETTLE);
    }

    /// Prunes a present entry whose owner died (M9): a tombstone, its callable dropped unless
    /// running.
    #[cold]
    #[inline(never)]
    fn prune(&self, entry: &Entry<C>) {
        self.note_tombstone();
        drop(self.take_unless_running(entry));
    }

    /// Raises the lock count; returns the state before.
    #[inline(always)]
    fn lock(&self) -> u32 {
        let state = self.state.get();
        self.state.set(state + LOCK_ONE);
        state
    }

    /// Whether a running broadcast loop is calling `entry`'s callable right now.
    fn is_running(&self, entry: &Entry<C>) -> bool {
        self.running.get() == entry.addr() || entry.state.get() & RUNNING_OUTER != 0
    }

    /// Marks `entry` removed and empties its slot unless its callable is running (then it is
    /// dropped after its call, or when the outermost broadcast ends, M4) or borrowed by a
    /// [`Broadcast`] cloning it. The caller drops what this returns, ideally outside any borrow.
    fn take_unless_running(&self, entry: &Entry<C>) -> Option<C> {
        entry.mark_removed();
        if self.is_running(entry) {
            return None;
        }
        entry
            .slot
            .try_borrow_mut()
            .ok()
            .and_then(|mut slot| slot.take())
    }

    /// Appends a subscriber with priority 0 and no owner.
    pub fn add(&self, callable: C) -> DelegateHandle {
        self.insert(0, None, callable)
    }

    /// Appends a subscriber bound to `owner`: it runs only while `owner` is alive, is removed by
    /// [`remove_owner`](Self::remove_owner), and is pruned once `owner` is dropped (M9).
    pub fn add_owned<T: Any>(&self, owner: &Rc<T>, callable: C) -> DelegateHandle {
        let weak: Weak<dyn Any> = Rc::downgrade(owner) as Weak<dyn Any>;
        self.insert(0, Some(weak), callable)
    }

    /// Inserts a subscriber after every subscriber whose priority is at least `priority` (higher
    /// priorities run first; equal priorities run in the order they were added).
    ///
    /// During a broadcast the new subscriber does not run in that broadcast, wherever it lands
    /// (M2); broadcasts started after this call run it.
    pub fn insert(
        &self,
        priority: i32,
        owner: Option<Weak<dyn Any>>,
        callable: C,
    ) -> DelegateHandle {
        let handle = DelegateHandle::new_unique();
        let entry = Entry::new(handle.id(), priority, owner, callable);
        if self.is_broadcasting() {
            // The main list keeps its shape while broadcasts walk it (M2).
            let mut pending = self.pending.borrow_mut();
            let position = pending.partition_point(|other| other.priority >= priority);
            pending.insert(position, entry);
            self.state
                .set(self.state.get() | HAS_PENDING | NEEDS_SETTLE);
        } else {
            let mut entries = self.entries.borrow_mut();
            if Self::insert_sorted(&mut entries, entry) {
                self.ids_ascending.set(false);
            }
        }
        handle
    }

    /// Inserts `entry` after every entry of at least its priority; returns whether ids no
    /// longer ascend along the list (it landed before the end, or after a larger id: pending
    /// entries are merged in dispatch order, not id order).
    fn insert_sorted(entries: &mut Vec<Entry<C>>, entry: Entry<C>) -> bool {
        let at_end = entries
            .last()
            .is_none_or(|last| last.priority >= entry.priority);
        if at_end {
            let out_of_order = entries.last().is_some_and(|last| last.id > entry.id);
            entries.push(entry);
            out_of_order
        } else {
            let position = entries.partition_point(|other| other.priority >= entry.priority);
            entries.insert(position, entry);
            true
        }
    }

    /// Removes the subscriber of `handle`. Returns `false`, changing nothing, for an invalid,
    /// foreign or already removed handle, or one whose owner is already dropped (H2).
    ///
    /// Outside a broadcast the callable is dropped before this returns; during one, the entry
    /// becomes a tombstone that no running or later broadcast invokes (M3), and its callable is
    /// dropped when the outermost broadcast ends, so the subscriber currently running (if it is
    /// this one) finishes safely (M4).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        if !handle.is_valid() {
            return false;
        }
        if self.is_broadcasting() {
            return self.remove_while_broadcasting(handle.id());
        }
        let (removed, was_live) = {
            let mut entries = self.entries.borrow_mut();
            let Some(index) = self.find(&entries, handle.id()) else {
                return false;
            };
            let entry = &mut entries[index];
            let was_live = entry.is_live();
            let removed = entry.take();
            if removed.is_some() {
                self.note_tombstone();
            }
            (removed, was_live)
        };
        // Dropped outside the borrow: a closure's captures may run code that re-enters the list.
        drop(removed);
        self.compact_if_worthwhile();
        was_live
    }

    fn remove_while_broadcasting(&self, id: u64) -> bool {
        {
            let entries = self.entries.borrow();
            if let Some(index) = self.find(&entries, id) {
                let entry = &entries[index];
                if !entry.is_present() {
                    return false;
                }
                self.note_tombstone();
                let was_live = entry.owner_alive();
                let removed = self.take_unless_running(entry);
                drop(entries);
                drop(removed);
                return was_live;
            }
        }
        let removed = {
            let mut pending = self.pending.borrow_mut();
            let Some(index) = pending.iter().position(|entry| entry.id == id) else {
                return false;
            };
            // No broadcast holds a reference into `pending`: take it out right away.
            pending.remove(index)
        };
        let was_live = removed.is_live();
        drop(removed);
        was_live
    }

    /// Removes every live subscriber bound to `owner` (M9); returns how many. Allocates nothing.
    pub fn remove_owner<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.remove_each(|entry| entry.is_live() && entry.is_owned_by(owner))
    }

    /// Whether a live subscriber is bound to `owner`.
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.any_entry(|entry| entry.is_live() && entry.is_owned_by(owner))
    }

    /// Removes every subscriber. During a broadcast nothing further runs in it (or in any
    /// enclosing broadcast), and subscribers added after the clear run from the next broadcast
    /// on (M6).
    pub fn clear(&self) {
        if self.is_broadcasting() {
            self.remove_each(Entry::is_present);
        } else {
            let old = std::mem::take(&mut *self.entries.borrow_mut());
            self.tombstones.set(0);
            // Outside broadcasts nothing is pending: nothing is left to settle.
            self.state
                .set(self.state.get() & !(NEEDS_SETTLE | HAS_PENDING));
            self.ids_ascending.set(true);
            drop(old);
        }
    }

    /// Whether at least one live subscriber exists (M8).
    pub fn is_bound(&self) -> bool {
        self.any_entry(Entry::is_live)
    }

    /// How many live subscribers there are: removed ones and those whose owner died do not
    /// count (M8).
    pub fn len(&self) -> usize {
        let count = |entries: &[Entry<C>]| entries.iter().filter(|entry| entry.is_live()).count();
        count(&self.entries.borrow()) + count(&self.pending.borrow())
    }

    /// `true` when [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        !self.is_bound()
    }

    /// Whether a broadcast over this list is running (on this thread's stack).
    pub fn is_broadcasting(&self) -> bool {
        self.state.get() >= LOCK_ONE
    }

    /// Starts a broadcast: locks the list until the returned [`Broadcast`] is dropped and yields
    /// the live subscribers that were present at this moment, in order (M1, M2).
    #[inline]
    pub fn begin(&self) -> Broadcast<'_, C> {
        // Pending subscribers present now were added before this (nested) broadcast began: they
        // run in it, merged in order. Later ones never do (their ids reach `limit`).
        let merge_pending = self.lock() & HAS_PENDING != 0;
        Broadcast {
            list: self,
            entries: Some(self.entries.borrow()),
            limit: if merge_pending {
                DelegateHandle::next_id()
            } else {
                0
            },
            merge_pending,
            index: 0,
            last_key: None,
        }
    }

    /// Removes every entry present now that `select` picks; returns how many. Each callable is
    /// dropped at once (unless it is running: then when the outermost broadcast ends, M4), while
    /// the list is locked like a broadcast, so the re-entrant code of a closure's drop cannot move
    /// entries under the walk; what that code adds comes after this call and stays. Allocates
    /// nothing (a subscriber may clear or remove an owner during a broadcast, M12).
    fn remove_each(&self, mut select: impl FnMut(&Entry<C>) -> bool) -> usize {
        let lock = self.begin();
        let limit = DelegateHandle::next_id();
        let mut removed = 0;
        for entry in lock.entries.as_deref().map_or(&[][..], Vec::as_slice) {
            if entry.is_present() && select(entry) {
                removed += 1;
                self.note_tombstone();
                drop(self.take_unless_running(entry));
            }
        }
        loop {
            let entry = {
                let mut pending = self.pending.borrow_mut();
                let Some(index) = pending
                    .iter()
                    .position(|entry| entry.id < limit && select(entry))
                else {
                    break;
                };
                pending.remove(index)
            };
            removed += 1;
            drop(entry);
        }
        removed
    }

    /// Whether `handle` names a live subscriber for which `predicate` holds. Lets a mechanism
    /// with several kinds of subscriber in one list (script delegates: native and managed)
    /// remove only its own kind, without keeping a second record of which is which.
    pub fn subscriber_matches(
        &self,
        handle: DelegateHandle,
        predicate: impl FnOnce(&C) -> bool,
    ) -> bool {
        let id = handle.id();
        let mut found = None;
        let mut predicate = Some(predicate);
        let mut check = |entry: &Entry<C>| {
            if entry.id != id {
                return false;
            }
            let live = entry.is_live();
            let slot = entry.slot.borrow();
            found = Some(
                live && slot
                    .as_ref()
                    .is_some_and(|c| predicate.take().is_some_and(|p| p(c))),
            );
            true
        };
        self.any_entry(&mut check);
        found.unwrap_or(false)
    }

    /// How many live subscribers `predicate` accepts.
    pub fn count_matching(&self, mut predicate: impl FnMut(&C) -> bool) -> usize {
        let mut count = 0;
        self.any_entry(|entry| {
            if entry.is_live() && entry.slot.borrow().as_ref().is_some_and(&mut predicate) {
                count += 1;
            }
            false
        });
        count
    }

    /// The live subscribers with their handles, in the order they were added. Allocates: for
    /// cold paths such as handing bindings to a host when a delegate is destroyed.
    pub fn snapshot(&self) -> Vec<(DelegateHandle, C)>
    where
        C: Clone,
    {
        let mut live = Vec::new();
        self.any_entry(|entry| {
            if let Some(callable) = entry.slot.borrow().as_ref().filter(|_| entry.is_live()) {
                live.push((DelegateHandle::from_id(entry.id), callable.clone()));
            }
            false
        });
        live.sort_by_key(|(handle, _)| *handle);
        live
    }

    fn any_entry(&self, mut predicate: impl FnMut(&Entry<C>) -> bool) -> bool {
        self.entries.borrow().iter().any(&mut predicate)
            || self.pending.borrow().iter().any(predicate)
    }

    /// The index of the entry with `id`, in O(log n) while ids ascend along the list, and in
    /// O(k log n) for k distinct priorities otherwise (M12).
    ///
    /// Entries are sorted by priority, and within one priority by id: every insertion lands at
    /// the end of its priority's run with the largest id issued so far (pending entries too, as
    /// they are merged in dispatch order). So each run is binary-searched; a run's end is found
    /// by galloping, which keeps even a list of all distinct priorities at O(n), no worse than a
    /// scan. (From the delegate-tests branch, commit 7ef80bd.)
    fn find(&self, entries: &[Entry<C>], id: u64) -> Option<usize> {
        if self.ids_ascending.get() {
            return entries.binary_search_by_key(&id, |entry| entry.id).ok();
        }
        let mut start = 0;
        while let Some(first) = entries.get(start) {
            let rest = &entries[start..];
            let same = |entry: &Entry<C>| entry.priority == first.priority;
            // Gallop: rest[bound / 2] is in the run; the run ends before `bound` or the end.
            let mut bound = 1;
            while bound < rest.len() && same(&rest[bound]) {
                bound *= 2;
            }
            let run_len = bound / 2 + rest[bound / 2..bound.min(rest.len())].partition_point(same);
            if let Ok(index) = rest[..run_len].binary_search_by_key(&id, |entry| entry.id) {
                return Some(start + index);
            }
            start += run_len;
        }
        None
    }

    /// Outside broadcasts, drops tombstones once they are at least half the list, so removal
    /// stays amortised O(log n) and iteration never skips more than it visits.
    fn compact_if_worthwhile(&self) {
        let tombstones = self.tombstones.get();
        if tombstones == 0 || self.is_broadcasting() {
            return;
        }
        if tombstones * 2 >= self.entries.borrow().len() {
            self.compact();
        }
    }

    /// Drops every tombstone whose callable is already gone and merges the pending subscribers
    /// in. Only runs when no broadcast is running. Dropping an entry here only drops its id and
    /// weak owner: no user code runs.
    fn compact(&self) {
        let mut entries = self.entries.borrow_mut();
        entries.retain_mut(Entry::has_callable);
        let mut pending = self.pending.borrow_mut();
        for entry in pending.drain(..) {
            if Self::insert_sorted(&mut entries, entry) {
                self.ids_ascending.set(false);
            }
        }
        // Normally 0: only a panic in a callable's drop during `settle` leaves removed entries
        // holding their callable; they are dropped by the next settle.
        let left = entries.iter().filter(|entry| entry.is_removed()).count();
        self.tombstones.set(left);
        let settled = self.state.get() & !(NEEDS_SETTLE | HAS_PENDING);
        self.state.set(if left > 0 {
            settled | NEEDS_SETTLE
        } else {
            settled
        });
        if entries.is_empty() {
            self.ids_ascending.set(true);
        }
    }

    /// Lowers the lock count; the outermost broadcast's end settles the list if it needs it.
    #[inline(always)]
    fn unlock(&self) {
        let state = self.state.get() - LOCK_ONE;
        self.state.set(state);
        // Lock at 0 with NEEDS_SETTLE (HAS_PENDING comes with it): 1 or 3, never 2.
        if state.wrapping_sub(NEEDS_SETTLE) < LOCK_ONE - NEEDS_SETTLE {
            self.settle();
        }
    }

    /// At the end of the outermost broadcast: drops the callables removed during it, one at a
    /// time and outside any borrow (their captures may re-enter the list), then compacts and
    /// merges the pending subscribers. The list counts as broadcasting meanwhile, so re-entrant
    /// calls from those drops cannot move entries under the walk; the guard finishes (and
    /// unlocks) even if a drop panics.
    #[cold]
    #[inline(never)]
    fn settle(&self) {
        struct Settling<'a, C>(&'a InvocationList<C>);
        impl<C> Drop for Settling<'_, C> {
            fn drop(&mut self) {
                self.0.state.set(self.0.state.get() - LOCK_ONE);
                self.0.compact();
            }
        }
        self.lock();
        let _settling = Settling(self);
        loop {
            let mut index = 0;
            let mut dropped = false;
            loop {
                let callable = {
                    let mut entries = self.entries.borrow_mut();
                    let Some(offset) = entries[index..]
                        .iter_mut()
                        .position(|entry| entry.is_removed() && entry.has_callable())
                    else {
                        break;
                    };
                    index += offset;
                    entries[index].slot.get_mut().take()
                };
                drop(callable);
                dropped = true;
            }
            // A drop may have removed more (behind the walk): go again until none is left.
            if !dropped {
                break;
            }
        }
    }
}

/// The lock a hot loop ([`InvocationList::walk`], [`InvocationList::dispatch_until`]) holds,
/// with the main list it reads without a `RefCell` borrow. Dropping it (also while unwinding,
/// M7) lowers the lock count, and the outermost broadcast's end settles the list.
struct Locked<'a, C> {
    list: &'a InvocationList<C>,
    entries: &'a [Entry<C>],
}

impl<'a, C> Locked<'a, C> {
    /// Locks `list` for a hot loop, or `None` if subscribers added during an enclosing broadcast
    /// wait (rare: then the loop merges them through the [`Broadcast`] iterator).
    #[inline(always)]
    fn new(list: &'a InvocationList<C>) -> Option<Self> {
        if list.lock() & HAS_PENDING != 0 {
            list.unlock();
            return None;
        }
        // SAFETY: the main list is only borrowed mutably (or reshaped) while no broadcast runs:
        // `insert`, `remove`, `clear` and `compact_if_worthwhile` check `is_broadcasting`
        // first, `compact` runs with the lock released, and `settle` (which runs at the end of
        // the outermost broadcast, after its loop) releases its mutable borrows before any user
        // code, so a broadcast started from that code never overlaps one. The lock taken above
        // is released only when this guard drops, which ends the borrow `entries` lends: it
        // keeps every one of those paths away for as long as `entries` lives, whatever the
        // subscribers do. So the list is only read meanwhile (the entries' `Cell`s and slots
        // have their own rules, see `Entry::live_callable`). The `RefCell` still guards the cold
        // paths (a `Broadcast` holds a `Ref`), which this read neither needs nor disturbs.
        let entries = unsafe { &*list.entries.as_ptr() };
        Some(Locked { list, entries })
    }
}

impl<C> Drop for Locked<'_, C> {
    #[inline(always)]
    fn drop(&mut self) {
        self.list.unlock();
    }
}

impl<C: Clone> InvocationList<C> {
    /// Broadcasts `args` to every subscriber: `call(subscriber, args)` runs for each one that
    /// [`begin`](Self::begin) yields, through a reference (no clone of the subscriber). An owned
    /// argument is cloned only for subscribers that have a live subscriber after them, so the
    /// last one gets the original: at most N - 1 clones for N subscribers (M11). Never
    /// allocates (M12).
    #[inline]
    pub fn broadcast_with<A: Clone>(&self, args: A, mut call: impl FnMut(&C, A)) {
        self.walk(args, |subscriber, args| {
            call(subscriber, args);
            false
        });
    }

    /// Calls `call` on each subscriber that [`begin`](Self::begin) yields, in order, through a
    /// reference (no clone of the subscriber), until one call returns `true`; returns whether
    /// one did. Never allocates (M12).
    pub fn broadcast_until(&self, mut call: impl FnMut(&C) -> bool) -> bool {
        self.walk((), |subscriber, ()| call(subscriber))
    }

    /// The event processor's dispatch: [`broadcast_until`](Self::broadcast_until) for a list
    /// whose subscribers hold their owner weakly themselves (P3). `upgrade` turns a subscriber
    /// into a strong reference (`None`: its owner is dead, and the entry is pruned, M9); `call`
    /// runs on that reference, so no reference into the list is held while handler code runs,
    /// and a handler removed meanwhile is dropped at once. Both checks the broadcast loop makes
    /// for owned entries (owner alive, then a clone for the call) are the one upgrade here.
    ///
    /// `upgrade` must not run user code (the loop reads the slot without a borrow meanwhile);
    /// the processor passes `Weak::upgrade`.
    pub(crate) fn dispatch_until<T>(
        &self,
        mut upgrade: impl FnMut(&C) -> Option<T>,
        mut call: impl FnMut(T) -> bool,
    ) -> bool {
        let Some(locked) = Locked::new(self) else {
            return self.walk_merging((), |subscriber, ()| {
                upgrade(subscriber).is_some_and(&mut call)
            });
        };
        for entry in locked.entries {
            // Removed or running in an enclosing loop: the slow path (owners: `upgrade` checks).
            if entry.state.get() & !OWNED != 0 && !live_or_prune_slow(self, entry) {
                continue;
            }
            // SAFETY: `locked` is held and the entry is live (checked above, no user code ran
            // since); the reference is only used by `upgrade`, which runs no user code.
            let callable = unsafe { entry.live_callable() };
            let Some(strong) = upgrade(callable) else {
                self.prune(entry);
                continue;
            };
            if call(strong) {
                return true;
            }
        }
        false
    }

    /// The broadcast loop: `visit(subscriber, args)` for each live subscriber present when it
    /// began, until `visit` returns `true` (then returns `true`). `args` is cloned for
    /// every subscriber but the last live one, which gets the original (M11; the last is found
    /// at the start: a later removal can only make fewer clones).
    #[inline(always)]
    fn walk<A: Clone>(&self, args: A, mut visit: impl FnMut(&C, A) -> bool) -> bool {
        // Declared first, so it ends last: after the loop's scope has restored `running`.
        let Some(locked) = Locked::new(self) else {
            return self.walk_merging(args, visit);
        };
        let entries = locked.entries;
        // The last live subscriber, found once: later ones cannot appear (M2); if it is removed
        // before it runs, no call is told it is the last (M11 then clones for fewer than N).
        let (last, before) = match entries.split_last() {
            Some((last, before)) if last.state.get() == 0 => (last, before),
            _ => match entries.iter().rposition(Entry::is_live) {
                Some(index) => (&entries[index], &entries[..index]),
                None => return false,
            },
        };
        let _scope = LoopScope::new(self, entries);
        for entry in before {
            if visit_entry(self, entry, |current| visit(current, args.clone())) {
                return true;
            }
        }
        visit_entry(self, last, |current| visit(current, args))
    }

    /// [`walk`](Self::walk) while subscribers added during an enclosing broadcast wait (rare: a
    /// nested broadcast after an add): merges them in order through the [`Broadcast`] iterator.
    #[cold]
    #[inline(never)]
    fn walk_merging<A: Clone>(&self, args: A, mut visit: impl FnMut(&C, A) -> bool) -> bool {
        let mut broadcast = self.begin();
        let mut args = Some(args);
        while let Some(current) = broadcast.next() {
            let args = if broadcast.has_next() {
                args.clone()
            } else {
                args.take()
            };
            // None only if a subscriber followed the one that was the last (cannot happen).
            let Some(args) = args else { break };
            if visit(&current, args) {
                return true;
            }
        }
        false
    }
}

/// One step of the broadcast loop: `visit` on the entry's callable if the entry is live; whether
/// `visit` stopped the broadcast. `entry` must be in the main list of `list`, read by a running
/// broadcast loop that holds the list's lock and a [`LoopScope`].
#[inline(always)]
fn visit_entry<C>(
    list: &InvocationList<C>,
    entry: &Entry<C>,
    visit: impl FnOnce(&C) -> bool,
) -> bool {
    // Live without owner is the common case: one byte compare. The state is read right before
    // the call, as an earlier call may have removed this entry (M3).
    if entry.state.get() != 0 && !live_slow(list, entry) {
        return false;
    }
    // Recorded as running for the call: a removal meanwhile leaves the callable in place (M4).
    list.running.set(entry.addr());
    // SAFETY: the caller's loop holds the list's lock, the entry is live (checked above, and no
    // user code ran since), and it is recorded as running until `visit` returns (`running`
    // names it, or, while a loop nested in the call has taken `running` over, its
    // `RUNNING_OUTER` bit is set by that loop's `LoopScope`), so `take_unless_running` leaves
    // its slot alone meanwhile.
    let callable = unsafe { entry.live_callable() };
    let stop = visit(callable);
    if entry.is_removed() {
        drop_removed_after_call(list, entry);
    }
    stop
}

/// A subscriber removed while it ran (by itself or by code it called) is dropped as soon as its
/// call is over, unless an enclosing broadcast is still running it: its captures may hold the
/// last reference to the owner of a later subscriber, which then must not run (M4, M9).
#[cold]
#[inline(never)]
fn drop_removed_after_call<C>(list: &InvocationList<C>, entry: &Entry<C>) {
    // The call is over: this loop no longer holds a reference into the slot.
    list.running.set(0);
    drop(list.take_unless_running(entry));
}

/// The dispatch loop's path for entries that are removed or run in an enclosing loop. Unlike
/// [`live_slow`] it leaves `running` alone: the dispatch loop records no entry (handlers run on
/// strong references), so `running` may be an enclosing loop's record.
#[cold]
#[inline(never)]
fn live_or_prune_slow<C>(list: &InvocationList<C>, entry: &Entry<C>) -> bool {
    entry.live_or_prune(list)
}

/// The broadcast loop's path for entries that are removed, have an owner, or run in an enclosing
/// loop (pruning a dead owner's entry).
#[cold]
#[inline(never)]
fn live_slow<C>(list: &InvocationList<C>, entry: &Entry<C>) -> bool {
    // The previous call is over: pruning (which drops a callable, user code) must not take it
    // for running.
    list.running.set(0);
    entry.live_or_prune(list)
}

/// A running broadcast: holds the list's lock count up and yields its subscribers.
///
/// Created by [`InvocationList::begin`]. It is an [`Iterator`] over clones of the live
/// subscribers that were present when it began. Subscribers may add, remove, clear and start
/// nested broadcasts while it runs. Dropping it (also during a panic) releases the lock; the
/// outermost one compacts the list (M5, M7).
///
/// Drop each yielded subscriber before asking for the next one (a `for` loop does): if it
/// removed itself, that clone is its last reference, and dropping it may run user code that
/// removes later subscribers or drops their owners, which the next call must see (M3, M9).
pub struct Broadcast<'a, C> {
    list: &'a InvocationList<C>,
    /// The main list, held for the whole broadcast (it keeps its shape meanwhile). Released
    /// first on drop, so the outermost broadcast can compact.
    entries: Option<Ref<'a, Vec<Entry<C>>>>,
    /// Pending entries with an id at least this large were added after the broadcast began (M2).
    limit: u64,
    /// Whether pending entries existed at begin (only then can any of them run in it).
    merge_pending: bool,
    /// Next index to look at in the main list.
    index: usize,
    /// Key of the last entry passed, main or pending: pending ones after it come next.
    last_key: Option<(i64, u64)>,
}

impl<C> fmt::Debug for Broadcast<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<C: Clone> Broadcast<'_, C> {
    /// The next live subscriber for which `filter` returns true, skipping others.
    ///
    /// Subscribers whose owner died are pruned as they are passed (their callable is dropped
    /// when the outermost broadcast ends).
    pub fn next_matching(&mut self, mut filter: impl FnMut(&C) -> bool) -> Option<C> {
        let list = self.list;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        loop {
            // The next live entry of the main list.
            let main = loop {
                let Some(entry) = entries.get(self.index) else {
                    break None;
                };
                if entry.live_or_prune(list) {
                    break Some(entry);
                }
                self.index += 1;
            };
            // The next runnable pending entry, if pending ones can run in this broadcast; the
            // earlier of the two in dispatch order comes first.
            if self.merge_pending {
                let pending = list.pending.borrow();
                let next_pending = self.next_pending(&pending);
                if let Some(entry) = next_pending.filter(|p| main.is_none_or(|m| p.key() < m.key()))
                {
                    self.last_key = Some(entry.key());
                    match entry.cloned_if(&mut filter) {
                        Some(callable) => return Some(callable),
                        None => continue,
                    }
                }
            }
            let entry = main?;
            self.index += 1;
            self.last_key = Some(entry.key());
            if let Some(callable) = entry.cloned_if(&mut filter) {
                return Some(callable);
            }
        }
    }

    /// Calls `call` on every remaining live subscriber for which `filter` returns true, in
    /// order, through a reference (no clone), and advances past them: what a `while let` loop
    /// over [`next_matching`](Self::next_matching) does, faster. Script delegates use it for
    /// their native pass, then [`rewind`](Self::rewind) and their managed pass.
    pub fn for_each_matching(
        &mut self,
        mut filter: impl FnMut(&C) -> bool,
        mut call: impl FnMut(&C),
    ) {
        if self.merge_pending {
            // Rare: a nested broadcast while subscribers added during the outer one wait.
            while let Some(subscriber) = self.next_matching(&mut filter) {
                call(&subscriber);
            }
            return;
        }
        let list = self.list;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        let _scope = LoopScope::new(list, entries);
        for entry in &entries[self.index.min(entries.len())..] {
            visit_entry(list, entry, |subscriber| {
                if filter(subscriber) {
                    call(subscriber);
                }
                false
            });
        }
        self.index = entries.len();
    }

    /// The first live pending entry after `last_key` that was added before this broadcast began.
    fn next_pending<'p>(&self, pending: &'p [Entry<C>]) -> Option<&'p Entry<C>> {
        let start = self.last_key.map_or(0, |last| {
            pending.partition_point(|entry| entry.key() <= last)
        });
        pending[start..]
            .iter()
            .find(|entry| entry.id < self.limit && entry.is_live())
    }

    /// Whether [`next_matching`](Self::next_matching) with this filter would yield a subscriber
    /// now. Does not advance.
    pub fn has_next_matching(&mut self, mut filter: impl FnMut(&C) -> bool) -> bool {
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        let mut matching = |entry: &Entry<C>| {
            entry.is_live() && entry.slot.borrow().as_ref().is_some_and(&mut filter)
        };
        if entries[self.index.min(entries.len())..]
            .iter()
            .any(&mut matching)
        {
            return true;
        }
        if !self.merge_pending {
            return false;
        }
        let pending = self.list.pending.borrow();
        let start = self.last_key.map_or(0, |last| {
            pending.partition_point(|entry| entry.key() <= last)
        });
        pending[start..]
            .iter()
            .any(|entry| entry.id < self.limit && matching(entry))
    }

    /// Whether another live subscriber follows. Does not advance.
    pub fn has_next(&mut self) -> bool {
        self.has_next_matching(|_| true)
    }

    /// Starts over from the first subscriber, keeping the same set of subscribers (those present
    /// when the broadcast began) and the same lock. Script delegates use this for their second,
    /// managed pass.
    pub fn rewind(&mut self) {
        self.index = 0;
        self.last_key = None;
    }
}

impl<C: Clone> Iterator for Broadcast<'_, C> {
    type Item = C;

    fn next(&mut self) -> Option<C> {
        self.next_matching(|_| true)
    }
}

impl<C> Drop for Broadcast<'_, C> {
    #[inline]
    fn drop(&mut self) {
        // Release the shared borrow first: the outermost broadcast compacts the list.
        self.entries = None;
        self.list.unlock();
    }
}
