//! M13, TS5: the unload's sweep and re-entry from a swept capture's `Drop`.

use super::SyncMulticastDelegate;
use crate::track::{self, add_range, code_of, remove_range};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

/// Re-enters the delegate from its `Drop`: adds a subscriber and clears.
struct Reenter(Arc<OnValue>, Arc<AtomicU32>);

impl Drop for Reenter {
    fn drop(&mut self) {
        let calls = Arc::clone(&self.1);
        let _ = self.0.add_boxed(Box::new(move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
        }));
    }
}

/// M13, TS5: the unload's sweep drops a module's callable after the list's lock is
/// released, so its capture's `Drop` may subscribe to the same delegate (no deadlock, no
/// lost subscription).
#[test]
fn m13_ts5_a_swept_captures_drop_may_reenter_the_delegate() {
    const FAKE: u64 = u64::MAX - 136;
    add_range(FAKE, usize::MAX - 1, usize::MAX);
    let delegate = Arc::new(OnValue::new());
    let added_calls = Arc::new(AtomicU32::new(0));
    let reenter = Reenter(Arc::clone(&delegate), Arc::clone(&added_calls));
    let theirs = Box::new(move |_: u32| {
        let _keep = &reenter;
    }) as Box<dyn Fn(u32) + Send + Sync>;
    let vtable = code_of(&*theirs).expect("a module is loaded").vtable();
    add_range(FAKE, vtable, vtable + 1);
    let _ = delegate.add_boxed(theirs);
    let swept = track::sweep(FAKE);
    remove_range(FAKE);
    assert_eq!(swept, 1);
    assert_eq!(delegate.len(), 1, "the subscriber the Drop added stays");
    delegate.broadcast(1);
    assert_eq!(added_calls.load(Ordering::SeqCst), 1);
}
