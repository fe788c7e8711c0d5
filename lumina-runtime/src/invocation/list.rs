//! The list itself: an empty list is one pointer; the first add allocates the [`Block`] that
//! holds the subscribers and the broadcast bookkeeping. Adding, removing, clearing and the
//! queries.

use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::rc::{Rc, Weak};

use smallvec::SmallVec;

use super::entry::{BLOCKED, Entry, ONCE, OWNED, Pending, Subscriber};
use crate::drops::{Drops, Guarded};
use crate::handle::DelegateHandle;
use crate::steps;

/// Lock-state bit: tombstones or pending subscribers wait for the end of the outermost
/// broadcast (then it settles the list).
pub(super) const NEEDS_SETTLE: u32 = 1;
/// Lock-state bit: subscribers added during a broadcast wait in `pending`. Always set together
/// with [`NEEDS_SETTLE`].
pub(super) const HAS_PENDING: u32 = 2;
/// Lock-state bit: a subscriber asked the broadcast loop calling it to stop once its call
/// returns ([`Block::stop_after_call`]). Tested after each call by the loops that can stop
/// early, and at the start of every hot loop with [`HAS_PENDING`] (one test): a loop nested in
/// the call that asked sets it aside until it ends. Always set together with [`NEEDS_SETTLE`],
/// so the outermost broadcast's end clears one that no loop took (its call unwound).
pub(super) const STOP: u32 = 4;
/// One running broadcast in [`Block::state`]: the lock count is `state / LOCK_ONE`.
pub(super) const LOCK_ONE: u32 = 8;

/// A reentrancy-safe, ordered list of subscribers; see the [module documentation](super).
///
/// `C` is what a subscriber is (an `Rc<dyn Fn(..)>` for delegates, a handler reference for the
/// event processor, a native-or-managed listener for script delegates). One pointer: empty, it
/// allocates nothing (M12); its state lives in a [`Block`] allocated by the first add, so an
/// empty broadcast is one load and one branch.
pub(crate) struct InvocationList<C> {
    block: OnceCell<Rc<Block<C>>>,
}

/// What the first phase of a clear took out of a list ([`InvocationList::take_all`]): its
/// subscribers, no longer in it, whose callables are dropped by the second phase.
#[must_use = "the second phase drops the callables: `drop_into`"]
pub(crate) struct Cleared<C>(Vec<Entry<C>>);

impl<C> Cleared<C> {
    /// What several lists' first phases took, as one, in the order the subscribers were added
    /// (ids only grow): so an operation clearing several lists drops their callables in an
    /// order that does not depend on how it keeps the lists.
    pub(crate) fn gather(taken: impl IntoIterator<Item = Cleared<C>>) -> Self {
        let mut all: Vec<Entry<C>> = taken.into_iter().flat_map(|cleared| cleared.0).collect();
        all.sort_unstable_by_key(Entry::id);
        Cleared(all)
    }

    /// The second phase: drops every callable, one at a time, each panic kept by `drops` (R3).
    pub(crate) fn drop_into(self, drops: &mut Drops) {
        for entry in self.0 {
            drops.drop(entry);
        }
    }
}

/// A priority's stretch of the main list: its entries end (exclusive) at `end`; it starts where
/// the run before it ends. Runs are in descending priority.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) priority: i32,
    pub(super) end: usize,
}

