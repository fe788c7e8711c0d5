//! The invocation list: the one piece of machinery behind multicast delegates, script delegates
//! and the event processor.
//!
//! An [`InvocationList`] holds subscribers (any cheaply clonable callable `C`, typically an
//! `Rc<dyn Fn(..)>`) in dispatch order, each with its [`DelegateHandle`], an optional weak owner
//! and a priority. It implements the whole reentrancy contract of DESIGN.md once:
//!
//! - M1: subscribers run in order (priority first, highest first; then the order they were added),
//!   once each per broadcast.
//! - M2: a broadcast runs only the subscribers present when it started. A [`Broadcast`] remembers
//!   [`DelegateHandle::next_id`] when it starts; anything added later has a larger id and is skipped.
//! - M3/M4: removal and clearing while a broadcast runs only empty the entry's slot (a
//!   *tombstone*), so nothing not yet reached runs, indices stay valid and the running subscriber
//!   keeps its own clone of the callable until it returns.
//! - M5: the lock count nests; the list is compacted once, when the outermost broadcast ends.
//! - M7: the lock is a guard, released (and the list compacted) even when a subscriber panics.
//! - M9: an entry with a weak owner whose owner died is never returned again and is pruned.
//! - M12: beginning and walking a broadcast never allocates (nor do `clear` and `remove_owner`
//!   called during one); removal by handle is a binary search: over the whole list while
//!   handles are in order (always, for lists without priorities), else one per priority.
//!
//! Every method takes `&self`: subscribers re-enter the list through a shared reference. No
//! `RefCell` borrow is ever held while user code runs (callables are cloned out first, removed
//! callables are dropped after the borrow ends), so re-entrancy cannot hit a borrow panic.
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
use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};

use crate::handle::DelegateHandle;

/// One subscriber. `slot == None` is a tombstone: removed, waiting for compaction.
struct Entry<C> {
    id: u64,
    priority: i32,
    slot: Option<C>,
    owner: Option<Weak<dyn Any>>,
}

impl<C> Entry<C> {
    /// The dispatch-order key: higher priority first, then ascending id (= order added).
    fn key(&self) -> (i64, u64) {
        (-i64::from(self.priority), self.id)
    }

    fn owner_alive(&self) -> bool {
        self.owner
            .as_ref()
            .is_none_or(|owner| owner.strong_count() > 0)
    }

    fn is_live(&self) -> bool {
        self.slot.is_some() && self.owner_alive()
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
/// event processor, a native-or-managed listener for script delegates); it is cloned out of the
/// list before it is invoked, so it should be cheap to clone.
pub struct InvocationList<C> {
    entries: RefCell<Vec<Entry<C>>>,
    /// How many broadcasts are running on this list (they nest).
    lock: Cell<u32>,
    /// Entries whose slot is empty, waiting for compaction.
    tombstones: Cell<usize>,
    /// Bumped by every insertion that is not at the end, so running cursors re-find their place.
    generation: Cell<u64>,
    /// Whether ids ascend along the list (true until an insertion lands before the end), which
    /// allows removal by binary search and lets a cursor stop at the first too-new entry.
    ids_ascending: Cell<bool>,
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
            lock: Cell::new(0),
            tombstones: Cell::new(0),
            generation: Cell::new(0),
            ids_ascending: Cell::new(true),
        }
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
        let mut entries = self.entries.borrow_mut();
        let at_end = entries.last().is_none_or(|last| last.priority >= priority);
        let position = if at_end {
            entries.len()
        } else {
            entries.partition_point(|entry| entry.priority >= priority)
        };
        if position != entries.len() {
            self.ids_ascending.set(false);
            self.generation.set(self.generation.get().wrapping_add(1));
        }
        entries.insert(
            position,
            Entry {
                id: handle.id(),
                priority,
                slot: Some(callable),
                owner,
            },
        );
        handle
    }

