//! Settling: what happens to removed subscribers. Their callables are dropped once nothing runs
//! them, always outside any borrow (a drop is user code, M13), and the end of the outermost
//! broadcast merges the pending subscribers in and compacts the main list.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use super::entry::{Entry, Subscriber};
use super::list::{Block, LOCK_ONE, NEEDS_SETTLE};

/// Drops user values for an operation that drops several of them (clear, settle, the list's own
/// drop) or that may run while the thread unwinds: each `Drop` runs even when an earlier one
/// panicked, and [`finish`](Drops::finish) resumes the first panic once the operation is complete
/// (M13: a clear still clears). A panic while the thread is already unwinding cannot propagate
/// (it would abort the process): it is logged and dropped.
#[derive(Default)]
pub(crate) struct Drops {
    panic: Option<Box<dyn Any + Send>>,
}

impl Drops {
    /// Drops `value`, keeping its panic (the first one) for [`finish`](Self::finish).
    pub(crate) fn drop<T>(&mut self, value: T) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
            match self.panic {
                None => self.panic = Some(payload),
                // Only one panic can propagate: a later one's payload is dropped here.
                Some(_) => drop_payload(payload),
            }
        }
    }

    /// Drops one value, resuming its panic at once (unless the thread already unwinds).
    pub(crate) fn drop_one<T>(value: T) {
        let mut drops = Drops::default();
        drops.drop(value);
        drops.finish();
    }

    /// Ends the operation: resumes the first panic of a `Drop`, if any. While the thread is
    /// already unwinding the panic is logged and its payload leaked instead.
    pub(crate) fn finish(self) {
        let Some(payload) = self.panic else { return };
        if std::thread::panicking() {
            tracing::error!(
                "lumina: a Drop panicked while the thread was already unwinding from another \
                 panic; this second panic is dropped so the process does not abort"
            );
            drop_payload(payload);
        } else {
            panic::resume_unwind(payload);
        }
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format), for reports.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".to_owned())
}

/// Drops a panic's payload that will not propagate. Its own `Drop` could panic again: that is
/// caught too, and only then (a payload whose drop panics, twice) is anything leaked.
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// A user value the library holds (a broadcast argument, a clone of a subscriber): dropped
/// through [`Drops`], so a `Drop` that panics while the thread unwinds is logged instead of
/// aborting the process (M13).
pub(super) struct Guarded<T>(pub(super) Option<T>);

impl<T> Drop for Guarded<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            Drops::drop_one(value);
        }
    }
}

impl<C: Subscriber> Block<C> {
    /// Lowers the lock count; the outermost broadcast's end settles the list if it needs it.
    #[inline(always)]
    pub(super) fn unlock(&self) {
        let state = self.state.get() - LOCK_ONE;
        self.state.set(state);
        // Lock at 0 with NEEDS_SETTLE (HAS_PENDING comes with it): 1 or 3, never 2.
        if state.wrapping_sub(NEEDS_SETTLE) < LOCK_ONE - NEEDS_SETTLE {
            self.settle();
        }
    }

    /// At the end of the outermost broadcast: drops the callables removed during it, one at a
    /// time and outside any borrow (their captures may re-enter the list), then merges the
    /// pending subscribers and compacts. The list counts as broadcasting meanwhile, so re-entrant
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
            // A drop may remove more behind the walk (it drops them at once unless they ran in
            // a loop it started): go again until a pass finds nothing left to drop.
            if self.drop_removed(&entries, &mut drops) == 0 {
                break;
            }
        }
        self.state.set(self.state.get() - LOCK_ONE);
        self.compact();
        drops.finish();
    }

    /// Drops the callable of every removed entry that no loop is running, main list first (in
    /// `entries`, which a held lock keeps in place), then the pending list, in order. One at a
    /// time and with no borrow of the pending list held: each drop may re-enter the list (M13).
    /// Returns how many it dropped.
    pub(super) fn drop_removed(&self, entries: &[Entry<C>], drops: &mut Drops) -> usize {
        let mut dropped = 0;
        for entry in entries {
            if entry.is_removed()
                && let Some(callable) = self.take_unless_running(entry)
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
                (found.key(), self.take_unless_running(&found.entry))
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
        if crate::module::track::recording() {
            let pending = self.pending.get_mut().iter().map(|p| p.entry.id());
            let ids = self.entries.get_mut().iter().map(|entry| entry.id());
            crate::module::track::forget(ids.chain(pending));
        }
        let mut drops = Drops::default();
        for entry in self.entries.get_mut().drain(..) {
            drops.drop(entry);
        }
        for pending in self.pending.get_mut().drain(..) {
            drops.drop(pending);
        }
        drops.finish();
    }
}