/// The state of a list that has had a subscriber.
pub(crate) struct Block<C> {
    /// Subscribers in dispatch order. Changed in shape (pushed, inserted, compacted) only while
    /// no broadcast runs, and never across user code. Cold paths borrow it; the broadcast loops
    /// read it without a borrow on the strength of the lock (`raw.rs`).
    pub(super) entries: RefCell<Vec<Entry<C>>>,
    /// The priority of each stretch of `entries` (most lists have one run, priority 0).
    pub(super) runs: RefCell<SmallVec<[Run; 1]>>,
    /// The weak owners of member bindings, by id (ascending).
    pub(super) owners: RefCell<Vec<(u64, Weak<dyn Any>)>>,
    /// The ids of the subscriptions (main or pending) bound to each owner, by the owner's address
    /// (ascending ids): what makes removal and lookup by owner O(k) in the owner's own
    /// subscriptions (N4). An address, compared only: each id's row in `owners` (or its pending
    /// entry) says whether it is still that owner's, as an address is reused once its object
    /// and every weak reference to it are gone. Ids of entries compacted away leave with them.
    pub(super) by_owner: RefCell<HashMap<usize, SmallVec<[u64; 1]>>>,
    /// The identity keys of subscriptions made from a plain function (`add_static`, X7): the
    /// function pointer's address, with the ids made from it (ascending), so a removal by
    /// function looks up its key (N4). An address, not a pointer: it is only compared with the
    /// address of the function a `remove_static` names, never called nor dereferenced; the
    /// entry's own callable holds the function it came from.
    pub(super) keys: RefCell<HashMap<usize, SmallVec<[u64; 1]>>>,
    /// Changes of priority asked for while a broadcast runs (X6), applied in order when the
    /// outermost broadcast ends, after the pending subscribers are merged: the running
    /// broadcasts keep the order they started with (M2).
    /// Each with its rank in the order asked (id, rank, priority): the last one asked wins.
    pub(super) moves: RefCell<Vec<(u64, usize, i32)>>,
    /// The priority of every subscription (main or pending) whose priority is not 0, by id, as
    /// it sits now: what makes a lookup by id O(log n) whatever the number of priorities (N4),
    /// a binary search for its run, then one in the run (main), or one by key (pending). Empty,
    /// and never hashed, for a list without priorities.
    pub(super) priorities: RefCell<HashMap<u64, i32>>,
    /// Subscribers added while a broadcast runs, in dispatch order; merged into `entries` when
    /// the outermost broadcast ends. Never borrowed across user code. An entry removed meanwhile
    /// stays as a tombstone until then, so positions never move under a drop's code.
    pub(super) pending: RefCell<Vec<Pending<C>>>,
    /// Outside broadcasts, subscribers that would shift the main list (added above its lowest
    /// priority, or moved to another priority), by dispatch-order key: O(log m) to add, find
    /// and move (N4). Merged by the next compaction, which the start of the next broadcast (or
    /// walk) makes, into room reserved when they came (M12: the merge allocates nothing).
    /// Empty while a broadcast runs. Its subscribers have their owner's row in `owners`
    /// already.
    pub(super) deferred: RefCell<BTreeMap<(i64, u64), Pending<C>>>,
    /// The lock count (how many broadcasts are running on this list; they nest) times
    /// [`LOCK_ONE`], plus [`NEEDS_SETTLE`], [`HAS_PENDING`] and [`STOP`]: one word, so beginning a
    /// broadcast is one load, test and store, and ending one is one load, store and compare.
    pub(super) state: Cell<u32>,
    /// Removed entries of `entries` waiting for compaction.
    pub(super) tombstones: Cell<usize>,
    /// Rows of `owners` (and ids of `keys`) may name subscriptions taken out of the deferred
    /// list: the next compaction sweeps the indexes.
    pub(super) stale_rows: Cell<bool>,
    /// How many mutes of the whole list are in force (A2: counted, so mute guards nest and drop
    /// in any order): while above 0 no broadcast, dispatch or walk of the list calls anyone.
    /// Tested once per broadcast, before its loop.
    pub(super) mutes: Cell<u32>,
    /// The blocks of a subscription beyond its first (A2: counted blocks), by id. Its entry's
    /// `BLOCKED` bit says it is blocked at all (what the loops test); this counts only the
    /// nested ones, so a list whose subscriptions are blocked once has it empty, and the count
    /// of a subscription that left goes at the next [`Block::sweep_blocks`].
    pub(super) more_blocks: RefCell<HashMap<u64, u32>>,
    /// `more_blocks`' size after its last sweep.
    pub(super) blocks_swept: Cell<usize>,
}

impl<C> Default for InvocationList<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Subscriber> fmt::Debug for InvocationList<C> {
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
            block: OnceCell::new(),
        }
    }

    /// The block, if a subscriber was ever added.
    #[inline(always)]
    pub(crate) fn block(&self) -> Option<&Block<C>> {
        self.block.get().map(|block| &**block)
    }

    /// How the module loader reaches this list, as [`track`](crate::track::track)
    /// records it (unit tests of MB4 and R1 call what the loader calls).
    #[cfg(test)]
    pub(super) fn module_access(&self) -> Option<crate::track::ListAccess>
    where
        C: Subscriber,
    {
        self.block.get().map(Block::module_access)
    }

    /// The block, allocated on first use.
    fn block_or_new(&self) -> &Rc<Block<C>> {
        self.block.get_or_init(|| Rc::new(Block::new()))
    }
}

impl<C: Subscriber> InvocationList<C> {
    /// Appends a subscriber with priority 0 and no owner.
    #[track_caller]
    pub fn add(&self, callable: C) -> DelegateHandle {
        self.insert(0, None, callable)
    }

    /// Appends a subscriber bound to `owner`: it runs only while `owner` is alive, is removed by
    /// [`remove_owner`](Self::remove_owner), and is pruned once `owner` is dropped (M9).
    #[track_caller]
    pub fn add_owned<T: Any>(&self, owner: &Rc<T>, callable: C) -> DelegateHandle {
        let weak: Weak<dyn Any> = Rc::downgrade(owner) as Weak<dyn Any>;
        self.insert(0, Some(weak), callable)
    }

