//! The one release path of managed bindings (rule R4): every way a managed binding leaves its
//! delegate ends here, exactly once, and never while its thunk runs.
//!
//! A managed binding is shared, through an `Rc`, by its list entry and by whatever holds it for a
//! moment (a broadcast calling its thunk, a snapshot). The path that removes it (unbind, clear,
//! generation unload, the delegate's drop) first *marks* it with its reason, while the entry is
//! still live and before any user code runs; the invocation list then drops the entry's
//! reference at once, or, during a broadcast, when the outermost one ends (M4). When the last reference
//! goes, [`Managed`]'s `Drop` queues the binding here. So:
//!
//! - exactly once: an `Rc`'s value is dropped once, and only a live entry is ever marked (the
//!   first mark wins);
//! - never while running: a running call holds the binding (the list keeps every removed
//!   entry's callable in place until the outermost broadcast ends, a merging walk holds a
//!   clone);
//! - whatever moved: nothing here knows where the delegate is, only the binding itself.
//!
//! The queue is flushed at the end of every [`Operation`] that may queue into it (clear,
//! generation unload, the delegate's drop): the host's hook gets each operation's bindings in one
//! call per delegate and reason. A binding that leaves outside any operation (after a running
//! thunk's call returns, in the broadcast loop) is handed over at once. The hook is host code: it
//! may re-enter (bind, clear, unload, drop other delegates); what it causes is queued after the
//! batch it is given and flushed by the operation it runs in, or by the flush loop.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

use super::{ManagedBinding, ManagedThunk, ReleaseReason, ScriptDelegateBase, destroyed_hook};

/// How a managed binding left, recorded by the path that removed it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Removal {
    /// Still bound. A binding dropped in this state went with its list: `Destroyed`.
    Bound,
    /// The host unbound it (`unbind_managed`): it released its handle itself, no hook call.
    Unbound,
    /// Handed to the hook with `reason`. `delegate` is the address of the delegate the removing
    /// operation ran on, for the host's identification only (never read by the library); null
    /// for a generation unload, which reaches the delegate's heap block, not its place (R1).
    Released {
        reason: ReleaseReason,
        delegate: *const ScriptDelegateBase,
        site: u32,
    },
}

/// A managed binding: what its list entry holds (see the [module documentation](self)). The
/// message bus's managed listeners are the same (GB8): their callable holds one.
pub(crate) struct Managed {
    pub(crate) thunk: ManagedThunk,
    pub(crate) context: *mut c_void,
    /// Its id, set right after it is added (0 before: such a binding is never released).
    pub(crate) id: Cell<u64>,
    /// The script generation it was made in (0: none, SD8).
    pub(crate) generation: u64,
    /// The payload's name, for the log when no hook is installed.
    pub(crate) payload: &'static str,
    pub(crate) removal: Cell<Removal>,
}

impl Managed {
    /// A binding of `(thunk, context)` not added anywhere yet, in the calling thread's current
    /// script generation (SD8); `payload` names what it hears, for the leak log. Its id is set
    /// once its list entry exists.
    pub(crate) fn new(
        thunk: ManagedThunk,
        context: *mut c_void,
        payload: &'static str,
    ) -> Rc<Self> {
        Rc::new(Managed {
            thunk,
            context,
            id: Cell::new(0),
            generation: crate::script_generation::current(),
            payload,
            removal: Cell::new(Removal::Bound),
        })
    }

    /// Records how the binding leaves. The first mark wins (only live entries are marked, so a
    /// second one cannot happen; this keeps it so).
    pub(crate) fn mark(&self, removal: Removal) {
        if matches!(self.removal.get(), Removal::Bound) {
            self.removal.set(removal);
        }
    }

