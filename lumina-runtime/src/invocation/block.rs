//! The block's work on one subscription: whether it is live (M8, M9), finding it by id
//! (main, pending or deferred), adding it, moving it to another priority, the lock word, and
//! the counts of live subscribers; and the module loader's access to the block (MB4).

use std::any::Any;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use super::entry::{BLOCKED, Entry, ONCE, OWNED, Pending, Subscriber};
use super::list::{Block, HAS_PENDING, LOCK_ONE, NEEDS_SETTLE, Run, Spec, is_owner};
use crate::drops::Drops;
use crate::handle::DelegateHandle;
use crate::steps;

impl<C: Subscriber> Block<C> {
    /// The weak owner of the main-list entry `id`, if it has one.
    pub(super) fn owner(&self, id: u64) -> Option<Weak<dyn Any>> {
        let owners = self.owners.borrow();
        owners
            .binary_search_by_key(&id, |(owner_id, _)| *owner_id)
            .ok()
            .map(|index| owners[index].1.clone())
    }

    /// Whether the owner of the owned main-list `entry` is alive.
    #[cold]
    #[inline(never)]
    pub(super) fn owner_alive(&self, entry: &Entry<C>) -> bool {
        let owners = self.owners.borrow();
        owners
            .binary_search_by_key(&entry.id(), |(id, _)| *id)
            .is_ok_and(|index| owners[index].1.strong_count() > 0)
    }

    pub(super) fn owner_is(&self, entry: &Entry<C>, target: *const ()) -> bool {
        entry.is_owned() && is_owner(self.owner(entry.id()).as_ref(), target)
    }

    /// Whether a main-list entry is live: not removed, and its owner (if any) alive (M8, M9).
    /// A blocked entry is live (subscribed, X4).
    #[inline]
    pub(super) fn is_live(&self, entry: &Entry<C>) -> bool {
        match entry.state() & !(BLOCKED | ONCE) {
            0 => true,
            OWNED => self.owner_alive(entry),
            _ => false,
        }
    }

    /// Whether a broadcast reaching the entry now would call it: live and not blocked. A present
    /// entry whose owner died is pruned on the way (M9): marked removed, its callable dropped
    /// when no broadcast runs (in a broadcast loop: when the outermost one ends, so this runs
    /// no user code there). A one-shot entry is not claimed here (see [`claim`](Self::claim)).
    #[inline]
    pub(super) fn live_or_prune(&self, entry: &Entry<C>) -> bool {
        let state = entry.state() & !ONCE;
        if state == 0 {
            return true;
        }
        if state & !(OWNED | BLOCKED) != 0 || state & OWNED == 0 {
            // Removed, or blocked without owner.
            return false;
        }
        if self.owner_alive(entry) {
            return state & BLOCKED == 0;
        }
        self.prune(entry);
        false
    }

    /// A one-shot entry's call is about to start (X3): it is removed first, so no broadcast
    /// nested in its call (or in a later call) runs it again, and its handle no longer removes
    /// anything. Its callable stays in the slot for the call and is dropped when the outermost
    /// broadcast ends, like any subscriber removed during a broadcast (M4). Runs no user code.
    #[cold]
    #[inline(never)]
    pub(super) fn claim(&self, entry: &Entry<C>) {
        entry.mark_removed();
        self.note_tombstone();
    }

    /// Adds one block to (`true`), or lifts one from, the subscription `id`, in the main list or
    /// waiting (A2: counted). `false`, changing nothing, when it is not present, or when a lift
    /// finds it unblocked. O(log n) amortized (N4): a search by id, a hash probe for a nested
    /// block, and once the nested counts have doubled since their last sweep, a sweep of the
    /// counts of subscriptions that left.
    pub(super) fn set_blocked(&self, id: u64, blocked: bool) -> bool {
        // The common cases, a first block and the lift of the only one, in one search.
        let only = |entry: &Entry<C>| {
            let was_blocked = entry.is_blocked();
            if blocked && !was_blocked {
                entry.set_blocked(true);
                return None;
            }
            let nested = || {
                let more = self.more_blocks.borrow();
                !more.is_empty() && more.contains_key(&id)
            };
            if !blocked && was_blocked && !nested() {
                entry.set_blocked(false);
                return None;
            }
            Some(was_blocked)
        };
        let was_blocked = match self.with_entry(id, only) {
            None => return false,
            Some(None) => return true,
            Some(Some(was_blocked)) => was_blocked,
        };
        // A nested block, or the lift of one (the search made the other cases).
        let mut more = self.more_blocks.borrow_mut();
        match (blocked, was_blocked) {
            (true, _) => {
                *more.entry(id).or_insert(0) += 1;
                let len = more.len();
                drop(more);
                if len >= 2 * self.blocks_swept.get().max(8) {
                    self.sweep_blocks();
                }
            }
            (false, false) => return false,
            (false, true) => match more.get_mut(&id) {
                Some(count) if *count > 1 => *count -= 1,
                _ => {
                    more.remove(&id);
                }
            },
        }
        true
    }

