//! Settling: what happens to removed subscribers. Their callables are dropped once nothing runs
//! them, always outside any borrow (a drop is user code, M13), and the end of the outermost
//! broadcast merges the pending subscribers in and compacts the main list.

use std::hash::{BuildHasher, Hash};
use std::ops::Bound;

use smallvec::SmallVec;

use super::entry::{Entry, Pending, Subscriber};
use super::list::{Block, HAS_PENDING, LOCK_ONE, NEEDS_SETTLE, Run, STOP};
use crate::steps;
// The walk names them here; they live below the list, in `drops`.
use crate::drops::Drops;

impl<C: Subscriber> Block<C> {
    /// Lowers the lock count; the outermost broadcast's end settles the list if it needs it.
    #[inline(always)]
    pub(super) fn unlock(&self) {
        let state = self.state.get() - LOCK_ONE;
        self.state.set(state);
        // The common end: the outermost broadcast, nothing to settle (lock count 0, no flag).
        if state != 0 {
            self.unlock_rest(state);
        }
    }

    /// [`unlock`](Self::unlock) when the state it left is not 0: an enclosing broadcast still
    /// runs (nothing to do), or the lock is at 0 with `NEEDS_SETTLE` (`HAS_PENDING` and `STOP`
    /// come with it): below [`LOCK_ONE`].
    #[cold]
    #[inline(never)]
    fn unlock_rest(&self, state: u32) {
        if state < LOCK_ONE {
            self.settle();
        }
    }

    /// At the end of the outermost broadcast: drops the callables removed during it, one at a
    /// time and outside any borrow (their captures may re-enter the list), then merges the
    /// pending subscribers and compacts, and clears a stop request no loop took. The list counts as broadcasting meanwhile, so re-entrant
    /// calls from those drops cannot move entries under the walk. Every drop runs even if one
    /// panics; the first panic is resumed once the list is settled (M13), and a panic while the
    /// thread is already unwinding (this runs when a panicking broadcast releases its lock) is
    /// logged instead of aborting the process.
    #[cold]
    #[inline(never)]
    fn settle(&self) {
        let mut drops = Drops::default();
        self.lock();
        loop {
            // The lock taken above keeps every mutable borrow of the main list away.
            let entries = self.entries.borrow();
            // A drop may remove more behind the walk (marked only: the list counts as
            // broadcasting): go again until a pass finds nothing left to drop.
            if self.drop_removed(&entries, &mut drops) == 0 {
                break;
            }
        }
        self.state.set((self.state.get() - LOCK_ONE) & !STOP);
        self.compact();
        drops.finish();
    }

    /// Drops the callable of every removed entry, main list first (in `entries`, which a held
    /// lock keeps in place), then the pending list, in order. One at a time and with no borrow
    /// of the pending list held: each drop may re-enter the list (M13). Returns how many it
    /// dropped.
    ///
    /// Only while no broadcast loop runs on the list, so none holds a reference into a slot:
    /// from the settle (the lock count was 0), and from an operation that found the list not
    /// broadcasting ([`remove_each`](Self::remove_each)); the lock they hold is their own.
    pub(super) fn drop_removed(&self, entries: &[Entry<C>], drops: &mut Drops) -> usize {
        let mut dropped = 0;
        crate::steps::add(entries.len());
        for entry in entries {
            if entry.is_removed()
                && let Some(callable) = entry.take_callable()
            {
                dropped += 1;
                drops.drop(callable);
            }
        }
        // Pending entries keep their place while the list is locked, but a drop may insert
        // before them: continue after the last key seen.
        let mut last_key = None;
        loop {
            let (key, callable) = {
                let pending = self.pending.borrow();
                let start = last_key.map_or(0, |last| pending.partition_point(|p| p.key() <= last));
                let Some(found) = pending[start..].iter().find(|p| p.entry.is_removed()) else {
                    break;
                };
                (found.key(), found.entry.take_callable())
            };
            last_key = Some(key);
            if let Some(callable) = callable {
                dropped += 1;
                drops.drop(callable);
            }
        }
        // Deferred entries (outside broadcasts, under an operation's own lock): the same, by
        // key; while locked nothing inserts into or takes out of the deferred list.
        let mut last_key = None;
        loop {
            let (key, callable) = {
                let deferred = self.deferred.borrow();
                let after = last_key.map_or(Bound::Unbounded, Bound::Excluded);
                let Some((key, found)) = deferred
                    .range((after, Bound::Unbounded))
                    .find(|(_, p)| p.entry.is_removed() && p.entry.has_callable())
                else {
                    break;
                };
                (*key, found.entry.take_callable())
            };
            last_key = Some(key);
            if let Some(callable) = callable {
                dropped += 1;
                drops.drop(callable);
            }
        }
        dropped
    }
}