    /// Removes the subscriber of `handle`. Returns `false`, changing nothing, for an invalid,
    /// foreign or already removed handle, or one whose owner is already dropped (H2).
    ///
    /// Outside a broadcast the callable is dropped before this returns; during one, the entry
    /// becomes a tombstone that no running or later broadcast invokes (M3), and the subscriber
    /// currently running (if it is this one) finishes on its own clone (M4).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        if !handle.is_valid() {
            return false;
        }
        let (removed, was_live) = {
            let mut entries = self.entries.borrow_mut();
            let Some(index) = self.find(&entries, handle.id()) else {
                return false;
            };
            let entry = &mut entries[index];
            let was_live = entry.is_live();
            let removed = entry.slot.take();
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

    /// Removes every live subscriber bound to `owner` (M9); returns how many. Allocates nothing.
    pub fn remove_owner<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.take_each(|entry| entry.is_live() && entry.is_owned_by(owner))
    }

    /// Whether a live subscriber is bound to `owner`.
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.entries
            .borrow()
            .iter()
            .any(|entry| entry.is_live() && entry.is_owned_by(owner))
    }

    /// Removes every subscriber. During a broadcast nothing further runs in it (or in any
    /// enclosing broadcast), and subscribers added after the clear run from the next broadcast
    /// on (M6).
    pub fn clear(&self) {
        if self.is_broadcasting() {
            self.take_each(|_| true);
        } else {
            let old = std::mem::take(&mut *self.entries.borrow_mut());
            self.tombstones.set(0);
            self.ids_ascending.set(true);
            drop(old);
        }
    }

    /// Whether at least one live subscriber exists (M8).
    pub fn is_bound(&self) -> bool {
        self.entries.borrow().iter().any(Entry::is_live)
    }

    /// How many live subscribers there are: removed ones and those whose owner died do not
    /// count (M8).
    pub fn len(&self) -> usize {
        self.entries
            .borrow()
            .iter()
            .filter(|entry| entry.is_live())
            .count()
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
    pub fn begin(&self) -> Broadcast<'_, C> {
        self.lock.set(self.lock.get() + 1);
        Broadcast {
            list: self,
            limit: DelegateHandle::next_id(),
            cursor: Cursor {
                index: 0,
                generation: self.generation.get(),
                last_key: None,
            },
        }
    }

    /// Empties the slot of every entry present now that `select` picks, one at a time, and drops
    /// each callable outside the borrow (its captures may re-enter the list). Returns how many.
    ///
    /// Allocates nothing (a subscriber may call `clear` or `remove_owner` during a broadcast,
    /// M12). The list is locked meanwhile, like a broadcast, so re-entrant removals cannot
    /// compact it under the walk (and the lock is released even if a drop panics, M7); entries
    /// added by such re-entrant code are not touched, as they came after this call.
    fn take_each(&self, mut select: impl FnMut(&Entry<C>) -> bool) -> usize {
        let lock = self.begin();
        let mut generation = self.generation.get();
        let mut index = 0;
        let mut taken = 0;
        loop {
            let callable = {
                let mut entries = self.entries.borrow_mut();
                if self.generation.get() != generation {
                    // An insertion before the end shifted the entries: start over (taken
                    // entries are empty now, so nothing is taken twice).
                    generation = self.generation.get();
                    index = 0;
                }
                let mut callable = None;
                while index < entries.len() {
                    let entry = &mut entries[index];
                    index += 1;
                    if entry.id < lock.limit && entry.slot.is_some() && select(entry) {
                        callable = entry.slot.take();
                        break;
                    }
                }
                callable
            };
            let Some(callable) = callable else {
                return taken;
            };
            self.tombstones.set(self.tombstones.get() + 1);
            taken += 1;
            drop(callable);
        }
    }

    /// The index of the entry with `id`, in O(log n) while ids ascend along the list, and in
    /// O(k log n) for k distinct priorities otherwise (M12).
    ///
    /// Entries are sorted by priority, and within one priority by id: every insertion lands at
    /// the end of its priority's run with the largest id issued so far. So each run is
    /// binary-searched; a run's end is found by galloping, which keeps even a list of all
    /// distinct priorities at O(n), no worse than a scan.
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

    /// Drops every tombstone. Only runs when no broadcast is running, so no cursor is affected.
    /// Dropping an entry only drops its id and weak owner: no user code runs here.
    fn compact(&self) {
        let mut entries = self.entries.borrow_mut();
        entries.retain(|entry| entry.slot.is_some());
        self.tombstones.set(0);
        if entries.is_empty() {
            self.ids_ascending.set(true);
        }
    }

    fn unlock(&self) {
        let depth = self.lock.get() - 1;
        self.lock.set(depth);
        if depth == 0 && self.tombstones.get() > 0 {
            self.compact();
        }
    }
}

impl<C: Clone> InvocationList<C> {
    /// Broadcasts `args` to every subscriber: `call(subscriber, args)` runs for each one that
    /// [`begin`](Self::begin) yields. An owned argument is cloned only for subscribers that have
    /// a live subscriber after them, so the last one gets the original: at most N - 1 clones for
    /// N subscribers (M11). Never allocates (M12).
    pub fn broadcast_with<A: Clone>(&self, args: A, mut call: impl FnMut(&C, A)) {
        let mut broadcast = self.begin();
        let Some(mut current) = broadcast.next() else {
            return;
        };
        loop {
            if !broadcast.has_next() {
                call(&current, args);
                return;
            }
            call(&current, args.clone());
            // Let go of this subscriber before looking for the next one: if it removed itself,
            // this was the last reference, and dropping its captures runs user code that may
            // remove later subscribers or drop their owners (M3, M9). The next one is then
            // checked after that code ran, never before.
            drop(current);
            current = match broadcast.next() {
                Some(next) => next,
                None => return,
            };
        }
    }
}

/// Where a [`Broadcast`] is in the list.
#[derive(Clone, Copy)]
struct Cursor {
    /// Next index to look at.
    index: usize,
    /// The list's generation when `index` was computed.
    generation: u64,
    /// Key of the last entry passed, to re-find the place after a mid-list insertion.
    last_key: Option<(i64, u64)>,
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
    /// Entries with an id at least this large were added after the broadcast began (M2).
    limit: u64,
    cursor: Cursor,
}

