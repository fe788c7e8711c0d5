//! [`DelegateHandle`]: the ticket returned by every `add_*`, used to unsubscribe (rules H1, H2).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The one process-wide source of handle ids (H1).
///
/// Every delegate of every type draws from it, so two handles never share an id, unlike the
/// C++ original, which keeps one counter per template instantiation. It starts at 1 so that id 0
/// always means "no subscription".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Identifies one subscription to a delegate, script delegate or event processor.
///
/// Returned by every `add_*` method; pass it to `remove` to unsubscribe. Ids come from one
/// process-wide counter starting at 1 and shared by every delegate (rule H1), so a handle never
/// matches a subscription of another delegate by accident. [`DelegateHandle::default()`] is the
/// invalid handle (id 0); `remove` of an invalid, foreign or already removed handle returns
/// `false` and changes nothing (rule H2).
///
/// ```
/// use lumina::{DelegateHandle, MulticastDelegate};
///
/// let on_saved: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let mut handle = on_saved.add_lambda(|slot| println!("saved slot {slot}"));
/// assert!(handle.is_valid());
/// assert!(on_saved.remove(handle));
/// assert!(!on_saved.remove(handle)); // already removed: nothing happens
/// handle.reset();
/// assert_eq!(handle, DelegateHandle::default());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[must_use = "a DelegateHandle is the only way to unsubscribe; to stay subscribed for as long as \
              the delegate, processor or bus lives, discard it visibly with `let _ = ...`"]
pub struct DelegateHandle {
    id: u64,
}

impl DelegateHandle {
    /// The invalid handle, id 0: the same value as [`DelegateHandle::default()`].
    pub const INVALID: DelegateHandle = DelegateHandle { id: 0 };

    /// Draws a fresh handle from the process-wide counter. Never returns an invalid handle.
    pub fn new_unique() -> DelegateHandle {
        // Relaxed is enough: uniqueness only needs the read-modify-write to be atomic, and on
        // one thread later fetches always see earlier ones (coherence of a single atomic).
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        DelegateHandle { id }
    }

    /// The id that the next [`DelegateHandle::new_unique`] on any thread will be at least. Not
    /// public: what the runtime's lists tell subscribers apart by (M2), not a user's question.
    ///
    /// Every handle issued before this call has a smaller id; every handle issued after it on
    /// the same thread has an id at least this large. Invocation lists use this to tell the
    /// subscribers present when a broadcast started from those added during it (rule M2).
    pub(crate) fn next_id() -> u64 {
        NEXT_ID.load(Ordering::Relaxed)
    }

    /// The handle with this id, for code that gets ids back across the C ABI.
    pub(crate) const fn from_id(id: u64) -> DelegateHandle {
        DelegateHandle { id }
    }

    /// The numeric id: 0 for the invalid handle, otherwise unique in the process.
    pub const fn id(self) -> u64 {
        self.id
    }

    /// `true` unless this is the invalid handle (id 0). A valid handle may still refer to a
    /// subscription that was removed since; `remove` then returns `false`.
    pub const fn is_valid(self) -> bool {
        self.id != 0
    }

    /// Makes this the invalid handle, typically right after removing its subscription.
    pub fn reset(&mut self) {
        self.id = 0;
    }
}

impl fmt::Debug for DelegateHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_valid() {
            write!(f, "DelegateHandle({})", self.id)
        } else {
            f.write_str("DelegateHandle(invalid)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DelegateHandle;

    #[test]
    fn h1_next_id_separates_handles_issued_before_from_after() {
        let before = DelegateHandle::new_unique();
        let boundary = DelegateHandle::next_id();
        let after = DelegateHandle::new_unique();
        assert!(before.id() < boundary);
        assert!(after.id() >= boundary);
    }
}