    /// Inserts a subscriber after every subscriber whose priority is at least `priority` (higher
    /// priorities run first; equal priorities run in the order they were added).
    ///
    /// During a broadcast the new subscriber does not run in that broadcast, wherever it lands
    /// (M2); broadcasts started after this call run it. Its bind site is the caller's (B5).
    ///
    /// Cost (N4): O(log n) amortized. At or below the lowest priority in use it is appended;
    /// above it (outside broadcasts) it waits in the deferred list, O(log m), merged in place by
    /// the next broadcast or walk into room reserved now (O(n + m) shared by the m deferred,
    /// no allocation during the broadcast, M12), or once the deferred list is half the list.
    #[track_caller]
    pub fn insert(
        &self,
        priority: i32,
        owner: Option<Weak<dyn Any>>,
        callable: C,
    ) -> DelegateHandle {
        let site = crate::bind_site::intern(std::panic::Location::caller());
        self.block_or_new().insert(
            Spec {
                priority,
                owner,
                ..Spec::default()
            },
            site,
            |_| callable,
        )
    }

    /// Removes the subscriber of `handle`. Returns `false`, changing nothing, for an invalid,
    /// foreign or already removed handle, or one whose owner is already dropped (H2).
    ///
    /// Outside a broadcast the callable is dropped before this returns; during one, the entry
    /// becomes a tombstone that no running or later broadcast invokes (M3), and its callable is
    /// dropped when the outermost broadcast ends, so the subscriber currently running (if it is
    /// this one) finishes safely (M4).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.block().is_some_and(|block| block.remove(handle.id()))
    }

    /// Removes every live subscriber bound to `owner` (M9); returns how many. Allocates nothing
    /// during a broadcast (M12), nor outside one for an owner with up to 8 subscriptions.
    /// O(k log n) in the owner's own k subscriptions, through the
    /// index by owner (N4).
    pub fn remove_owner<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.block().map_or(0, |block| block.remove_owned_by(owner))
    }

    /// Whether a live subscriber is bound to `owner`.
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.handle_of_owner(owner).is_some()
    }

    /// The handle of the first live subscriber (in dispatch order, then pending ones) bound to
    /// `owner`. Allocates nothing. O(k log n) in the owner's own k subscriptions (N4).
    pub fn handle_of_owner<T: ?Sized>(&self, owner: &Rc<T>) -> Option<DelegateHandle> {
        let owner = Rc::as_ptr(owner).cast::<()>();
        let block = self.block()?;
        let by_owner = block.by_owner.borrow();
        let ids = by_owner.get(&owner.addr())?;
        steps::add(ids.len());
        let entries = block.entries.borrow();
        // The first in dispatch order among the owner's main-list entries.
        let main = ids
            .iter()
            .filter_map(|&id| block.find(&entries, id))
            .filter(|&index| {
                block.is_live(&entries[index]) && block.owner_is(&entries[index], owner)
            })
            .min_by_key(|&index| block.key_at(&entries, index))
            .map(|index| entries[index].id());
        main.or_else(|| {
            let pending = block.pending.borrow();
            let deferred = block.deferred.borrow();
            ids.iter().find_map(|&id| {
                block
                    .pending_index(&pending, id)
                    .map(|index| &pending[index])
                    .or_else(|| block.deferred_entry(&deferred, id))
                    .filter(|p| p.is_live() && is_owner(p.owner.as_ref(), owner))
                    .map(|p| p.entry.id())
            })
        })
        .map(DelegateHandle::from_id)
    }

    /// Removes every subscriber. During a broadcast nothing further runs in it (or in any
    /// enclosing broadcast), and subscribers added after the clear run from the next broadcast
    /// on (M6).
    pub fn clear(&self) {
        self.clear_with(|_, _, _| {});
    }

    /// [`clear`](Self::clear), calling `removed` with the id, bind site number and callable of
    /// every live subscriber
    /// it removes, before any of them is dropped (script delegates collect their managed bindings
    /// there, so a drop's code cannot unbind one in between). `removed` must not run user code.
    pub fn clear_with(&self, removed: impl FnMut(u64, u32, &C)) {
        let mut drops = Drops::default();
        self.take_all(removed).drop_into(&mut drops);
        drops.finish();
    }

    /// The two phases of [`clear_with`](Self::clear_with) for an operation that clears several
    /// lists atomically (M13: everything it removes is marked before any drop runs): this is the
    /// first, which empties the list (or, during a broadcast, marks every subscriber removed)
    /// and runs no user code; the caller drops what it returns once every list is cleared, one
    /// callable at a time through its `Drops` ([`Cleared::drop_into`]).
    pub(crate) fn take_all(&self, removed: impl FnMut(u64, u32, &C)) -> Cleared<C> {
        Cleared(
            self.block()
                .map_or_else(Vec::new, |block| block.take_all(removed)),
        )
    }

    /// Whether at least one live subscriber exists (M8). O(1) while a subscriber without owner is
    /// present, whatever was removed (N4); otherwise a walk to the first live subscriber.
    pub fn is_bound(&self) -> bool {
        self.block().is_some_and(Block::is_bound)
    }

    /// How many live subscribers there are: removed ones and those whose owner died do not
    /// count (M8).
    pub fn len(&self) -> usize {
        self.block().map_or(0, Block::len)
    }

    /// `true` when [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        !self.is_bound()
    }

    /// The subscriptions present (not removed), in dispatch order, with where each was made and
    /// whether its owner lives (B5). Allocates: for diagnostics.
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        use crate::bind_site::{OwnerState, Subscription, location};
        let Some(block) = self.block() else {
            return Vec::new();
        };
        let owner_state = |owned: bool, alive: bool| match (owned, alive) {
            (false, _) => OwnerState::NoOwner,
            (true, true) => OwnerState::Alive,
            (true, false) => OwnerState::Dropped,
        };
        let mut all: Vec<((i64, u64), Subscription)> = Vec::new();
        {
            let entries = block.entries.borrow();
            for (index, entry) in entries.iter().enumerate() {
                if entry.is_removed() {
                    continue;
                }
                let owned = entry.is_owned();
                all.push((
                    block.key_at(&entries, index),
                    Subscription {
                        handle: DelegateHandle::from_id(entry.id()),
                        bind_site: location(entry.site()),
                        owner: owner_state(owned, owned && block.owner_alive(entry)),
                        priority: block.priority_at(index),
                        muted: entry.is_blocked(),
                        one_shot: entry.is_once(),
                        self_aware: entry.is_self_aware(),
                    },
                ));
            }
        }
        for pending in block
            .pending
            .borrow()
            .iter()
            .chain(block.deferred.borrow().values())
        {
            if pending.entry.is_removed() {
                continue;
            }
            all.push((
                pending.key(),
                Subscription {
                    handle: DelegateHandle::from_id(pending.entry.id()),
                    bind_site: location(pending.entry.site()),
                    owner: owner_state(pending.owner.is_some(), pending.owner_alive()),
                    priority: pending.priority,
                    muted: pending.entry.is_blocked(),
                    one_shot: pending.entry.is_once(),
                    self_aware: pending.entry.is_self_aware(),
                },
            ));
        }
        all.sort_by_key(|(key, _)| *key);
        all.into_iter()
            .map(|(_, subscription)| subscription)
            .collect()
    }

    /// Whether a broadcast over this list is running (on this thread's stack).
    pub fn is_broadcasting(&self) -> bool {
        self.block().is_some_and(Block::is_broadcasting)
    }

    /// Whether `handle` names a live subscriber for which `predicate` holds. Lets a mechanism
    /// with several kinds of subscriber in one list (script delegates: native and managed)
    /// remove only its own kind, without keeping a second record of which is which.
    pub fn subscriber_matches(
        &self,
        handle: DelegateHandle,
        predicate: impl FnOnce(&C) -> bool,
    ) -> bool {
        // A clone taken for a moment: no borrow is held while `predicate` runs.
        let found = self.block().and_then(|block| {
            let id = handle.id();
            let main = {
                let entries = block.entries.borrow();
                block
                    .find(&entries, id)
                    .map(|index| &entries[index])
                    .filter(|entry| block.is_live(entry))
                    .and_then(Entry::clone_callable)
            };
            main.or_else(|| {
                let pending = block.pending.borrow();
                let deferred = block.deferred.borrow();
                block
                    .pending_index(&pending, id)
                    .map(|index| &pending[index])
                    .or_else(|| block.deferred_entry(&deferred, id))
                    .filter(|p| p.is_live())
                    .and_then(|p| p.entry.clone_callable())
            })
        });
        found.is_some_and(|callable| predicate(&callable))
    }

    /// How many live subscribers `predicate` accepts.
    pub fn count_matching(&self, mut predicate: impl FnMut(&C) -> bool) -> usize {
        let Some(block) = self.block() else { return 0 };
        let mut count = 0;
        let mut broadcast = block.begin();
        while let Some((_, callable)) = broadcast.next_entry() {
            count += usize::from(predicate(&callable));
        }
        count
    }

    /// The live subscribers with their handles, in the order they were added. Allocates: for
    /// cold paths such as handing bindings to a host when a delegate is destroyed.
    pub fn snapshot(&self) -> Vec<(DelegateHandle, C)> {
        let Some(block) = self.block() else {
            return Vec::new();
        };
        // The clones gathered are guarded while a prune's `Drop` may run (R2).
        let mut live = Vec::new();
        let mut broadcast = block.begin();
        while let Some((id, callable)) = broadcast.next_entry() {
            live.push((DelegateHandle::from_id(id), Guarded::new(callable)));
        }
        drop(broadcast);
        live.sort_by_key(|(handle, _)| *handle);
        live.into_iter()
            .map(|(handle, callable)| (handle, callable.into_inner()))
            .collect()
    }
}

