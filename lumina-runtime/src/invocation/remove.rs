//! Removing: by handle (main, pending or deferred), by owner through its index, every
//! subscriber a selector picks, and the first phase of a clear; with the compaction that keeps
//! removal amortized O(log n).

use smallvec::SmallVec;

use super::entry::{BLOCKED, Entry, ONCE, OWNED, Pending, Subscriber};
use super::list::{Block, HAS_PENDING, NEEDS_SETTLE, is_owner};
use super::settle::{shrink_map, shrink_vec};
use crate::drops::Drops;
use crate::handle::DelegateHandle;
use crate::steps;

impl<C: Subscriber> Block<C> {
    pub(super) fn remove(&self, id: u64) -> bool {
        if self.is_broadcasting() {
            return self.remove_while_broadcasting(id);
        }
        let (removed, was_live) = {
            let entries = self.entries.borrow();
            if let Some(index) = self.find(&entries, id) {
                let entry = &entries[index];
                if entry.is_removed() {
                    return false;
                }
                let was_live = self.is_live(entry);
                entry.mark_removed();
                self.note_tombstone();
                (entry.take_callable(), was_live)
            } else {
                // Deferred (waiting for a merge): marked removed where it waits, a tombstone
                // its callable leaves now, and the merge or the sweep of the deferred list
                // discards. Not taken out of the map at once: a subscription added at the edge
                // of the map and removed again would split a full node on the way in and merge
                // it back on the way out, every time, on every level that is full (N4).
                drop(entries);
                let deferred = self.deferred.borrow();
                let Some(found) = self
                    .deferred_entry(&deferred, id)
                    .filter(|found| !found.entry.is_removed())
                else {
                    return false;
                };
                let was_live = found.owner_alive();
                found.entry.mark_removed();
                self.deferred_removed.set(self.deferred_removed.get() + 1);
                (found.entry.take_callable(), was_live)
            }
        };
        // Dropped outside the borrow: a closure's captures may run code that re-enters the list
        // (M13). The entry is already a tombstone, so a panic there leaves the list consistent.
        Drops::drop_one(removed);
        self.compact_if_worthwhile();
        self.sweep_deferred_if_worthwhile();
        was_live
    }

    /// Outside broadcasts, once the deferred list's tombstones (removals by handle that left
    /// their entry in place) are half of it and at least 32: discards them, O(m) for the m
    /// entries it holds, every m / 2 removals at least, so O(1) amortized per removal (N4).
    /// The indexes forget them as [`take_deferred`](Self::take_deferred) makes them forget
    /// (the priority now, the owner rows and keys at the next compaction). Runs no user code:
    /// a tombstone keeps only its id and weak owner, and one whose callable is still being
    /// dropped (a re-entrant removal) stays.
    fn sweep_deferred_if_worthwhile(&self) {
        let removed = self.deferred_removed.get();
        if removed < 32 || self.is_broadcasting() {
            return;
        }
        let Ok(mut deferred) = self.deferred.try_borrow_mut() else {
            return;
        };
        if removed * 2 < deferred.len() {
            return;
        }
        steps::add(deferred.len());
        deferred.retain(|_, pending| self.keeps_waiting(pending));
        self.deferred_removed.set(0);
        self.stale_rows.set(true);
        let empty = deferred.is_empty();
        drop(deferred);
        if empty && self.pending.borrow().is_empty() {
            self.state.set(self.state.get() & !HAS_PENDING);
        }
    }