    /// The binding as the hook receives it.
    pub(crate) fn binding(&self) -> ManagedBinding {
        ManagedBinding {
            id: self.id.get(),
            thunk: self.thunk,
            context: self.context,
        }
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        let (reason, delegate, site) = match self.removal.get() {
            Removal::Unbound => return,
            Removal::Bound => (ReleaseReason::Destroyed, std::ptr::null(), 0),
            Removal::Released {
                reason,
                delegate,
                site,
            } => (reason, delegate, site),
        };
        if self.id.get() == 0 {
            return;
        }
        queue(Release {
            binding: self.binding(),
            reason,
            delegate,
            site,
            payload: self.payload,
        });
    }
}

/// A binding waiting for the hook.
struct Release {
    binding: ManagedBinding,
    reason: ReleaseReason,
    delegate: *const ScriptDelegateBase,
    site: u32,
    payload: &'static str,
}

/// The thread's queue of releases and how many operations are running.
struct Releases {
    depth: Cell<usize>,
    queue: RefCell<Vec<Release>>,
}

thread_local! {
    static RELEASES: Releases = const {
        Releases {
            depth: Cell::new(0),
            queue: RefCell::new(Vec::new()),
        }
    };
}

/// Queues `release`; hands it over at once when no operation runs (nothing would flush it).
fn queue(release: Release) {
    let mut release = Some(release);
    let now = RELEASES
        .try_with(|releases| {
            if let Some(release) = release.take() {
                releases.queue.borrow_mut().push(release);
            }
            releases.depth.get() == 0
        })
        .unwrap_or(false);
    match release {
        // The thread's locals are being torn down: no queue, hand it over alone.
        Some(release) => hand_over(&[release]),
        None if now => flush_from(0),
        None => {}
    }
}

/// An operation that may queue releases; dropping it (also while unwinding) flushes what was
/// queued since it began.
pub(crate) struct Operation {
    mark: usize,
}

impl Operation {
    pub(crate) fn begin() -> Self {
        let mark = RELEASES
            .try_with(|releases| {
                releases.depth.set(releases.depth.get() + 1);
                releases.queue.borrow().len()
            })
            .unwrap_or(usize::MAX);
        Operation { mark }
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        if self.mark == usize::MAX {
            return;
        }
        let _ = RELEASES.try_with(|releases| releases.depth.set(releases.depth.get() - 1));
        flush_from(self.mark);
    }
}

/// Hands every release queued at `mark` or later to the hook, until none is left (the hook may
/// cause more).
fn flush_from(mark: usize) {
    loop {
        let batch: Vec<Release> = RELEASES
            .try_with(|releases| {
                let mut queue = releases.queue.borrow_mut();
                let start = mark.min(queue.len());
                queue.split_off(start)
            })
            .unwrap_or_default();
        if batch.is_empty() {
            return;
        }
        // One call per run of the same delegate and reason.
        let mut rest = &batch[..];
        while let Some(first) = rest.first() {
            let same = rest
                .iter()
                .take_while(|r| {
                    r.reason == first.reason && std::ptr::eq(r.delegate, first.delegate)
                })
                .count();
            let (run, after) = rest.split_at(same);
            hand_over(run);
            rest = after;
        }
    }
}

/// Calls the host's hook once for `run` (one delegate, one reason), or logs the leak.
fn hand_over(run: &[Release]) {
    let Some(first) = run.first() else { return };
    let bindings: Vec<ManagedBinding> = run.iter().map(|r| r.binding).collect();
    match destroyed_hook() {
        Some(hook) => hook(
            first.delegate,
            bindings.as_ptr(),
            bindings.len(),
            first.reason,
        ),
        None => tracing::error!(
            payload = first.payload,
            count = bindings.len(),
            reason = ?first.reason,
            contexts = ?bindings.iter().map(|b| b.context).collect::<Vec<_>>(),
            bound_at = ?run
                .iter()
                .filter_map(|r| crate::bind_site::location(r.site))
                .map(|site| site.to_string())
                .collect::<Vec<_>>(),
            "lumina: managed bindings released with no destroyed hook installed: their GC \
             handles leak; the host must call lumina_set_destroyed_hook at startup"
        ),
    }
}