/// What a subscription made with `add_*` is, besides its callable: its priority and owner, and
/// whether it is one-shot (X3) or keyed by a plain function (X7).
#[derive(Default)]
pub(crate) struct Spec {
    pub(crate) priority: i32,
    pub(crate) owner: Option<Weak<dyn Any>>,
    pub(crate) once: bool,
    /// The address of the plain function the subscription was made from (`add_static`).
    pub(crate) key: Option<usize>,
    /// Its callable was given its own subscription (X6): recorded for listings (V1).
    pub(crate) self_aware: bool,
}

/// Operations on one subscription through a type-erased weak reference to a list's block: what
/// a scoped subscription (B1), a block guard (X4) and a self-aware subscriber's
/// `ThisSubscription` (X6) hold, whatever the list's subscriber type.
pub(crate) trait RemoveByHandle {
    /// [`InvocationList::remove`] on the list this block belongs to.
    fn remove_handle(&self, handle: DelegateHandle) -> bool;
    /// [`InvocationList::set_blocked`].
    fn set_blocked_handle(&self, handle: DelegateHandle, blocked: bool) -> bool;
    /// [`InvocationList::is_blocked`].
    fn is_blocked_handle(&self, handle: DelegateHandle) -> bool;
    /// Adds one mute of the whole list (`true`) or lifts one (A2); nothing for a remover that
    /// is no list.
    fn mute_list(&self, _muted: bool) {}
    /// [`InvocationList::set_priority`].
    fn set_priority_handle(&self, handle: DelegateHandle, priority: i32) -> bool;
    /// Whether the subscription of `handle` is present (not removed; its owner may be dead).
    fn contains_handle(&self, handle: DelegateHandle) -> bool;
    /// Whether the list is broadcasting (for the module loader, MB4: a game module whose
    /// subscription is in a broadcasting list is refused its unload). `false` for a remover that
    /// is no list.
    fn is_broadcasting_list(&self) -> bool {
        false
    }
}

