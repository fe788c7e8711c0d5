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
//! callables are dropped after the borrow ends); a broadcast holds a shared borrow of it for its
//! whole duration, which every method used during a broadcast shares, and the pending list is
//! only borrowed briefly. So re-entrancy cannot hit a borrow panic, and
//! [`broadcast_with`](InvocationList::broadcast_with) walks the list without re-borrowing it or
//! cloning a subscriber (see BENCHMARKS.md for what that buys).
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

/// One subscriber.
///
/// A removed entry is a *tombstone*, waiting for compaction: its state has [`REMOVED`] and its
/// `slot` is emptied, dropping the callable at once, unless the callable is running right now
/// (a broadcast loop records it in its [`Frame`] while it calls it, and a [`Broadcast`]
/// borrows the slot while it clones it): then it stays until the outermost broadcast
/// ends (M4). So an empty slot always has [`REMOVED`] set.
struct Entry<C> {
    id: u64,
    priority: i32,
    /// [`REMOVED`] | [`OWNED`]: 0 for a live entry without owner, so the broadcast loop checks
    /// liveness with one byte compare.
    state: Cell<u8>,
    /// Read without a borrow by the broadcast loops while their [`Frame`] records this entry
    /// (several when nested); borrowed by a [`Broadcast`] while it clones the callable.
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
        match self.state.get() {
            0 => true,
            OWNED => self.owner_alive(),
            _ => false,
        }
    }

    /// Whether the entry is live. A present entry whose owner died is pruned on the way (M9):
    /// marked removed, its callable dropped unless running.
    #[inline]
    fn live_or_prune(&self, list: &InvocationList<C>) -> bool {
        match self.state.get() {
            0 => true,
            OWNED if self.owner_alive() => true,
            OWNED => {
                list.tombstones.set(list.tombstones.get() + 1);
                drop(list.take_unless_running(self));
                false
            }
            _ => false,
        }
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
    /// no broadcast runs; broadcasts hold a shared borrow of it.
    entries: RefCell<Vec<Entry<C>>>,
    /// Subscribers added while a broadcast runs, in dispatch order; merged into `entries` when
    /// the outermost broadcast ends. Never borrowed across user code.
    pending: RefCell<Vec<Entry<C>>>,
    /// Whether `pending` may be non-empty (set on insertion, cleared when it is emptied), so
    /// beginning and ending a broadcast need not borrow it.
    has_pending: Cell<bool>,
    /// How many broadcasts are running on this list (they nest).
    lock: Cell<u32>,
    /// Removed entries of `entries` waiting for compaction.
    tombstones: Cell<usize>,
    /// Whether ids ascend along `entries` (true until an insertion lands before the end), which
    /// allows removal by binary search.
    ids_ascending: Cell<bool>,
    /// The innermost running broadcast loop ([`InvocationList::walk`]) over this list, linked to
    /// the loops it runs in; null when none runs. See [`Frame`].
    frames: FrameLink<C>,
}

/// The head of an [`InvocationList`]'s chain of running [`Frame`]s (null when none runs).
struct FrameLink<C>(Cell<*const Frame<C>>);

// SAFETY: the link is non-null only while a broadcast loop borrows the list (a `PushedFrame`
// borrows it and resets the link on drop), and a borrowed list cannot be sent anywhere; a list
// that can be moved holds a null link, which refers to nothing. (Whether a list is `Send` is
// decided by its other fields; delegates stay !Send and !Sync through them, M10.)
unsafe impl<C> Send for FrameLink<C> {}

impl<C> FrameLink<C> {
    #[inline(always)]
    fn get(&self) -> *const Frame<C> {
        self.0.get()
    }

    #[inline(always)]
    fn set(&self, frame: *const Frame<C>) {
        self.0.set(frame);
    }
}

/// What a broadcast loop over `entries` records while it runs: the entry whose callable it is
/// calling, so a removal meanwhile leaves that callable in place (M4). Lives on the loop's stack,
/// linked into [`InvocationList::frames`] by a [`PushedFrame`] for the loop's whole duration.
///
/// The loop calls each callable through a reference into its slot taken without a `RefCell`
/// borrow (one store per subscriber instead of a borrow and a release); this record is what
/// keeps the slot from being emptied under that reference.
struct Frame<C> {
    /// The entry being called (or just called); null before the first call.
    running: Cell<*const Entry<C>>,
    /// The enclosing loop's frame over the same list, or null.
    parent: *const Frame<C>,
}

/// Links a [`Frame`] into its list while it lives; unlinks it on drop (also while unwinding).
/// Frames nest like the loops that own them, so the list's chain only holds live frames.
struct PushedFrame<'a, C> {
    list: &'a InvocationList<C>,
    frame: &'a Frame<C>,
}