impl<C> Drop for Block<C> {
    /// Drops every callable one at a time (M13: a panicking `Drop` does not keep the others from
    /// running, nor abort the process while it unwinds).
    fn drop(&mut self) {
        // Module hook (MB4): records of subscriptions game modules made here are forgotten, so an
        // unload never reaches this block again.
        if crate::track::recording() {
            let pending = self.pending.get_mut().iter().map(|p| p.entry.id());
            let deferred = self.deferred.get_mut().values().map(|p| p.entry.id());
            let pending = pending.chain(deferred);
            let ids = self.entries.get_mut().iter().map(|entry| entry.id());
            crate::track::forget(ids.chain(pending));
        }
        let mut drops = Drops::default();
        // In dispatch order: the deferred subscribers (by key) among the main list's.
        let mut deferred = std::mem::take(self.deferred.get_mut())
            .into_values()
            .peekable();
        let runs = std::mem::take(self.runs.get_mut());
        let mut run = 0;
        for (index, entry) in self.entries.get_mut().drain(..).enumerate() {
            while runs.get(run).is_some_and(|found| found.end <= index) {
                run += 1;
            }
            let priority = runs.get(run).map_or(0, |found| found.priority);
            let key = (-i64::from(priority), entry.id());
            while let Some(before) = deferred.next_if(|waiting| waiting.key() < key) {
                drops.drop(before);
            }
            drops.drop(entry);
        }
        for waiting in deferred {
            drops.drop(waiting);
        }
        for pending in self.pending.get_mut().drain(..) {
            drops.drop(pending);
        }
        drops.finish();
    }
}

impl<C: Subscriber> Block<C> {
    /// Whether a pending or deferred entry stays: removed and its callable already gone, it is
    /// discarded (no user code: only its id and weak owner remain), and the index of priorities
    /// forgets it now (its owner rows and keys go at the next compaction). What the compaction
    /// and the sweep of the deferred list keep.
    pub(super) fn keeps_waiting(&self, pending: &Pending<C>) -> bool {
        let keep = !pending.entry.is_removed() || pending.entry.has_callable();
        if !keep {
            self.set_priority_of(pending.entry.id(), 0);
        }
        keep
    }

    /// Applies the changes of priority asked for during the broadcasts, drops every tombstone
    /// whose callable is already gone, and merges the pending subscribers in. Only runs when no
    /// broadcast is running. Dropping an entry here only drops its id and weak owner: no user
    /// code runs. If the main list is borrowed (it cannot be, while no broadcast runs), nothing
    /// happens and the next settle compacts. O(n + m log m) for m pending: a backward merge in
    /// place, into room reserved when they were deferred (so a broadcast's settle allocates
    /// nothing for them, M12), the priority runs merged along (no lookup per entry).
    pub(super) fn compact(&self) {
        let Ok(mut entries) = self.entries.try_borrow_mut() else {
            return;
        };
        steps::add(entries.len() + self.pending.borrow().len());
        self.apply_moves(&mut entries);
        // Pending entries removed and already emptied: dropped; the indexes forget them.
        let mut discarded = false;
        let mut keep = |pending: &Pending<C>| {
            let keep = self.keeps_waiting(pending);
            discarded |= !keep;
            keep
        };
        self.pending.borrow_mut().retain(|pending| keep(pending));
        self.deferred
            .borrow_mut()
            .retain(|_, pending| keep(pending));
        // What the retain left of the deferred list is merged below.
        self.deferred_removed.set(0);
        let compacting = self.tombstones.get() > 0;
        if compacting {
            self.retain_entries(&mut entries);
        }
        self.merge_pending(&mut entries);
        if compacting || discarded || self.stale_rows.replace(false) {
            let mut owners = self.owners.borrow_mut();
            owners.retain(|(id, _)| self.find(&entries, *id).is_some());
            steps::add(owners.len());
            drop(owners);
            let present = |ids: &mut SmallVec<[u64; 1]>| {
                steps::add(ids.len());
                ids.retain(|id| self.find(&entries, *id).is_some());
                !ids.is_empty()
            };
            self.by_owner.borrow_mut().retain(|_, ids| present(ids));
            self.keys.borrow_mut().retain(|_, ids| present(ids));
        }
        // Normally 0: every removed entry's callable was dropped already (by its removal outside
        // a broadcast, or by the settle); one still held would be dropped by the next settle.
        let left = entries.iter().filter(|entry| entry.is_removed()).count();
        self.tombstones.set(left);
        self.shrink_sparse(&mut entries);
        let settled = self.state.get() & !(NEEDS_SETTLE | HAS_PENDING);
        self.state.set(if left > 0 {
            settled | NEEDS_SETTLE
        } else {
            settled
        });
    }

