//! One subscriber of the main list, in 8 bytes plus its callable: a word with its handle's id
//! and its state bits, and the slot holding the callable. Its priority lives in the list's
//! priority runs, its owner (if any) in the list's owner table: most subscribers have neither.
//! A subscriber added during a broadcast waits in the pending list as a [`Pending`], which
//! carries both until it is merged.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::rc::Weak;

/// State bit: removed (a tombstone).
pub(super) const REMOVED: u64 = 1;
/// State bit: has a weak owner, whose death also ends the subscription (M9).
pub(super) const OWNED: u64 = 2;
/// State bit: blocked (muted, X4): skipped by broadcasts, but keeps its place, priority and
/// handle, and counts as subscribed. Set and cleared with no change of shape, so it can change
/// during a broadcast; the loops' one test of the state (`state() != 0`) covers it, so a list
/// with nothing blocked pays nothing for it.
pub(super) const BLOCKED: u64 = 4;
/// State bit: one-shot (X3): a broadcast loop marks the entry removed right before its call
/// starts (`Block::claim`), so no nested or later broadcast runs it again.
pub(super) const ONCE: u64 = 8;
/// The state bits of [`Entry::word`].
const STATE_MASK: u64 = 15;
/// Above the state bits, and not one of them (the loops never test it): the subscription is
/// self-aware (X6: its callable was given its own `ThisSubscription`). For listings only (V1).
const SELF_AWARE: u64 = 16;
/// Above that bit: the number of the subscription's bind site (B5), then its id.
const SITE_SHIFT: u32 = 5;
const SITE_MASK: u64 = (1 << crate::bind_site::SITE_BITS) - 1;
const ID_SHIFT: u32 = SITE_SHIFT + crate::bind_site::SITE_BITS;
/// The bind site number of a tombstone a move left (`Entry::move_out`): no interned site has it
/// (`bind_site::intern` numbers sites below it).
const MOVED_AWAY: u64 = SITE_MASK;

/// What an invocation list holds. Its `Clone` is taken while the list reads the slot, so it
/// must not remove or clear anything of any invocation list (the library's own subscribers,
/// `Rc`, `Weak` and script delegates' listeners, run no user code in their `Clone` at all).
///
/// # Safety
///
/// `Clone::clone` must never remove an entry of, or clear, an invocation list: the slot it
/// clones from is borrowed meanwhile (see `Entry::clone_callable`).
pub(crate) unsafe trait Subscriber: Clone {
    /// Where the subscriber's code is (its vtable, or its one word), so that a game module's
    /// subscriptions can be found when it unloads (MB4); `None` at once while no module is
    /// loaded, and for subscribers that are no code of a module (a managed binding answers
    /// with its thunk's address, which a module may own).
    fn code(&self) -> Option<crate::track::Code> {
        None
    }

    /// A game module's unload is about to remove this subscriber (MB4), whose entry is still
    /// live and was bound at `site`: a managed binding records why it leaves, so the host's
    /// release hook hears the right reason (R4). Must run no user code.
    fn unloading(&self, _site: u32) {}
}

// SAFETY: cloning an `Rc` or `Weak` only changes a count: no user code runs.
unsafe impl<T: ?Sized> Subscriber for std::rc::Rc<T> {
    fn code(&self) -> Option<crate::track::Code> {
        crate::track::code_of(&**self)
    }
}
// SAFETY: as above.
unsafe impl<T: ?Sized> Subscriber for std::rc::Weak<T> {
    fn code(&self) -> Option<crate::track::Code> {
        // The object is alive while it is being subscribed (its subscriber holds it), so this
        // upgrade is not its last strong reference: dropping it runs no user code.
        self.upgrade().and_then(|object| object.code())
    }
}

/// One subscriber of the main list.
///
/// A removed entry is a *tombstone*, waiting for compaction: its state has [`REMOVED`] and its
/// slot is emptied, dropping the callable at once, unless a broadcast of the list is running:
/// then the callable stays in its slot until the outermost broadcast ends and settles the list
/// (M4 allows no later), so no broadcast loop ever holds a reference into a slot that a removal
/// empties. So an empty slot always has [`REMOVED`] set.
pub(super) struct Entry<C> {
    /// `id << 25 | bind site << 5 | self-aware << 4 | state`, the state being [`REMOVED`] |
    /// [`OWNED`] | [`BLOCKED`] | [`ONCE`]. The state is 0 for a live, unblocked, lasting entry
    /// without owner, so the broadcast loop checks liveness with one load and one test; the
    /// [`SELF_AWARE`] bit is outside it. Ids fit in 39 bits (half a trillion subscriptions),
    /// bind sites in 20 (see `bind_site`).
    word: Cell<u64>,
    /// The callable; see `raw.rs` for who reads it how.
    pub(super) slot: UnsafeCell<Option<C>>,
}

