//! Dropping user values the list holds (callables, broadcast arguments) so that a panicking
//! `Drop` neither stops the others nor aborts the process while the thread unwinds (M13). It
//! stands below the rest of the list: the list, the walk and the settling all use it, and it
//! uses none of them (N3).

use std::any::Any;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

/// Drops user values for an operation that drops several of them (clear, settle, the list's own
/// drop, the end of a game-thread session) or that may run while the thread unwinds: each `Drop`
/// runs even when an earlier one panicked, and [`finish`](Drops::finish) resumes the first panic
/// once the operation is complete (M13, R3: a clear still clears, a teardown runs to its end). A
/// panic while the thread is already unwinding cannot propagate (it would abort the process): it
/// is logged and dropped (R2). For a single value dropped on a normal path, see [`drop_user`].
#[derive(Default)]
pub(crate) struct Drops {
    panic: Option<Box<dyn Any + Send>>,
}

impl Drops {
    /// Drops `value`, keeping its panic (the first one) for [`finish`](Self::finish).
    pub(crate) fn drop<T>(&mut self, value: T) {
        self.run(move || drop(value));
    }

    /// Runs one step of a teardown (user code: drops, clears), keeping its panic (the first one)
    /// for [`finish`](Self::finish), so the steps after it still run (R3).
    pub(crate) fn run(&mut self, step: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(step)) {
            match self.panic {
                None => self.panic = Some(payload),
                // Only one panic can propagate: a later one's payload is dropped here.
                Some(_) => drop_payload(payload),
            }
        }
    }

    /// Drops each of `values` on its own, then resumes the first panic (logged instead while
    /// the thread unwinds). For a collection of user values: dropped as one, a panic of one
    /// element's `Drop` goes on dropping the others while it unwinds, and a second aborts.
    pub(crate) fn drop_each<T>(values: impl IntoIterator<Item = T>) {
        Self::each(values).finish();
    }

    /// Drops each of `values` on its own, keeping the first panic.
    fn each<T>(values: impl IntoIterator<Item = T>) -> Drops {
        let mut drops = Drops::default();
        for value in values {
            drops.drop(value);
        }
        drops
    }

    /// Drops one value, resuming its panic at once (unless the thread already unwinds).
    pub(crate) fn drop_one<T>(value: T) {
        let mut drops = Drops::default();
        drops.drop(value);
        drops.finish();
    }

    /// Ends the operation, keeping only the first panic's text: its payload is dropped now
    /// (a second panic of its `Drop` is dropped too). For an operation whose first panic must
    /// resume after the code its payload's type lives in is gone (a game module's unload, R5):
    /// [`resume_text`](Self::resume_text) resumes it then.
    pub(crate) fn into_text(self) -> Option<String> {
        let payload = self.panic?;
        let text = panic_text(&*payload);
        drop_payload(payload);
        Some(text)
    }

    /// Resumes a panic with `text` as its payload, as [`finish`](Self::finish) does (logged
    /// instead while the thread already unwinds).
    pub(crate) fn resume_text(text: String) {
        Drops {
            panic: Some(Box::new(text)),
        }
        .finish();
    }

    /// Ends the operation: resumes the first panic of a `Drop`, if any. While the thread is
    /// already unwinding the panic is logged and its payload dropped instead.
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

/// A thread-local's collection of user values (a thread's coroutine tasks, frame waiters,
/// queued senders' registry): its destructor runs at the thread's exit, where a panic cannot
/// propagate (the runtime aborts the process). It drops the values one at a time, each under
/// the guard, and logs a panic instead (R2). Derefs to the collection.
#[derive(Default)]
pub(crate) struct AtThreadExit<C: IntoIterator + Default>(pub(crate) C);

impl<C: IntoIterator + Default> Deref for AtThreadExit<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C: IntoIterator + Default> DerefMut for AtThreadExit<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.0
    }
}