    /// The changes of priority asked for during the broadcasts (the last one asked for each
    /// subscriber wins): a main-list entry is moved out into the pending list (a moved-away
    /// tombstone stays), a pending one takes its new priority; then the pending list is sorted
    /// again. O(k log k + k log n) for k moves; allocates nothing (`set_priority` reserved the
    /// room).
    pub(super) fn apply_moves(&self, entries: &mut [Entry<C>]) {
        let mut moves = self.moves.borrow_mut();
        if moves.is_empty() {
            return;
        }
        steps::add(moves.len());
        moves.sort_unstable_by_key(|&(id, rank, _)| (id, std::cmp::Reverse(rank)));
        moves.dedup_by_key(|&mut (id, _, _)| id);
        let mut pending = self.pending.borrow_mut();
        // The pending entries present before the moves: sorted, and keyed by the priorities
        // recorded (changed below only for ids already passed: each id comes once).
        let sorted = pending.len();
        for &(id, _, priority) in moves.iter() {
            if let Some(index) = self.find(entries, id) {
                let entry = &entries[index];
                if entry.is_removed() || self.priority_at(index) == priority {
                    continue;
                }
                let owner = if entry.is_owned() {
                    self.owner(id)
                } else {
                    None
                };
                let moved = entry.move_out();
                self.note_tombstone();
                self.set_priority_of(id, priority);
                pending.push(Pending {
                    entry: moved,
                    priority,
                    owner,
                });
            } else if self
                .pending_index(&pending[..sorted], id)
                .is_some_and(|index| !pending[index].entry.is_removed())
            {
                self.set_priority_of(id, priority);
            }
        }
        moves.clear();
        for waiting in pending.iter_mut() {
            waiting.priority = self.priority_of(waiting.entry.id());
        }
        steps::search(pending.len());
        steps::add(pending.len());
        pending.sort_unstable_by_key(Pending::key);
        self.state.set(self.state.get() | HAS_PENDING);
    }

    /// Drops the main list's entries whose callable is gone (the indexes forget them, but a
    /// moved-away tombstone's id, which lives on in its copy) and moves the priority runs' ends
    /// along: a run's priority is read once, not looked up per entry. O(n); runs left empty go.
    pub(super) fn retain_entries(&self, entries: &mut Vec<Entry<C>>) {
        let mut runs = self.runs.borrow_mut();
        let (mut read, mut kept, mut run) = (0, 0, 0);
        entries.retain(|entry| {
            // The runs that end before this entry end where the kept entries end now.
            while run < runs.len() && runs[run].end <= read {
                runs[run].end = kept;
                run += 1;
            }
            read += 1;
            let keep = entry.has_callable();
            // A moved-away tombstone's id lives on in its copy, at its new priority.
            if !keep && !entry.is_moved_away() {
                // Allocates nothing: a removal from the index.
                self.set_priority_of(entry.id(), 0);
            }
            kept += usize::from(keep);
            keep
        });
        for run in &mut runs[run..] {
            run.end = kept;
        }
        let mut start = 0;
        runs.retain(|run| {
            let keep = run.end > start;
            start = run.end;
            keep
        });
    }