    /// Drops the nested block counts of subscriptions no longer present (removed, their owner
    /// gone): O(k log n) for k counts, run when they have doubled since the last sweep.
    fn sweep_blocks(&self) {
        let mut more = std::mem::take(&mut *self.more_blocks.borrow_mut());
        more.retain(|&id, _| self.with_entry(id, |_| ()).is_some());
        self.blocks_swept.set(more.len());
        *self.more_blocks.borrow_mut() = more;
    }

    /// `visit` on the present (not removed) entry `id`, main or pending, without user code.
    pub(super) fn with_entry<T>(&self, id: u64, visit: impl FnOnce(&Entry<C>) -> T) -> Option<T> {
        let entries = self.entries.borrow();
        if let Some(index) = self.find(&entries, id) {
            let entry = &entries[index];
            return (!entry.is_removed()).then(|| visit(entry));
        }
        drop(entries);
        let pending = self.pending.borrow();
        if let Some(index) = self.pending_index(&pending, id) {
            let found = &pending[index];
            return (!found.entry.is_removed()).then(|| visit(&found.entry));
        }
        drop(pending);
        let deferred = self.deferred.borrow();
        self.deferred_entry(&deferred, id)
            .filter(|p| !p.entry.is_removed())
            .map(|p| visit(&p.entry))
    }