    /// Removes every live subscription bound to the object at `owner` (main or pending), as
    /// [`remove_each`](Self::remove_each) does (M13: all are marked removed before the first
    /// callable is dropped; during a broadcast they are only marked, M4), but through the index
    /// by owner: O(k log n) in the owner's own k subscriptions, not a
    /// walk of the list (N4), and no compaction but the amortized one. Allocates nothing during
    /// a broadcast (M12); outside one, only for an owner with more than 8 subscriptions (the
    /// places of those it drops, in list order).
    pub(super) fn remove_owned_by(&self, owner: *const ()) -> usize {
        let outside = !self.is_broadcasting();
        // Outside broadcasts: where the marked entries are, in list order (what the drops walk).
        let mut marked: SmallVec<[usize; 8]> = SmallVec::new();
        // Outside broadcasts: the callables of deferred subscribers it removes (dropped after
        // the main list's).
        let mut taken: SmallVec<[((i64, u64), C); 1]> = SmallVec::new();
        let mut count = 0;
        if outside && !self.deferred.borrow().is_empty() {
            // The owner's deferred subscriptions leave the deferred list first; others left
            // there are merged, so the lock below (and any broadcast a drop's code makes under
            // it) sees one list. The merge is the one the next broadcast would make.
            let ids: SmallVec<[u64; 8]> = self
                .by_owner
                .borrow()
                .get(&owner.addr())
                .map(|ids| ids.iter().copied().collect())
                .unwrap_or_default();
            for id in ids {
                let owned = |p: &Pending<C>| p.is_live() && is_owner(p.owner.as_ref(), owner);
                if let Some(found) = self.take_deferred(id, owned) {
                    count += 1;
                    let key = found.key();
                    taken.extend(found.entry.take_callable().map(|callable| (key, callable)));
                }
            }
            if !self.deferred.borrow().is_empty() {
                self.compact();
            }
        }
        {
            let by_owner = self.by_owner.borrow();
            let ids = by_owner.get(&owner.addr()).map_or(&[][..], |ids| &ids[..]);
            steps::add(ids.len());
            let entries = self.entries.borrow();
            let pending = self.pending.borrow();
            let deferred = self.deferred.borrow();
            for &id in ids {
                if let Some(index) = self.find(&entries, id) {
                    let entry = &entries[index];
                    if self.is_live(entry) && self.owner_is(entry, owner) {
                        entry.mark_removed();
                        self.note_tombstone();
                        count += 1;
                        if outside {
                            marked.push(index);
                        }
                    }
                } else if let Some(index) = self.pending_index(&pending, id) {
                    let found = &pending[index];
                    if found.is_live() && is_owner(found.owner.as_ref(), owner) {
                        // Merged (its callable dropped) when the outermost broadcast ends.
                        found.entry.mark_removed();
                        self.state.set(self.state.get() | NEEDS_SETTLE);
                        count += 1;
                    }
                } else if let Some(found) = self.deferred_entry(&deferred, id) {
                    // Deferred (outside broadcasts only): its callable goes before this
                    // returns; the merge discards the entry.
                    if found.is_live() && is_owner(found.owner.as_ref(), owner) {
                        found.entry.mark_removed();
                        count += 1;
                        let key = found.key();
                        taken.extend(found.entry.take_callable().map(|callable| (key, callable)));
                    }
                }
            }
        }
        // No live subscription of this owner is left: its row of the index goes now, so ids of
        // removed subscriptions do not pile up under an address the allocator hands out again
        // (a handler registered and unregistered in a loop), which made every lookup by owner
        // O(removed) until the next compaction (N4). The ids left there were dead or removed;
        // the compaction forgets their entries. No allocation (M12).
        if count > 0 {
            self.by_owner.borrow_mut().remove(&owner.addr());
        }
        // The deferred ones' callables go under the lock too (M13: what their drops remove goes
        // at the settle, after them).
        if marked.is_empty() && taken.is_empty() {
            return count;
        }
        // Outside broadcasts the owner's callables go before this returns (M4), one at a time,
        // in list order, under this operation's own lock. A drop's re-entrant code that changes
        // the list (marked only, while locked) sets `NEEDS_SETTLE`: what it removed then goes
        // when the unlock settles, in list order, after the owner's own. Otherwise the lock goes
        // without a settle and the compaction is the amortized one.
        steps::add(marked.len());
        marked.sort_unstable();
        // Deferred subscribers (`HAS_PENDING` outside broadcasts) are set aside with it: the
        // unlock then settles only if a drop's code changed the list (not an O(n) merge per
        // removal, N4).
        let settle = self.state.get() & (NEEDS_SETTLE | HAS_PENDING);
        self.state
            .set(self.state.get() & !(NEEDS_SETTLE | HAS_PENDING));
        let lock = self.begin_in_place();
        let entries: &[Entry<C>] = lock.entries.as_deref().map_or(&[], Vec::as_slice);
        let mut drops = Drops::default();
        // In dispatch order: the deferred ones (by key) among the main list's.
        taken.sort_unstable_by_key(|(key, _)| *key);
        let mut deferred = taken.into_iter().peekable();
        for index in marked {
            let key = self.key_at(entries, index);
            while let Some((_, callable)) = deferred.next_if(|(before, _)| *before < key) {
                drops.drop(callable);
            }
            // Still marked: while locked, re-entrant code only marks (nothing takes it).
            drops.drop(entries[index].take_callable());
        }
        for (_, callable) in deferred {
            drops.drop(callable);
        }
        let reentered = self.state.get() & NEEDS_SETTLE != 0;
        if reentered {
            self.state.set(self.state.get() | settle);
            drop(lock);
        } else {
            drop(lock);
            self.state.set(self.state.get() | settle);
            self.compact_if_worthwhile();
        }
        drops.finish();
        count
    }