impl<'a, C> PushedFrame<'a, C> {
    #[inline(always)]
    fn new(list: &'a InvocationList<C>, frame: &'a Frame<C>) -> Self {
        debug_assert!(std::ptr::eq(frame.parent, list.frames.get()));
        list.frames.set(frame);
        PushedFrame { list, frame }
    }
}

impl<C> Drop for PushedFrame<'_, C> {
    #[inline(always)]
    fn drop(&mut self) {
        // Loops nest on this one thread (the list is !Sync), so the innermost frame is ours.
        self.list.frames.set(self.frame.parent);
    }
}

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
            has_pending: Cell::new(false),
            lock: Cell::new(0),
            tombstones: Cell::new(0),
            ids_ascending: Cell::new(true),
            frames: FrameLink(Cell::new(std::ptr::null())),
        }
    }

    /// Whether a running broadcast loop is calling `entry`'s callable right now.
    fn is_running(&self, entry: &Entry<C>) -> bool {
        let mut frame = self.frames.get();
        while !frame.is_null() {
            // SAFETY: every frame in the chain is alive: a `PushedFrame` links its frame, which it
            // borrows (so the frame neither moves nor dies meanwhile), and unlinks it in its drop.
            // Loops nest on one thread (the list is !Sync and the guard is private to `walk` and
            // `for_each_matching`, never leaked), so guards drop innermost first and each unlink
            // leaves exactly the enclosing loops' frames in the chain.
            let current = unsafe { &*frame };
            if std::ptr::eq(current.running.get(), entry) {
                return true;
            }
            frame = current.parent;
        }
        false
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
            self.has_pending.set(true);
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
                self.tombstones.set(self.tombstones.get() + 1);
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
                self.tombstones.set(self.tombstones.get() + 1);
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
        self.lock.get() > 0
    }

    /// Starts a broadcast: locks the list until the returned [`Broadcast`] is dropped and yields
    /// the live subscribers that were present at this moment, in order (M1, M2).
    #[inline]
    pub fn begin(&self) -> Broadcast<'_, C> {
        self.lock.set(self.lock.get() + 1);
        // Pending subscribers present now were added before this (nested) broadcast began: they
        // run in it, merged in order. Later ones never do (their ids reach `limit`).
        let merge_pending = self.has_pending.get();
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
                self.tombstones.set(self.tombstones.get() + 1);
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
        self.has_pending.set(false);
        for entry in pending.drain(..) {
            if Self::insert_sorted(&mut entries, entry) {
                self.ids_ascending.set(false);
            }
        }
        // Normally 0: only a panic in a callable's drop during `settle` leaves removed entries
        // holding their callable; they are dropped by the next settle.
        let left = entries.iter().filter(|entry| entry.is_removed()).count();
        self.tombstones.set(left);
        if entries.is_empty() {
            self.ids_ascending.set(true);
        }
    }

    #[inline]
    fn unlock(&self) {
        let depth = self.lock.get() - 1;
        self.lock.set(depth);
        if depth == 0 && (self.tombstones.get() > 0 || self.has_pending.get()) {
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
                self.0.lock.set(0);
                self.0.compact();
            }
        }
        self.lock.set(1);
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

impl<C: Clone> InvocationList<C> {
    /// Broadcasts `args` to every subscriber: `call(subscriber, args)` runs for each one that
    /// [`begin`](Self::begin) yields, through a reference (no clone of the subscriber). An owned
    /// argument is cloned only for subscribers that have a live subscriber after them, so the
    /// last one gets the original: at most N - 1 clones for N subscribers (M11). Never
    /// allocates (M12).
    pub fn broadcast_with<A: Clone>(&self, args: A, mut call: impl FnMut(&C, A)) {
        let mut args = Some(args);
        self.walk::<false>(|subscriber, last| {
            if last {
                if let Some(args) = args.take() {
                    call(subscriber, args);
                }
            } else if let Some(args) = &args {
                call(subscriber, args.clone());
            }
            false
        });
    }

    /// Calls `call` on each subscriber that [`begin`](Self::begin) yields, in order, through a
    /// reference (no clone of the subscriber), until one call returns `true`; returns whether
    /// one did. The event processor's dispatch: handlers run until one consumes the event.
    /// Never allocates (M12).
    pub fn broadcast_until(&self, mut call: impl FnMut(&C) -> bool) -> bool {
        // Dispatch lists hold owned entries (the processor's handlers): check owners inline.
        self.walk::<true>(|subscriber, _| call(subscriber))
    }

