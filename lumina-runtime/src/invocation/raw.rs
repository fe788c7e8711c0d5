//! Every `unsafe` block of the invocation list but those of R2's guard (`settle.rs`), in one
//! place: how the hot loops read the main list and a live entry's callable without a `RefCell`
//! borrow, and how a slot is taken.
//!
//! The rules they rely on, kept by the rest of the module:
//!
//! - The main list (`Block::entries`) changes shape (push, insert, compaction) or is borrowed
//!   mutably only while no broadcast runs (the lock count is 0): `insert`, `remove`, `clear` and
//!   `compact_if_worthwhile` check `is_broadcasting` first, and `compact` runs only once the lock
//!   is released. So while a lock is held, a `&[Entry]` into it stays valid.
//! - A reference into a slot lives either for a call, while the entry is recorded as running
//!   (the list's `running`, or the entry's `RUNNING_OUTER` bit for a call of an enclosing loop),
//!   or for a moment with no user code in it (a clone of a [`Subscriber`], a test of which kind
//!   it is). A slot is only taken by [`Entry::take_callable`], and during a broadcast only
//!   through `take_unless_running`, which leaves running entries alone.

use std::cell::RefCell;

use super::entry::{Entry, Subscriber};

impl<C> Entry<C> {
    /// The callable of a live entry, read without a borrow: what the broadcast and dispatch
    /// loops call.
    ///
    /// # Safety
    ///
    /// The entry must not be removed (only removed entries have an empty slot: every path that
    /// empties one marks the entry removed first), and its slot must not be taken while the
    /// reference lives: the caller holds the list's lock and either runs no user code meanwhile
    /// or records the entry as running (`take_unless_running` checks that first).
    #[inline(always)]
    pub(super) unsafe fn live_callable(&self) -> &C {
        // SAFETY: no one takes the slot while this reference lives (contract).
        let slot = unsafe { &*self.slot.get() };
        debug_assert!(slot.is_some(), "a live entry has its callable");
        // SAFETY: the entry is not removed (contract), so its slot holds its callable.
        unsafe { slot.as_ref().unwrap_unchecked() }
    }

    /// Empties the slot. Only called where no reference into it can live: while no broadcast
    /// runs, or through `take_unless_running` (see the module documentation).
    pub(super) fn take_callable(&self) -> Option<C> {
        // SAFETY: no reference into the slot lives now (module rules above), and nothing else
        // runs on this thread while the slot is written.
        unsafe { (*self.slot.get()).take() }
    }

    /// Whether the slot still holds the callable.
    pub(super) fn has_callable(&self) -> bool {
        // SAFETY: a shared read for a moment, with no user code: the slot is not written
        // meanwhile (it is only written by `take_callable`, on this thread).
        unsafe { (*self.slot.get()).is_some() }
    }

    /// A clone of the callable, if the slot holds it.
    pub(super) fn clone_callable(&self) -> Option<C>
    where
        C: Subscriber,
    {
        // SAFETY: the reference lives for the clone only, and a `Subscriber`'s clone removes
        // nothing (its trait's contract), so the slot is not taken meanwhile.
        unsafe { (*self.slot.get()).clone() }
    }
}

/// The main list of a locked block, read without a `RefCell` borrow.
///
/// # Safety
///
/// The caller must hold the list's lock for as long as the returned slice lives (see the module
/// documentation: the main list keeps its place and is not borrowed mutably meanwhile).
#[inline(always)]
pub(super) unsafe fn locked_entries<C>(entries: &RefCell<Vec<Entry<C>>>) -> &[Entry<C>] {
    // SAFETY: while the lock is held (contract), every path that borrows the main list mutably
    // or reshapes it stays away, so it is only read meanwhile. The `RefCell` still guards the
    // cold paths, which take shared borrows while locked; this read neither needs nor disturbs
    // them.
    unsafe { &*entries.as_ptr() }
}