/// A subscription leaves its list with its entry (compaction after a removal, a clear, the
/// list's drop): a game module's record of it goes with it, before the list's block can be
/// freed, so no record ever points at a freed block (R1, MB4). One atomic load while nothing is
/// recorded; not on the broadcast path (no loop drops an entry).
impl<C> Drop for Entry<C> {
    fn drop(&mut self) {
        // A moved-away tombstone's subscription lives on in its copy: its record stays.
        if crate::track::recording() && !self.is_moved_away() {
            crate::track::forget(std::iter::once(self.id()));
        }
    }
}

impl<C> Entry<C> {
    /// A live entry; `once` makes it one-shot (X3); `self_aware` records that its callable was
    /// given its own subscription (X6, for listings).
    pub(super) fn new(
        id: u64,
        (owned, once, self_aware): (bool, bool, bool),
        site: u32,
        callable: C,
    ) -> Self {
        assert!(
            id < 1 << (64 - ID_SHIFT),
            "lumina: more than 2^39 subscriptions were made in this process"
        );
        let site = u64::from(site) & SITE_MASK;
        let state = if owned { OWNED } else { 0 }
            | if once { ONCE } else { 0 }
            | if self_aware { SELF_AWARE } else { 0 };
        Entry {
            word: Cell::new(id << ID_SHIFT | site << SITE_SHIFT | state),
            slot: UnsafeCell::new(Some(callable)),
        }
    }

    /// A tombstone holding no subscription: a slot of the merge (`Block::merge_pending`) that a
    /// merged entry takes. Marked moved away, so its drop forgets no record.
    pub(super) fn vacant() -> Self {
        Entry {
            word: Cell::new(MOVED_AWAY << SITE_SHIFT | REMOVED),
            slot: UnsafeCell::new(None),
        }
    }

    /// Outside broadcasts only (no loop reads the slot): moves this entry's subscription out
    /// (same id, bind site and state; callable taken), leaving a tombstone marked *moved away*,
    /// which lookups by id do not find and whose drop forgets no record: the copy is the
    /// subscription now (a change of priority, N4).
    pub(super) fn move_out(&self) -> Self {
        let word = self.word.get();
        let callable = self.take_callable();
        self.word
            .set((word & !(SITE_MASK << SITE_SHIFT)) | MOVED_AWAY << SITE_SHIFT | REMOVED);
        Entry {
            word: Cell::new(word),
            slot: UnsafeCell::new(callable),
        }
    }

    /// Whether this is the tombstone a move left ([`move_out`](Self::move_out)).
    pub(super) fn is_moved_away(&self) -> bool {
        self.is_removed() && (self.word.get() >> SITE_SHIFT) & SITE_MASK == MOVED_AWAY
    }

    /// The number of the bind site (B5).
    pub(super) fn site(&self) -> u32 {
        // At most 20 bits: the cast keeps them all.
        ((self.word.get() >> SITE_SHIFT) & SITE_MASK) as u32
    }

    #[inline(always)]
    pub(super) fn id(&self) -> u64 {
        self.word.get() >> ID_SHIFT
    }

    /// The state bits; 0 for the common case (live, unblocked, lasting, no owner).
    #[inline(always)]
    pub(super) fn state(&self) -> u64 {
        self.word.get() & STATE_MASK
    }

    #[inline(always)]
    fn set_bit(&self, bit: u64, on: bool) {
        let word = self.word.get() & !bit;
        self.word.set(if on { word | bit } else { word });
    }

    #[inline(always)]
    pub(super) fn is_removed(&self) -> bool {
        self.state() & REMOVED != 0
    }

    pub(super) fn mark_removed(&self) {
        self.set_bit(REMOVED, true);
    }

    pub(super) fn is_owned(&self) -> bool {
        self.state() & OWNED != 0
    }

    pub(super) fn is_blocked(&self) -> bool {
        self.state() & BLOCKED != 0
    }

    pub(super) fn set_blocked(&self, blocked: bool) {
        self.set_bit(BLOCKED, blocked);
    }

    pub(super) fn is_once(&self) -> bool {
        self.state() & ONCE != 0
    }

    /// Whether its callable was given its own subscription (X6).
    pub(super) fn is_self_aware(&self) -> bool {
        self.word.get() & SELF_AWARE != 0
    }

    /// This entry's address (a cold path's way back from the pointer a hot loop iterates with
    /// to an index).
    #[inline(always)]
    pub(super) fn addr(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }
}

/// A subscriber added while a broadcast runs: its entry with what the main list keeps beside
/// it, until the outermost broadcast ends and merges it (M2). Rare, so it carries everything.
pub(super) struct Pending<C> {
    pub(super) entry: Entry<C>,
    pub(super) priority: i32,
    pub(super) owner: Option<Weak<dyn Any>>,
}

impl<C> Pending<C> {
    /// The dispatch-order key: higher priority first, then ascending id (= order added).
    pub(super) fn key(&self) -> (i64, u64) {
        (-i64::from(self.priority), self.entry.id())
    }

    pub(super) fn owner_alive(&self) -> bool {
        self.owner
            .as_ref()
            .is_none_or(|owner| owner.strong_count() > 0)
    }

    /// Subscribed: not removed, owner alive (a blocked entry is live).
    pub(super) fn is_live(&self) -> bool {
        !self.entry.is_removed() && self.owner_alive()
    }
}
