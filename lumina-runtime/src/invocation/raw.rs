//! Every `unsafe` block of the invocation list but those of R2's guard (`settle.rs`), in one
//! place: how the hot loops read the main list and a live entry's callable without a `RefCell`
//! borrow, how a slot is taken, and [`Shared`], the `Rc` kept as its value's pointer.
//!
//! The rules they rely on, kept by the rest of the module:
//!
//! - The main list (`Block::entries`) changes shape (push, insert, compaction) or is borrowed
//!   mutably only while no broadcast runs (the lock count is 0): `insert`, `remove`, `clear` and
//!   `compact_if_worthwhile` check `is_broadcasting` first, and `compact` runs only once the lock
//!   is released. So while a lock is held, a `&[Entry]` into it stays valid.
//! - A reference into a slot lives either for a call, made by a loop that holds the list's lock,
//!   or for a moment with no user code in it (a clone of a [`Subscriber`], a test of which kind
//!   it is). A slot is only taken by [`Entry::take_callable`], and only while no loop runs: a
//!   removal during a broadcast only marks the entry (`take_unless_broadcasting`), and the
//!   outermost broadcast's end (the settle, at lock count 0) drops what was removed.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;
use std::rc::{Rc, Weak};

use super::entry::{Entry, Subscriber};
use crate::drops::Guarded;

impl<C> Entry<C> {
    /// The callable of a live entry, read without a borrow: what the broadcast and dispatch
    /// loops call.
    ///
    /// # Safety
    ///
    /// The entry must not be removed (only removed entries have an empty slot: every path that
    /// empties one marks the entry removed first), and its slot must not be taken while the
    /// reference lives: the caller holds the list's lock for as long (no slot is taken while
    /// a lock is held but by the settle and operations that hold the only lock, see above).
    #[inline(always)]
    pub(super) unsafe fn live_callable(&self) -> &C {
        // SAFETY: no one takes the slot while this reference lives (contract).
        let slot = unsafe { &*self.slot.get() };
        debug_assert!(slot.is_some(), "a live entry has its callable");
        // SAFETY: the entry is not removed (contract), so its slot holds its callable.
        unsafe { slot.as_ref().unwrap_unchecked() }
    }

    /// Empties the slot. Only called where no reference into it can live: while no broadcast
    /// loop runs (see the module documentation).
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

/// A shared callable as an invocation list keeps it: an `Rc<T>` held as the pointer to its value
/// (`Rc::into_raw`), owning that one strong reference.
///
/// Why not the `Rc` itself: reaching the value of an `Rc<dyn Fn>` adds the size of the counts
/// rounded up to the value's alignment, read from the vtable (5 instructions per call in the
/// broadcast loop, BENCHMARKS.md "N2"); this pointer is the value's address already, so a call
/// through it is a call through a `Box`. Cloning (cold: the merging walk, pending entries) and
/// dropping go back through `Rc`. Same size and niche as `Rc<T>` (16 bytes for `dyn`,
/// `Option` free).
pub(crate) struct Shared<T: ?Sized> {
    value: NonNull<T>,
    /// Owns one strong reference of an `Rc<T>` (drop check, `!Send`, `!Sync`).
    _rc: PhantomData<Rc<T>>,
}

impl<T: ?Sized> Shared<T> {
    /// Takes over `rc`'s strong reference.
    #[inline]
    pub(crate) fn new(rc: Rc<T>) -> Self {
        // `into_raw`, not a reference to the value: its pointer keeps the provenance of the
        // whole allocation, which `from_raw` needs to reach the counts again (Miri checks it).
        let value = Rc::into_raw(rc).cast_mut();
        Shared {
            // SAFETY: `Rc::into_raw` returns the address of the value in a live allocation,
            // never null.
            value: unsafe { NonNull::new_unchecked(value) },
            _rc: PhantomData,
        }
    }

    /// A new strong reference to the value, as an `Rc`.
    pub(crate) fn to_rc(&self) -> Rc<T> {
        let rc = ManuallyDrop::new(self.as_rc());
        Rc::clone(&rc)
    }

    /// The `Rc` this owns, rebuilt without touching the counts: the caller must not drop it
    /// unless it gives up this `Shared`'s reference (`Drop`), hence `ManuallyDrop` everywhere
    /// else.
    fn as_rc(&self) -> Rc<T> {
        // SAFETY: `value` came from `Rc::into_raw` of an `Rc<T>` (in `new`) whose strong
        // reference this `Shared` still owns, so the allocation is alive. The caller keeps the
        // count balanced (see above).
        unsafe { Rc::from_raw(self.value.as_ptr()) }
    }
}

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared::new(self.to_rc())
    }
}

impl<T: ?Sized> Drop for Shared<T> {
    fn drop(&mut self) {
        // Gives this `Shared`'s strong reference back to an `Rc`, which drops it.
        drop(self.as_rc());
    }
}