impl<C: Subscriber> RemoveByHandle for Block<C> {
    fn remove_handle(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.remove(handle.id())
    }

    fn set_blocked_handle(&self, handle: DelegateHandle, blocked: bool) -> bool {
        handle.is_valid() && self.set_blocked(handle.id(), blocked)
    }

    fn is_blocked_handle(&self, handle: DelegateHandle) -> bool {
        handle.is_valid()
            && self
                .with_entry(handle.id(), Entry::is_blocked)
                .unwrap_or(false)
    }

    fn mute_list(&self, muted: bool) {
        let mutes = self.mutes.get();
        self.mutes.set(if muted {
            mutes
                .checked_add(1)
                .expect("lumina: more than 2^32 mutes of one list")
        } else {
            mutes.saturating_sub(1)
        });
    }

    fn set_priority_handle(&self, handle: DelegateHandle, priority: i32) -> bool {
        handle.is_valid() && self.set_priority(handle.id(), priority)
    }

    fn contains_handle(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.with_entry(handle.id(), |_| ()).is_some()
    }

    fn is_broadcasting_list(&self) -> bool {
        self.is_broadcasting()
    }
}

impl<C> InvocationList<C> {
    /// A weak reference to this list's heap block: `None` before the first add. What a registry
    /// that must find the list again holds (R1: the block, never the list's own place, which
    /// moves with its owner).
    pub(crate) fn weak_block(&self) -> Option<Weak<Block<C>>> {
        self.block.get().map(Rc::downgrade)
    }
}

impl<C: Subscriber> Block<C> {
    /// Removes the subscriber `id` if it is present and `select` picks it, calling `removed` on
    /// it first (during a broadcast it is dropped when the outermost one ends, M4). O(log n)
    /// (rule N4: a script generation's unload, per binding). `select` and `removed` must not
    /// run user code.
    pub(crate) fn remove_one_selected(
        &self,
        id: u64,
        select: impl FnOnce(&C) -> bool,
        removed: impl FnOnce(u64, u32, &C),
    ) -> bool {
        let Some((site, Some(callable))) =
            self.with_entry(id, |entry| (entry.site(), entry.clone_callable()))
        else {
            return false;
        };
        if !select(&callable) {
            return false;
        }
        removed(id, site, &callable);
        // A clone: the list holds the subscriber, so this is not its last reference.
        drop(callable);
        self.remove(id)
    }
}

