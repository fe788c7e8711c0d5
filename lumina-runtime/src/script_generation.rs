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
use std::collections::BTreeMap;
use std::rc::Weak;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// What a generation records: the heap block of a script delegate (or of a bus's managed
/// listeners) that has bindings made in it (implemented in `script_delegate` and `bus`, which
/// this module does not import: no import circle).
pub(crate) trait Member {
    /// Removes those of the bindings `ids` that are still bound and belong to `generation`,
    /// and releases each once through the host's hook (R4); returns how many were removed.
    /// O(log n) per binding, n the block's bindings (rule N4).
    fn release_bindings(&self, generation: u64, ids: &[u64]) -> usize;
    /// Whether the binding `id` is still bound here. O(log n).
    fn holds(&self, id: u64) -> bool;
}

/// The bindings of one open generation: each with a weak reference to its delegate's heap
/// block (R1: never a delegate's own place, which moves), possibly unbound or dead until
/// compacted.
#[derive(Default)]
struct Members {
    bindings: Vec<(Weak<dyn Member>, u64)>,
    /// The length after the last compaction: the next one runs once it has doubled.
    compacted: usize,
}

impl Members {
    fn add(&mut self, block: Weak<dyn Member>, id: u64) {
        self.bindings.push((block, id));
        if self.bindings.len() > 2 * self.compacted + 8 {
            self.compact();
        }
    }

    /// Drops the bindings unbound since and those of dead blocks (amortised: each compaction
    /// runs once the list has doubled since the last).
    fn compact(&mut self) {
        crate::steps::add(self.bindings.len());
        self.bindings
            .retain(|(block, id)| block.upgrade().is_some_and(|block| block.holds(*id)));
        let live = self.bindings.len();
        self.bindings.shrink_to(2 * live);
        self.compacted = live;
    }
}

thread_local! {
    /// The generation bindings made on this thread belong to; 0 for none.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// Generations begun on this thread and not unloaded yet, with the delegates that have
    /// bindings made in them. Which binding belongs to which generation is recorded in the
    /// binding itself, in the delegate's block.
    ///
    /// Reached with `try_with` only: a `Drop` that runs while the thread's locals are destroyed
    /// (a script delegate kept in a thread local, its listeners' captures) may bind, begin or
    /// unload after this registry is gone, and a panic there would abort the process (R2).
    /// Then nothing is recorded: the bindings are released with their delegates.
    static OPEN: RefCell<BTreeMap<u64, Members>> = const { RefCell::new(BTreeMap::new()) };
}

/// Starts a new generation on the calling thread and returns its id (never 0): managed bindings
/// made on this thread from now on belong to it. Cost: O(log g) in the generations open.
pub fn begin() -> u64 {
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    CURRENT.set(generation);
    let _ = OPEN.try_with(|open| {
        open.borrow_mut().insert(generation, Members::default());
    });
    generation
}

/// The generation bindings made on this thread belong to now; 0 when none was begun. O(1).
pub fn current() -> u64 {
    CURRENT.get()
}

/// Releases every managed binding of `generation` that is still bound, in every script delegate
/// of this thread, wherever the delegate has moved since: each is removed (it never runs again,
/// also in a broadcast that is running) and handed to the host's release hook once, with
/// [`ReleaseReason::GenerationUnloaded`](crate::script_delegate::ReleaseReason::GenerationUnloaded)
/// (one whose delegate is broadcasting, say from the thunk that asked for the unload, when
/// that broadcast ends). Returns how many, or `None` when `generation` was not begun on this thread or was
/// unloaded already (or when the thread is exiting and its registry of generations is gone:
/// then the bindings are released with their delegates). The host calls this before it unloads the generation's code.
///
/// Cost: O(k log k) in the generation's own bindings (O(log n) each in its delegate's
/// bindings), whatever the number of other generations and bindings (rule N4).
pub fn unload(generation: u64) -> Option<usize> {
    let members = OPEN
        .try_with(|open| open.borrow_mut().remove(&generation))
        .ok()
        .flatten()?;
    if CURRENT.get() == generation {
        CURRENT.set(0);
    }
    // By delegate, each delegate's bindings in the order made: O(k log k) in the generation's
    // own bindings, never a walk of every binding (rule N4).
    let mut bindings = members.bindings;
    bindings.sort_by_key(|(block, id)| (block.as_ptr().cast::<()>().addr(), *id));
    // One delegate at a time: the release hook (host code) may drop the others (then they
    // released their bindings as they went, and their blocks are gone), bind, or unload.
    let mut released = 0;
    for group in bindings.chunk_by(|(a, _), (b, _)| Weak::ptr_eq(a, b)) {
        let ids: Vec<u64> = group.iter().map(|(_, id)| *id).collect();
        if let Some(block) = group[0].0.upgrade() {
            released += block.release_bindings(generation, &ids);
        }
    }
    Some(released)
}

/// Records that the delegate whose heap block is `block` has the binding `id` made in
/// `generation` (hook in `ScriptDelegateBase::try_bind_managed` and
/// `MessageBus::listen_managed`). O(1) amortized.
pub(crate) fn note_binding<B: Member + 'static>(generation: u64, block: Weak<B>, id: u64) {
    let block: Weak<dyn Member> = block;
    let _ = OPEN.try_with(|open| {
        if let Some(members) = open.borrow_mut().get_mut(&generation) {
            members.add(block, id);
        }
    });
}
