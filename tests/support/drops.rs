//! How the library drops user values, for the model-based tests' models to do the same: a
//! `Drop` it runs propagates its panic unless the thread already unwinds (R2), and the drops of
//! one operation all run, the first panic resumed once they are done (M13, R3).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// A `Drop` the library runs: its panic propagates, unless the thread already unwinds (the
/// library was called from a `Drop` during a panic, or drops while a panic leaves): then it is
/// logged and dropped (R2).
pub fn guarded_drop(run: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(run))
        && !std::thread::panicking()
    {
        panic::resume_unwind(payload);
    }
}

/// The first panic of several drops of one operation; resumed once the operation is complete
/// (dropped if the thread already unwinds), as the library does.
#[derive(Default)]
pub struct FirstPanic(Option<Box<dyn Any + Send>>);

impl FirstPanic {
    /// Runs one drop, keeping its panic if it is the first.
    pub fn run(&mut self, f: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
            self.0.get_or_insert(payload);
        }
    }

    /// Resumes the first panic, unless the thread already unwinds.
    pub fn finish(self) {
        if let Some(payload) = self.0
            && !std::thread::panicking()
        {
            panic::resume_unwind(payload);
        }
    }
}