impl<T: ?Sized> Deref for Shared<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `value` points to the value of an `Rc` allocation kept alive by the strong
        // reference this `Shared` owns for at least as long as `&self`; an `Rc`'s value is only
        // ever shared (no `get_mut` is taken on it: the `Rc` is not reachable as such), so a
        // shared reference is what `Rc::deref` would give.
        unsafe { self.value.as_ref() }
    }
}

// SAFETY: cloning a `Shared` only changes a count: no user code runs.
unsafe impl<T: ?Sized> Subscriber for Shared<T> {
    fn code(&self) -> Option<crate::track::Code> {
        crate::track::code_of(&**self)
    }
}

/// A weakly held callable as the event processor keeps it (P3): the `Weak<T>` and the address
/// of its value, taken once when it is made.
///
/// Why not the `Weak` alone: a call through the `Rc` an upgrade gives adds the size of the
/// counts rounded up to the value's alignment, read from the vtable (5 instructions per handler
/// in the dispatch loop, BENCHMARKS.md "N2"); the address kept here is the value's already.
/// The upgrade still goes through the `Weak` (its pointer is the allocation's, so testing and
/// raising the strong count needs no offset), and [`Lent`] calls through the address while the
/// strong reference it holds keeps the value alive.
pub(crate) struct WeakShared<T: ?Sized> {
    weak: Weak<T>,
    /// `Weak::as_ptr(&weak)`: the value's address in the allocation `weak` points to. Only
    /// dereferenced by a [`Lent`], which holds a strong reference to that allocation.
    value: NonNull<T>,
}

impl<T: ?Sized> WeakShared<T> {
    /// Keeps `weak`, and its value's address.
    pub(crate) fn new(weak: Weak<T>) -> Self {
        // `as_ptr` keeps the provenance of the allocation (it is computed from the `Weak`'s own
        // pointer, not from a reference), so it may be read through while a strong reference
        // lives.
        let value = Weak::as_ptr(&weak).cast_mut();
        WeakShared {
            // SAFETY: `Weak::as_ptr` of a `Weak` made by `Rc::downgrade` (the only way to make
            // one of an unsized `T`) is the value's address in that allocation, never null.
            value: unsafe { NonNull::new_unchecked(value) },
            weak,
        }
    }

    /// A strong reference to the value, if it is still alive: what the dispatch loop calls.
    #[inline(always)]
    pub(crate) fn upgrade(&self) -> Option<Lent<T>> {
        self.weak.upgrade().map(|rc| Lent {
            rc,
            value: self.value,
        })
    }
}

impl<T: ?Sized> Clone for WeakShared<T> {
    fn clone(&self) -> Self {
        WeakShared {
            weak: self.weak.clone(),
            value: self.value,
        }
    }
}

// SAFETY: cloning a `Weak` only changes a count: no user code runs.
unsafe impl<T: ?Sized> Subscriber for WeakShared<T> {
    fn code(&self) -> Option<crate::track::Code> {
        self.weak.code()
    }
}

/// A strong reference to the value of a [`WeakShared`], called through the address the
/// `WeakShared` kept (no offset computed).
pub(crate) struct Lent<T: ?Sized> {
    /// Keeps the value alive for as long as this lives; dropped with it.
    rc: Rc<T>,
    /// The value's address in `rc`'s allocation.
    value: NonNull<T>,
}

impl<T: ?Sized> Lent<T> {
    /// Runs `f` on the value, then drops the strong reference; if `f` unwinds, the reference
    /// (the value's last, if its handler was removed and dropped meanwhile) is dropped under
    /// the guard (R2). Only the `Rc` is held in memory for the guard; the value's address stays
    /// in registers.
    ///
    /// `UNWINDING`: whether the loop that calls this runs while the thread unwinds (it was
    /// called from a `Drop` during a panic; it stays so for the whole loop, as a call that
    /// returns normally leaves the thread's panic state as it found it). Then the reference is
    /// dropped under the guard after a normal return too, if it is the last one (R2). Two
    /// instantiations, so the common loop pays nothing per handler for it.
    #[inline(always)]
    pub(crate) fn hold<const UNWINDING: bool, R>(self, f: impl FnOnce(&T) -> R) -> R {
        let Lent { rc, value } = self;
        // Only the last strong reference runs the value's `Drop` (see `Guarded::hold_rc`); the
        // test is compiled out of the common loop (`UNWINDING` false).
        Guarded::hold_then(
            rc,
            |_| {
                // SAFETY: `value` is `Weak::as_ptr` of a `Weak` to the allocation `rc` holds a
                // strong reference to (`WeakShared::upgrade` made both from the same `Weak`), and
                // `rc` is held until `f` returns or unwinds, so the value is alive while the
                // reference lives (it does not outlive `f`); `Weak::as_ptr` documents that its
                // pointer is valid while a strong reference exists. The value is only ever shared
                // (`rc` is a strong reference no one else reaches, so no `Rc::get_mut` succeeds
                // while it lives), so a shared reference is what `Rc::deref` would give.
                f(unsafe { value.as_ref() })
            },
            |rc| UNWINDING && Rc::strong_count(rc) == 1,
        )
    }
}
