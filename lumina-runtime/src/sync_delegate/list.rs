//! The list behind a [`SyncMulticastDelegate`](super::SyncMulticastDelegate): its entries and
//! their state words, the copy-on-write versions, and the type-erased control that guards and
//! self-aware subscribers hold.

use std::any::Any;

use super::sync::{Arc, AtomicU32, Ordering};

use super::hazard::{Current, Snapshot};
use crate::track::{Origin, Sweep};

/// The entry was removed: no call of it starts any more.
pub(super) const REMOVED: u32 = 1 << 31;
/// A one-shot entry whose call was claimed by a broadcast.
pub(super) const CLAIMED: u32 = 1 << 30;
/// The block count's bits (a subscription's blocks nest, A2).
pub(super) const BLOCKS: u32 = CLAIMED - 1;

/// One subscription, shared by every list version that holds it.
pub(super) struct Entry<F: ?Sized> {
    pub(super) id: u64,
    pub(super) priority: i32,
    pub(super) once: bool,
    /// Made by a self-aware finish (X6): the listing shows it.
    pub(super) self_aware: bool,
    pub(super) site: u32,
    /// [`REMOVED`], [`CLAIMED`] and the block count.
    pub(super) state: AtomicU32,
    /// A queued subscription's (TS4) flag, shared with the tasks its calls queued: cleared by
    /// the removal, so a task that runs after it calls nothing (TS2).
    pub(super) queued: Option<Arc<AtomicU32>>,
    /// Whose it is, for a game module's unload (TS5).
    pub(super) origin: Origin,
    /// A member binding's owner, held weakly (M9): its state in the listing; an entry whose
    /// owner was dropped is never called (the callable upgrades it) and goes at the next change.
    pub(super) owner: Option<std::sync::Weak<dyn Any + Send + Sync>>,
    pub(super) callable: Box<F>,
}

impl<F: ?Sized> Entry<F> {
    /// Whether this is a member binding whose owner was dropped (M9).
    pub(super) fn owner_dropped(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|owner| owner.strong_count() == 0)
    }

    /// Marks the entry removed (under the list's lock); whether this call did.
    pub(super) fn mark_removed(&self) -> bool {
        if let Some(queued) = &self.queued {
            queued.store(0, Ordering::Release);
        }
        self.state.fetch_or(REMOVED, Ordering::AcqRel) & REMOVED == 0
    }

    /// Whether a call of this entry may start now; for a one-shot entry, claims it (only one
    /// broadcast, on any thread, wins the claim).
    #[inline(always)]
    pub(super) fn start(&self) -> bool {
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
pub(super) type List<F> = Vec<Arc<Entry<F>>>;

/// What a delegate shares with its guards.
pub(super) struct Shared<F: ?Sized> {
    /// The current version. Replaced, never changed in place, by every change. A broadcast
    /// reads it through a hazard slot of its thread (`hazard`): no lock, no reference count,
    /// no write to a cache line another thread writes.
    pub(super) list: Current<List<F>>,
    /// Whether the module loader knows this delegate (TS5): registered, weakly, with the
    /// first subscription made while a module is loaded. Not part of the protocol (std's).
    pub(super) swept: std::sync::atomic::AtomicBool,
    /// How many mutes of the whole delegate are in force (A2: counted, so guards nest and drop
    /// in any order, on any thread): a broadcast that starts while it is above 0 calls nobody.
    pub(super) mutes: AtomicU32,
}

impl<F: ?Sized + Send + Sync + 'static> Shared<F> {
    pub(super) fn new() -> Self {
        Shared {
            list: Current::new(Vec::new()),
            swept: std::sync::atomic::AtomicBool::new(false),
            mutes: AtomicU32::new(0),
        }
    }

    /// Whether a mute is in force. Relaxed: a mute publishes no data; a broadcast on another
    /// thread that must see it is ordered after the mute's return by whatever told that thread
    /// (and a broadcast that began before the mute may finish, as after a removal, TS2).
    #[inline(always)]
    pub(super) fn is_muted(&self) -> bool {
        self.mutes.load(Ordering::Relaxed) != 0
    }

    /// Adds one mute, or lifts one (`false` when none was in force).
    pub(super) fn mute(&self, on: bool) -> bool {
        if on {
            self.mutes.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        self.mutes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mutes| {
                mutes.checked_sub(1)
            })
            .is_ok()
    }

    /// The current list, for a broadcast or a listing.
    #[inline(always)]
    pub(super) fn snapshot(&self) -> Snapshot<'_, List<F>> {
        self.list.protect()
    }

    /// Runs `f` on the current list with changes held off (it must run no user code).
    pub(super) fn read<R>(&self, f: impl FnOnce(&[Arc<Entry<F>>]) -> R) -> R {
        self.list.read(|list| f(list))
    }

    /// Replaces the list with `change(current)`; the old version is freed after the lock is
    /// released, once no broadcast reads it (its callables' drops are user code).
    pub(super) fn update(&self, change: impl FnOnce(&[Arc<Entry<F>>]) -> Vec<Arc<Entry<F>>>) {
        self.list.update(|list| change(list));
    }

    /// Runs `f` on the live entry `id`, under the list's lock (no user code); whether there
    /// was one. O(n).
    pub(super) fn with_entry(&self, id: u64, f: impl FnOnce(&Entry<F>)) -> bool {
        self.read(|list| match list.iter().find(|entry| entry.id == id) {
            Some(entry) => {
                f(entry);
                true
            }
            None => false,
        })
    }

    /// Blocks `id` once more (counted); whether it is present.
    pub(super) fn block(&self, id: u64) -> bool {
        self.with_entry(id, |entry| {
            entry.state.fetch_add(1, Ordering::AcqRel);
        })
    }

    /// Undoes one block of `id`; whether it is present and was blocked.
    pub(super) fn unblock(&self, id: u64) -> bool {
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
    pub(super) fn contains(&self, id: u64) -> bool {
        self.with_entry(id, |_| ())
    }

    /// Marks `id` removed and takes it out of the list; whether it was there.
    pub(super) fn remove(&self, id: u64) -> bool {
        self.remove_where(|entry| entry.id == id) > 0
    }

    /// Marks every entry `hit` selects removed and takes them out of the list; how many this
    /// call removed. O(n).
    pub(super) fn remove_where(&self, mut hit: impl FnMut(&Entry<F>) -> bool) -> usize {
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
impl<F: ?Sized + Send + Sync + 'static> Sweep for Shared<F> {
    fn sweep(&self, module: u64) -> usize {
        self.remove_where(|entry| entry.origin.is_of(module))
    }
}

/// What a guard or a self-aware subscriber does to its subscription, type-erased (the
/// delegate's signature is not part of their types).
pub(super) trait Control: Send + Sync {
    fn remove(&self, id: u64) -> bool;
    fn block(&self, id: u64) -> bool;
    fn unblock(&self, id: u64) -> bool;
    fn contains(&self, id: u64) -> bool;
    fn mute(&self, on: bool) -> bool;
}

impl<F: ?Sized + Send + Sync + 'static> Control for Shared<F> {
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

    fn mute(&self, on: bool) -> bool {
        Shared::mute(self, on)
    }
}
