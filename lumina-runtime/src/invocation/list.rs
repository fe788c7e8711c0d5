//! The list itself: an empty list is one pointer; the first add allocates the [`Block`] that
//! holds the subscribers and the broadcast bookkeeping. Adding, removing, clearing and the
//! queries.

use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::{Rc, Weak};

use smallvec::SmallVec;

use super::entry::{Entry, Pending, Subscriber};
use crate::drops::{Drops, Guarded};
use crate::handle::DelegateHandle;
use crate::id_map::IdMap;
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
    pub(super) by_owner: RefCell<IdMap<usize, SmallVec<[u64; 1]>>>,
    /// The identity keys of subscriptions made from a plain function (`add_static`, X7): the
    /// function pointer's address, with the ids made from it (ascending), so a removal by
    /// function looks up its key (N4). An address, not a pointer: it is only compared with the
    /// address of the function a `remove_static` names, never called nor dereferenced; the
    /// entry's own callable holds the function it came from.
    pub(super) keys: RefCell<IdMap<usize, SmallVec<[u64; 1]>>>,
    /// Changes of priority asked for while a broadcast runs (X6), applied in order when the
    /// outermost broadcast ends, after the pending subscribers are merged: the running
    /// broadcasts keep the order they started with (M2).
    /// Each with its rank in the order asked (id, rank, priority): the last one asked wins.
    pub(super) moves: RefCell<Vec<(u64, usize, i32)>>,
    /// The priority of every subscription (main or pending) whose priority is not 0, by id, as
    /// it sits now: what makes a lookup by id O(log n) whatever the number of priorities (N4),
    /// a binary search for its run, then one in the run (main), or one by key (pending). Empty,
    /// and never hashed, for a list without priorities.
    pub(super) priorities: RefCell<IdMap<u64, i32>>,
    /// Subscribers added while a broadcast runs, in dispatch order; merged into `entries` when
    /// the outermost broadcast ends. Never borrowed across user code. An entry removed meanwhile
    /// stays as a tombstone until then, so positions never move under a drop's code.
    pub(super) pending: RefCell<Vec<Pending<C>>>,
    /// Outside broadcasts, subscribers that would shift the main list (added above its lowest
    /// priority, or moved to another priority), by dispatch-order key: O(log m) to add, find
    /// and move (N4). Merged by the next compaction, which the start of the next broadcast (or
    /// walk) makes, into room reserved when they came (M12: the merge allocates nothing).
    /// Empty while a broadcast runs. Its subscribers have their owner's row in `owners`
    /// already. A removal by handle leaves a tombstone in it (see `deferred_removed`).
    pub(super) deferred: RefCell<BTreeMap<(i64, u64), Pending<C>>>,
    /// Tombstones removals by handle left in `deferred` since it was last swept or merged:
    /// swept once they are half of it (`Block::sweep_deferred_if_worthwhile`).
    pub(super) deferred_removed: Cell<usize>,
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
    pub(super) more_blocks: RefCell<IdMap<u64, u32>>,
    /// `more_blocks`' size after its last sweep.
    pub(super) blocks_swept: Cell<usize>,
    /// Subscriptions with an owner added since the last sweep of dead owners (N4, M9), during
    /// broadcasts too ([`Block::sweep_dead_owners_if_doubled`]).
    pub(super) owned_since_sweep: Cell<usize>,
    /// The rows of `owners` the last sweep of dead owners left (its live owned subscriptions):
    /// the owners table has doubled since when `owned_since_sweep` reaches it (at least 8).
    pub(super) owned_at_sweep: Cell<usize>,
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
    pub(crate) const fn new() -> Self {
        InvocationList {
            block: OnceCell::new(),
        }
    }

    /// The block, if a subscriber was ever added.
    #[inline(always)]
    pub(crate) fn block(&self) -> Option<&Block<C>> {
        self.block.get().map(|block| &**block)
    }

    /// The slots its tables hold room for (main list, owners, pending, moves, runs, and the
    /// indexes by owner, key and id): what N4's test of shrinking after a burst reads.
    #[cfg(test)]
    pub(crate) fn capacities(&self) -> usize {
        self.block().map_or(0, |block| {
            block.entries.borrow().capacity()
                + block.owners.borrow().capacity()
                + block.pending.borrow().capacity()
                + block.moves.borrow().capacity()
                + block.runs.borrow().capacity()
                + block.by_owner.borrow().capacity()
                + block.keys.borrow().capacity()
                + block.priorities.borrow().capacity()
        })
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
    pub(crate) fn add(&self, callable: C) -> DelegateHandle {
        self.insert(0, None, callable)
    }

    /// Appends a subscriber bound to `owner`: it runs only while `owner` is alive, is removed by
    /// [`remove_owner`](Self::remove_owner), and is pruned once `owner` is dropped (M9): by the
    /// next broadcast that reaches it, or by the sweep an add with an owner makes (outside
    /// broadcasts, before it adds) once the owners table has doubled since the last sweep, so
    /// a list never broadcast stays bounded. O(log n) amortized (N4), the sweep included; the
    /// swept callables' `Drop`s run in that add (see [`insert`](Self::insert)).
    #[track_caller]
    pub(crate) fn add_owned<T: Any>(&self, owner: &Rc<T>, callable: C) -> DelegateHandle {
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
    /// With an owner, outside broadcasts, the add first sweeps the subscriptions whose owner
    /// died once the owners table has doubled since the last sweep (O(r log n) for its r rows,
    /// every r / 2 adds with an owner at least): their callables are dropped there, user code
    /// that may re-enter the list; a panic there is resumed once every one was dropped, and
    /// nothing is added then (M13).
    #[track_caller]
    pub(crate) fn insert(
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
    ///
    /// O(log n) amortized (N4): a binary search by id; the compaction once the tombstones are
    /// half the list, the sweep of the deferred list once its tombstones are half of it (a
    /// subscription waiting there for a merge is marked removed in place, not taken out of the
    /// ordered map, so an add and a removal at its edge do not split and merge its nodes every
    /// time), and the shrink of its tables once they hold under a quarter of their room (to
    /// twice what they hold), are O(1) amortized per removal.
    pub(crate) fn remove(&self, handle: DelegateHandle) -> bool {
        handle.is_valid() && self.block().is_some_and(|block| block.remove(handle.id()))
    }

    /// Removes every live subscriber bound to `owner` (M9); returns how many. Allocates nothing
    /// during a broadcast (M12), nor outside one for an owner with up to 8 subscriptions.
    /// O(k log n) in the owner's own k subscriptions, through the
    /// index by owner (N4).
    pub(crate) fn remove_owner<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.block().map_or(0, |block| block.remove_owned_by(owner))
    }

    /// Whether a live subscriber is bound to `owner`.
    pub(crate) fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.handle_of_owner(owner).is_some()
    }

    /// The handle of the first live subscriber (in dispatch order, then pending ones) bound to
    /// `owner`. Allocates nothing. O(k log n) in the owner's own k subscriptions (N4).
    pub(crate) fn handle_of_owner<T: ?Sized>(&self, owner: &Rc<T>) -> Option<DelegateHandle> {
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
    pub(crate) fn clear(&self) {
        self.clear_with(|_, _, _| {});
    }

    /// [`clear`](Self::clear), calling `removed` with the id, bind site number and callable of
    /// every live subscriber
    /// it removes, before any of them is dropped (script delegates collect their managed bindings
    /// there, so a drop's code cannot unbind one in between). `removed` must not run user code.
    pub(crate) fn clear_with(&self, removed: impl FnMut(u64, u32, &C)) {
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
    pub(crate) fn is_bound(&self) -> bool {
        self.block().is_some_and(Block::is_bound)
    }

    /// How many live subscribers there are: removed ones and those whose owner died do not
    /// count (M8).
    pub(crate) fn len(&self) -> usize {
        self.block().map_or(0, Block::len)
    }

    /// `true` when [`len`](Self::len) is 0.
    pub(crate) fn is_empty(&self) -> bool {
        !self.is_bound()
    }

    /// The subscriptions present (not removed), in dispatch order, with where each was made and
    /// whether its owner lives (B5). Allocates: for diagnostics.
    pub(crate) fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
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
    pub(crate) fn is_broadcasting(&self) -> bool {
        self.block().is_some_and(Block::is_broadcasting)
    }

    /// Whether `handle` names a live subscriber for which `predicate` holds. Lets a mechanism
    /// with several kinds of subscriber in one list (script delegates: native and managed)
    /// remove only its own kind, without keeping a second record of which is which.
    pub(crate) fn subscriber_matches(
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
    pub(crate) fn count_matching(&self, mut predicate: impl FnMut(&C) -> bool) -> usize {
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
    pub(crate) fn snapshot(&self) -> Vec<(DelegateHandle, C)> {
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
    pub(crate) fn set_blocked(&self, handle: DelegateHandle, blocked: bool) -> bool {
        handle.is_valid()
            && self
                .block()
                .is_some_and(|block| block.set_blocked(handle.id(), blocked))
    }

    /// Whether the subscription of `handle` is present and blocked (X4).
    pub(crate) fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.block()
            .is_some_and(|block| block.is_blocked_handle(handle))
    }

    /// Moves the subscription of `handle` to `priority`, among the subscribers of that priority
    /// in the order they were added (as if it had been added there). Outside a broadcast it
    /// moves at once; during one, the running broadcasts keep their order and the move happens
    /// when the outermost one ends (M2). `false` for an invalid, foreign or removed handle.
    /// O(log n) amortized (N4): outside a broadcast the subscription waits in the deferred list
    /// (merged by the next broadcast); during one, the settle applies every move at once.
    pub(crate) fn set_priority(&self, handle: DelegateHandle, priority: i32) -> bool {
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
pub(super) fn is_owner(owner: Option<&Weak<dyn Any>>, target: *const ()) -> bool {
    owner.is_some_and(|weak| Weak::as_ptr(weak).cast::<()>() == target)
}

impl<C> Block<C> {
    pub(super) fn new() -> Self {
        Block {
            entries: RefCell::new(Vec::new()),
            runs: RefCell::new(SmallVec::new()),
            owners: RefCell::new(Vec::new()),
            by_owner: RefCell::new(IdMap::default()),
            keys: RefCell::new(IdMap::default()),
            moves: RefCell::new(Vec::new()),
            priorities: RefCell::new(IdMap::default()),
            pending: RefCell::new(Vec::new()),
            deferred: RefCell::new(BTreeMap::new()),
            state: Cell::new(0),
            tombstones: Cell::new(0),
            deferred_removed: Cell::new(0),
            stale_rows: Cell::new(false),
            mutes: Cell::new(0),
            more_blocks: RefCell::new(IdMap::default()),
            blocks_swept: Cell::new(0),
            owned_since_sweep: Cell::new(0),
            owned_at_sweep: Cell::new(0),
        }
    }
}
