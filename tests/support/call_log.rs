//! The call log of the builder tests (rule A1): who ran, in order, and the handle a self-aware
//! subscriber received. Thread-local: each test runs on its own thread.

use lumina::DelegateHandle;
use std::cell::{Cell, RefCell};

thread_local! {
    /// Who ran, in order.
    static LOG: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    /// The handle a self-aware subscriber received through its `ThisSubscription`.
    static SEEN: Cell<Option<DelegateHandle>> = const { Cell::new(None) };
}

/// Records that `who` ran.
pub fn log(who: &'static str) {
    LOG.with(|log| log.borrow_mut().push(who));
}

/// Who ran since the last call, in order.
pub fn taken() -> Vec<&'static str> {
    LOG.with(|log| std::mem::take(&mut *log.borrow_mut()))
}

/// Records the handle a self-aware subscriber received.
pub fn see(handle: DelegateHandle) {
    SEEN.with(|seen| seen.set(Some(handle)));
}

/// The handle a self-aware subscriber received last (`None` after [`forget_seen`]).
pub fn seen() -> Option<DelegateHandle> {
    SEEN.with(Cell::get)
}

/// Forgets the handle seen.
pub fn forget_seen() {
    SEEN.with(|seen| seen.set(None));
}
