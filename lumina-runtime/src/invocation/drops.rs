//! Dropping user values the list holds (callables, broadcast arguments) so that a panicking
//! `Drop` neither stops the others nor aborts the process while the thread unwinds (M13). It
//! stands below the rest of the list: the list, the walk and the settling all use it, and it
//! uses none of them (N3).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

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