    /// The index in `pending` of the pending entry `id`: a binary search by its key (pending
    /// entries are in dispatch order), O(log n) (N4).
    pub(super) fn pending_index(&self, pending: &[Pending<C>], id: u64) -> Option<usize> {
        let key = (-i64::from(self.priority_of(id)), id);
        steps::search(pending.len());
        pending.binary_search_by_key(&key, Pending::key).ok()
    }

    /// Marks the subscriber `id` removed; its callable is dropped when the outermost broadcast
    /// ends (M4). Runs no user code.
    pub(super) fn remove_while_broadcasting(&self, id: u64) -> bool {
        let entries = self.entries.borrow();
        if let Some(index) = self.find(&entries, id) {
            let entry = &entries[index];
            if entry.is_removed() {
                return false;
            }
            self.note_tombstone();
            entry.mark_removed();
            return !entry.is_owned() || self.owner_alive(entry);
        }
        let pending = self.pending.borrow();
        let deferred = self.deferred.borrow();
        let Some(found) = self
            .pending_index(&pending, id)
            .map(|index| &pending[index])
            .or_else(|| self.deferred_entry(&deferred, id))
        else {
            return false;
        };
        if found.entry.is_removed() {
            return false;
        }
        // Pending entries are merged when the outermost broadcast ends: that settles anyway.
        // Deferred ones exist under a lock only while an operation outside broadcasts holds
        // one (`remove_owned_by`): its unlock settles (and drops the callable) for the flag.
        found.entry.mark_removed();
        self.state.set(self.state.get() | NEEDS_SETTLE);
        found.owner_alive()
    }

    /// The first phase of a clear (see [`InvocationList::take_all`](super::InvocationList::take_all)): outside a broadcast, the
    /// entries taken out of the list, empty now; during one, nothing (every entry is marked
    /// removed, and the outermost broadcast's end drops the callables, M4).
    pub(super) fn take_all(&self, mut removed: impl FnMut(u64, u32, &C)) -> Vec<Entry<C>> {
        if self.is_broadcasting() {
            self.remove_each(
                |_, entry| !entry.is_removed(),
                |pending| !pending.entry.is_removed(),
                removed,
            );
            return Vec::new();
        }
        // Deferred subscribers merged first: the list is taken in dispatch order.
        self.compact();
        let old = std::mem::take(&mut *self.entries.borrow_mut());
        self.runs.borrow_mut().clear();
        let owners = std::mem::take(&mut *self.owners.borrow_mut());
        self.by_owner.borrow_mut().clear();
        self.keys.borrow_mut().clear();
        self.moves.borrow_mut().clear();
        self.priorities.borrow_mut().clear();
        self.tombstones.set(0);
        // The tables emptied give their storage back (the main list and the owners went whole).
        self.shrink_sparse(&mut Vec::new());
        // Outside broadcasts nothing is pending: nothing is left to settle.
        self.state
            .set(self.state.get() & !(NEEDS_SETTLE | HAS_PENDING));
        // The list is empty before the first drop runs (M13: atomic).
        for entry in &old {
            let live = match entry.state() & !(BLOCKED | ONCE) {
                0 => true,
                OWNED => owners
                    .binary_search_by_key(&entry.id(), |(id, _)| *id)
                    .is_ok_and(|index| owners[index].1.strong_count() > 0),
                _ => false,
            };
            if live && let Some(callable) = entry.clone_callable() {
                removed(entry.id(), entry.site(), &callable);
            }
        }
        old
    }

    /// Removes every entry present now that the selectors pick; returns how many. All of them
    /// are marked removed first, with no user code running (the selectors and `removed`, called
    /// on each, are the crate's own), and only then are their callables dropped, one at a time
    /// and outside any borrow, so no drop's re-entrant code sees half of the operation (M13).
    /// During a broadcast they are only marked: the outermost broadcast's end drops them (M4),
    /// so no loop finds the slot of the entry it calls emptied. The list is locked like
    /// a broadcast meanwhile, so that code cannot move entries under the walk; what it adds
    /// comes after this call and stays. Allocates nothing (a subscriber may clear or remove an
    /// owner during a broadcast, M12).
    pub(super) fn remove_each(
        &self,
        mut select: impl FnMut(&Self, &Entry<C>) -> bool,
        mut select_pending: impl FnMut(&Pending<C>) -> bool,
        mut removed: impl FnMut(u64, u32, &C),
    ) -> usize {
        let limit = DelegateHandle::next_id();
        // Outside broadcasts, the callables are dropped here, before this returns (M4).
        let outside = !self.is_broadcasting();
        if outside && self.state.get() & HAS_PENDING != 0 {
            // Deferred subscribers merged first (this walks the list anyway): drops in
            // dispatch order.
            self.compact();
        }
        let lock = self.begin_in_place();
        let entries: &[Entry<C>] = lock.entries.as_deref().map_or(&[], Vec::as_slice);
        let mut count = 0;
        steps::add(entries.len());
        for entry in entries {
            if !entry.is_removed() && select(self, entry) {
                if self.is_live(entry)
                    && let Some(callable) = entry.clone_callable()
                {
                    removed(entry.id(), entry.site(), &callable);
                }
                entry.mark_removed();
                self.note_tombstone();
                count += 1;
            }
        }
        {
            let pending = self.pending.borrow();
            steps::add(pending.len());
            for found in pending.iter().filter(|p| p.entry.id() < limit) {
                if !found.entry.is_removed() && select_pending(found) {
                    if found.is_live()
                        && let Some(callable) = found.entry.clone_callable()
                    {
                        removed(found.entry.id(), found.entry.site(), &callable);
                    }
                    found.entry.mark_removed();
                    self.state.set(self.state.get() | NEEDS_SETTLE);
                    count += 1;
                }
            }
        }
        let mut drops = Drops::default();
        if outside {
            // No loop runs: only this operation's own lock is held.
            self.drop_removed(entries, &mut drops);
        }
        drop(lock);
        drops.finish();
        count
    }