impl<C: IntoIterator + Default> Drop for AtThreadExit<C> {
    fn drop(&mut self) {
        if let Some(payload) = Drops::each(std::mem::take(&mut self.0)).panic {
            tracing::error!(
                "lumina: a Drop panicked while a thread-local of an exiting thread was \
                 destroyed ({}); the panic is dropped so the process does not abort",
                panic_text(&*payload)
            );
            drop_payload(payload);
        }
    }
}

/// Drops a user value the library owns in its own frame on a normal path (after a call
/// returned, after delivery, on remove): a plain drop, unless the thread unwinds, where a
/// panicking `Drop` would abort the process. Library code runs while the thread unwinds when
/// user code calls it from a `Drop` during a panic (a send, a dispatch, a remove): the value then
/// goes to the guarded drop, which logs a second panic instead (R2). The check is compiled out
/// for a type without drop glue and is one load and a branch otherwise; the guarded path is out
/// of line.
#[inline(always)]
pub(crate) fn drop_user<T>(value: T) {
    if std::mem::needs_drop::<T>() && std::thread::panicking() {
        drop_user_while_unwinding(value);
    } else {
        drop(value);
    }
}

/// [`drop_user`]'s path while the thread unwinds.
#[cold]
#[inline(never)]
fn drop_user_while_unwinding<T>(value: T) {
    Drops::drop_one(value);
}

/// Drops a panic's payload that will not propagate. Its own `Drop` could panic again: that is
/// caught too, and only then (a payload whose drop panics, twice) is anything leaked.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// A user value the library holds in its own frame while user code runs (a broadcast argument
/// or its clone, a collected result, an event being dispatched, the strong reference a call
/// holds, a queued delivery's object): R2's guard. If the frame unwinds, the value is dropped
/// through `Drops`, so a `Drop` that panics then is logged instead of aborting the process.
///
/// Free on the path that does not panic: the value is taken out with
/// [`into_inner`](Self::into_inner) (which compiles to a move), so the guard's own `Drop` runs only
/// on an unwinding or early-return path, where it checks [`std::thread::panicking`]. A value
/// whose type has no drop glue costs nothing on any path. For several values, hold a
/// `Vec<Guarded<T>>`: each element's drop is guarded on its own, so two panicking `Drop`s do not
/// abort either.
///
/// R2 also covers library code that itself runs while the thread unwinds (called from a `Drop`
/// during a panic) and drops a user value on its normal path: dropping a `Guarded` (rather than
/// taking the value out) guards that drop too, and `drop_user` does it for a value held
/// plainly.
///
/// A tuple made element by element from user code (an owned argument tuple's clone for one
/// subscriber, M11; a future's owned copies of its arguments, X5) holds each finished element in
/// a `Guarded` until the whole tuple is made: if a later element's `Clone` panics, the finished
/// ones are dropped under the guard (a tuple expression, and std's tuple `Clone`, drop them
/// plainly while unwinding, and one whose `Drop` panics then aborts the process). Every such
/// tuple goes through this: the generic delegates' argument clone (std's tuple `Clone` over
/// `Guarded` elements, which clone into a guard of their own) and the code
/// `declare_multicast_delegate!` writes, which reaches it as `__private::Guarded` (so `new` and
/// `into_inner` are public; the type is not public API). Those owned arguments (when their types
/// have drop glue) also travel through the loop as a tuple of `Guarded` elements, not as one
/// guarded tuple: a tuple's drop glue, unwinding from its first element's panicking `Drop`,
/// would drop the second one plainly. A `Guarded` has drop glue of its own, so a value without
/// any is passed plainly (its guard would cost the loop).
#[repr(transparent)]
pub struct Guarded<T>(ManuallyDrop<T>);

impl<T> Guarded<T> {
    /// Guards `value`.
    #[inline(always)]
    pub const fn new(value: T) -> Self {
        Guarded(ManuallyDrop::new(value))
    }

    /// Takes the value out, disarming the guard.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used again and its `Drop` does not run (it is a
        // `ManuallyDrop`), so the value is taken out exactly once.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }

    /// Runs `f` on `value` and then drops `value`; if `f` unwinds, `value` is dropped under the
    /// guard. For the strong reference a call holds (the last one, if the callee was removed
    /// meanwhile).
    ///
    /// The value stays in one place throughout: the guard is a pointer to it, armed only for
    /// the call (forgetting it costs nothing), and the value is dropped where it is afterwards.
    /// Taking it out of a [`Guarded`] first would copy it (5 instructions per handler in the
    /// dispatch loop).
    ///
    /// The call may itself run while the thread unwinds (a send from a `Drop` that runs during
    /// a panic): the value is then dropped under the guard after a normal return too, so a
    /// panicking `Drop` of it is logged instead of aborting the process (R2).
    #[inline(always)]
    pub(crate) fn hold<R>(value: T, f: impl FnOnce(&T) -> R) -> R {
        Self::hold_then(value, f, |_| {
            std::mem::needs_drop::<T>() && std::thread::panicking()
        })
    }

    /// [`hold`](Self::hold) with the test that sends the value to the guarded drop after the
    /// call: `guard_drop` must return true whenever dropping the value may run user code while
    /// the thread unwinds (it may return true more often: the guarded drop checks again).
    #[inline(always)]
    pub(crate) fn hold_then<R>(
        value: T,
        f: impl FnOnce(&T) -> R,
        guard_drop: impl FnOnce(&T) -> bool,
    ) -> R {
        let mut slot = ManuallyDrop::new(value);
        let armed = Armed(&mut slot);
        let result = f(armed.0);
        std::mem::forget(armed);
        if guard_drop(&slot) {
            drop_guarded(&mut slot);
        } else {
            // SAFETY: the only other path that drops the value, `armed`, is forgotten, and
            // `slot` is not used again. A panic in this drop unwinds with nothing left to drop
            // it twice; it runs no user code while the thread unwinds (`guard_drop`).
            unsafe { ManuallyDrop::drop(&mut slot) };
        }
        result
    }
}

impl<T: ?Sized> Guarded<Rc<T>> {
    /// [`hold`](Guarded::hold) for a strong reference: only the last one runs the value's
    /// `Drop`, so only it goes to the guarded drop, and the hot path pays one compare of the
    /// count that the decrement loads anyway, not a look at the thread's panic state.
    #[inline(always)]
    pub(crate) fn hold_rc<R>(rc: Rc<T>, f: impl FnOnce(&Rc<T>) -> R) -> R {
        Guarded::hold_then(rc, f, |rc| Rc::strong_count(rc) == 1)
    }
}

/// [`Guarded::hold`]'s guard: drops the value of its slot (under the guard) if the call unwinds.
struct Armed<'a, T>(&'a mut ManuallyDrop<T>);

impl<T> Drop for Armed<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            drop_guarded(self.0);
        }
    }
}

impl<T> Deref for Guarded<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Guarded<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// A clone of the value, in a guard of its own: a tuple of `Guarded` elements cloned by std's
/// tuple `Clone` then keeps each finished element guarded if a later one's `Clone` panics (the
/// generic delegates' owned arguments, R2).
impl<T: Clone> Clone for Guarded<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        Guarded::new((**self).clone())
    }
}

impl<T> Drop for Guarded<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            drop_guarded(&mut self.0);
        }
    }
}

/// The drop of an armed [`Guarded`] (an unwinding or early-return path), or of a value
/// [`Guarded::hold`] held that may run user code while the thread unwinds: out of line, so a
/// landing pad is one call and the guard adds no code to its callers' normal paths. Under the
/// guard while the thread unwinds, a plain drop otherwise.
#[cold]
#[inline(never)]
fn drop_guarded<T>(slot: &mut ManuallyDrop<T>) {
    // SAFETY: called once per value, by the guard's drop (the guard is not used afterwards) or
    // by `hold_then` instead of its plain drop (the slot is not used afterwards).
    drop_user(unsafe { ManuallyDrop::take(slot) });
}

/// The text of a panic's payload (`panic!` with a literal or a format), for reports.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".to_owned())
}
