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

/// What a generation records: the heap block of a script delegate that has bindings made in it
/// (implemented in `script_delegate`, which this module does not import: no import circle).
pub(crate) trait Member {
    /// Removes the still-bound managed bindings of `generation` and releases each once through
    /// the host's hook (R4); returns how many were removed.
    fn release_generation(&self, generation: u64) -> usize;
}

/// The members of one open generation: weak references to delegates' heap blocks (R1: never a
/// delegate's own place, which moves), possibly repeated or dead until compacted.
#[derive(Default)]
struct Members {
    blocks: Vec<Weak<dyn Member>>,
    /// The length after the last compaction: the next one runs once it has doubled.
    compacted: usize,
}

impl Members {
    fn add(&mut self, block: Weak<dyn Member>) {
        if self
            .blocks
            .last()
            .is_some_and(|last| Weak::ptr_eq(last, &block))
        {
            return;
        }
        self.blocks.push(block);
        if self.blocks.len() > 2 * self.compacted + 8 {
            self.compact();
        }
    }

    /// Drops dead and repeated members (amortised: each compaction at least halves the list
    /// since the last).
    fn compact(&mut self) {
        self.blocks.retain(|weak| weak.strong_count() > 0);
        self.blocks
            .sort_by_key(|weak| weak.as_ptr().cast::<()>().addr());
        self.blocks.dedup_by(|a, b| Weak::ptr_eq(a, b));
        self.compacted = self.blocks.len();
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
/// made on this thread from now on belong to it.
pub fn begin() -> u64 {
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    CURRENT.set(generation);
    let _ = OPEN.try_with(|open| {
        open.borrow_mut().insert(generation, Members::default());
    });
    generation
}

/// The generation bindings made on this thread belong to now; 0 when none was begun.
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
pub fn unload(generation: u64) -> Option<usize> {
    let mut members = OPEN
        .try_with(|open| open.borrow_mut().remove(&generation))
        .ok()
        .flatten()?;
    if CURRENT.get() == generation {
        CURRENT.set(0);
    }
    members.compact();
    // One delegate at a time: the release hook (host code) may drop the others (then they
    // released their bindings as they went, and their blocks are gone), bind, or unload.
    let mut released = 0;
    for block in members.blocks {
        if let Some(block) = block.upgrade() {
            released += block.release_generation(generation);
        }
    }
    Some(released)
}

/// Records that the delegate whose heap block is `block` has a binding made in `generation`
/// (hook in `ScriptDelegateBase::try_bind_managed`).
pub(crate) fn note_member<B: Member + 'static>(generation: u64, block: Weak<B>) {
    let block: Weak<dyn Member> = block;
    let _ = OPEN.try_with(|open| {
        if let Some(members) = open.borrow_mut().get_mut(&generation) {
            members.add(block);
        }
    });
}