impl<C> fmt::Debug for Broadcast<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast")
            .field("index", &self.cursor.index)
            .finish_non_exhaustive()
    }
}

/// What [`Broadcast::seek`] found.
enum Seek<R, C> {
    /// A live subscriber present when the broadcast began; `R` is what `pick` made of it.
    Live(R),
    /// A subscriber whose owner died, pruned on the way; drop it outside the borrow.
    Pruned(C),
    /// No further subscriber.
    End,
}

impl<C: Clone> Broadcast<'_, C> {
    /// The next live subscriber for which `filter` returns true, skipping others.
    ///
    /// Subscribers whose owner died are pruned as they are passed. `filter` runs outside the
    /// list's borrow, like a subscriber: it may use the list (rule M10).
    pub fn next_matching(&mut self, mut filter: impl FnMut(&C) -> bool) -> Option<C> {
        loop {
            let mut cursor = self.cursor;
            let found = self.seek(&mut cursor, true, C::clone);
            self.cursor = cursor;
            match found {
                Seek::Live(candidate) if filter(&candidate) => return Some(candidate),
                // A rejected candidate (a clone) and a pruned callable are dropped here, outside
                // the borrow: a closure's captures may re-enter the list.
                Seek::Live(_) | Seek::Pruned(_) => {}
                Seek::End => return None,
            }
        }
    }

    /// Whether [`next_matching`](Self::next_matching) with this filter would yield a subscriber
    /// now. Does not advance. `filter` runs outside the list's borrow (rule M10).
    pub fn has_next_matching(&mut self, mut filter: impl FnMut(&C) -> bool) -> bool {
        let mut probe = self.cursor;
        loop {
            match self.seek(&mut probe, false, C::clone) {
                Seek::Live(candidate) if filter(&candidate) => return true,
                Seek::Live(_) | Seek::Pruned(_) => {}
                Seek::End => return false,
            }
        }
    }

    /// Whether another live subscriber follows. Does not advance.
    pub fn has_next(&mut self) -> bool {
        let mut probe = self.cursor;
        matches!(self.seek(&mut probe, false, |_| ()), Seek::Live(()))
    }

    /// Starts over from the first subscriber, keeping the same set of subscribers (those present
    /// when the broadcast began) and the same lock. Script delegates use this for their second,
    /// managed pass.
    pub fn rewind(&mut self) {
        self.cursor = Cursor {
            index: 0,
            generation: self.list.generation.get(),
            last_key: None,
        };
    }

    /// Moves `cursor` past the next live subscriber present when the broadcast began and returns
    /// `pick` of it. `pick` runs under the list's borrow, so it must not run user code (it is a
    /// clone or nothing). With `prune`, an entry whose owner died is emptied on the way and its
    /// callable returned, to be dropped by the caller outside the borrow; without, it is skipped.
    fn seek<R>(&self, cursor: &mut Cursor, prune: bool, pick: impl FnOnce(&C) -> R) -> Seek<R, C> {
        let list = self.list;
        let mut entries = list.entries.borrow_mut();
        cursor.relocate(list, &entries);
        while cursor.index < entries.len() {
            let entry = &mut entries[cursor.index];
            if entry.id >= self.limit {
                if list.ids_ascending.get() {
                    // Everything from here on was added after the broadcast began (M2).
                    cursor.index = entries.len();
                    break;
                }
                cursor.step(entry.key());
                continue;
            }
            cursor.step(entry.key());
            if entry.slot.is_none() {
                continue;
            }
            if !entry.owner_alive() {
                if prune && let Some(callable) = entry.slot.take() {
                    list.tombstones.set(list.tombstones.get() + 1);
                    return Seek::Pruned(callable);
                }
                continue;
            }
            if let Some(slot) = entry.slot.as_ref() {
                return Seek::Live(pick(slot));
            }
        }
        Seek::End
    }
}

impl Cursor {
    fn step(&mut self, key: (i64, u64)) {
        self.index += 1;
        self.last_key = Some(key);
    }

    /// After an insertion before the end of the list, re-finds the index after the last entry
    /// passed (entries are sorted by key, and nothing is removed physically while locked).
    fn relocate<C>(&mut self, list: &InvocationList<C>, entries: &[Entry<C>]) {
        let generation = list.generation.get();
        if self.generation != generation {
            self.generation = generation;
            self.index = match self.last_key {
                None => 0,
                Some(last) => entries.partition_point(|entry| entry.key() <= last),
            };
        }
    }
}

impl<C: Clone> Iterator for Broadcast<'_, C> {
    type Item = C;

    fn next(&mut self) -> Option<C> {
        self.next_matching(|_| true)
    }
}

impl<C> Drop for Broadcast<'_, C> {
    fn drop(&mut self) {
        self.list.unlock();
    }
}