    /// Merges the pending list and the deferred one (each sorted by key) into the main list
    /// (sorted by key, no moved-away tombstone left), from the back, in place: vacant slots at
    /// the end take the largest of the three lists' last entries in turn. The priority runs are
    /// merged along, from the back too: a main entry's priority is its old run's (read once per
    /// run), a waiting one's its own, so the merge looks nothing up per entry (N4: a cheap
    /// linear pass). O(n + m); allocates only when the room reserved at the deferral is not
    /// there (subscribers added during a broadcast: their add's cost). Whether anything was
    /// merged.
    pub(super) fn merge_pending(&self, entries: &mut Vec<Entry<C>>) -> bool {
        let mut pending = self.pending.borrow_mut();
        let mut deferred = self.deferred.borrow_mut();
        let waiting = pending.len() + deferred.len();
        if waiting == 0 {
            return false;
        }
        let mut runs = self.runs.borrow_mut();
        // The new runs are written from the back of `runs`, below the room the waiting entries
        // and one more slot make: each new run comes from an old one read already or from a
        // waiting entry placed already, so a write never reaches the old run being read
        // (cached in `old`) nor any before it.
        let old_runs = runs.len();
        let total = old_runs + waiting + 1;
        runs.resize(
            total,
            Run {
                priority: 0,
                end: 0,
            },
        );
        let mut next_run = old_runs;
        let mut new_run = total;
        // The old run of the main entry `main - 1`: (index, priority, start).
        let mut old: Option<(usize, i32, usize)> = None;
        let mut main = entries.len();
        entries.reserve(waiting);
        entries.resize_with(main + waiting, Entry::vacant);
        // Slots main..write are vacant; as many as the pending and deferred entries left.
        let mut write = main + waiting;
        while write > main {
            write -= 1;
            let main_priority = (main > 0).then(|| {
                while old.is_none_or(|(_, _, start)| start >= main) {
                    next_run -= 1;
                    let start = next_run.checked_sub(1).map_or(0, |before| runs[before].end);
                    old = Some((next_run, runs[next_run].priority, start));
                }
                old.map_or(0, |(_, priority, _)| priority)
            });
            let from_pending = pending.last().map(Pending::key);
            let from_deferred = deferred.last_key_value().map(|(key, _)| *key);
            let waiting_key = from_pending.max(from_deferred);
            let main_key =
                main_priority.map(|priority| (-i64::from(priority), entries[main - 1].id()));
            let priority = if main_key.is_some() && main_key > waiting_key {
                entries.swap(main - 1, write);
                main -= 1;
                main_priority.unwrap_or(0)
            } else {
                let next = if from_pending > from_deferred {
                    pending.pop()
                } else {
                    deferred.pop_last().map(|(_, next)| next)
                };
                let Some(Pending {
                    entry, priority, ..
                }) = next
                else {
                    continue;
                };
                if entry.is_removed() {
                    // Removed during the broadcast, its callable dropped by the next settle.
                    self.tombstones.set(self.tombstones.get() + 1);
                }
                entries[write] = entry;
                priority
            };
            if new_run == total || runs[new_run].priority != priority {
                new_run -= 1;
                runs[new_run] = Run {
                    priority,
                    end: write + 1,
                };
            }
        }
        // The runs of the entries before `main` (not moved) stay; the one `main - 1` is in ends
        // at `main`, or joins the lowest new run if it has the same priority.
        let mut len = 0;
        // `old` is set: `main` was above 0 in every pass.
        if main > 0
            && let Some((index, priority, _)) = old
        {
            runs[index] = Run {
                priority,
                end: main,
            };
            len = index + 1;
            if new_run < total && runs[new_run].priority == priority {
                runs[index].end = runs[new_run].end;
                new_run += 1;
            }
        }
        steps::add(old_runs + total - new_run);
        for from in new_run..total {
            runs[len] = runs[from];
            len += 1;
        }
        runs.truncate(len);
        true
    }

    /// Gives back the storage of the tables that hold under a quarter of their capacity (see
    /// [`shrink_vec`]): the main list, the owners table, the indexes by owner, key and id, the
    /// pending list, the moves and the runs. O(1) amortized per subscription that came and went
    /// (N4: a burst of subscriptions does not keep its memory once they are gone). Outside
    /// broadcasts (the compaction, a sweep, a clear): no loop reads the tables; a settle's
    /// compaction may reallocate here, only after its list lost three quarters of its room.
    pub(super) fn shrink_sparse(&self, entries: &mut Vec<Entry<C>>) {
        shrink_vec(entries);
        shrink_vec(&mut self.owners.borrow_mut());
        shrink_vec(&mut self.pending.borrow_mut());
        shrink_vec(&mut self.moves.borrow_mut());
        shrink_map(&mut self.by_owner.borrow_mut());
        shrink_map(&mut self.keys.borrow_mut());
        shrink_map(&mut self.priorities.borrow_mut());
        let mut runs = self.runs.borrow_mut();
        if sparse(runs.len(), runs.capacity()) {
            steps::add(runs.len());
            runs.shrink_to_fit();
        }
    }
}

/// Whether a table of `len` entries wastes its `capacity`: more than 64 slots, under a quarter
/// used.
fn sparse(len: usize, capacity: usize) -> bool {
    capacity > 64 && len < capacity / 4
}

/// Shrinks a sparse `vec` to twice its length: it must lose half of that again before the next
/// shrink, or double before it grows, so each reallocation is paid by as many adds or
/// removals as it moves (O(1) amortized, N4).
pub(super) fn shrink_vec<T>(vec: &mut Vec<T>) {
    if sparse(vec.len(), vec.capacity()) {
        steps::add(vec.len());
        vec.shrink_to(vec.len() * 2);
    }
}

/// [`shrink_vec`] for a hash map.
pub(super) fn shrink_map<K: Eq + Hash, V, S: BuildHasher>(
    map: &mut std::collections::HashMap<K, V, S>,
) {
    if sparse(map.len(), map.capacity()) {
        steps::add(map.len());
        map.shrink_to(map.len() * 2);
    }
}