impl<C: Subscriber + 'static> InvocationList<C> {
    /// Adds one mute of the whole list (A2; sigslot's signal blocking, Qt's `blockSignals`) and
    /// returns what lifts it (`RemoveByHandle::mute_list(false)`), for the caller's guard:
    /// while a mute is in force no broadcast, dispatch or walk calls anyone; subscribers keep
    /// their place, blocks and handles, and one-shots are not used up. Mutes are counted:
    /// guards nest and drop in any order. A broadcast already running finishes. O(1).
    pub(crate) fn mute(&self) -> Weak<dyn RemoveByHandle> {
        let block = self.block_or_new();
        block.mute_list(true);
        Rc::downgrade(block) as Weak<dyn RemoveByHandle>
    }

    /// Whether a [`mute`](Self::mute) guard of this list lives. O(1).
    pub(crate) fn is_muted(&self) -> bool {
        self.block().is_some_and(|block| block.mutes.get() > 0)
    }

    /// A weak reference that removes by handle from this list while it lives: `None` before the
    /// first add.
    pub(crate) fn weak_remover(&self) -> Option<Weak<dyn RemoveByHandle>> {
        let block = self.block.get()?;
        let weak: Weak<dyn RemoveByHandle> = Rc::downgrade(block) as Weak<dyn RemoveByHandle>;
        Some(weak)
    }

    /// Adds a subscription described by `spec`, whose callable `make` builds once its handle is
    /// known, with a weak reference to this list: what a self-aware subscriber (X6) captures so
    /// it can remove, block or re-prioritize itself. `make` is the crate's own code (it wraps
    /// the user's callable without calling it). Its bind site is the caller's (B5).
    #[track_caller]
    pub(crate) fn insert_with(
        &self,
        spec: Spec,
        make: impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> C,
    ) -> DelegateHandle {
        let site = crate::bind_site::intern(std::panic::Location::caller());
        let block = self.block.get_or_init(|| Rc::new(Block::new()));
        let weak: Weak<dyn RemoveByHandle> = Rc::downgrade(block) as Weak<dyn RemoveByHandle>;
        block.insert(spec, site, |handle| make(handle, weak))
    }
}

impl<C: Subscriber> InvocationList<C> {
    /// Adds a subscription described by `spec` (one-shot, keyed, ...); see
    /// [`insert`](Self::insert).
    #[track_caller]
    pub(crate) fn insert_spec(&self, spec: Spec, callable: C) -> DelegateHandle {
        let site = crate::bind_site::intern(std::panic::Location::caller());
        self.block_or_new().insert(spec, site, |_| callable)
    }

    /// Adds a block to (`true`), or lifts one from, the subscription of `handle` (X4): a blocked
    /// subscriber keeps its place, priority and handle, still counts in `len`, and is skipped by
    /// broadcasts; during a broadcast this applies to the subscribers not yet reached (as M3).
    /// Blocks are counted (A2): it runs again once every block is lifted. `false`, changing
    /// nothing, for an invalid, foreign or removed handle, and for a lift from an unblocked one.
    pub fn set_blocked(&self, handle: DelegateHandle, blocked: bool) -> bool {
        handle.is_valid()
            && self
                .block()
                .is_some_and(|block| block.set_blocked(handle.id(), blocked))
    }

    /// Whether the subscription of `handle` is present and blocked (X4).
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.block()
            .is_some_and(|block| block.is_blocked_handle(handle))
    }

    /// Moves the subscription of `handle` to `priority`, among the subscribers of that priority
    /// in the order they were added (as if it had been added there). Outside a broadcast it
    /// moves at once; during one, the running broadcasts keep their order and the move happens
    /// when the outermost one ends (M2). `false` for an invalid, foreign or removed handle.
    /// O(log n) amortized (N4): outside a broadcast the subscription waits in the deferred list
    /// (merged by the next broadcast); during one, the settle applies every move at once.
    pub fn set_priority(&self, handle: DelegateHandle, priority: i32) -> bool {
        handle.is_valid()
            && self
                .block()
                .is_some_and(|block| block.set_priority(handle.id(), priority))
    }

    /// Removes every subscription made from the plain function at address `key` (X7), and, if
    /// `owner` is given, bound to that owner; returns how many. Only subscriptions added with
    /// that key match: no other subscription can, whatever addresses its callable or captures
    /// have. O(k log n) in the k subscriptions made from that
    /// function (without `owner`) or bound to that owner (with one): a lookup of the key, then
    /// of the owner (N4).
    pub(crate) fn remove_keyed(&self, key: usize, owner: Option<*const ()>) -> usize {
        let Some(block) = self.block() else { return 0 };
        let ids: SmallVec<[u64; 4]> = {
            let keys = block.keys.borrow();
            let Some(keyed) = keys.get(&key) else {
                return 0;
            };
            match owner {
                None => {
                    steps::add(keyed.len());
                    keyed.iter().copied().collect()
                }
                Some(owner) => {
                    let by_owner = block.by_owner.borrow();
                    let owned = by_owner.get(&owner.addr()).map_or(&[][..], |ids| &ids[..]);
                    steps::add(owned.len());
                    owned
                        .iter()
                        .copied()
                        .filter(|id| {
                            steps::search(keyed.len());
                            keyed.binary_search(id).is_ok()
                        })
                        .collect()
                }
            }
        };
        let mut count = 0;
        for id in ids {
            let matches = match owner {
                None => block.with_entry(id, |entry| !entry.is_owned()),
                Some(owner) => block.with_entry(id, |entry| block.owner_is(entry, owner)),
            };
            if matches == Some(true) && block.remove(id) {
                count += 1;
            }
        }
        count
    }
}