    /// The deferred entry `id`, found by its key: O(log m) (N4).
    pub(super) fn deferred_entry<'d>(
        &self,
        deferred: &'d BTreeMap<(i64, u64), Pending<C>>,
        id: u64,
    ) -> Option<&'d Pending<C>> {
        if deferred.is_empty() {
            return None;
        }
        steps::search(deferred.len());
        deferred.get(&(-i64::from(self.priority_of(id)), id))
    }

    /// Outside broadcasts (no lock held): takes the present deferred entry `id` out of the
    /// deferred list if `select` picks it, O(log m); the indexes forget it (its owner row and
    /// key at the next compaction). The caller drops its callable outside any borrow.
    pub(super) fn take_deferred(
        &self,
        id: u64,
        select: impl FnOnce(&Pending<C>) -> bool,
    ) -> Option<Pending<C>> {
        let key = (-i64::from(self.priority_of(id)), id);
        let mut deferred = self.deferred.borrow_mut();
        steps::search(deferred.len());
        if !deferred
            .get(&key)
            .is_some_and(|found| !found.entry.is_removed() && select(found))
        {
            return None;
        }
        let taken = deferred.remove(&key);
        let empty = deferred.is_empty();
        drop(deferred);
        self.set_priority_of(id, 0);
        self.stale_rows.set(true);
        if empty && self.pending.borrow().is_empty() {
            self.state.set(self.state.get() & !HAS_PENDING);
        }
        taken
    }

    /// Outside broadcasts, merges the deferred subscribers into the main list (a compaction):
    /// what a broadcast, dispatch or walk does before it starts.
    #[cold]
    #[inline(never)]
    pub(super) fn merge_deferred(&self) {
        if !self.is_broadcasting() && !self.deferred.borrow().is_empty() {
            self.compact();
        }
    }

    /// Moves the subscription `id` to `priority` (see [`InvocationList::set_priority`](super::InvocationList::set_priority)).
    /// Outside broadcasts O(log n): the subscriber waits in the deferred list, merged by the
    /// next broadcast (O(n + m), shared by the m deferred). During one, O(1) amortized: the
    /// settle applies every move at once, O(n + k log k) for k moves, and allocates nothing
    /// (the room it needs is reserved here, as the table of moves grows, M12).
    pub(super) fn set_priority(&self, id: u64, priority: i32) -> bool {
        if self.with_entry(id, |_| ()).is_none() {
            return false;
        }
        if self.is_broadcasting() {
            let mut moves = self.moves.borrow_mut();
            let rank = moves.len();
            moves.push((id, rank, priority));
            // Room for the moved copies and their runs (and the merge's one spare run), so that
            // the settle allocates nothing.
            self.pending.borrow_mut().reserve(moves.len());
            self.runs.borrow_mut().reserve(moves.len() + 1);
            self.state.set(self.state.get() | NEEDS_SETTLE);
        } else {
            self.move_now(&mut self.entries.borrow_mut(), id, priority);
            self.merge_if_worthwhile();
        }
        true
    }

    /// Outside broadcasts: moves the present subscription `id` to `priority` without shifting
    /// the main list. A main-list entry is moved out into the deferred list (a tombstone marked
    /// moved away stays in its slot until the next compaction); a deferred one changes its key
    /// there. O(log n); runs no user code.
    pub(super) fn move_now(&self, entries: &mut Vec<Entry<C>>, id: u64, priority: i32) {
        if let Some(index) = self.find(entries, id) {
            if entries[index].is_removed() || self.priority_at(index) == priority {
                return;
            }
            let owner = if entries[index].is_owned() {
                self.owner(id)
            } else {
                None
            };
            let entry = entries[index].move_out();
            self.note_tombstone();
            self.set_priority_of(id, priority);
            self.defer(
                entries,
                Pending {
                    entry,
                    priority,
                    owner,
                },
            );
            return;
        }
        let key = (-i64::from(self.priority_of(id)), id);
        let moved = {
            let mut deferred = self.deferred.borrow_mut();
            steps::search(deferred.len());
            deferred.remove(&key)
        };
        if let Some(mut moved) = moved {
            moved.priority = priority;
            self.set_priority_of(id, priority);
            self.defer(entries, moved);
        }
    }

    /// Outside broadcasts: puts `new` in the deferred list, O(log m), where it waits for the
    /// next compaction's merge, and makes room in the main list and its runs for that merge,
    /// so the merge (done by the next broadcast) allocates nothing (M12).
    pub(super) fn defer(&self, entries: &mut Vec<Entry<C>>, new: Pending<C>) {
        let mut deferred = self.deferred.borrow_mut();
        steps::search(deferred.len());
        deferred.insert(new.key(), new);
        entries.reserve(deferred.len());
        self.runs.borrow_mut().reserve(deferred.len() + 1);
        // Walks merge them first (`merge_deferred`): the flag takes them off the hot path.
        self.state
            .set(self.state.get() | HAS_PENDING | NEEDS_SETTLE);
    }

    /// Outside broadcasts, merges the deferred list once it is at least half the main list's
    /// size (and 32) even without a broadcast: its memory stays bounded, and the merge,
    /// O(n + m), is O(1) amortized per deferred subscriber.
    pub(super) fn merge_if_worthwhile(&self) {
        if self.is_broadcasting() {
            return;
        }
        let waiting = self.deferred.borrow().len();
        if waiting >= 32 && waiting * 2 >= self.entries.borrow().len() {
            self.compact();
        }
    }

    /// Counts a new tombstone in the main list; the outermost broadcast's end will settle.
    pub(super) fn note_tombstone(&self) {
        self.tombstones.set(self.tombstones.get() + 1);
        self.state.set(self.state.get() | NEEDS_SETTLE);
    }

    /// Prunes a present entry whose owner died (M9): a tombstone, its callable dropped now if
    /// no broadcast runs, else when the outermost one ends.
    #[cold]
    #[inline(never)]
    pub(super) fn prune(&self, entry: &Entry<C>) {
        self.note_tombstone();
        Drops::drop_one(self.take_unless_broadcasting(entry));
    }

    /// Raises the lock count; returns the state before.
    #[inline(always)]
    pub(super) fn lock(&self) -> u32 {
        let state = self.state.get();
        self.state.set(state + LOCK_ONE);
        state
    }

    pub(crate) fn is_broadcasting(&self) -> bool {
        self.state.get() >= LOCK_ONE
    }

    /// Removes `handle`'s subscriber like [`InvocationList::remove`](super::InvocationList::remove) and, outside a broadcast,
    /// compacts at once: nothing of it (callable, weak owner) is left afterwards. What a game
    /// module's unload uses before its library is unmapped (MB4).
    pub(crate) fn remove_now(&self, handle: DelegateHandle) -> bool {
        let removed = handle.is_valid() && self.remove(handle.id());
        if !self.is_broadcasting() {
            self.compact();
        }
        removed
    }

    /// Marks `entry` removed and empties its slot, unless a broadcast of the list is running:
    /// then the callable stays in its slot until the outermost broadcast ends and settles the
    /// list (M4: no later), so no loop ever finds the slot of the entry it calls emptied, and a
    /// removal during a broadcast runs no user code. The caller drops what this returns,
    /// outside any borrow.
    pub(super) fn take_unless_broadcasting(&self, entry: &Entry<C>) -> Option<C> {
        entry.mark_removed();
        if self.is_broadcasting() {
            return None;
        }
        entry.take_callable()
    }

    pub(super) fn insert(
        self: &Rc<Self>,
        spec: Spec,
        site: u32,
        make: impl FnOnce(DelegateHandle) -> C,
    ) -> DelegateHandle {
        let Spec {
            priority,
            owner,
            once,
            key,
            self_aware,
        } = spec;
        if owner.is_some() {
            // Before the handle is made: what the sweep's drops add gets smaller ids (the
            // indexes' ids stay sorted), and a panic there adds nothing.
            if !self.is_broadcasting() {
                self.sweep_dead_owners_if_doubled();
            }
            self.owned_since_sweep.set(self.owned_since_sweep.get() + 1);
        }
        let handle = DelegateHandle::new_unique();
        if priority != 0 {
            self.set_priority_of(handle.id(), priority);
        }
        let callable = make(handle);
        // Module hook (MB4): a subscription whose code lies in a loaded game module's library is
        // recorded, so unloading the module removes it. One atomic load while none is loaded.
        let code = callable.code();
        let entry = Entry::new(
            handle.id(),
            (owner.is_some(), once, self_aware),
            site,
            callable,
        );
        // The largest id of this list so far: the indexes' ids stay sorted.
        if let Some(key) = key {
            self.keys
                .borrow_mut()
                .entry(key)
                .or_default()
                .push(handle.id());
        }
        if let Some(owner) = &owner {
            self.by_owner
                .borrow_mut()
                .entry(Weak::as_ptr(owner).cast::<()>().addr())
                .or_default()
                .push(handle.id());
            // Its row in the owners table, made now (the largest id so far: an append), so that
            // no merge inserts rows.
            let mut owners = self.owners.borrow_mut();
            steps::search(owners.len());
            let position = owners.partition_point(|(id, _)| *id < handle.id());
            steps::add(owners.len() - position);
            owners.insert(position, (handle.id(), owner.clone()));
        }
        let new = Pending {
            entry,
            priority,
            owner,
        };
        if self.is_broadcasting() {
            // The main list keeps its shape while broadcasts walk it (M2).
            let mut pending = self.pending.borrow_mut();
            let key = new.key();
            steps::search(pending.len());
            let position = pending.partition_point(|other| other.key() < key);
            steps::add(pending.len() - position);
            pending.insert(position, new);
            self.state
                .set(self.state.get() | HAS_PENDING | NEEDS_SETTLE);
        } else {
            let mut entries = self.entries.borrow_mut();
            // Below (or at) the lowest priority in use: an append. Above it: the pending list,
            // merged by the next compaction (N4: no shift of the main list).
            let at_end = self
                .runs
                .borrow()
                .last()
                .is_none_or(|last| last.priority >= priority);
            if at_end {
                self.insert_main(&mut entries, new);
            } else {
                self.defer(&mut entries, new);
            }
            drop(entries);
            self.merge_if_worthwhile();
        }
        if code.is_some() {
            let _ = crate::track::track(self.module_access(), handle, code);
        }
        handle
    }

    /// How the module loader reaches this list (MB4): its block's address, and the block's
    /// removal and broadcasting check (`ModuleRecorded`, below).
    #[cold]
    pub(super) fn module_access(self: &Rc<Self>) -> crate::track::ListAccess {
        crate::track::ListAccess::of(self)
    }

    /// Appends an entry to the main list, at or below its lowest priority (its owner's row is
    /// made by `insert`). Its id is the largest so far, so ids ascend within each run.
    pub(super) fn insert_main(&self, entries: &mut Vec<Entry<C>>, new: Pending<C>) {
        let Pending {
            entry, priority, ..
        } = new;
        let mut runs = self.runs.borrow_mut();
        steps::search(runs.len());
        let run = runs.partition_point(|run| run.priority > priority);
        if runs.get(run).is_none_or(|found| found.priority != priority) {
            steps::add(runs.len() - run);
            let start = run.checked_sub(1).map_or(0, |before| runs[before].end);
            runs.insert(
                run,
                Run {
                    priority,
                    end: start,
                },
            );
        }
        let at = runs[run].end;
        steps::add(entries.len() - at + runs.len() - run);
        entries.insert(at, entry);
        for run in &mut runs[run..] {
            run.end += 1;
        }
    }

    /// The index of the main-list entry with `id`: its priority from the index by id, a binary
    /// search for that priority's run, then one for the id in the run (ids ascend within one):
    /// O(log n) whatever the number of priorities (M12, N4).
    pub(super) fn find(&self, entries: &[Entry<C>], id: u64) -> Option<usize> {
        let priority = self.priority_of(id);
        let runs = self.runs.borrow();
        // Above the first run or below the last: in none (a subscription waiting in the deferred
        // list, say one added above every other), without the search's cache misses.
        if runs.first().is_none_or(|first| priority > first.priority)
            || runs.last().is_some_and(|last| priority < last.priority)
        {
            return None;
        }
        steps::search(runs.len());
        let run = runs.partition_point(|run| run.priority > priority);
        let end = runs
            .get(run)
            .filter(|found| found.priority == priority)?
            .end;
        let start = run.checked_sub(1).map_or(0, |before| runs[before].end);
        let stretch = &entries[start..end];
        steps::search(stretch.len());
        // A tombstone a change of priority left is no longer its subscription: its copy is.
        stretch
            .binary_search_by_key(&id, Entry::id)
            .ok()
            .filter(|&index| !stretch[index].is_moved_away())
            .map(|index| start + index)
    }

    /// The priority the subscription `id` (main or pending) sits at now; 0 for an id this list
    /// does not know. O(1): no hashing for a list without priorities.
    pub(super) fn priority_of(&self, id: u64) -> i32 {
        let priorities = self.priorities.borrow();
        if priorities.is_empty() {
            return 0;
        }
        priorities.get(&id).copied().unwrap_or(0)
    }

    /// Records where the subscription `id` sits now (see [`Block::priorities`]).
    pub(super) fn set_priority_of(&self, id: u64, priority: i32) {
        let mut priorities = self.priorities.borrow_mut();
        if priority == 0 {
            if !priorities.is_empty() {
                priorities.remove(&id);
            }
        } else {
            priorities.insert(id, priority);
        }
    }

    /// The priority of the main-list entry at `index`.
    pub(super) fn priority_at(&self, index: usize) -> i32 {
        let runs = self.runs.borrow();
        runs[runs.partition_point(|run| run.end <= index)].priority
    }

    /// The dispatch-order key of the main-list entry at `index` (as `Pending::key`).
    pub(super) fn key_at(&self, entries: &[Entry<C>], index: usize) -> (i64, u64) {
        (-i64::from(self.priority_at(index)), entries[index].id())
    }

    pub(super) fn is_bound(&self) -> bool {
        // Present entries without owner are live: at least `len - tombstones - owners` of them
        // (every present owned main-list entry has a row in `owners`; a removed one may keep
        // its row until the next compaction or sweep).
        let entries = self.entries.borrow();
        if entries.len() > self.tombstones.get() + self.owners.borrow().len() {
            return true;
        }
        entries
            .iter()
            .inspect(|_| steps::add(1))
            .any(|entry| self.is_live(entry))
            || self
                .pending
                .borrow()
                .iter()
                .inspect(|_| steps::add(1))
                .any(Pending::is_live)
            || self.deferred.borrow().values().any(Pending::is_live)
    }

    pub(super) fn len(&self) -> usize {
        let main = self
            .entries
            .borrow()
            .iter()
            .inspect(|_| steps::add(1))
            .filter(|entry| self.is_live(entry))
            .count();
        main + self.pending.borrow().iter().filter(|p| p.is_live()).count()
            + self
                .deferred
                .borrow()
                .values()
                .filter(|p| p.is_live())
                .count()
    }
}

/// The module loader's access to a list's block (MB4): a removal of a recorded subscription, and
/// whether the list is broadcasting.
// SAFETY: the block's `Drop` forgets the records of its entries (`settle.rs`), and an entry's own
// `Drop` forgets its record (`entry.rs`), so a removed and compacted subscription leaves none.
unsafe impl<C: Subscriber> crate::track::ModuleRecorded for Block<C> {
    /// Nothing: the removal drops the callable itself, and compacts. The loader holds a strong
    /// reference of its own meanwhile, so the callable's `Drop` (user code that may drop the
    /// list's last other reference, the delegate the callable captured) cannot free the block
    /// under `remove_now`; dropped afterwards, it may be the last one, and the block's `Drop`
    /// then runs the other callables' `Drop`s, guarded (R2, R3).
    type Taken = ();

    fn busy(&self) -> bool {
        self.is_broadcasting()
    }

    fn take_recorded(&self, handle: DelegateHandle) -> (bool, ()) {
        // Told first, while its entry is live: a managed binding records why it leaves (R4).
        let _ = self.with_entry(handle.id(), |entry| {
            if let Some(callable) = entry.clone_callable() {
                callable.unloading(entry.site());
            }
        });
        (self.remove_now(handle), ())
    }
}
