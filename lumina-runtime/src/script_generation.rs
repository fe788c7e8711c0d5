//! Script generations (rule SD8): the managed host loads its scripts into a generation it can
//! unload (a Mono `AppDomain`, say) and tells the runtime when it unloads one; the runtime then
//! releases every managed binding made in that generation, in every script delegate, through the
//! host's release hook ([`set_destroyed_hook`](crate::script_delegate::set_destroyed_hook),
//! reason [`ReleaseReason::GenerationUnloaded`]), exactly once. None of those bindings is called
//! afterwards, and no GC handle is left behind by a stale holder.
//!
//! [`begin`] starts a generation on the calling (game) thread: every managed binding made on that
//! thread from then on belongs to it, until the next [`begin`]. [`unload`] releases a generation's
//! bindings. Both are also in the C ABI (`lumina_script_generation_begin`,
//! `lumina_script_generation_unload`).
//!
//! ```
//! use lumina::{ScriptDelegate, script_generation};
//! use std::ffi::c_void;
//!
//! extern "C" fn thunk(_context: *mut c_void, _payload: *const c_void) {}
//!
//! let on_died: ScriptDelegate<()> = ScriptDelegate::new();
//! let scripts = script_generation::begin();
//! let id = on_died.bind_managed(Some(thunk), std::ptr::null_mut());
//! assert_eq!(on_died.managed_len(), 1);
//! // The host unloads the scripts: their binding goes (the release hook gets it).
//! assert_eq!(script_generation::unload(scripts), Some(1));
//! assert_eq!(on_died.managed_len(), 0);
//! assert!(!on_died.unbind_managed(id));
//! assert_eq!(script_generation::unload(scripts), None); // exactly once
//! ```
//!
//! [`ReleaseReason::GenerationUnloaded`]: crate::script_delegate::ReleaseReason::GenerationUnloaded

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::script_delegate::ScriptDelegateBase;

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The generation bindings made on this thread belong to; 0 for none.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// Generations begun on this thread and not unloaded yet.
    static OPEN: RefCell<BTreeSet<u64>> = const { RefCell::new(BTreeSet::new()) };
    /// Binding id -> (its delegate's base, its generation), for bindings made in a generation
    /// that are still bound. The delegate is at a stable address while bound (the host holds
    /// it).
    static BINDINGS: RefCell<HashMap<u64, (*const ScriptDelegateBase, u64)>> =
        RefCell::new(HashMap::new());
}

/// Starts a new generation on the calling thread and returns its id (never 0): managed bindings
/// made on this thread from now on belong to it.
pub fn begin() -> u64 {
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    CURRENT.set(generation);
    OPEN.with_borrow_mut(|open| open.insert(generation));
    generation
}

/// The generation bindings made on this thread belong to now; 0 when none was begun.
pub fn current() -> u64 {
    CURRENT.get()
}

/// Releases every managed binding of `generation` that is still bound, in every script delegate
/// of this thread: each is removed (it never runs again, also in a broadcast that is running) and
/// handed to the host's release hook once, with
/// [`ReleaseReason::GenerationUnloaded`](crate::script_delegate::ReleaseReason::GenerationUnloaded).
/// Returns how many, or `None` when `generation` was not begun on this thread or was unloaded
/// already. The host calls this before it unloads the generation's code.
pub fn unload(generation: u64) -> Option<usize> {
    if !OPEN.with_borrow_mut(|open| open.remove(&generation)) {
        return None;
    }
    if CURRENT.get() == generation {
        CURRENT.set(0);
    }
    // Taken out first: the release hook (host code) may bind again (M13).
    let mut by_delegate: BTreeMap<usize, (*const ScriptDelegateBase, Vec<u64>)> = BTreeMap::new();
    BINDINGS.with_borrow_mut(|bindings| {
        bindings.retain(|&id, &mut (delegate, owner)| {
            if owner == generation {
                let (_, ids) = by_delegate
                    .entry(delegate.addr())
                    .or_insert_with(|| (delegate, Vec::new()));
                ids.push(id);
                false
            } else {
                true
            }
        });
    });
    let mut released = 0;
    for (_, (delegate, mut ids)) in by_delegate {
        ids.sort_unstable();
        // SAFETY: every delegate with a recorded binding is alive: dropping a delegate hands its
        // bindings to `release`, which forgets their records; and it has not moved while bound
        // (the host holds its address, see `script_delegate` on stable addresses).
        let delegate = unsafe { &*delegate };
        released += delegate.release_generation(&ids);
    }
    Some(released)
}

/// Records a managed binding made on `delegate` (hook in `ScriptDelegateBase::try_bind_managed`).
pub(crate) fn note_bind(delegate: &ScriptDelegateBase, id: u64) {
    let generation = CURRENT.get();
    if generation != 0 {
        let delegate = std::ptr::from_ref(delegate);
        BINDINGS.with_borrow_mut(|bindings| bindings.insert(id, (delegate, generation)));
    }
}

/// Forgets a binding the host unbound (hook in `unbind_managed`).
pub(crate) fn note_unbind(id: u64) {
    // Records exist only while a generation is open.
    if !OPEN.with_borrow(BTreeSet::is_empty) {
        BINDINGS.with_borrow_mut(|bindings| bindings.remove(&id));
    }
}

/// Forgets bindings handed to the host's release hook (hook in `ScriptDelegateBase::release`,
/// which every clear, drop and generation unload goes through): a delegate that moved and was
/// dropped leaves no record behind.
pub(crate) fn forget(released: &[crate::script_delegate::ManagedBinding]) {
    if released.is_empty() || OPEN.with_borrow(BTreeSet::is_empty) {
        return;
    }
    BINDINGS.with_borrow_mut(|bindings| {
        for binding in released {
            bindings.remove(&binding.id);
        }
    });
}