/// Whether `owner` (a weak owner) is the object at `target`.
fn is_owner(owner: Option<&Weak<dyn Any>>, target: *const ()) -> bool {
    owner.is_some_and(|weak| Weak::as_ptr(weak).cast::<()>() == target)
}

impl<C> Block<C> {
    fn new() -> Self {
        Block {
            entries: RefCell::new(Vec::new()),
            runs: RefCell::new(SmallVec::new()),
            owners: RefCell::new(Vec::new()),
            by_owner: RefCell::new(HashMap::new()),
            keys: RefCell::new(HashMap::new()),
            moves: RefCell::new(Vec::new()),
            priorities: RefCell::new(HashMap::new()),
            pending: RefCell::new(Vec::new()),
            deferred: RefCell::new(BTreeMap::new()),
            state: Cell::new(0),
            tombstones: Cell::new(0),
            stale_rows: Cell::new(false),
            mutes: Cell::new(0),
            more_blocks: RefCell::new(HashMap::new()),
            blocks_swept: Cell::new(0),
        }
    }
}

impl<C: Subscriber> Block<C> {
    /// The weak owner of the main-list entry `id`, if it has one.
    fn owner(&self, id: u64) -> Option<Weak<dyn Any>> {
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

    fn owner_is(&self, entry: &Entry<C>, target: *const ()) -> bool {
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
    fn set_blocked(&self, id: u64, blocked: bool) -> bool {
        let Some(was_blocked) = self.with_entry(id, Entry::is_blocked) else {
            return false;
        };
        let mut more = self.more_blocks.borrow_mut();
        match (blocked, was_blocked) {
            (true, false) => {
                drop(more);
                self.with_entry(id, |entry| entry.set_blocked(true));
            }
            (true, true) => {
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
                Some(_) => {
                    more.remove(&id);
                }
                None => {
                    drop(more);
                    self.with_entry(id, |entry| entry.set_blocked(false));
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
    fn take_deferred(
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

    /// Moves the subscription `id` to `priority` (see [`InvocationList::set_priority`]).
    /// Outside broadcasts O(log n): the subscriber waits in the deferred list, merged by the
    /// next broadcast (O(n + m), shared by the m deferred). During one, O(1) amortized: the
    /// settle applies every move at once, O(n + k log k) for k moves, and allocates nothing
    /// (the room it needs is reserved here, as the table of moves grows, M12).
    fn set_priority(&self, id: u64, priority: i32) -> bool {
        if self.with_entry(id, |_| ()).is_none() {
            return false;
        }
        if self.is_broadcasting() {
            let mut moves = self.moves.borrow_mut();
            let rank = moves.len();
            moves.push((id, rank, priority));
            // Room for the moved copies and their runs, so that the settle allocates nothing.
            self.pending.borrow_mut().reserve(moves.len());
            self.runs.borrow_mut().reserve(moves.len());
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
    fn move_now(&self, entries: &mut Vec<Entry<C>>, id: u64, priority: i32) {
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
    fn defer(&self, entries: &mut Vec<Entry<C>>, new: Pending<C>) {
        let mut deferred = self.deferred.borrow_mut();
        steps::search(deferred.len());
        deferred.insert(new.key(), new);
        entries.reserve(deferred.len());
        self.runs.borrow_mut().reserve(deferred.len());
        // Walks merge them first (`merge_deferred`): the flag takes them off the hot path.
        self.state
            .set(self.state.get() | HAS_PENDING | NEEDS_SETTLE);
    }

    /// Outside broadcasts, merges the deferred list once it is at least half the main list's
    /// size (and 32) even without a broadcast: its memory stays bounded, and the merge,
    /// O(n + m), is O(1) amortized per deferred subscriber.
    fn merge_if_worthwhile(&self) {
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

    /// Removes `handle`'s subscriber like [`InvocationList::remove`] and, outside a broadcast,
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

    fn insert(
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
    fn module_access(self: &Rc<Self>) -> crate::track::ListAccess {
        crate::track::ListAccess::of(self)
    }

    /// Appends an entry to the main list, at or below its lowest priority (its owner's row is
    /// made by `insert`). Its id is the largest so far, so ids ascend within each run.
    fn insert_main(&self, entries: &mut Vec<Entry<C>>, new: Pending<C>) {
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
    fn set_priority_of(&self, id: u64, priority: i32) {
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

    fn remove(&self, id: u64) -> bool {
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
                // Deferred (waiting for a merge): taken out of the deferred list at once.
                drop(entries);
                let Some(taken) = self.take_deferred(id, |_| true) else {
                    return false;
                };
                let was_live = taken.owner_alive();
                (taken.entry.take_callable(), was_live)
            }
        };
        // Dropped outside the borrow: a closure's captures may run code that re-enters the list
        // (M13). The entry is already a tombstone, so a panic there leaves the list consistent.
        Drops::drop_one(removed);
        self.compact_if_worthwhile();
        was_live
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
    fn remove_while_broadcasting(&self, id: u64) -> bool {
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

    /// The first phase of a clear (see [`InvocationList::take_all`]): outside a broadcast, the
    /// entries taken out of the list, empty now; during one, nothing (every entry is marked
    /// removed, and the outermost broadcast's end drops the callables, M4).
    fn take_all(&self, mut removed: impl FnMut(u64, u32, &C)) -> Vec<Entry<C>> {
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

    fn is_bound(&self) -> bool {
        // Present entries without owner are live: at least `len - tombstones - owners` of them
        // (every owned main-list entry has a row in `owners`, removed or not).
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

    fn len(&self) -> usize {
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

    /// Applies the changes of priority asked for during the broadcasts, drops every tombstone
    /// whose callable is already gone, and merges the pending subscribers in. Only runs when no
    /// broadcast is running. Dropping an entry here only drops its id and weak owner: no user
    /// code runs. If the main list is borrowed (it cannot be, while no broadcast runs), nothing
    /// happens and the next settle compacts. O(n + m log m) for m pending: a backward merge in
    /// place, into room reserved when they were deferred (so a broadcast's settle allocates
    /// nothing for them, M12), then the priority runs rebuilt.
    pub(super) fn compact(&self) {
        let Ok(mut entries) = self.entries.try_borrow_mut() else {
            return;
        };
        steps::add(entries.len() + self.pending.borrow().len());
        self.apply_moves(&mut entries);
        // Pending entries removed and already emptied: dropped; the indexes forget them.
        let mut discarded = false;
        let mut keep = |pending: &Pending<C>| {
            let keep = !pending.entry.is_removed() || pending.entry.has_callable();
            if !keep {
                discarded = true;
                self.set_priority_of(pending.entry.id(), 0);
            }
            keep
        };
        self.pending.borrow_mut().retain(|pending| keep(pending));
        self.deferred
            .borrow_mut()
            .retain(|_, pending| keep(pending));
        let compacting = self.tombstones.get() > 0;
        if compacting {
            entries.retain(|entry| {
                let keep = entry.has_callable();
                // A moved-away tombstone's id lives on in its copy, at its new priority.
                if !keep && !entry.is_moved_away() {
                    // Allocates nothing: a removal from the index.
                    self.set_priority_of(entry.id(), 0);
                }
                keep
            });
        }
        let merged = self.merge_pending(&mut entries);
        if compacting || merged {
            self.rebuild_runs(&entries);
        }
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
    fn apply_moves(&self, entries: &mut [Entry<C>]) {
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

    /// Merges the pending list and the deferred one (each sorted by key) into the main list
    /// (sorted by key, no moved-away tombstone left), from the back, in place: vacant slots at
    /// the end take the largest of the three lists' last entries in turn. O(n + m); allocates
    /// only when the room reserved at the deferral is not there (subscribers added during a
    /// broadcast: their add's cost). Whether anything was merged.
    fn merge_pending(&self, entries: &mut Vec<Entry<C>>) -> bool {
        let mut pending = self.pending.borrow_mut();
        let mut deferred = self.deferred.borrow_mut();
        let waiting = pending.len() + deferred.len();
        if waiting == 0 {
            return false;
        }
        let key = |entry: &Entry<C>| (-i64::from(self.priority_of(entry.id())), entry.id());
        let mut main = entries.len();
        entries.reserve(waiting);
        entries.resize_with(main + waiting, Entry::vacant);
        // Slots main..write are vacant; as many as the pending and deferred entries left.
        let mut write = main + waiting;
        while write > main {
            write -= 1;
            let from_pending = pending.last().map(Pending::key);
            let from_deferred = deferred.last_key_value().map(|(key, _)| *key);
            let waiting_key = from_pending.max(from_deferred);
            if main > 0 && Some(key(&entries[main - 1])) > waiting_key {
                entries.swap(main - 1, write);
                main -= 1;
                continue;
            }
            let next = if from_pending > from_deferred {
                pending.pop()
            } else {
                deferred.pop_last().map(|(_, next)| next)
            };
            if let Some(Pending { entry, .. }) = next {
                if entry.is_removed() {
                    // Removed during the broadcast, its callable dropped by the next settle.
                    self.tombstones.set(self.tombstones.get() + 1);
                }
                entries[write] = entry;
            }
        }
        true
    }

    /// The priority runs of `entries`, from the index by id (O(n); no run is allocated beyond
    /// the room reserved when a subscriber was deferred).
    fn rebuild_runs(&self, entries: &[Entry<C>]) {
        let mut runs = self.runs.borrow_mut();
        runs.clear();
        for (index, entry) in entries.iter().enumerate() {
            let priority = self.priority_of(entry.id());
            match runs.last_mut() {
                Some(run) if run.priority == priority => run.end = index + 1,
                _ => runs.push(Run {
                    priority,
                    end: index + 1,
                }),
            }
        }
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
