//! Settling: what happens to removed subscribers. Their callables are dropped once nothing runs
//! them, always outside any borrow (a drop is user code, M13), and the end of the outermost
//! broadcast merges the pending subscribers in and compacts the main list.

use std::ops::Bound;

use super::entry::{Entry, Subscriber};
use super::list::{Block, LOCK_ONE, STOP};
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