    /// The broadcast loop: `visit(subscriber, is_last)` for each live subscriber present when
    /// it began, until `visit` returns `true` (then returns `true`). `is_last`: no live
    /// subscriber follows (at that moment; a later removal can only make it come true later).
    #[inline(always)]
    ///
    /// `OWNED_INLINE`: check owned entries in the loop rather than out of line; faster when
    /// most entries have owners, slower for plain subscribers (a bigger loop).
    fn walk<const OWNED_INLINE: bool>(&self, mut visit: impl FnMut(&C, bool) -> bool) -> bool {
        let mut broadcast = self.begin();
        if broadcast.merge_pending {
            // Rare: a nested broadcast while subscribers added during the outer one wait.
            while let Some(current) = broadcast.next() {
                let last = !broadcast.has_next();
                if visit(&current, last) {
                    return true;
                }
            }
            return false;
        }
        // The main list keeps its shape while the broadcast holds it (see `insert`), and a
        // callable stays in place while it runs (the frame records it): calling through
        // references into the list is safe across re-entrant calls.
        let entries: &[Entry<C>] = broadcast.entries.as_deref().map_or(&[], Vec::as_slice);
        // The last live subscriber, found once: later ones cannot appear (M2); if it is removed
        // before it runs, no call is told it is the last (M11 then clones for fewer than N).
        let last = match entries.last() {
            Some(entry) if entry.state.get() == 0 => entries.len() - 1,
            _ => match entries.iter().rposition(Entry::is_live) {
                Some(last) => last,
                None => return false,
            },
        };
        let (before, last) = entries[..=last].split_at(last);
        // Declared after `broadcast`, so unlinked before the broadcast ends.
        let frame = Frame {
            running: Cell::new(std::ptr::null()),
            parent: self.frames.get(),
        };
        let _pushed = PushedFrame::new(self, &frame);
        for entry in before {
            if visit_entry::<C, OWNED_INLINE>(self, &frame, entry, |current| visit(current, false))
            {
                return true;
            }
        }
        last.iter().any(|entry| {
            visit_entry::<C, OWNED_INLINE>(self, &frame, entry, |current| visit(current, true))
        })
    }
}

/// One step of the broadcast loop: `visit` on the entry's callable if the entry is live.
/// `frame` must be linked into `list` (by a [`PushedFrame`]) and `entry` must be in the main list
/// of `list`, borrowed by a running broadcast.
#[inline(always)]
fn visit_entry<C, const OWNED_INLINE: bool>(
    list: &InvocationList<C>,
    frame: &Frame<C>,
    entry: &Entry<C>,
    visit: impl FnOnce(&C) -> bool,
) -> bool {
    // Live without owner is the common case: one byte compare. The state is read right before
    // the call, as an earlier call may have removed this entry (M3).
    if OWNED_INLINE {
        let state = entry.state.get();
        if state != 0 && !(state == OWNED && entry.owner_alive()) && !live_slow(list, frame, entry)
        {
            return false;
        }
    } else if entry.state.get() != 0 && !live_slow(list, frame, entry) {
        return false;
    }
    // Recorded as running for the call: a removal meanwhile leaves the callable in place (M4).
    frame.running.set(entry);
    // SAFETY: no `RefMut` of this slot exists now: the only ones are taken in
    // `take_unless_running` and `settle` and released before any user code runs, and nothing
    // of this loop runs inside them. None can be taken while `callable` is used (during
    // `visit`): `take_unless_running` checks the linked frames first, and `frame` (linked, as
    // the caller guarantees) records this entry until `visit` returns; `settle` and every `&mut`
    // path (`get_mut`) need the main list borrowed mutably, which the running broadcast's shared
    // borrow excludes. So the slot is only read while this reference lives.
    let slot = unsafe { &*entry.slot.as_ptr() };
    let Some(callable) = slot.as_ref() else {
        return false;
    };
    let stop = visit(callable);
    if entry.is_removed() {
        drop_removed_after_call(list, frame, entry);
    }
    stop
}

/// A subscriber removed while it ran (by itself or by code it called) is dropped as soon as its
/// call is over, unless an enclosing broadcast is still running it: its captures may hold the
/// last reference to the owner of a later subscriber, which then must not run (M4, M9).
#[cold]
#[inline(never)]
fn drop_removed_after_call<C>(list: &InvocationList<C>, frame: &Frame<C>, entry: &Entry<C>) {
    // The call is over: this loop no longer holds a reference into the slot.
    frame.running.set(std::ptr::null());
    drop(list.take_unless_running(entry));
}

/// The broadcast loop's path for entries that are removed or have an owner (pruning a dead
/// owner's entry).
#[cold]
#[inline(never)]
fn live_slow<C>(list: &InvocationList<C>, frame: &Frame<C>, entry: &Entry<C>) -> bool {
    // The previous call is over: pruning (which drops a callable, user code) must not take it
    // for running.
    frame.running.set(std::ptr::null());
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
        let frame = Frame {
            running: Cell::new(std::ptr::null()),
            parent: list.frames.get(),
        };
        let _pushed = PushedFrame::new(list, &frame);
        for entry in &entries[self.index.min(entries.len())..] {
            visit_entry::<C, false>(list, &frame, entry, |subscriber| {
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