    /// Outside broadcasts, drops tombstones once they are at least half the list, so removal
    /// stays amortised O(log n) and iteration never skips more than it visits.
    pub(super) fn compact_if_worthwhile(&self) {
        let tombstones = self.tombstones.get();
        if tombstones == 0 || self.is_broadcasting() {
            return;
        }
        if tombstones * 2 >= self.entries.borrow().len() {
            self.compact();
        }
    }

    /// Outside broadcasts, at an add with an owner, once the owners table has doubled since
    /// the last sweep (`owned_since_sweep` has reached the rows the last sweep left, at least
    /// 8): removes every subscription whose owner died though no broadcast pruned it (M9), so
    /// a list subscribed to and never broadcast stays bounded. The owners table keeps only the
    /// live owned subscriptions' rows, the index by owner forgets the swept ones, and the main
    /// list compacts if its tombstones are half of it. O(r log n) for the r rows walked, every
    /// r / 2 adds with an owner at least: O(log n) amortized (N4). The swept callables are
    /// dropped last, in the order they were added, one at a time with no borrow held, the
    /// list consistent and unlocked: a `Drop` there is user code that may add (its id comes
    /// before the add's own), remove, broadcast or panic (M13); every drop runs, and the first
    /// panic is resumed once they are done (the add then adds nothing).
    pub(super) fn sweep_dead_owners_if_doubled(&self) {
        if self.owned_since_sweep.get() < self.owned_at_sweep.get().max(8) {
            return;
        }
        let dead: Vec<(u64, usize)> = {
            let owners = self.owners.borrow();
            steps::add(owners.len());
            owners
                .iter()
                .filter(|(_, owner)| owner.strong_count() == 0)
                .map(|(id, owner)| (*id, owner.as_ptr().cast::<()>().addr()))
                .collect()
        };
        let mut taken: Vec<C> = Vec::with_capacity(dead.len());
        for &(id, _) in &dead {
            let entries = self.entries.borrow();
            if let Some(index) = self.find(&entries, id) {
                let entry = &entries[index];
                if !entry.is_removed() {
                    entry.mark_removed();
                    self.note_tombstone();
                    taken.extend(entry.take_callable());
                }
            } else {
                drop(entries);
                if let Some(found) = self.take_deferred(id, |_| true) {
                    taken.extend(found.entry.take_callable());
                }
            }
        }
        // The rows left: live owners of present subscriptions (a removed one's row goes too).
        let mut owners = self.owners.borrow_mut();
        owners.retain(|(id, owner)| {
            owner.strong_count() > 0 && self.with_entry(*id, |_| ()).is_some()
        });
        self.owned_at_sweep.set(owners.len());
        self.owned_since_sweep.set(0);
        shrink_vec(&mut owners);
        drop(owners);
        if !dead.is_empty() {
            let mut addresses: Vec<usize> = dead.iter().map(|&(_, address)| address).collect();
            addresses.sort_unstable();
            addresses.dedup();
            let mut by_owner = self.by_owner.borrow_mut();
            for address in addresses {
                if let Some(ids) = by_owner.get_mut(&address) {
                    steps::add(ids.len());
                    ids.retain(|id| dead.binary_search_by_key(id, |&(dead, _)| dead).is_err());
                    if ids.is_empty() {
                        by_owner.remove(&address);
                    }
                }
            }
            shrink_map(&mut by_owner);
        }
        self.compact_if_worthwhile();
        let mut drops = Drops::default();
        for callable in taken {
            drops.drop(callable);
        }
        drops.finish();
    }
}
